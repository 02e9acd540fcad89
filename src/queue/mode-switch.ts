/**
 * Mode switching: which runner runs the jobs and whether Redis is the store, as Redis comes and goes.
 *
 *   no Redis configured ──────────────→ standalone (in-process runner; the caller uses the memory store)
 *   start ─ store client + subscriber ready → redis (BullMQ runner) ── lost / a write fails ──→ degraded
 *   degraded (in-process, re-translating everything from memory) ── Redis ready ──→ recover:
 *     wait for in-process work → writeBack (write-back.ts) → BullMQ runner → redis → outputs written
 *     announced, every known cluster re-assembled
 *
 * Three Redis clients: the store's fails fast (a failed write switches to degraded mode), BullMQ's and
 * the subscriber retry until Redis answers; the subscriber subscribes on every ready connection and
 * catches up on what was announced while it was away (replica-events.ts). A worker (`role: "worker"`)
 * only follows Redis: degraded while it is away, it translates nothing and writes nothing back.
 */
import { createHash } from "node:crypto";
import type { Logger } from "../core/index.js";
import { createRedisStore, type RetentionOptions, type SnapshotStore } from "../store/index.js";
import { createBullRunner } from "./bullmq-runner.js";
import { createRedisClient, type RedisClient, type RedisClientOptions, type RedisConnectionConfig } from "./redis-connection.js";
import type { ReplicaEvents } from "./replica-events.js";
import { createInProcessRunner, type JobRunner, type RunnerSettings } from "./runner.js";
import type { Scheduler } from "./scheduler.js";
import { writeBack } from "./write-back.js";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");

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

export interface ModeSwitchOptions {
  /** Absent: standalone. */
  readonly redis?: RedisConnectionConfig;
  readonly prefix: string;
  /** The pub/sub channel. */
  readonly channel: string;
  readonly role: PipelineRole;
  /** This process's id in pub/sub messages. */
  readonly origin: string;
  /** The runners' settings (job-handlers.ts' handlers). */
  readonly settings: RunnerSettings;
  readonly bull: { readonly jobLockMs: number; readonly workerName?: string; readonly work: boolean };
  /** The memory store: the store while degraded, written back on recovery. */
  readonly mirror: SnapshotStore;
  /** Unit locks left in Redis (write-back.ts releases them). */
  readonly unreleased: Map<string, string>;
  readonly scheduler: Pick<Scheduler, "serial" | "flushAll" | "idle">;
  readonly events: Pick<ReplicaEvents, "publish" | "onMessage" | "catchUp">;
  readonly retention?: RetentionOptions | undefined;
  readonly now: () => number;
  readonly logger: Logger;
  /** Every mode change (and the first). */
  readonly onMode: (mode: PipelineMode, reason: string) => void;
}

export interface ModeSwitch {
  mode(): PipelineMode;
  runner(): JobRunner;
  /** The Redis store (even while degraded); undefined in standalone. */
  redisStore(): SnapshotStore | undefined;
  /** The Redis store and its (publishing) client while in `redis` mode. */
  redis(): { readonly store: SnapshotStore; readonly client: RedisClient } | undefined;
  /** Connects (standalone: just sets the mode). Resolves in `redis` or `degraded` mode. */
  start(): Promise<void>;
  /** Runs a write on `store()`; a Redis failure switches to degraded and redoes it there (in memory). */
  write(store: () => SnapshotStore, op: (store: SnapshotStore) => Promise<void>): Promise<void>;
  /** Stops: no more mode changes, then `drain` (the scheduler's chain), the runner (within `graceMs` in `redis` mode), the clients. */
  close(graceMs: number | undefined, drain: () => Promise<void>): Promise<void>;
}

