/**
 * Job runners: the same semantics over BullMQ (Redis) and in-process (standalone mode and Redis
 * outages). Errors are mapped here, once, by their reaction (CONVENTIONS §5):
 *
 * - needs-human → no retry (BullMQ `UnrecoverableError`), the failure is final;
 * - retry-later → the job is delayed by `retryAfterMs` (BullMQ `moveToDelayed` + `DelayedError`),
 *   without spending an attempt, at most `maxDelays` times;
 * - transient (and any unknown error) → retried with exponential backoff, `attempts` in all.
 *
 * A job id is derived from the job's content: adding a job whose id is waiting, delayed or
 * running is a no-op (dedupe). Retrying jobs wait in the delayed set, not in a worker slot, so a
 * failing unit never holds up healthy ones.
 */
import { backoffDelay, describeError, Reaction, reactionOf, RetryLaterError } from "../core/index.js";

export type JobType = "workspace" | "cluster";
export const JOB_TYPES: readonly JobType[] = ["workspace", "cluster"];

export interface WorkspaceJobData {
  readonly workspace: string;
  /** Commit current when the job was enqueued (the job translates the newest inputs). */
  readonly commit: string;
}
export interface ClusterJobData {
  readonly cluster: string;
}
export type JobData = WorkspaceJobData | ClusterJobData;

export interface JobSpec {
  readonly type: JobType;
  readonly id: string;
  readonly data: JobData;
  readonly delayMs?: number;
}

export type JobResult = "completed" | "retrying" | "delayed" | "failed";

/** What happened to one run of a job. */
export interface JobEvent {
  readonly type: JobType;
  readonly id: string;
  /** Workspace or cluster name. */
  readonly unit: string;
  readonly result: JobResult;
  /** 1-based attempt number (delays do not count). */
  readonly attempt: number;
  readonly error?: { readonly code: string; readonly reaction: Reaction; readonly message: string };
}

export type JobHandler = (type: JobType, data: JobData) => Promise<void>;

export interface RunnerSettings {
  readonly concurrency: Readonly<Record<JobType, number>>;
  readonly attempts: number;
  readonly backoffMs: number;
  readonly maxDelays: number;
  readonly handler: JobHandler;
  readonly onEvent: (event: JobEvent) => void;
}

export interface JobRunner {
  readonly kind: "bullmq" | "in-process";
  add(spec: JobSpec): Promise<void>;
  /** Jobs waiting, delayed or running, per type. */
  depth(): Promise<Record<JobType, number>>;
  /** Processes taking jobs (BullMQ: connected workers of every process; in-process: 1, this one). */
  workers(): Promise<number>;
  /** Stops taking jobs; waits for running ones unless `force`. */
  close(force?: boolean): Promise<void>;
}

export function unitOf(data: JobData): string {
  return "workspace" in data ? data.workspace : data.cluster;
}

/** Classifies a thrown error; `final` tells whether the job gives up. */
export function classify(err: unknown, attempt: number, delays: number, s: Pick<RunnerSettings, "attempts" | "maxDelays">): {
  result: JobResult;
  delayMs?: number;
  error: NonNullable<JobEvent["error"]>;
} {
  const reaction = reactionOf(err);
  const code = typeof err === "object" && err !== null && "code" in err && typeof err.code === "string" ? err.code : "Error";
  const error = { code, reaction, message: describeError(err) };
  if (reaction === Reaction.NeedsHuman) return { result: "failed", error };
  if (reaction === Reaction.RetryLater) {
    if (delays >= s.maxDelays) return { result: "failed", error };
    return { result: "delayed", delayMs: err instanceof RetryLaterError ? err.retryAfterMs : 100, error };
  }
  return { result: attempt >= s.attempts ? "failed" : "retrying", error };
}

interface Entry {
  readonly spec: JobSpec;
  attempt: number;
  delays: number;
  timer?: NodeJS.Timeout;
}

/** The in-process runner: same dedupe, delays, concurrency, retries and error mapping as BullMQ. */
export function createInProcessRunner(s: RunnerSettings): JobRunner {
  const entries = new Map<string, Entry>();
  const ready: Record<JobType, Entry[]> = { workspace: [], cluster: [] };
  const running: Record<JobType, number> = { workspace: 0, cluster: 0 };
  const inFlight = new Set<Promise<void>>();
  let closed = false;

  const schedule = (e: Entry, delayMs: number) => {
    if (delayMs <= 0) {
      ready[e.spec.type].push(e);
      pump();
      return;
    }
    e.timer = setTimeout(() => {
      delete e.timer;
      ready[e.spec.type].push(e);
      pump();
    }, delayMs);
  };

  const run = async (e: Entry) => {
    const { type, id, data } = e.spec;
    try {
      await s.handler(type, data);
      entries.delete(id);
      s.onEvent({ type, id, unit: unitOf(data), result: "completed", attempt: e.attempt });
    } catch (err) {
      const c = classify(err, e.attempt, e.delays, s);
      s.onEvent({ type, id, unit: unitOf(data), result: c.result, attempt: e.attempt, error: c.error });
      if (c.result === "failed" || closed) entries.delete(id);
      else if (c.result === "delayed") {
        e.delays++;
        schedule(e, c.delayMs ?? 0);
      } else {
        e.attempt++;
        // BullMQ's "exponential" backoff (no jitter, no cap), through the one backoff implementation.
        schedule(e, backoffDelay({ initialMs: s.backoffMs, maxMs: Number.POSITIVE_INFINITY, jitter: 0 }, e.attempt - 2));
      }
    }
  };

  const pump = () => {
    if (closed) return;
    for (const type of JOB_TYPES) {
      while (running[type] < s.concurrency[type] && ready[type].length > 0) {
        const e = ready[type].shift()!;
        running[type]++;
        const p = run(e).finally(() => {
          running[type]--;
          inFlight.delete(p);
          pump();
        });
        inFlight.add(p);
      }
    }
  };

  return {
    kind: "in-process",
    add(spec) {
      if (closed || entries.has(spec.id)) return Promise.resolve();
      const e: Entry = { spec, attempt: 1, delays: 0 };
      entries.set(spec.id, e);
      schedule(e, spec.delayMs ?? 0);
      return Promise.resolve();
    },
    workers: () => Promise.resolve(closed ? 0 : 1),
    depth() {
      const d: Record<JobType, number> = { workspace: 0, cluster: 0 };
      for (const e of entries.values()) d[e.spec.type]++;
      return Promise.resolve(d);
    },
    async close(force = false) {
      closed = true;
      for (const e of entries.values()) if (e.timer !== undefined) clearTimeout(e.timer);
      ready.workspace.length = 0;
      ready.cluster.length = 0;
      if (!force) await Promise.allSettled([...inFlight]);
      entries.clear();
    },
  };
}
