/**
 * The translation pipeline (DESIGN.md "Management server"): desired state and discovery in,
 * versioned output snapshots per cluster out, through workspace jobs and cluster jobs.
 *
 *   setDesiredState / setDiscovery ─(scheduler.ts: debounce, serial chain)→ flush: affectedWorkspaces → workspace jobs
 *   workspace job (job-handlers.ts): translateWorkspace → fragments per cluster (hash) → cluster jobs for changed ones
 *   cluster job (job-handlers.ts): wait until no workspace of the current commit is pending → assembleCluster →
 *                holds.ts → compare with the last output → new version → replica-events.ts: pub/sub + onOutput
 *   runner (mode-switch.ts): BullMQ in `redis` mode, in-process in `standalone` and `degraded`
 *
 * Modes (mode-switch.ts): `redis` (BullMQ + Redis store with its memory mirror, mirrored-store.ts, shared by
 * replicas), `standalone` (no Redis: the same handlers on the in-process runner over the memory store) and
 * `degraded` (Redis lost under a running pipeline: in-process from the memory mirror until Redis answers
 * again, then the mirror is written back — write-back.ts, outputs only if newer — and the queue resumes).
 *
 * Parts: input-cache.ts, scheduler.ts, job-handlers.ts (with holds.ts, shared-reads.ts), replica-events.ts,
 * mode-switch.ts (with write-back.ts, runner.ts / bullmq-runner.ts), mirrored-store.ts. createPipeline
 * composes them; pipelineApi is the front door over them.
 */
import { randomUUID } from "node:crypto";
import type { Registry } from "prom-client";
import { silentLogger, type Logger } from "../core/index.js";
import type { DesiredState } from "../config/index.js";
import { snapshotChecksum, type DiscoverySnapshot } from "../discovery/index.js";
import { assembleCluster as realAssemble, translateWorkspace as realTranslate } from "../translate/index.js";
import { createMemoryStore, DEFAULT_PREFIX, type DesiredRecord, type OutputRecord, type RetentionOptions, type SnapshotStore } from "../store/index.js";
import { createMirroredStore } from "./mirrored-store.js";
import { createInputCache, type InputCache } from "./input-cache.js";
import { createScheduler, type Scheduler } from "./scheduler.js";
import { createReplicaEvents, type ReplicaEvents } from "./replica-events.js";
import { createJobHandlers, type PipelineTranslators } from "./job-handlers.js";
import { createModeSwitch, type ModeSwitch, type PipelineMode, type PipelineRole } from "./mode-switch.js";
import { createPipelineMetrics } from "./metrics.js";
import { parseRedisUrl, redisKeyPrefix, type RedisConnectionConfig } from "./redis-connection.js";
import type { JobEvent, JobSpec, JobType, RunnerSettings } from "./runner.js";

export { outputOptions, type PipelineTranslators } from "./job-handlers.js";
export type { PipelineMode, PipelineRole } from "./mode-switch.js";

/**
 * A new output snapshot for a cluster (this replica's job, or another replica's via pub/sub): the stored
 * record without its hash and time. `complete`: the agent may prune every owned object absent from
 * `resources` (held objects are in them); `options`: for the agent (the OUTPUT_OPTIONS_KEY entry);
 * `held`: deletions held back, their previous versions in `resources`; `incompleteReason`: why not complete.
 */
export type OutputEvent = Omit<OutputRecord, "hash" | "atMs">;

export interface DesiredStateInput {
  readonly commit: string;
  readonly ref: string;
  readonly state: DesiredState;
  /** Keys changed since the previous desired state (from updateDesiredState); empty = re-translate everything. */
  readonly changedKeys: Iterable<string>;
  /** Clusters this commit allows to delete any number of objects at once (its `Gitmesh-Allow-Deletion` trailers; `*` = all). */
  readonly allowMassDeletion?: readonly string[];
}

