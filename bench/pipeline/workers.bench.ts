/**
 * `npm run bench -- workers`: full translation of the `large` fleet (100 clusters × 1,000 services)
 * through BullMQ + Redis by 1, 2 and 4 `gitmesh worker` processes, against the server translating
 * in-process on the same Redis (the baseline, same run); then a one-policy change → every affected
 * cluster's new output published. The "server" here is a pipeline in the benchmark process with
 * `work: false` (what `gitmesh server --workers 0` runs): it stores the inputs, enqueues the jobs and
 * receives the outputs through pub/sub. Workers are real child processes (bin/gitmesh.js worker), each
 * with `--concurrency 1` (translation is CPU-bound: one job at a time per process uses one core).
 *
 * On a machine with C cores the ceiling of K workers is min(K, C)× — the figures print the cores and
 * the load average so that a reader can tell. GITMESH_BENCH_FLEET=medium runs the smaller fleet.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { loadDesiredState, updateDesiredState } from "../../src/config/index.js";
import type { DiscoverySnapshot } from "../../src/discovery/index.js";
import { createPipeline } from "../../src/queue/index.js";
import { generateFleet } from "../fleet/generate.js";
import { FLEET_PRESETS, isFleetPreset } from "../fleet/presets.js";
import { MB, round, time, type Benchmark, type Figure } from "../harness.js";
import { freePort } from "../../test/helpers/ports.js";
// The tests' private redis-server helper (free port, no persistence, killed on exit).
import { startRedis } from "../../test/helpers/redis.js";

const TIMEOUT_MS = 1_800_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface WorkerProc {
  readonly child: ChildProcess;
  readonly port: number;
  output(): string;
}

async function startWorker(redisUrl: string, prefix: string, name: string): Promise<WorkerProc> {
  const port = await freePort();
  const child = spawn(process.execPath, ["bin/gitmesh.js", "worker", "--redis-url", redisUrl, "--identity", name, "--concurrency", "1", "--http-host", "127.0.0.1", "--http-port", String(port), "--log-level", "warn", "--log-format", "json"], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, GITMESH_REDIS_PREFIX: prefix },
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  child.stderr.on("data", (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${String(port)}/readyz`).then((r) => r.ok, () => false);
    if (ok) break;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`worker ${name} not ready:\n${out}`);
    await sleep(100);
  }
  return { child, port, output: () => out };
}

/** CPU seconds (user + system) and peak RSS of a live process, from /proc. */
function usage(pid: number): { cpuS: number; peakRssMb: number } {
  const stat = readFileSync(`/proc/${String(pid)}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${String(pid)}/status`, "utf8"));
  return { cpuS: ticks / 100, peakRssMb: hwm ? Number(hwm[1]) / 1024 : 0 };
}

async function stop(w: WorkerProc): Promise<void> {
  if (w.child.exitCode !== null) return;
  const exited = new Promise((r) => w.child.once("exit", r));
  w.child.kill("SIGTERM");
  await exited;
}

