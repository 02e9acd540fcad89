/**
 * `gitmesh simulate`: the fleet simulator (src/devtools/simulator.ts) — a real server (and workers)
 * against N simulated agents speaking the real relay protocol, a stream of pushes, and the capacity
 * figures an operator sizes a management plane with. Progress goes to stderr; the figures to stdout
 * (a table, or JSON with --json). How to read them: docs/capacity-planning.md.
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { runSimulation, SimulationAbortedError, SimulationError, type ProcessFigures, type SimulationReport } from "../devtools/index.js";
import { redisUrlProblem } from "../queue/index.js";
import { ExitCode, integerFlag, secondsFlag, UsageError, type CliIo } from "./io.js";

interface SimulateFlags {
  readonly clusters: string;
  readonly servicesPerCluster: string;
  readonly commits: string;
  readonly workers: string;
  readonly redisUrl?: string;
  readonly audit: boolean;
  readonly timeout: string;
  readonly json?: boolean;
  readonly keep?: boolean;
}

export function registerSimulate(program: Command, io: CliIo): void {
  program
    .command("simulate")
    .summary("size a management plane: a real server (and workers) against N simulated agents, a stream of pushes, the figures")
    .description(
      "Start a real management server (a `gitmesh server` process, and `gitmesh worker` processes with --workers) on Redis, reading a generated configuration repository from a local Git server, and N simulated agents in this process that speak the real relay protocol (bootstrap registration, mTLS, a discovery snapshot of M services each, output ACKs) without a Kubernetes API behind them. Then push --commits changes, one at a time, each editing one policy that every cluster's output depends on, and print what an operator sizes with: push → all applied (p50, p99, max), server and worker CPU time and memory, server memory per agent, Redis memory, relay bytes per commit.\n\n" +
        "Needs git, and redis-server unless --redis-url is given. Progress goes to stderr, the figures to stdout. Everything started is stopped and the temporary directory removed at the end, on failure and on Ctrl-C (--keep keeps the directory and the server's log).\n\n" +
        "How to read the figures: docs/capacity-planning.md.",
    )
    .option("--clusters <n>", "simulated clusters (agents)", "20")
    .option("--services-per-cluster <n>", "services discovered in each cluster (Service + Deployment)", "10")
    .option("--commits <n>", "pushes measured, one at a time, after the first convergence", "20")
    .option("--workers <n>", "`gitmesh worker` processes; 0: the server translates in-process", "0")
    .option("--redis-url <url>", "use this Redis, any form the server takes (redis://, rediss://, redis-sentinel://, redis-cluster://); the simulation's keys go under a private prefix and are removed. Default: a private redis-server on a free port")
    .option("--no-audit", "the server does not write the audit branch (it does by default, as in production)")
    .option("--timeout <seconds>", "longest wait for one push to be applied by every cluster", "120")
    .option("--json", "print the figures as JSON")
    .option("--keep", "keep the temporary directory (configuration repository, server and worker logs)")
    .addHelpText(
      "after",
      "\nExamples:\n" +
        "  gitmesh simulate                                             # 20 clusters x 10 services, 20 pushes\n" +
        "  gitmesh simulate --clusters 500 --services-per-cluster 10 --commits 30\n" +
        "  gitmesh simulate --clusters 1000 --services-per-cluster 5 --workers 2 --json > sizing.json\n",
    )
    .action(async (flags: SimulateFlags) => {
      const clusters = integerFlag("--clusters", flags.clusters, 1, 10_000);
      const servicesPerCluster = integerFlag("--services-per-cluster", flags.servicesPerCluster, 1, 10_000);
      const commits = integerFlag("--commits", flags.commits, 1, 10_000);
      const workers = integerFlag("--workers", flags.workers, 0, 64);
      const pushTimeoutMs = secondsFlag("--timeout", flags.timeout) * 1000;
      const redisProblem = flags.redisUrl === undefined ? undefined : redisUrlProblem(flags.redisUrl);
      if (redisProblem !== undefined) throw new UsageError(`--redis-url: ${redisProblem}`);

      const aborted = new AbortController();
      const onSignal = () => aborted.abort();
      process.once("SIGINT", onSignal);
      process.once("SIGTERM", onSignal);
      try {
        const report = await runSimulation({
          clusters,
          servicesPerCluster,
          commits,
          workers,
          ...(flags.redisUrl === undefined ? {} : { redisUrl: flags.redisUrl }),
          audit: flags.audit,
          keep: flags.keep === true,
          pushTimeoutMs,
          // Registration and the first translation grow with the fleet: 2 minutes plus half a second per cluster.
          startTimeoutMs: 120_000 + clusters * 500,
          gitmeshBin: join(packageRoot(), "bin", "gitmesh.js"),
          environment: io.env ?? process.env,
          progress: (line) => io.err(`${line}\n`),
          signal: aborted.signal,
        });
        io.out(flags.json === true ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
        io.exitCode = ExitCode.Ok;
      } catch (err) {
        if (err instanceof SimulationAbortedError) {
          io.err("simulate: interrupted; everything it started is stopped\n");
          io.exitCode = ExitCode.Failed;
          return;
        }
        if (err instanceof SimulationError) {
          io.err(`simulate failed: ${err.message}\n`);
          io.exitCode = ExitCode.Failed;
          return;
        }
        throw err;
      } finally {
        process.off("SIGINT", onSignal);
        process.off("SIGTERM", onSignal);
      }
    });
}

const MiB = 1024 * 1024;
const mb = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
/** KiB below 1 MiB, MiB above. */
const size = (bytes: number) => (Math.abs(bytes) < MiB ? kib(bytes) : mb(bytes));
const ms = (v: number) => `${Math.round(v).toLocaleString("en-US")} ms`;
const s1 = (v: number) => `${v.toFixed(1)} s`;

