// `gitmesh simulate` as an operator runs it: a child process of bin/gitmesh.js that starts a real
// server (and a worker), simulated agents, pushes commits and prints the figures. Asserted: every
// commit applied by every cluster (the agents' ACKs and the server's record), counts, bytes and
// process figures present and consistent with each other — never timings (those are bench/sim's).
import { spawn } from "node:child_process";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import type { SimulationReport } from "../../src/devtools/index.js";
import { startRedis } from "../helpers/redis.js";

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function simulate(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["bin/gitmesh.js", "simulate", ...args], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** What must hold for any run of N clusters × M services and K commits. */
function expectSaneReport(r: SimulationReport, n: number, m: number, k: number): void {
  expect(r).toMatchObject({ clusters: n, servicesPerCluster: m, services: n * m, commits: k });
  expect(r.perCommit).toHaveLength(k);
  expect(new Set(r.perCommit.map((c) => c.sha)).size).toBe(k);
  for (const c of r.perCommit) {
    expect(c.sha).toMatch(/^[0-9a-f]{40}$/);
    // Every commit reached every cluster: the agents ACKed it, and the server's record says so.
    expect(c.clustersApplied).toBe(n);
    expect(c.confirmedByServer).toBe(true);
    expect(c.payloadBytes).toBeGreaterThan(0);
    expect(c.pushToAppliedMs).toBeGreaterThan(0);
    expect(c.acceptedToAppliedMs).toBeGreaterThanOrEqual(0);
  }
  expect(r.pushToApplied.p50Ms).toBeGreaterThan(0);
  expect(r.pushToApplied.minMs).toBeLessThanOrEqual(r.pushToApplied.p50Ms);
  expect(r.pushToApplied.p50Ms).toBeLessThanOrEqual(r.pushToApplied.p99Ms);
  expect(r.pushToApplied.p99Ms).toBeLessThanOrEqual(r.pushToApplied.maxMs);
  expect(r.acceptedToApplied).toBeDefined();
  expect(r.resourcesPerCluster).toBeGreaterThan(0);
  // A one-policy change travels as a delta: far less than the full output every agent got first.
  expect(r.relay.payloadBytesPerCommit).toBe(Math.round(r.perCommit.reduce((s, c) => s + c.payloadBytes, 0) / k));
  expect(r.relay.payloadBytesPerCommitPerCluster).toBeGreaterThan(0);
  expect(r.relay.firstSyncPayloadBytes).toBeGreaterThan(r.relay.payloadBytesPerCommit);
  expect(r.relay.sessions).toBe(n);
  expect(r.server.pid).toBeGreaterThan(0);
  expect(r.server.cpuSeconds).toBeGreaterThan(0);
  expect(r.server.cpuSecondsDuringPushes).toBeGreaterThan(0);
  expect(r.server.cpuSecondsDuringPushes).toBeLessThanOrEqual(r.server.cpuSeconds);
  expect(r.server.rssBytes).toBeGreaterThan(10 * 1024 * 1024);
  expect(r.server.peakRssBytes).toBeGreaterThanOrEqual(r.server.rssBytes);
  expect(r.server.rssBeforeAgentsBytes).toBeGreaterThan(0);
  expect(r.server.rssPerAgentBytes).toBe(Math.round((r.server.rssWithAgentsBytes - r.server.rssBeforeAgentsBytes) / n));
  expect(r.redis.usedMemoryBytes).toBeGreaterThan(0);
  expect(r.redis.keys).toBeGreaterThan(0);
  expect(r.redis.keysMemoryBytes).toBeGreaterThan(0);
  expect(r.machine.cpus).toBeGreaterThan(0);
}

describe("gitmesh simulate", () => {
  it("3 clusters x 2 services, 3 commits, the server translating: every commit applied everywhere, the figures as JSON on stdout", async () => {
    // The server's settings are the simulator's: a shell's GITMESH_* variables, or a pod's Kubernetes
    // service host (the server would look for its secrets in Kubernetes), do not reach it.
    const shell = { GITMESH_RELAY_BOOTSTRAP: "per-cluster", GITMESH_API_AUTH: "false", KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443" };
    const run = await simulate(["--clusters", "3", "--services-per-cluster", "2", "--commits", "3", "--json"], shell);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as SimulationReport;
    expectSaneReport(report, 3, 2, 3);
    expect(report.workers).toBe(0);
    expect(report.workerProcesses).toEqual([]);
    expect(report.redis.external).toBe(false);
    expect(report.directory).toBeUndefined();
    // Progress on stderr, one line per push, and the teardown.
    expect(run.stderr).toMatch(/Redis: private redis-server on redis:\/\/127\.0\.0\.1:\d+/);
    expect(run.stderr).toMatch(/Fleet: first commit applied by all 3 clusters/);
    for (const i of [1, 2, 3]) expect(run.stderr).toMatch(new RegExp(`push ${String(i)}/3 [0-9a-f]{12}: applied by 3 clusters in \\d+ ms\\n`));
    expect(run.stderr).toContain("stopping agents, workers, server, Git and Redis");
  }, 240_000);

  it("--workers 1 on a given Redis: translation in a worker process, its figures reported, no key of the simulation left behind", async () => {
    const redis = await startRedis();
    const client = new Redis(redis.url);
    try {
      const run = await simulate(["--clusters", "3", "--services-per-cluster", "2", "--commits", "2", "--workers", "1", "--redis-url", redis.url, "--json"]);
      expect(run.code, run.stderr).toBe(0);
      const report = JSON.parse(run.stdout) as SimulationReport;
      expectSaneReport(report, 3, 2, 2);
      expect(report.workers).toBe(1);
      expect(report.redis.external).toBe(true);
      expect(report.workerProcesses).toHaveLength(1);
      const [worker] = report.workerProcesses;
      expect(worker!.name).toBe("worker-1");
      expect(worker!.pid).not.toBe(report.server.pid);
      expect(worker!.cpuSeconds).toBeGreaterThan(0);
      expect(worker!.rssBytes).toBeGreaterThan(10 * 1024 * 1024);
      expect(run.stderr).toContain("1 worker process(es), the server translates nothing");
      expect(await client.dbsize()).toBe(0);
    } finally {
      client.disconnect();
      await redis.stop();
    }
  }, 240_000);

  it("prints the figures as a table by default, with CPU and memory of the server and of each worker", async () => {
    const run = await simulate(["--clusters", "2", "--services-per-cluster", "1", "--commits", "1", "--no-audit", "--workers", "1"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^gitmesh simulate: 2 clusters x 1 services \(2 services, \d+ workspaces, \d+ configuration objects\), 1 pushes, 1 worker process\(es\)$/m);
    for (const label of ["push → all applied", "accepted → all applied", "relay bytes per commit", "server memory per agent", "Redis", "fleet start", "machine"]) {
      expect(run.stdout).toMatch(new RegExp(`^  ${label} +\\S`, "m"));
    }
    const processLine = /CPU \d+\.\d s in all, \d+\.\d s during the pushes \(\d+\.\d\d s per commit\); RSS \d+\.\d MiB, peak \d+\.\d MiB$/.source;
    for (const name of ["server", "worker-1"]) expect(run.stdout).toMatch(new RegExp(`^  ${name} +${processLine}`, "m"));
    expect(run.stdout).toContain("1 of 1 commits applied by all 2 clusters; 1 confirmed by the server's record");
  }, 240_000);

  it("a bad flag is a usage error naming the flag (exit 2), before anything starts", async () => {
    for (const [args, flag] of [
      [["--clusters", "0"], "--clusters"],
      [["--services-per-cluster", "many"], "--services-per-cluster"],
      [["--commits", "1.5"], "--commits"],
      [["--workers", "65"], "--workers"],
      [["--timeout", "-1"], "--timeout"],
      [["--redis-url", "localhost:6379"], "--redis-url"],
      [["--cluster", "3"], "--cluster"],
    ] as const) {
      const run = await simulate(args);
      expect(run.code, `${args.join(" ")}: ${run.stderr}`).toBe(2);
      expect(run.stderr).toContain(flag);
      expect(run.stderr).not.toContain("Redis:");
    }
  }, 120_000);

  it("--help names every flag with its default", async () => {
    const run = await simulate(["--help"]);
    expect(run.code).toBe(0);
    for (const flag of ["--clusters <n>", "--services-per-cluster <n>", "--commits <n>", "--workers <n>", "--redis-url <url>", "--no-audit", "--timeout <seconds>", "--json", "--keep"]) expect(run.stdout).toContain(flag);
    expect(run.stdout).toContain('(default: "20")');
    expect(run.stdout).toContain("docs/capacity-planning.md");
  });
});
