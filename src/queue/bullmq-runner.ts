/**
 * The BullMQ runner: one queue per job type (`<prefix>bull:workspace`, `…:cluster`) so that a
 * burst of workspace jobs never delays cluster jobs, one Worker per type in this process. The only
 * file (with pipeline.ts' connection handling) that knows BullMQ.
 */
import { EventEmitter } from "node:events";
import { DelayedError, Queue, RedisConnection, UnrecoverableError, Worker, type Job } from "bullmq";
import { Reaction, type Logger } from "../core/index.js";
import type { RedisClient } from "./redis-connection.js";
import { classify, JOB_TYPES, unitOf, type JobData, type JobRunner, type JobType, type RunnerSettings } from "./runner.js";

export interface BullRunnerOptions extends RunnerSettings {
  /**
   * Connection for queues and workers (BullMQ needs `maxRetriesPerRequest: null`, on a Cluster in its
   * `redisOptions`); not closed by the runner. Not `lazyConnect`: each worker duplicates it for its
   * blocking connection, and BullMQ waits for a lazy duplicate with `connect()`, which rejects at the first
   * failed attempt (Redis down, a Sentinel failover not finished) — that worker then never takes a job
   * again. A duplicate that connects by itself is waited for until it is ready, through every retry.
   */
  readonly connection: RedisClient;
  /** BullMQ key prefix, e.g. `gitmesh:bull` (on a Cluster a hash tag, `{gitmesh}:bull`, so that each script's keys share a slot). */
  readonly prefix: string;
  /** Run workers in this process (false: only enqueue). */
  readonly work: boolean;
  /**
   * Lock of a running job (BullMQ `lockDuration`, renewed at half of it while the job runs); a job
   * whose worker died is found stalled and handed back to the queue after at most about twice this.
   * Default 30 000 ms.
   */
  readonly jobLockMs?: number;
  /** Name of this process among the workers (BullMQ client name; `getWorkers`). */
  readonly workerName?: string;
  readonly logger: Logger;
}

/** Entries kept in each queue's BullMQ event stream. */
const EVENTS_KEPT = 500;

/** A job whose worker died this many times is failed (a poison job must not kill every worker in turn). */
const MAX_STALLED = 3;

/**
 * BullMQ 5's connections, minus one crash: a connection reports a failed start-up (`init()`) by
 * emitting `error` from a promise handler, and `close()` removes every listener first. A worker closed
 * while its blocking connection is still connecting — Redis went away moments after the worker was
 * made, and the pipeline closes that runner on entering degraded mode — then rejects with the
 * connection's error (`connect ECONNREFUSED`) where nobody listens: an unhandled rejection, which ends a
 * Node process. An `error` with no listener left is the error of a connection closed on purpose:
 * dropped, as BullMQ 6 does. Queues and workers get this class for their own connection; a worker's
 * blocking connection is always BullMQ's class, so its `emit` is wrapped the same way.
 */
function emitErrorOnlyToListeners(emitter: Pick<EventEmitter, "emit" | "listenerCount">): void {
  const emit = emitter.emit.bind(emitter);
  emitter.emit = (event: string | symbol, ...args: unknown[]): boolean => (event === "error" && emitter.listenerCount("error") === 0 ? false : emit(event, ...args));
}

class ClosableConnection extends RedisConnection {
  constructor(...args: ConstructorParameters<typeof RedisConnection>) {
    super(...args);
    emitErrorOnlyToListeners(this);
  }
}

