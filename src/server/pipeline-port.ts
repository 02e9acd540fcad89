/**
 * What the server needs from the translation pipeline (src/queue), as a narrow port, and its one
 * adapter over src/queue's createPipeline (BullMQ on Redis, standalone in-process without Redis,
 * degraded in-process from memory while Redis is down).
 *
 * The pipeline delivers every new output version of every cluster to every replica (its own jobs
 * directly, other replicas' through Redis pub/sub), so each replica's relay always holds the newest
 * output of every cluster: an agent that reconnects to another replica gets it at once.
 */
import type { Registry } from "prom-client";
import type { Logger } from "../core/index.js";
import type { DesiredState } from "../config/index.js";
import type { DiscoverySnapshot } from "../discovery/index.js";
import { createPipeline, type OutputEvent, type Pipeline, type PipelineMode, type PipelineTranslators } from "../queue/index.js";
import type { RetentionOptions, SnapshotStore } from "../store/index.js";

export interface DesiredInput {
  readonly commit: string;
  readonly ref: string;
  readonly state: DesiredState;
  /** Object keys changed against the previous desired state (empty: re-translate everything). */
  readonly changedKeys: readonly string[];
  /** Clusters this commit allows to delete any number of objects at once (trailer `Gitmesh-Allow-Deletion`; `*` = all). */
  readonly allowMassDeletion?: readonly string[];
  readonly atMs: number;
}

/**
 * A new output version of one cluster. `complete`: the agent may prune every owned object absent
 * from it (deletions whose inputs are incomplete are held: their previous versions are in it, listed
 * in `held`); `options` travel to the agent as the OUTPUT_OPTIONS_KEY entry.
 */
export type PipelineOutput = OutputEvent;

export interface PipelineStatus {
  /** `redis` (BullMQ), `standalone` (no Redis configured), `degraded` (Redis down: in-process from memory). */
  readonly mode: PipelineMode | "stopped";
  /** Jobs waiting, delayed or running, per type (undefined when it could not be read). */
  readonly queueDepth?: Readonly<Record<string, number>>;
  /** Why the mode last changed. */
  readonly reason: string;
  /** Jobs this process runs at once per type (0: it translates nothing, `gitmesh worker` processes do). */
  readonly translationWorkers: number;
  /** Processes taking jobs now (with Redis: every replica's and `gitmesh worker`'s; undefined when it could not be read). */
  readonly workerProcesses?: number;
}

export interface PipelinePort {
  start(): Promise<void>;
  stop(): Promise<void>;
  setDesiredState(input: DesiredInput): Promise<void>;
  setDiscovery(cluster: string, snapshot: DiscoverySnapshot): Promise<void>;
  /** Every new output version (on every replica). Register before start(). */
  onOutput(listener: (output: PipelineOutput) => void): void;
  /** The store in use now (Redis, or the memory mirror while degraded/standalone). Only after start(). */
  readonly store: SnapshotStore;
  status(): Promise<PipelineStatus>;
  /** Resolves when no change or job is pending on any replica (tests, demo). */
  idle(timeoutMs?: number): Promise<void>;
}

export interface QueuePipelineOptions {
  /** Redis URL; absent: standalone (in-process, memory store). */
  readonly redisUrl?: string;
  /** Key prefix of store, queues and pub/sub. Default `gitmesh:`. */
  readonly prefix?: string;
  readonly logger: Logger;
  readonly registry?: Registry;
  /** Debounce of bursts of changes (default: the pipeline's, 50 ms). */
  readonly debounceMs?: number;
  /** The translation functions (a seam for tests: e.g. a workspace that always fails). Default src/translate's. */
  readonly translators?: PipelineTranslators;
  /** Jobs per type this process translates at once. Default 4; 0: none (needs Redis and `gitmesh worker` processes). */
  readonly workers?: number;
  /** Lock of a running job (stalled-job recovery), see PipelineOptions.jobLockMs. */
  readonly jobLockMs?: number;
  /** This replica's name in Redis' list of workers. */
  readonly identity?: string;
  /** How much per-commit history the store keeps (default: src/store's). */
  readonly retention?: RetentionOptions;
}

export function createQueuePipeline(options: QueuePipelineOptions): PipelinePort {
  const log = options.logger;
  const listeners: ((o: PipelineOutput) => void)[] = [];
  let pipeline: Pipeline | undefined;
  let reason = "not started";
  const workers = options.workers ?? 4;
  if (workers === 0 && options.redisUrl === undefined) throw new Error("--workers 0 needs Redis: without it nothing would translate");
  const need = (): Pipeline => {
    if (!pipeline) throw new Error("the pipeline is not started");
    return pipeline;
  };
  return {
    async start() {
      pipeline = await createPipeline({
        ...(options.redisUrl === undefined ? {} : { redis: options.redisUrl }),
        ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
        ...(options.registry === undefined ? {} : { registry: options.registry }),
        ...(options.debounceMs === undefined ? {} : { debounceMs: options.debounceMs }),
        ...(options.translators === undefined ? {} : { translators: options.translators }),
        ...(options.jobLockMs === undefined ? {} : { jobLockMs: options.jobLockMs }),
        ...(options.retention === undefined ? {} : { retention: options.retention }),
        ...(options.identity === undefined ? {} : { workerName: options.identity }),
        // --workers 0 (Redis only): no job runs here; while Redis is down the pipeline still
        // translates in-process from memory (degraded mode), since no worker can reach the queue then.
        concurrency: { workspace: Math.max(1, workers), cluster: Math.max(1, workers) },
        work: workers > 0,
        logger: log,
        onModeChange: (_mode, why) => {
          reason = why;
        },
        onOutput: (event) => {
          for (const l of listeners) l(event);
        },
      });
    },
    async stop() {
      const p = pipeline;
      pipeline = undefined;
      await p?.close();
    },
    setDesiredState: (input) =>
      need().setDesiredState({
        commit: input.commit,
        ref: input.ref,
        state: input.state,
        changedKeys: input.changedKeys,
        ...(input.allowMassDeletion === undefined ? {} : { allowMassDeletion: input.allowMassDeletion }),
      }),
    setDiscovery: (cluster, snapshot) => need().setDiscovery(cluster, snapshot),
    onOutput: (l) => listeners.push(l),
    get store() {
      return need().store();
    },
    async status() {
      if (!pipeline) return { mode: "stopped", reason, translationWorkers: workers };
      const depth = await pipeline.depth().catch(() => undefined);
      const processes = await pipeline.workers().catch(() => undefined);
      return { mode: pipeline.mode(), reason, translationWorkers: workers, ...(depth === undefined ? {} : { queueDepth: depth }), ...(processes === undefined ? {} : { workerProcesses: processes }) };
    },
    idle: (timeoutMs) => need().idle(timeoutMs),
  };
}