/** The figures as a table an operator reads (docs/capacity-planning.md explains each line). */
export function formatReport(r: SimulationReport): string {
  const rows: [string, string][] = [];
  const proc = (p: ProcessFigures) => `CPU ${s1(p.cpuSeconds)} in all, ${s1(p.cpuSecondsDuringPushes)} during the pushes (${(p.cpuSecondsDuringPushes / Math.max(1, r.commits)).toFixed(2)} s per commit); RSS ${mb(p.rssBytes)}, peak ${mb(p.peakRssBytes)}`;
  const applied = r.perCommit.filter((c) => c.clustersApplied === r.clusters).length;
  const confirmed = r.perCommit.filter((c) => c.confirmedByServer).length;
  rows.push(["push → all applied", `p50 ${ms(r.pushToApplied.p50Ms)}, p99 ${ms(r.pushToApplied.p99Ms)}, max ${ms(r.pushToApplied.maxMs)}`]);
  rows.push(["", `${String(applied)} of ${String(r.commits)} commits applied by all ${String(r.clusters)} clusters; ${String(confirmed)} confirmed by the server's record`]);
  if (r.acceptedToApplied) rows.push(["accepted → all applied", `p50 ${ms(r.acceptedToApplied.p50Ms)}, p99 ${ms(r.acceptedToApplied.p99Ms)} (server clock: webhook's commit accepted → last ACK)`]);
  rows.push(["relay bytes per commit", `${size(r.relay.payloadBytesPerCommit)} (${String(r.relay.payloadBytesPerCommitPerCluster)} B per cluster; compressed payload as the agents received it)`]);
  rows.push(["first full sync", `${size(r.relay.firstSyncPayloadBytes)} to all agents (${String(r.resourcesPerCluster)} resources per cluster)`]);
  rows.push(["server", proc(r.server)]);
  rows.push(["server memory per agent", `${kib(r.server.rssPerAgentBytes)} (RSS ${mb(r.server.rssBeforeAgentsBytes)} before the agents → ${mb(r.server.rssWithAgentsBytes)} with ${String(r.clusters)} converged)`]);
  for (const w of r.workerProcesses) rows.push([w.name, proc(w)]);
  rows.push(["Redis", `used_memory ${mb(r.redis.usedMemoryBytes)}, peak ${mb(r.redis.usedMemoryPeakBytes)}${r.redis.external ? " (the whole Redis)" : ""}; the simulation's ${String(r.redis.keys)} keys: ${size(r.redis.keysMemoryBytes)}`]);
  rows.push(["fleet start", `register ${s1(r.start.registerMs / 1000)}, connect + discovery ${s1(r.start.connectMs / 1000)}, first convergence ${s1(r.start.firstConvergenceMs / 1000)} after connecting`]);
  rows.push(["simulator process", `CPU ${s1(r.simulator.cpuSeconds)}, peak RSS ${mb(r.simulator.peakRssBytes)} (${String(r.clusters)} agents, Git server)`]);
  rows.push(["machine", `${String(r.machine.cpus)} CPUs, load average ${r.machine.loadAverageStart.join(" ")} at the start, ${r.machine.loadAverageEnd.join(" ")} at the end`]);
  const width = Math.max(...rows.map(([k]) => k.length));
  const head =
    `\ngitmesh simulate: ${String(r.clusters)} clusters x ${String(r.servicesPerCluster)} services (${r.services.toLocaleString("en-US")} services, ${String(r.workspaces)} workspaces, ${String(r.configObjects)} configuration objects), ` +
    `${String(r.commits)} pushes, ${r.workers > 0 ? `${String(r.workers)} worker process(es)` : "translation in the server"}\n\n`;
  return head + rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`).join("\n") + `\n${r.directory === undefined ? "" : `\nkept: ${r.directory}\n`}`;
}

/** The package root (bin/gitmesh.js lives there), from src/cli or dist/cli. */
function packageRoot(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
}
