/**
 * The translation pipeline (DESIGN.md "Management server"): desired state and discovery in,
 * versioned output snapshots per cluster out, through workspace jobs and cluster jobs.
 *
 *   setDesiredState / setDiscovery ─(debounce)→ affectedWorkspaces → workspace jobs
 *   workspace job: translateWorkspace → fragments per cluster (hash) → cluster jobs for changed ones
 *   cluster job: wait until no workspace of the current commit is pending → assembleCluster →
 *                compare with the last output → new version → onOutput + pub/sub to replicas
 *
 * Modes: `redis` (BullMQ + Redis store, shared by replicas), `standalone` (no Redis: the same
 * handlers on the in-process runner over the memory store) and `degraded` (Redis lost under a
 * running pipeline: in-process from the memory mirror until Redis answers again, then the mirror
 * is written back — outputs only if newer — and the queue resumes).
 *
 * Parts: mirrored-store.ts (Redis + memory mirror), write-back.ts (mirror → Redis on recovery),
 * input-cache.ts (desired state and discovery read once), scheduler.ts (debounce, flush, serial chain),
 * job-handlers.ts (workspace and cluster jobs),
 * runner.ts / bullmq-runner.ts (the same handlers in-process or on BullMQ), holds.ts, shared-reads.ts.
 */
import { createHash, randomUUID } from "node:crypto";
import type { Registry } from "prom-client";
import { silentLogger, type Logger } from "../core/index.js";
import type { DesiredState } from "../config/index.js";
import { snapshotChecksum, type DiscoverySnapshot } from "../discovery/index.js";
import { assembleCluster as realAssemble, translateWorkspace as realTranslate } from "../translate/index.js";
import {
  createMemoryStore,
  createRedisStore,
  DEFAULT_PREFIX,
  type DesiredRecord,
  type OutputRecord,
  type RetentionOptions,
  type SnapshotStore,
} from "../store/index.js";
import { createBullRunner } from "./bullmq-runner.js";
import { createMirroredStore } from "./mirrored-store.js";
import { writeBack } from "./write-back.js";
import { createInputCache } from "./input-cache.js";
import { createScheduler } from "./scheduler.js";
import { createReplicaEvents } from "./replica-events.js";
import { createJobHandlers, type PipelineTranslators } from "./job-handlers.js";
import { createPipelineMetrics } from "./metrics.js";
import { createRedisClient, parseRedisUrl, redisKeyPrefix, type RedisClient, type RedisClientOptions, type RedisConnectionConfig } from "./redis-connection.js";
import { createInProcessRunner, type JobEvent, type JobRunner, type JobType, type RunnerSettings } from "./runner.js";

export { outputOptions, type PipelineTranslators } from "./job-handlers.js";

export type PipelineMode = "redis" | "degraded" | "standalone";

/**
 * What this process does with the pipeline:
 * - `server` (default): takes inputs (setDesiredState, setDiscovery), enqueues jobs, delivers outputs
 *   (onOutput), and runs jobs itself unless `work` is false; translates in-process from memory while
 *   Redis is down (degraded).
 * - `worker`: only runs jobs from Redis (`gitmesh worker`). No inputs, no delivery, no memory mirror:
 *   while Redis is down it waits (mode `degraded`) and translates nothing, since its inputs are in Redis.
 */
export type PipelineRole = "server" | "worker";

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

const sha = (s: string) => createHash("sha256").update(s).digest("hex");

