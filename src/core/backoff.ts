/**
 * Exponential backoff with ± jitter, the one implementation every retry loop uses (the agent's
 * runnables and informers, the relay client's reconnects, Git fetch/push retries).
 */
export interface BackoffOptions {
  /** First delay (default 200 ms). */
  readonly initialMs?: number;
  /** Cap (default 30 s). */
  readonly maxMs?: number;
  /** Growth factor (default 2). */
  readonly factor?: number;
  /** ± fraction of jitter (default 0.2; 0 makes the delays deterministic). */
  readonly jitter?: number;
}

/** Delay before retry number `attempt` (0, 1, 2, …): initialMs · factor^attempt, capped at maxMs, ± jitter. */
export function backoffDelay(options: BackoffOptions, attempt: number, random: () => number = Math.random): number {
  const initial = options.initialMs ?? 200;
  const base = Math.min(options.maxMs ?? 30_000, initial * (options.factor ?? 2) ** attempt);
  return Math.max(0, base * (1 + (options.jitter ?? 0.2) * (2 * random() - 1)));
}