export function createBullRunner(o: BullRunnerOptions): JobRunner {
  if (o.work && o.connection.options.lazyConnect === true) throw new Error("createBullRunner: the connection must not be lazyConnect (BullMQ's workers duplicate it, and a lazy duplicate that fails its first attempt ends its worker)");
  const queues = new Map<JobType, Queue>();
  const workers: Worker[] = [];
  for (const type of JOB_TYPES) {
    // BullMQ's event stream (`<prefix>:<type>:events`) is read by nothing in gitmesh (results come
    // through the job handlers and pub/sub); keep a short tail for operators' tools, not BullMQ's 10,000.
    const q = new Queue(type, { connection: o.connection, prefix: o.prefix, streams: { events: { maxLen: EVENTS_KEPT } } }, ClosableConnection);
    q.on("error", (err) => o.logger.debug("queue error", { type, error: err.message }));
    queues.set(type, q);
    if (!o.work) continue;
    const w = new Worker(type, (job: Job<JobData>, token?: string) => process(type, job, token), {
      connection: o.connection,
      prefix: o.prefix,
      concurrency: o.concurrency[type],
      lockDuration: o.jobLockMs ?? 30_000,
      stalledInterval: o.jobLockMs ?? 30_000,
      maxStalledCount: MAX_STALLED,
      ...(o.workerName === undefined ? {} : { name: o.workerName }),
    }, ClosableConnection);
    const blocking = (w as unknown as { blockingConnection?: unknown }).blockingConnection;
    if (blocking instanceof EventEmitter) emitErrorOnlyToListeners(blocking as EventEmitter);
    w.on("error", (err) => o.logger.debug("worker error", { type, error: err.message }));
    w.on("stalled", (id) => o.logger.warn("job stalled (its worker stopped); handed back to the queue", { type, id }));
    // A job that stalled too often never reaches process(): report its failure like any other, so
    // that the pipeline records it (a workspace failure must not leave its commit pending forever).
    w.on("failed", (job, err) => {
      if (job === undefined || !/stalled/i.test(err.message) || err instanceof UnrecoverableError) return;
      o.onEvent({ type, id: job.id ?? "", unit: unitOf(job.data), result: "failed", attempt: job.attemptsMade + 1, error: { code: "JobStalledError", reaction: Reaction.Transient, message: err.message } });
    });
    workers.push(w);
  }

  async function process(type: JobType, job: Job<JobData>, token: string | undefined): Promise<void> {
    const attempt = job.attemptsMade + 1;
    const id = job.id ?? "";
    try {
      await o.handler(type, job.data);
      o.onEvent({ type, id, unit: unitOf(job.data), result: "completed", attempt });
    } catch (err) {
      const delays = Math.max(0, job.attemptsStarted - 1 - job.attemptsMade);
      const c = classify(err, attempt, delays, o);
      o.onEvent({ type, id, unit: unitOf(job.data), result: c.result, attempt, error: c.error });
      if (c.result === "delayed") {
        await job.moveToDelayed(Date.now() + (c.delayMs ?? 0), token);
        throw new DelayedError();
      }
      if (c.result === "failed") throw new UnrecoverableError(c.error.message);
      throw err;
    }
  }

  return {
    kind: "bullmq",
    async add(spec) {
      await queues.get(spec.type)!.add(spec.type, spec.data, {
        jobId: spec.id,
        delay: spec.delayMs ?? 0,
        attempts: o.attempts,
        backoff: { type: "exponential", delay: o.backoffMs },
        removeOnComplete: true,
        removeOnFail: true,
      });
    },
    async workers() {
      return queues.get("workspace")!.getWorkersCount();
    },
    async depth() {
      const d: Record<JobType, number> = { workspace: 0, cluster: 0 };
      for (const type of JOB_TYPES) {
        const c = await queues.get(type)!.getJobCounts("waiting", "active", "delayed", "prioritized", "paused");
        d[type] = Object.values(c).reduce((a, b) => a + b, 0);
      }
      return d;
    },
    async close(force = false) {
      const all = [...workers.map((w) => w.close(force)), ...[...queues.values()].map((q) => q.close())];
      if (!force) {
        await Promise.all(all);
        return;
      }
      // Redis may be gone: do not wait for a clean shutdown forever.
      await Promise.race([Promise.allSettled(all), new Promise((r) => setTimeout(r, 1000).unref())]);
    },
  };
}
