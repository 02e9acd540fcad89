/**
 * What a benchmark is, for bench/run.ts. A benchmark lives in `bench/<area>/<name>.bench.ts` and
 * exports `benchmark`; the runner finds it by file name, runs it in a child process of its own (so
 * peak memory belongs to that benchmark alone) and prints its figures in a table.
 */

export interface Figure {
  /** What was measured, e.g. `load 10k objects (median of 3)`. */
  readonly label: string;
  readonly value: number;
  /** `ms`, `MB`, `objects/s`, `x` (a ratio against a baseline measured in the same run), … */
  readonly unit: string;
}

export interface BenchmarkContext {
  /** How many timed repetitions to run (`--runs N`, default 3). */
  readonly runs: number;
  /** Progress lines for the terminal (stderr); figures are returned, not printed. */
  readonly log: (message: string) => void;
}

export interface Benchmark {
  /** Short name used on the command line (`npm run bench -- load`). */
  readonly name: string;
  readonly description: string;
  run(ctx: BenchmarkContext): Promise<Figure[]>;
}

/** Wall time of one call, in milliseconds. */
export async function time<T>(fn: () => T | Promise<T>): Promise<{ ms: number; result: T }> {
  const start = process.hrtime.bigint();
  const result = await fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, result };
}

/**
 * Runs `fn` `runs` times: median and minimum wall time, and median CPU time (user + system) of this
 * process. On a shared, busy machine CPU time is the steadier figure; wall time is what a user waits.
 */
export async function repeat(runs: number, fn: () => unknown): Promise<{ median: number; min: number; cpuMedian: number }> {
  const times: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < Math.max(1, runs); i++) {
    const before = process.cpuUsage();
    times.push((await time(fn)).ms);
    const used = process.cpuUsage(before);
    cpu.push((used.user + used.system) / 1000);
  }
  return { median: median(times), min: Math.min(...times), cpuMedian: median(cpu) };
}

/** The middle value (the upper one of an even count); NaN for none. */
export function median(list: readonly number[]): number {
  return [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? Number.NaN;
}

/** Heap in use after a full garbage collection (the runner starts children with --expose-gc). */
export function heapAfterGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

export const MB = 1024 * 1024;

export function round(value: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
