/**
 * The fresh process of the `translate-cold` benchmark (not a benchmark itself): reads a generated
 * fleet from the JSON file named on the command line, then, timing each step in wall and CPU time,
 * imports the config and translate modules, loads the desired state (parse + schema validation,
 * which is where the model's validators are first used) and translates the fleet: what a restarted
 * server does before its first output. Then the same load and translation again in this process,
 * `--warm N` times after a full GC each (fresh inputs: translateAll memoises per input identity).
 * Prints one JSON line (ColdChildReport) on stdout.
 */
import { readFileSync } from "node:fs";
import { PerformanceObserver } from "node:perf_hooks";

export interface Step {
  readonly ms: number;
  readonly cpuMs: number;
  /** Pause time of the garbage collections that ended during the step (main thread). */
  readonly gcMs: number;
  /**
   * CPU time of the main thread alone (Linux: /proc/thread-self/schedstat); `cpuMs` minus this is what
   * V8's helper threads spent: concurrent optimising compilation (TurboFan) and parallel/concurrent GC.
   * Absent where the kernel does not expose it.
   */
  readonly mainCpuMs?: number;
}

export interface ColdChildReport {
  /** Dynamic import of src/config and src/translate (module loading, through tsx in a checkout). */
  readonly importModules: Step;
  readonly cold: { readonly load: Step; readonly translate: Step };
  readonly warm: readonly { readonly load: Step; readonly translate: Step }[];
  readonly resources: number;
  /** Peak resident set size of the child, MiB (process.resourceUsage().maxRSS). */
  readonly peakRssMiB: number;
  /** The V8/Node flags the child ran with (process.execArgv, less the bench's own). */
  readonly flags: readonly string[];
}

const cpuNow = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** The main thread's CPU time in ms (first field of schedstat: nanoseconds on CPU), or undefined. */
const mainCpuNow = (): number | undefined => {
  try {
    return Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[0]) / 1e6;
  } catch {
    return undefined;
  }
};

// GC entries are delivered asynchronously; each step is synchronous, so the entries that ended
// within [start, end] are attributed to it once the observer has caught up (see settle()).
const gcEntries: { start: number; duration: number }[] = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcEntries.push({ start: e.startTime, duration: e.duration });
}).observe({ entryTypes: ["gc"] });
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 50));
const gcBetween = (from: number, to: number): number => gcEntries.filter((e) => e.start >= from && e.start < to).reduce((s, e) => s + e.duration, 0);

async function step<T>(fn: () => T | Promise<T>): Promise<{ step: Step; result: T }> {
  const m = mainCpuNow();
  const c = cpuNow();
  const t = performance.now();
  const result = await fn();
  const end = performance.now();
  const cpuMs = cpuNow() - c;
  const m1 = mainCpuNow();
  await settle();
  const mainCpuMs = m === undefined || m1 === undefined ? {} : { mainCpuMs: m1 - m };
  return { step: { ms: end - t, cpuMs, gcMs: gcBetween(t, end), ...mainCpuMs }, result };
}

async function main(): Promise<void> {
  const file = process.argv[2];
  const warmIndex = process.argv.indexOf("--warm");
  const warmRuns = warmIndex > 0 ? Number(process.argv[warmIndex + 1]) : 2;
  if (file === undefined) throw new Error("usage: cold-child.ts <fleet.json> [--warm N]");
  // Reading the input is not part of the cold path (a server reads Git; the bench reads a file).
  const input = JSON.parse(readFileSync(file, "utf8")) as { files: { path: string; content: string }[]; discovery: [string, unknown][] };

  const imported = await step(async () => ({ config: await import("../../src/config/index.js"), translate: await import("../../src/translate/index.js") }));
  const { config, translate } = imported.result;
  const importModules = imported.step;

  const discovery = new Map(input.discovery) as unknown as Parameters<typeof translate.translateAll>[1];
  const run = async () => {
    const load = await step(() => config.loadDesiredState(input.files));
    if (load.result.diagnostics.length > 0) throw new Error(`fleet: ${load.result.diagnostics.length} loader diagnostics`);
    const state = load.result.state;
    const tr = await step(() => translate.translateAll(state, discovery));
    let resources = 0;
    for (const c of tr.result.clusters.values()) resources += c.resources.length;
    return { load: load.step, translate: tr.step, resources };
  };
  const cold = await run();
  const warm: { load: Step; translate: Step }[] = [];
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let i = 0; i < warmRuns; i++) {
    gc?.();
    const w = await run();
    warm.push({ load: w.load, translate: w.translate });
  }
  const flags = process.execArgv.filter((a, i, all) => a !== "--expose-gc" && a !== "--import" && all[i - 1] !== "--import");
  const report: ColdChildReport = {
    importModules,
    cold: { load: cold.load, translate: cold.translate },
    warm,
    resources: cold.resources,
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
    flags,
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`cold-child: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