export interface PipelineOptions {
  /**
   * Redis: a URL (a single server, Sentinel or Cluster; forms in redis-connection.ts) or a config from
   * `parseRedisUrl`. Absent: standalone mode (in-process, memory store).
   */
  readonly redis?: string | RedisConnectionConfig;
  /** Key prefix for the store, the queues (`<prefix>bull`) and pub/sub (`<prefix>events`). Default `gitmesh:`. */
  readonly prefix?: string;
  readonly logger?: Logger;
  /** prom-client registry for the pipeline's metrics (none registered when absent). */
  readonly registry?: Registry;
  /** Called for every new output version of a cluster this replica wants (see `wantsOutput`). */
  readonly onOutput?: (event: OutputEvent) => void | Promise<void>;
  /** Which clusters this replica delivers (default: all). */
  readonly wantsOutput?: (cluster: string) => boolean;
  /** Called on every mode change (and once at start). */
  readonly onModeChange?: (mode: PipelineMode, reason: string) => void;
  /** Called for every job run (tests, tracing). */
  readonly onJob?: (event: JobEvent) => void;
  /** Quiet time that ends a burst of changes. Default 50 ms. */
  readonly debounceMs?: number;
  /** A burst is flushed at the latest after this long. Default 500 ms. */
  readonly maxDebounceMs?: number;
  /** Concurrent jobs per type in this process. Default workspace 4, cluster 4. */
  readonly concurrency?: Partial<Record<JobType, number>>;
  /** Attempts for transient failures (first run included). Default 5. */
  readonly attempts?: number;
  /** First backoff delay; doubles per attempt. Default 100 ms. */
  readonly backoffMs?: number;
  /** How often a cluster job waits for pending workspaces (retry-later) before giving up. Default 2400 (×25 ms). */
  readonly maxDelays?: number;
  /** Run workers in this process. Default true (false: a replica that only enqueues and delivers). */
  readonly work?: boolean;
  /** Default `server`; `worker` needs `redis`. */
  readonly role?: PipelineRole;
  /**
   * Lock of a running job in Redis, renewed while it runs: a job whose process died is handed back
   * to the queue after at most about twice this (BullMQ stalled-job recovery). Default 30 000 ms.
   */
  readonly jobLockMs?: number;
  /** Name of this process in Redis' list of workers (default: none). */
  readonly workerName?: string;
  readonly translators?: PipelineTranslators;
  /** Lease of the per-workspace lock held while a workspace job runs (a worker that died holds it this long). Default twice `jobLockMs` (60 000 ms). */
  readonly unitLockMs?: number;
  /** Wall clock (ms). Default Date.now. */
  readonly now?: () => number;
  /**
   * How much per-commit history the store keeps (desired states, convergence records, pending sets), in
   * Redis and in the memory mirror alike. Defaults: src/store DEFAULT_RETENTION (8 desired states,
   * 100 commits' convergence, 7 days, pending sets 1 hour after their last change).
   */
  readonly retention?: RetentionOptions;
}

export interface Pipeline {
  mode(): PipelineMode;
  readonly role: PipelineRole;
  setDesiredState(input: DesiredStateInput): Promise<void>;
  setDiscovery(cluster: string, snapshot: DiscoverySnapshot): Promise<void>;
  /** The store in use now (Redis in `redis` mode, the memory mirror otherwise). */
  store(): SnapshotStore;
  getOutput(cluster: string): Promise<OutputRecord | undefined>;
  /** Records an agent's ACK (or NACK) of an output version in the commit's convergence record. */
  recordApplied(cluster: string, applied: { version: number; sourceCommit: string; atMs: number; nack?: string }): Promise<void>;
  /** Jobs waiting, delayed or running, per type. */
  depth(): Promise<Record<JobType, number>>;
  /** Processes taking jobs now: with Redis, every process's workers connected to the queues (this one's included); in-process, 1. */
  workers(): Promise<number>;
  /** Resolves when no change is waiting for its debounce and no job is queued or running (all replicas). */
  idle(timeoutMs?: number): Promise<void>;
  /**
   * Stops. Running jobs are finished first; with `graceMs`, at most that long, after which they are
   * abandoned to Redis (handed back to the queue when their lock expires, see `jobLockMs`).
   */
  close(graceMs?: number): Promise<void>;
}

