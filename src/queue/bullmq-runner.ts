/**
 * The BullMQ runner: one queue per job type (`<prefix>bull:workspace`, `…:cluster`) so that a
 * burst of workspace jobs never delays cluster jobs, one Worker per type in this process. The only
 * file (with pipeline.ts' connection handling) that knows BullMQ.
 */
import { DelayedError, Queue, UnrecoverableError, Worker, type Job } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "../core/index.js";
import { classify, JOB_TYPES, unitOf, type JobData, type JobRunner, type JobType, type RunnerSettings } from "./runner.js";

export interface BullRunnerOptions extends RunnerSettings {
  /** Connection for queues and workers (BullMQ needs `maxRetriesPerRequest: null`); not closed by the runner. */
  readonly connection: Redis;
  /** BullMQ key prefix, e.g. `gitmesh:bull`. */
  readonly prefix: string;
  /** Run workers in this process (false: only enqueue). */
  readonly work: boolean;
  readonly logger: Logger;
}

export function createBullRunner(o: BullRunnerOptions): JobRunner {
  const queues = new Map<JobType, Queue>();
  const workers: Worker[] = [];
  for (const type of JOB_TYPES) {
    const q = new Queue(type, { connection: o.connection, prefix: o.prefix });
    q.on("error", (err) => o.logger.debug("queue error", { type, error: err.message }));
    queues.set(type, q);
    if (!o.work) continue;
    const w = new Worker(type, (job: Job<JobData>, token?: string) => process(type, job, token), {
      connection: o.connection,
      prefix: o.prefix,
      concurrency: o.concurrency[type],
    });
    w.on("error", (err) => o.logger.debug("worker error", { type, error: err.message }));
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
