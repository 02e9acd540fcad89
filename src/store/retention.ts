/**
 * How much history the snapshot store keeps (issue #17). Everything the store holds per commit is
 * bounded by count and by age; what it holds per cluster or per workspace is bounded by the clusters
 * and workspaces configured (see README.md "Retention" for what is kept and why).
 *
 * Nothing the pipeline still needs is ever dropped: the current desired state and the current
 * commit's convergence record are kept whatever their age or rank, and a pending set only expires
 * after `pendingTtlMs` without any change (every workspace job that finishes touches the current one).
 */

export interface RetentionOptions {
  /** Desired states kept besides the current one (the newest by when they were stored). Default 8. */
  readonly desiredStates?: number;
  /**
   * Commits whose convergence record is kept, the newest by their first entry (the current commit's
   * is kept besides, whatever its rank). Default 100, as many commits as the server's API lists.
   */
  readonly convergenceCommits?: number;
  /**
   * Age bound (ms): a desired state is dropped this long after it stopped being current, a
   * convergence record of a commit that is not current this long after its last entry.
   * Default 7 days.
   */
  readonly maxAgeMs?: number;
  /**
   * A pending set (workspaces of a commit still to translate) expires this long after its last
   * change, so that a process that died mid-commit cannot leak it; an empty set is removed at once.
   * Default 1 hour (a workspace job holds its unit lock for at most a minute).
   */
  readonly pendingTtlMs?: number;
}

export type Retention = Readonly<Required<RetentionOptions>>;

const DAY_MS = 24 * 60 * 60 * 1000;

export const DEFAULT_RETENTION: Retention = Object.freeze({
  desiredStates: 8,
  convergenceCommits: 100,
  maxAgeMs: 7 * DAY_MS,
  pendingTtlMs: 60 * 60 * 1000,
});

/**
 * The options with their defaults, checked (a bad value is a bug in the composition root, which
 * validates user input first: thrown as a RangeError naming the option).
 */
export function resolveRetention(options: RetentionOptions | undefined): Retention {
  const d = DEFAULT_RETENTION;
  const r: Retention = {
    desiredStates: options?.desiredStates ?? d.desiredStates,
    convergenceCommits: options?.convergenceCommits ?? d.convergenceCommits,
    maxAgeMs: options?.maxAgeMs ?? d.maxAgeMs,
    pendingTtlMs: options?.pendingTtlMs ?? d.pendingTtlMs,
  };
  const check = (name: keyof Retention, min: number) => {
    const v = r[name];
    if (!Number.isSafeInteger(v) || v < min) throw new RangeError(`snapshot store retention: ${name} must be an integer ≥ ${min}, not ${String(v)}`);
  };
  check("desiredStates", 0);
  check("convergenceCommits", 0);
  check("maxAgeMs", 1);
  check("pendingTtlMs", 1);
  return Object.freeze(r);
}