export function createModeSwitch(o: ModeSwitchOptions): ModeSwitch {
  const log = o.logger;
  const { role, settings, scheduler, events } = o;
  let mode: PipelineMode = o.redis === undefined ? "standalone" : "degraded";
  let runner: JobRunner = createInProcessRunner(settings);
  let redisStore: SnapshotStore | undefined;
  let storeClient: RedisClient | undefined;
  let bullConn: RedisClient | undefined;
  let sub: RedisClient | undefined;
  let closed = false;
  /** false until the first connection attempt has been settled (no recovery before that). */
  let started = false;
  const bullRunner = (conn: RedisClient, work: boolean) =>
    createBullRunner({ ...settings, jobLockMs: o.bull.jobLockMs, ...(o.bull.workerName === undefined ? {} : { workerName: o.bull.workerName }), connection: conn, prefix: `${o.prefix}bull`, work, logger: log });

  function setMode(next: PipelineMode, reason: string): void {
    mode = next;
    o.onMode(next, reason);
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
    const written = await writeBack({ mirror: o.mirror, redis: r, unreleased: o.unreleased, logger: log });
    const old = runner;
    runner = bullRunner(bullConn, o.bull.work);
    setMode("redis", "Redis is reachable again; memory state written back");
    await old.close(false);
    for (const w of written) await events.publish({ origin: o.origin, type: "output", cluster: w.cluster, version: w.version });
    // Reconcile: every known cluster re-assembles against the (merged) Redis state.
    const clusters = new Set([...(await o.mirror.outputVersions()).keys(), ...(await r.outputVersions()).keys()]);
    const stamp = sha(`${o.now()}-${o.origin}`).slice(0, 12);
    for (const c of clusters) await runner.add({ type: "cluster", id: `cl-${c}-resume-${stamp}`, data: { cluster: c } });
  }

  async function connect(config: RedisConnectionConfig): Promise<void> {
    log.info("connecting to Redis", { topology: config.kind, address: config.display, prefix: o.prefix });
    // Through Sentinel each reconnection asks for the current primary. BullMQ's client is not lazy: its
    // workers duplicate it, and a lazy duplicate whose first attempt fails ends its worker for good
    // (bullmq-runner.ts).
    const make = (extra: RedisClientOptions) => createRedisClient(config, { lazyConnect: true, ...extra, retryStrategy: () => 250 });
    const store = (storeClient = make({ maxRetriesPerRequest: 1, enableOfflineQueue: false }));
    const bull = (bullConn = make({ maxRetriesPerRequest: null, lazyConnect: false }));
    const subscriber = (sub = make({ maxRetriesPerRequest: null, autoResubscribe: false }));
    for (const c of [store, bull, subscriber]) c.on("error", (err: Error) => log.debug("redis connection error", { error: err.message }));
    redisStore = createRedisStore({ redis: store, prefix: o.prefix, retention: o.retention, now: o.now });
    store.on("close", () => enterDegraded("Redis connection lost"));
    store.on("ready", () => {
      if (role === "worker") {
        if (started && mode === "degraded") setMode("redis", "Redis is reachable again");
        return;
      }
      if (started && mode === "degraded") void scheduler.serial(recover).catch((err: unknown) => log.warn("recovery failed; staying degraded", { error: String(err) }));
    });
    subscriber.on("message", (_ch: string, raw: string) => void events.onMessage(raw).catch((err: unknown) => log.debug("event handling failed", { error: String(err) })));
    // Subscribe on every ready connection and never before: ioredis lets a SUBSCRIBE through during the
    // handshake, its ready check (INFO) then fails in subscriber mode, and the reconnection that follows
    // forgets the subscription for good (ioredis' own autoResubscribe is off: this does it).
    // Pub/sub is fire-and-forget: what was announced while the subscriber was reconnecting (a Redis
    // restart, a Sentinel failover) never arrives; once subscribed again, catch up from the store.
    let subscribedOnce = false;
    let firstSubscription = () => {};
    const subscribed = new Promise<void>((resolve) => (firstSubscription = resolve));
    const subscribe = (): void => {
      void subscriber
        .subscribe(o.channel)
        .then(async () => {
          if (subscribedOnce) return role === "worker" ? undefined : events.catchUp();
          subscribedOnce = true;
          firstSubscription();
        })
        .catch((err: unknown) => {
          log.warn("pub/sub subscription or catch-up failed; retrying", { error: String(err) });
          // Refused on a live connection (an ACL without SUBSCRIBE, say): try again. A lost connection
          // subscribes on its next ready.
          if (subscriber.status === "ready" && !closed) setTimeout(subscribe, 1000).unref();
        });
    };
    subscriber.on("ready", subscribe);
    void subscriber.connect().catch(() => undefined);
    // A worker's jobs come from BullMQ, which connects (and reconnects) by itself: take them as soon as it can.
    if (role === "worker") runner = bullRunner(bull, true);
    try {
      await store.connect();
      await subscribed;
      if (role === "server") {
        const old = runner;
        runner = bullRunner(bull, o.bull.work);
        await old.close(true);
      }
      setMode("redis", "connected");
    } catch (err) {
      setMode("degraded", `Redis unreachable at start: ${err instanceof Error ? err.message : String(err)}`);
    }
    started = true;
    if (role === "worker" && mode === "degraded" && store.status === "ready") setMode("redis", "connected");
    if (role === "server" && mode === "degraded" && store.status === "ready") void scheduler.serial(recover).catch(() => undefined);
  }

  return {
    mode: () => mode,
    runner: () => runner,
    redisStore: () => redisStore,
    redis: () => (mode === "redis" && redisStore !== undefined && storeClient !== undefined ? { store: redisStore, client: storeClient } : undefined),
    async start() {
      if (o.redis === undefined) setMode("standalone", "no Redis configured");
      else await connect(o.redis);
    },
    async write(store, op) {
      try {
        await op(store());
      } catch (err) {
        if (mode !== "redis" || storeClient?.status === "ready") throw err;
        enterDegraded(`write failed: ${err instanceof Error ? err.message : String(err)}`);
        await op(store());
      }
    },
    async close(graceMs, drain) {
      closed = true;
      await drain();
      if (graceMs !== undefined && mode === "redis") {
        // Finish the jobs in hand within the grace period; after it, leave them to stalled-job recovery.
        const clean = runner.close(false).then(() => true);
        const finished = await Promise.race([clean, new Promise<false>((r) => setTimeout(() => r(false), graceMs).unref())]);
        // BullMQ cannot turn a clean close into a forced one: the connections are cut below instead.
        if (!finished) log.warn("jobs still running at the end of the shutdown grace period; they go back to the queue when their lock expires", { graceMs, jobLockMs: o.bull.jobLockMs });
      } else await runner.close(mode !== "redis");
      for (const c of [sub, bullConn, storeClient]) c?.disconnect();
    },
  };
}