export async function createPipeline(options: PipelineOptions = {}): Promise<Pipeline> {
  const log = options.logger ?? silentLogger;
  const redisConfig = typeof options.redis === "string" ? parseRedisUrl(options.redis) : options.redis;
  // On a Redis Cluster the prefix is a hash tag (`{gitmesh}:`): every key in one slot (redisKeyPrefix).
  const prefix = redisKeyPrefix(redisConfig, options.prefix ?? DEFAULT_PREFIX);
  const now = options.now ?? Date.now;
  const origin = randomUUID();
  const role: PipelineRole = options.role ?? "server";
  if (role === "worker" && options.redis === undefined) throw new Error("a worker pipeline needs Redis: its jobs and inputs are there");
  const jobLockMs = options.jobLockMs ?? 30_000;
  const wants = role === "worker" ? () => false : (options.wantsOutput ?? (() => true));
  const metrics = createPipelineMetrics(options.registry, () => modes.runner().depth());
  const mirror = createMemoryStore({ retention: options.retention, now });
  /** Unit locks taken in Redis that could not be released because Redis went away (token → name). */
  const unreleased = new Map<string, string>();

  // setDesiredState / setDiscovery ─(scheduler: debounce, flush)→ workspace jobs ─(job handlers)→ cluster jobs → events
  const inputs = createInputCache();
  const enqueue = (job: JobSpec) => modes.runner().add(job);
  const scheduler = createScheduler({ store: () => active(), inputs, enqueue, debounceMs: options.debounceMs ?? 50, maxDebounceMs: options.maxDebounceMs ?? 500, now, logger: log });
  const events = createReplicaEvents({ origin, channel: `${prefix}events`, redis: () => modes.redis(), mirror, wants, ...(options.onOutput === undefined ? {} : { onOutput: options.onOutput }), noteOutput: (r) => scheduler.noteOutput(r), logger: log });
  const handlers = createJobHandlers({
    store: () => active(),
    inputs,
    enqueue,
    reassess: (store, stamp, all) => scheduler.reassess(store, stamp, all),
    announce: (record) => events.announce(record),
    translators: options.translators ?? { translateWorkspace: realTranslate, assembleCluster: realAssemble },
    metrics,
    lockMs: options.unitLockMs ?? 2 * jobLockMs,
    unreleased,
    now,
    logger: log,
    ...(options.onJob === undefined ? {} : { onJob: options.onJob }),
  });
  const settings: RunnerSettings = {
    concurrency: { workspace: options.concurrency?.workspace ?? 4, cluster: options.concurrency?.cluster ?? 4 },
    attempts: options.attempts ?? 5,
    backoffMs: options.backoffMs ?? 100,
    maxDelays: options.maxDelays ?? 2400,
    ...handlers,
  };
  // Modes: standalone, redis ⇄ degraded (mode-switch.ts), the runner in use with them.
  const modes = createModeSwitch({
    ...(redisConfig === undefined ? {} : { redis: redisConfig }),
    prefix,
    channel: `${prefix}events`,
    role,
    origin,
    settings,
    bull: { jobLockMs, ...(options.workerName === undefined ? {} : { workerName: options.workerName }), work: options.work ?? true },
    mirror,
    unreleased,
    scheduler,
    events,
    ...(options.retention === undefined ? {} : { retention: options.retention }),
    now,
    logger: log,
    onMode(mode, reason) {
      for (const m of ["redis", "degraded", "standalone"] as const) metrics.mode.set({ mode: m }, m === mode ? 1 : 0);
      // Degraded is an outage an operator must see (Redis down); the other modes are normal operation.
      if (mode === "degraded") log.warn("pipeline mode", { mode, reason });
      else log.info("pipeline mode", { mode, reason });
      options.onModeChange?.(mode, reason);
    },
  });

  // The store in use: Redis with a write-through memory mirror, or the mirror alone. A worker reads
  // and writes Redis only: it has no inputs of its own to mirror or write back.
  let mirroredCache: SnapshotStore | undefined;
  const active = (): SnapshotStore => {
    const r = modes.redisStore();
    if (r === undefined) return mirror;
    return role === "worker" ? r : modes.mode() === "redis" ? (mirroredCache ??= createMirroredStore(r, mirror)) : mirror;
  };

  await modes.start();
  return pipelineApi({ role, origin, now, modes, scheduler, events, inputs, active });
}

/** The front door over the parts: inputs on the serial chain, reads from the store in use, close in order. */
function pipelineApi(p: {
  role: PipelineRole;
  origin: string;
  now: () => number;
  modes: ModeSwitch;
  scheduler: Scheduler;
  events: ReplicaEvents;
  inputs: InputCache;
  active: () => SnapshotStore;
}): Pipeline {
  const { role, origin, now, modes, scheduler, events, inputs, active } = p;
  const serverOnly = (what: string) => {
    if (role === "worker") throw new Error(`${what}: a worker pipeline takes no inputs (the server does)`);
  };
  const depth = () => modes.runner().depth();
  return {
    mode: () => modes.mode(),
    role,
    store: () => active(),
    setDesiredState: (input) =>
      scheduler.serial(async () => {
        serverOnly("setDesiredState");
        const pointer = await active().getDesiredPointer();
        if (pointer?.commit === input.commit) return;
        const keys = [...input.changedKeys];
        const allow = [...new Set(input.allowMassDeletion ?? [])].sort();
        const record: DesiredRecord = { commit: input.commit, ref: input.ref, generation: (pointer?.generation ?? 0) + 1, state: input.state, changedKeys: keys, ...(allow.length > 0 ? { allowMassDeletion: allow } : {}), atMs: now() };
        await modes.write(active, (s) => s.putDesired(record));
        inputs.remember(record);
        await events.publish({ origin, type: "desired", commit: record.commit });
        scheduler.changed({ keys, all: keys.length === 0 });
      }),
    setDiscovery: (cluster, snapshot) =>
      scheduler.serial(async () => {
        serverOnly("setDiscovery");
        const checksum = snapshotChecksum(snapshot);
        if ((await active().discoveryChecksums()).get(cluster) === checksum) return;
        await modes.write(active, (s) => s.putDiscovery({ cluster, checksum, snapshot, atMs: now() }));
        await events.publish({ origin, type: "discovery", cluster });
        scheduler.changed({ cluster });
      }),
    getOutput: (cluster) => active().getOutput(cluster),
    async recordApplied(cluster, applied) {
      await active().recordConvergence(applied.sourceCommit, {
        cluster,
        version: applied.version,
        ...(applied.nack === undefined ? { appliedAtMs: applied.atMs } : { nack: { message: applied.nack, atMs: applied.atMs } }),
      });
    },
    depth,
    workers: () => modes.runner().workers(),
    idle: (timeoutMs = 30_000) => scheduler.idle(depth, timeoutMs),
    close: (graceMs?: number) => modes.close(graceMs, () => scheduler.close()),
  };
}
