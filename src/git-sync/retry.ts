/** Exponential backoff for infrastructure calls (fetch, push). Only transient errors are retried. */
import { backoffDelay as exponentialDelay, Reaction, reactionOf } from "../core/index.js";

export interface BackoffOptions {
  /** Total attempts including the first (default 5). */
  readonly attempts?: number;
  /** Delay before the second attempt (default 500 ms); doubles each time. */
  readonly initialDelayMs?: number;
  /** Upper bound of one delay (default 30 s). */
  readonly maxDelayMs?: number;
  /** Waits; injectable so callers control time (default: setTimeout). */
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * The owner's stop: once aborted, no further attempt is made and a wait ends at once (the last
   * error is thrown). A stopping server must not keep retrying against a Git server that is gone.
   */
  readonly signal?: AbortSignal;
}

/** `ms`, or less: ends as soon as `signal` aborts, and its timer with it (nothing is left to keep the process alive). */
function sleepUnlessAborted(ms: number, signal: AbortSignal, sleep: ((ms: number) => Promise<void>) | undefined): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = sleep === undefined ? setTimeout(() => done(), ms) : undefined;
    const done = () => {
      if (timer !== undefined) clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    signal.addEventListener("abort", done, { once: true });
    if (sleep !== undefined) void sleep(ms).then(done, done);
  });
}

export const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Delay before attempt `n` (1-based retries): initial · 2^(n-1), capped. Deterministic (no jitter) so tests can assert it. */
export function backoffDelay(retry: number, options: BackoffOptions = {}): number {
  return exponentialDelay({ initialMs: options.initialDelayMs ?? 500, maxMs: options.maxDelayMs ?? 30_000, factor: 2, jitter: 0 }, Math.max(0, retry - 1));
}

/**
 * Runs `fn` until it succeeds, a non-transient error is thrown, or attempts run out (then the last
 * error is thrown). `onRetry` sees each failure before the wait.
 */
export async function withBackoff<T>(
  fn: (attempt: number) => Promise<T>,
  options: BackoffOptions & { readonly onRetry?: (err: unknown, attempt: number, delayMs: number) => void } = {},
): Promise<T> {
  const attempts = Math.max(1, options.attempts ?? 5);
  const sleep = (ms: number) => (options.signal === undefined ? (options.sleep ?? defaultSleep)(ms) : sleepUnlessAborted(ms, options.signal, options.sleep));
  const aborted = () => options.signal?.aborted === true;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (attempt >= attempts || reactionOf(err) !== Reaction.Transient || aborted()) throw err;
      const delay = backoffDelay(attempt, options);
      options.onRetry?.(err, attempt, delay);
      await sleep(delay);
      if (aborted()) throw err;
    }
  }
}