export const benchmark: Benchmark = {
  name: "workers",
  description: "large fleet (100×1,000; GITMESH_BENCH_FLEET=medium for 20×500) translated by 1, 2 and 4 gitmesh worker processes vs the server in-process, same Redis, same run; one-policy change → outputs published",
  async run({ log }) {
    const presetName = process.env.GITMESH_BENCH_FLEET ?? "large";
    if (!isFleetPreset(presetName)) throw new Error(`GITMESH_BENCH_FLEET=${presetName}: not a fleet preset`);
    const fleet = generateFleet(FLEET_PRESETS[presetName]);
    const state = loadDesiredState(fleet.files).state;
    const next = updateDesiredState(state, [fleet.onePolicyChange.after], []);
    const discovery = fleet.discovery as unknown as Map<string, DiscoverySnapshot>;
    log(`${presetName} fleet generated: ${String(discovery.size)} clusters`);
    const redis = await startRedis();
    const figures: Figure[] = [{ label: "machine: cores", value: cpus().length, unit: "cores" }];
    const label = presetName;

    /** One configuration: K worker processes (0 = the server pipeline translates in-process). */
    const run = async (k: number) => {
      const prefix = `bw${String(k)}-${String(process.pid)}`;
      const workers: WorkerProc[] = [];
      for (let i = 0; i < k; i++) workers.push(await startWorker(redis.url, prefix, `w${String(i + 1)}`));
      let outputs = 0;
      const changed = new Set<string>();
      let phase: "full" | "one" = "full";
      const p = await createPipeline({
        redis: redis.url,
        prefix: `${prefix}:`,
        work: k === 0,
        concurrency: { workspace: 1, cluster: 1 },
        onOutput: (e) => {
          outputs++;
          if (phase === "one") changed.add(e.cluster);
        },
      });
      try {
        if (k > 0) while ((await p.workers()) < k) await sleep(50);
        const load0 = loadavg()[0]!;
        const full = await time(async () => {
          for (const [c, s] of discovery) await p.setDiscovery(c, s);
          await p.setDesiredState({ commit: "c1", ref: "main", state, changedKeys: [] });
          await p.idle(TIMEOUT_MS);
        });
        phase = "one";
        const one = await time(async () => {
          await p.setDesiredState({ commit: "c2", ref: "main", state: next.state, changedKeys: next.changedKeys });
          await p.idle(TIMEOUT_MS);
        });
        const use = workers.map((w) => usage(w.child.pid!));
        return { full: full.ms, one: one.ms, outputs, changed: changed.size, load: load0, workerCpuS: use.reduce((a, u) => a + u.cpuS, 0), workerPeakMb: Math.max(0, ...use.map((u) => u.peakRssMb)) };
      } finally {
        await p.close();
        for (const w of workers) await stop(w);
      }
    };

    try {
      const base = await run(0);
      log(`in-process: full ${round(base.full)} ms, one-policy ${round(base.one)} ms (load ${round(base.load, 2)})`);
      figures.push(
        { label: `${label}: outputs published (full)`, value: base.outputs - base.changed, unit: "clusters" },
        { label: `${label}: full translation, server in-process (baseline)`, value: round(base.full / 1000, 2), unit: "s" },
        { label: `${label}: one-policy change → outputs published, in-process`, value: round(base.one), unit: "ms" },
      );
      for (const k of [1, 2, 4]) {
        const r = await run(k);
        log(`${String(k)} worker(s): full ${round(r.full)} ms, one-policy ${round(r.one)} ms, ${String(r.changed)} clusters changed (load ${round(r.load, 2)})`);
        figures.push(
          { label: `${label}: full translation, ${String(k)} worker process(es)`, value: round(r.full / 1000, 2), unit: "s" },
          { label: `${label}: speed-up of ${String(k)} worker(s) vs in-process`, value: round(base.full / r.full, 2), unit: "x" },
          { label: `${label}: one-policy change → outputs published, ${String(k)} worker(s)`, value: round(r.one), unit: "ms" },
          { label: `${label}: clusters whose output the change touched, ${String(k)} worker(s)`, value: r.changed, unit: "clusters" },
          { label: `${label}: worker CPU, ${String(k)} worker(s), all`, value: round(r.workerCpuS, 1), unit: "s" },
          { label: `${label}: worker peak RSS, ${String(k)} worker(s), largest`, value: round(r.workerPeakMb), unit: "MB" },
          { label: `${label}: load average at start, ${String(k)} worker(s)`, value: round(r.load, 2), unit: "" },
        );
      }
      figures.push({ label: "redis: used memory at the end", value: round(Number(/used_memory:(\d+)/.exec(await redisInfo(redis.url))?.[1] ?? 0) / MB, 1), unit: "MB" });
    } finally {
      await redis.stop();
    }
    return figures;
  },
};

async function redisInfo(url: string): Promise<string> {
  const { Redis } = await import("ioredis");
  const c = new Redis(url);
  try {
    return await c.info("memory");
  } finally {
    c.disconnect();
  }
}
