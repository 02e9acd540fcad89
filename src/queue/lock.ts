/**
 * A Redis lock for singleton work across replicas (Git polling, audit commits): `SET key token NX
 * PX ttl` to take it, released with a Lua compare-and-delete so a holder never deletes a lock that
 * expired and was taken by another.
 *
 * Timings follow Kubernetes' leader election (client-go's defaults: 15 s lease, 10 s renew deadline,
 * 2 s retry period), because a busy machine delays timers by seconds: the holder renews every retry
 * period; a renewal that fails (Redis slow or unreachable) is tried again every retry period, and the
 * lock counts as lost only when no renewal has succeeded for the renew deadline, or when another
 * instance holds the key. A holder whose process was starved past the lease finds the key gone: if
 * nobody took it meanwhile it takes it back (as a Kubernetes Lease whose record nobody changed is
 * renewed by its old holder), instead of stepping down and up again. The singleton work it guards is
 * idempotent or compare-and-swap (polling; audit pushes move a ref from a known commit), so the short
 * window in which another instance might have taken and released the key is harmless.
 */
import { randomUUID } from "node:crypto";
import { silentLogger, type Logger } from "../core/index.js";
import type { RedisClient } from "./redis-connection.js";

/** Kubernetes' leader-election defaults (k8s.io/client-go/tools/leaderelection, kube-controller-manager). */
export const LEASE_DEFAULTS = { ttlMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;

export interface LeaderLockOptions {
  /** Any topology: the lock is one key (on a Cluster, give a hash-tagged prefix like the rest, see redisKeyPrefix). */
  readonly redis: RedisClient;
  /** Lock name; the key is `<prefix>lock:<name>`. */
  readonly name: string;
  /** Lease time. Default 15 000 ms. */
  readonly ttlMs?: number;
  /** The lock is lost when no renewal succeeded for this long. Default 10 000 ms, or 2/3 of a ttlMs given alone; below ttlMs. */
  readonly renewDeadlineMs?: number;
  /** How often the holder renews, and retries a failed renewal. Default 2 000 ms, or ttlMs / 7.5 of a ttlMs given alone. */
  readonly retryPeriodMs?: number;
  /** Key prefix. Default `gitmesh:`. */
  readonly prefix?: string;
  /** Called once when a held lock is lost (renewal failed). */
  readonly onLost?: (reason: string) => void;
  readonly logger?: Logger;
  /** Clock (tests). */
  readonly now?: () => number;
}

/** The three timings of a lock: the defaults, or scaled from a ttlMs given alone; checked for order. */
export function leaseTimings(o: { readonly ttlMs?: number | undefined; readonly renewDeadlineMs?: number | undefined; readonly retryPeriodMs?: number | undefined }): {
  ttlMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
} {
  const ttlMs = o.ttlMs ?? LEASE_DEFAULTS.ttlMs;
  const scale = ttlMs / LEASE_DEFAULTS.ttlMs;
  const renewDeadlineMs = o.renewDeadlineMs ?? Math.round(LEASE_DEFAULTS.renewDeadlineMs * scale);
  const retryPeriodMs = o.retryPeriodMs ?? Math.max(10, Math.round(LEASE_DEFAULTS.retryPeriodMs * scale));
  if (!(retryPeriodMs < renewDeadlineMs && renewDeadlineMs < ttlMs)) {
    throw new RangeError(`lease timings must satisfy retry period (${String(retryPeriodMs)} ms) < renew deadline (${String(renewDeadlineMs)} ms) < lease (${String(ttlMs)} ms)`);
  }
  return { ttlMs, renewDeadlineMs, retryPeriodMs };
}

export interface LeaderLock {
  /** Tries once; true when this instance holds the lock afterwards (starts renewing). */
  acquire(): Promise<boolean>;
  /** Extends the lease now; false (and `onLost`) when it is no longer ours. */
  renew(): Promise<boolean>;
  /** Releases the lock if we hold it (compare-and-delete) and stops renewing. */
  release(): Promise<void>;
  isHeld(): boolean;
  /** The random token of this instance (diagnostics). */
  readonly token: string;
}

// 1: renewed; 2: the key had expired and nobody had taken it, taken back; 0: another instance holds it.
const RENEW = `
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if not v then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]); return 2 end
return 0`;
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export function createLeaderLock(options: LeaderLockOptions): LeaderLock {
  const { ttlMs: ttl, renewDeadlineMs, retryPeriodMs } = leaseTimings(options);
  const now = options.now ?? Date.now;
  const key = `${options.prefix ?? "gitmesh:"}lock:${options.name}`;
  const token = randomUUID();
  const log = options.logger ?? silentLogger;
  let held = false;
  let lastRenewed = 0;
  let timer: NodeJS.Timeout | undefined;

  const stop = () => {
    if (timer !== undefined) clearInterval(timer);
    timer = undefined;
  };
  const lost = (reason: string) => {
    if (!held) return;
    held = false;
    stop();
    log.warn("lock lost", { lock: options.name, reason });
    options.onLost?.(reason);
  };
  const renew = async (): Promise<boolean> => {
    if (!held) return false;
    try {
      const r = await options.redis.eval(RENEW, 1, key, token, String(ttl));
      if (r === 1 || r === 2) {
        if (r === 2) log.warn("lock had expired (this process was too slow to renew it) and nobody took it: taken back", { lock: options.name, sinceLastRenewalMs: now() - lastRenewed });
        lastRenewed = now();
        return true;
      }
      lost("the lease expired and is held by another instance");
    } catch (err) {
      const since = now() - lastRenewed;
      if (since >= renewDeadlineMs) lost(`renewal failed for ${String(since)} ms (renew deadline ${String(renewDeadlineMs)} ms): ${err instanceof Error ? err.message : String(err)}`);
      else log.debug("lock renewal failed; retrying", { lock: options.name, sinceLastRenewalMs: since, error: err instanceof Error ? err.message : String(err) });
    }
    return false;
  };

  return {
    token,
    async acquire() {
      if (held) return true;
      const ok = await options.redis.set(key, token, "PX", ttl, "NX");
      if (ok !== "OK") return false;
      held = true;
      lastRenewed = now();
      timer = setInterval(() => void renew(), retryPeriodMs);
      timer.unref();
      log.info("lock acquired", { lock: options.name });
      return true;
    },
    renew,
    async release() {
      const was = held;
      held = false;
      stop();
      if (was) await options.redis.eval(RELEASE, 1, key, token).catch(() => undefined);
    },
    isHeld: () => held,
  };
}