export async function createPipeline(options: PipelineOptions = {}): Promise<Pipeline> {
  const log = options.logger ?? silentLogger;
  const redisConfig = typeof options.redis === "string" ? parseRedisUrl(options.redis) : options.redis;
  // On a Redis Cluster the prefix is a hash tag (`{gitmesh}:`): every key in one slot (redisKeyPrefix).
  const prefix = redisKeyPrefix(redisConfig, options.prefix ?? DEFAULT_PREFIX);
  const now = options.now ?? Date.now;
  const translators: PipelineTranslators = options.translators ?? { translateWorkspace: realTranslate, assembleCluster: realAssemble };
  const origin = randomUUID();
  const channel = `${prefix}events`;
  const debounceMs = options.debounceMs ?? 50;
  const maxDebounceMs = options.maxDebounceMs ?? 500;
  const role: PipelineRole = options.role ?? "server";
  if (role === "worker" && options.redis === undefined) throw new Error("a worker pipeline needs Redis: its jobs and inputs are there");
  const jobLockMs = options.jobLockMs ?? 30_000;
  const lockMs = options.unitLockMs ?? 2 * jobLockMs;
  const bullOptions = { jobLockMs, ...(options.workerName === undefined ? {} : { workerName: options.workerName }) };
  const wants = role === "worker" ? () => false : (options.wantsOutput ?? (() => true));

  const mirror = createMemoryStore({ retention: options.retention, now });
  let redisStore: SnapshotStore | undefined;
  let storeClient: RedisClient | undefined;
  let bullConn: RedisClient | undefined;
  let sub: RedisClient | undefined;
  let mode: PipelineMode = options.redis === undefined ? "standalone" : "degraded";
  let runner: JobRunner;
  let closed = false;
  /** false until the first connection attempt has been settled (no recovery before that). */
  let started = false;

  const metrics = createPipelineMetrics(options.registry, () => depth());
  /** Unit locks taken in Redis that could not be released because Redis went away (token → name). */
  const unreleased = new Map<string, string>();

  const replicas = createReplicaEvents({
    origin,
    channel,
    redis: () => (mode === "redis" && redisStore !== undefined && storeClient !== undefined ? { store: redisStore, client: storeClient } : undefined),
    mirror,
    wants,
    ...(options.onOutput === undefined ? {} : { onOutput: options.onOutput }),
    noteOutput: (record) => scheduler.noteOutput(record),
    logger: log,
  });
  const inputs = createInputCache();
  const scheduler = createScheduler({ store: () => active(), inputs, enqueue: (job) => runner.add(job), debounceMs, maxDebounceMs, now, logger: log });
  const handlers = createJobHandlers({
    store: () => active(),
    inputs,
    enqueue: (job) => runner.add(job),
    reassess: (store, stamp, all) => scheduler.reassess(store, stamp, all),
    announce: (record) => replicas.announce(record),
    translators,
    metrics,
    lockMs,
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

  // ---- the store in use: Redis with a write-through memory mirror, or the mirror alone ----
  // A worker reads and writes Redis only: it has no inputs of its own to mirror or write back.
  const active = (): SnapshotStore => (role === "worker" && redisStore !== undefined ? redisStore : mode === "redis" && redisStore !== undefined ? mirrored(redisStore) : mirror);
  let mirroredCache: SnapshotStore | undefined;
  const mirrored = (r: SnapshotStore): SnapshotStore => (mirroredCache ??= createMirroredStore(r, mirror));

  /** Runs a write against the active store; a Redis failure switches to degraded and redoes it in memory. */
  async function write(op: (store: SnapshotStore) => Promise<void>): Promise<void> {
    try {
      await op(active());
    } catch (err) {
      if (mode !== "redis" || storeClient?.status === "ready") throw err;
      enterDegraded(`write failed: ${err instanceof Error ? err.message : String(err)}`);
      await op(active());
    }
  }

  // ---- modes ----
  function setMode(next: PipelineMode, reason: string): void {
    mode = next;
    for (const m of ["redis", "degraded", "standalone"] as const) metrics.mode.set({ mode: m }, m === next ? 1 : 0);
    log.info("pipeline mode", { mode: next, reason });
    options.onModeChange?.(next, reason);
  }

  function enterDegraded(reason: string): void {
    if (mode !== "redis" || closed) return;
    if (role === "worker") {
      // BullMQ's worker reconnects by itself; jobs wait in Redis, which is down too.
      setMode("degraded", `${reason}; waiting for Redis (a worker translates nothing without it)`);
      return;
    }
    const old = runner;
    runner = createInProcessRunner(settings);
    setMode("degraded", reason);
    void old.close(true).catch(() => undefined);
    // Jobs queued in Redis may be lost: re-translate everything from memory.
    void scheduler.flushAll().catch((err: unknown) => log.error("degraded re-translation failed", { error: String(err) }));
  }

  async function recover(): Promise<void> {
    if (mode !== "degraded" || closed || redisStore === undefined || bullConn === undefined) return;
    const r = redisStore;
    // Let in-process work finish first (this runs inside the serial chain: do not wait for the chain).
    await scheduler.idle(() => runner.depth(), 30_000, false).catch(() => undefined);
    // Write the memory state back; Redis may have restarted empty or been written by other replicas.
    const written = await writeBack({ mirror, redis: r, unreleased, logger: log });
    const old = runner;
    runner = createBullRunner({ ...settings, ...bullOptions, connection: bullConn, prefix: `${prefix}bull`, work: options.work ?? true, logger: log });
    setMode("redis", "Redis is reachable again; memory state written back");
    await old.close(false);
    for (const o of written) await replicas.publish({ origin, type: "output", cluster: o.cluster, version: o.version });
    // Reconcile: every known cluster re-assembles against the (merged) Redis state.
    const clusters = new Set([...(await mirror.outputVersions()).keys(), ...(await r.outputVersions()).keys()]);
    const stamp = sha(`${now()}-${origin}`).slice(0, 12);
    for (const c of clusters) await runner.add({ type: "cluster", id: `cl-${c}-resume-${stamp}`, data: { cluster: c } });
  }

  async function depth(): Promise<Record<JobType, number>> {
    return runner.depth();
  }

  // ---- start ----
  if (redisConfig === undefined) {
    runner = createInProcessRunner(settings);
    setMode("standalone", "no Redis configured");
  } else {
    log.info("connecting to Redis", { topology: redisConfig.kind, address: redisConfig.display, prefix });
    // Three clients: the store's fails fast (a failed write switches to degraded mode), BullMQ's and the
    // subscriber retry until Redis answers. Through Sentinel each reconnection asks for the current primary.
    // BullMQ's is not lazy: its workers duplicate it, and a lazy duplicate whose first attempt fails
    // ends its worker for good (bullmq-runner.ts).
    const make = (extra: RedisClientOptions) => createRedisClient(redisConfig, { lazyConnect: true, ...extra, retryStrategy: () => 250 });
    storeClient = make({ maxRetriesPerRequest: 1, enableOfflineQueue: false });
    bullConn = make({ maxRetriesPerRequest: null, lazyConnect: false });
    sub = make({ maxRetriesPerRequest: null, autoResubscribe: false });
    for (const c of [storeClient, bullConn, sub]) c.on("error", (err: Error) => log.debug("redis connection error", { error: err.message }));
    redisStore = createRedisStore({ redis: storeClient, prefix, retention: options.retention, now });
    runner = createInProcessRunner(settings);
    storeClient.on("close", () => enterDegraded("Redis connection lost"));
    storeClient.on("ready", () => {
      if (role === "worker") {
        if (started && mode === "degraded") setMode("redis", "Redis is reachable again");
        return;
      }
      if (started && mode === "degraded") void scheduler.serial(recover).catch((err: unknown) => log.warn("recovery failed; staying degraded", { error: String(err) }));
    });
    sub.on("message", (_ch: string, raw: string) => void replicas.onMessage(raw).catch((err: unknown) => log.debug("event handling failed", { error: String(err) })));
    // Subscribe on every ready connection and never before: ioredis lets a SUBSCRIBE through during the
    // handshake, its ready check (INFO) then fails in subscriber mode, and the reconnection that follows
    // forgets the subscription for good (ioredis' own autoResubscribe is off: this does it).
    // Pub/sub is fire-and-forget: what was announced while the subscriber was reconnecting (a Redis
    // restart, a Sentinel failover) never arrives; once subscribed again, catch up from the store.
    const events = sub;
    let subscribedOnce = false;
    let firstSubscription = () => {};
    const subscribed = new Promise<void>((resolve) => (firstSubscription = resolve));
    const subscribe = (): void => {
      void events
        .subscribe(channel)
        .then(async () => {
          if (subscribedOnce) return role === "worker" ? undefined : replicas.catchUp();
          subscribedOnce = true;
          firstSubscription();
        })
        .catch((err: unknown) => {
          log.warn("pub/sub subscription or catch-up failed; retrying", { error: String(err) });
          // Refused on a live connection (an ACL without SUBSCRIBE, say): try again. A lost connection
          // subscribes on its next ready.
          if (events.status === "ready" && !closed) setTimeout(subscribe, 1000).unref();
        });
    };
    events.on("ready", subscribe);
    void events.connect().catch(() => undefined);
    if (role === "worker") {
      // Jobs come from BullMQ, which connects (and reconnects) by itself: take them as soon as it can.
      runner = createBullRunner({ ...settings, ...bullOptions, connection: bullConn, prefix: `${prefix}bull`, work: true, logger: log });
    }
    try {
      await storeClient.connect();
      await subscribed;
      if (role === "server") {
        const old = runner;
        runner = createBullRunner({ ...settings, ...bullOptions, connection: bullConn, prefix: `${prefix}bull`, work: options.work ?? true, logger: log });
        await old.close(true);
      }
      setMode("redis", "connected");
    } catch (err) {
      setMode("degraded", `Redis unreachable at start: ${err instanceof Error ? err.message : String(err)}`);
    }
    started = true;
    if (role === "worker" && mode === "degraded" && storeClient.status === "ready") setMode("redis", "connected");
    if (role === "server" && mode === "degraded" && storeClient.status === "ready") void scheduler.serial(recover).catch(() => undefined);
  }

  const serverOnly = (what: string) => {
    if (role === "worker") throw new Error(`${what}: a worker pipeline takes no inputs (the server does)`);
  };
  return {
    mode: () => mode,
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
        await write((s) => s.putDesired(record));
        inputs.remember(record);
        await replicas.publish({ origin, type: "desired", commit: record.commit });
        scheduler.changed({ keys, all: keys.length === 0 });
      }),
    setDiscovery: (cluster, snapshot) =>
      scheduler.serial(async () => {
        serverOnly("setDiscovery");
        const checksum = snapshotChecksum(snapshot);
        if ((await active().discoveryChecksums()).get(cluster) === checksum) return;
        await write((s) => s.putDiscovery({ cluster, checksum, snapshot, atMs: now() }));
        await replicas.publish({ origin, type: "discovery", cluster });
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
    workers: () => runner.workers(),
    idle: (timeoutMs = 30_000) => scheduler.idle(depth, timeoutMs),
    async close(graceMs?: number) {
      closed = true;
      await scheduler.close();
      if (graceMs !== undefined && mode === "redis") {
        // Finish the jobs in hand within the grace period; after it, leave them to stalled-job recovery.
        const clean = runner.close(false).then(() => true);
        const finished = await Promise.race([clean, new Promise<false>((r) => setTimeout(() => r(false), graceMs).unref())]);
        // BullMQ cannot turn a clean close into a forced one: the connections are cut below instead.
        if (!finished) log.warn("jobs still running at the end of the shutdown grace period; they go back to the queue when their lock expires", { graceMs, jobLockMs });
      } else await runner.close(mode !== "redis");
      for (const c of [sub, bullConn, storeClient]) c?.disconnect();
    },
  };
}

