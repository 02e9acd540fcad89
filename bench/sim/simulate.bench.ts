/**
 * `npm run bench -- simulate`: the fleet simulator (`gitmesh simulate`, src/devtools/simulator.ts) at
 * 100, 500 and 1,000 clusters: push → all applied p50/p99 and server memory per agent, with the
 * server's CPU per commit, relay bytes per commit and Redis memory beside them.
 *
 * Each size is one run of the real command as a child process (`node bin/gitmesh.js simulate --json`),
 * so the server, Redis and the simulated agents are each in a process of their own. Every push changes
 * a policy that every cluster's output depends on (the widest fan-out one commit can cause); pushes
 * are sequential, so p99 over 20–30 pushes is close to the maximum. 1,000 clusters run with 5 services
 * each so that the run fits in about ten minutes on 2 cores.
 *
 * GITMESH_BENCH_SIM_SIZES=100 (or "100,500") runs a subset; GITMESH_BENCH_SIM_WORKERS=2 runs the
 * translation in two worker processes instead of the server.
 */
import { spawn } from "node:child_process";
import { loadavg } from "node:os";
import type { SimulationReport } from "../../src/devtools/index.js";
import { MB, round, type Benchmark, type Figure } from "../harness.js";

interface Size {
  readonly clusters: number;
  readonly servicesPerCluster: number;
  readonly commits: number;
}

const SIZES: readonly Size[] = [
  { clusters: 100, servicesPerCluster: 10, commits: 30 },
  { clusters: 500, servicesPerCluster: 10, commits: 20 },
  { clusters: 1000, servicesPerCluster: 5, commits: 20 },
];

function simulate(size: Size, workers: number, log: (m: string) => void): Promise<SimulationReport> {
  const args = ["bin/gitmesh.js", "simulate", "--clusters", String(size.clusters), "--services-per-cluster", String(size.servicesPerCluster), "--commits", String(size.commits), "--workers", String(workers), "--json"];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => {
      err = (err + d.toString()).slice(-20_000);
      for (const line of d.toString().split("\n")) if (line.trim() !== "") log(`${String(size.clusters)} clusters: ${line}`);
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`gitmesh simulate exited ${String(code)}\n${err}`));
      try {
        resolve(JSON.parse(out) as SimulationReport);
      } catch (e) {
        reject(new Error(`gitmesh simulate printed no JSON report`, { cause: e }));
      }
    });
  });
}

export const benchmark: Benchmark = {
  name: "simulate",
  description: "fleet simulator at 100, 500 and 1,000 clusters: push → all applied p50/p99, server memory per agent (real server on Redis, simulated agents over the real relay)",
  async run({ log }) {
    const figures: Figure[] = [];
    const wanted = (process.env.GITMESH_BENCH_SIM_SIZES ?? "").split(",").map(Number).filter((n) => n > 0);
    const workers = Number(process.env.GITMESH_BENCH_SIM_WORKERS ?? 0);
    for (const size of SIZES.filter((s) => wanted.length === 0 || wanted.includes(s.clusters))) {
      log(`${String(size.clusters)} clusters x ${String(size.servicesPerCluster)} services, ${String(size.commits)} pushes (load average ${loadavg()[0]!.toFixed(1)})`);
      const r = await simulate(size, workers, log);
      const n = `${String(r.clusters)} clusters x ${String(r.servicesPerCluster)} svc`;
      figures.push(
        { label: `${n}: push → all applied, p50`, value: round(r.pushToApplied.p50Ms), unit: "ms" },
        { label: `${n}: push → all applied, p99 (of ${String(r.commits)})`, value: round(r.pushToApplied.p99Ms), unit: "ms" },
        { label: `${n}: accepted → all applied, p50 (server clock)`, value: round(r.acceptedToApplied?.p50Ms ?? Number.NaN), unit: "ms" },
        { label: `${n}: server RSS per agent`, value: round(r.server.rssPerAgentBytes / 1024), unit: "KiB" },
        { label: `${n}: server RSS with all agents converged`, value: round(r.server.rssWithAgentsBytes / MB), unit: "MB" },
        { label: `${n}: server peak RSS`, value: round(r.server.peakRssBytes / MB), unit: "MB" },
        // #35: the simulator's own process (the agents' real relay clients) stays under 1 GiB at 1,000 agents.
        { label: `${n}: simulator (agents' process) peak RSS`, value: round(r.simulator.peakRssBytes / MB), unit: "MB" },
        { label: `${n}: simulator peak RSS per agent`, value: round(r.simulator.peakRssBytes / r.clusters / 1024), unit: "KiB" },
        { label: `${n}: server CPU per commit`, value: round((r.server.cpuSecondsDuringPushes / r.commits) * 1000), unit: "ms" },
        ...r.workerProcesses.map((w) => ({ label: `${n}: ${w.name} CPU per commit`, value: round((w.cpuSecondsDuringPushes / r.commits) * 1000), unit: "ms" })),
        { label: `${n}: relay payload bytes per commit (all agents)`, value: round(r.relay.payloadBytesPerCommit / 1024), unit: "KiB" },
        { label: `${n}: Redis used_memory`, value: round(r.redis.usedMemoryBytes / MB), unit: "MB" },
        { label: `${n}: register + connect + first convergence`, value: round((r.start.registerMs + r.start.firstConvergenceMs) / 1000), unit: "s" },
        { label: `${n}: load average (1 min) at the end`, value: round(r.machine.loadAverageEnd[0] ?? 0), unit: "" },
      );
    }
    return figures;
  },
};
