/**
 * A Redis lock for singleton work across replicas (Git polling, audit commits): `SET key token NX
 * PX ttl` to take it, renewed every `ttlMs / 3` while held, released with a Lua compare-and-delete
 * so a holder never deletes a lock that expired and was taken by another. If a renewal fails (the
 * lock expired and moved, or Redis is unreachable for longer than the TTL) `onLost` is called and
 * the work must stop.
 */
import { randomUUID } from "node:crypto";
import { silentLogger, type Logger } from "../core/index.js";
import type { RedisClient } from "./redis-connection.js";

export interface LeaderLockOptions {
  /** Any topology: the lock is one key (on a Cluster, give a hash-tagged prefix like the rest, see redisKeyPrefix). */
  readonly redis: RedisClient;
  /** Lock name; the key is `<prefix>lock:<name>`. */
  readonly name: string;
  /** Lease time. Default 10 000 ms. */
  readonly ttlMs?: number;
  /** Key prefix. Default `gitmesh:`. */
  readonly prefix?: string;
  /** Called once when a held lock is lost (renewal failed). */
  readonly onLost?: (reason: string) => void;
  readonly logger?: Logger;
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

const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export function createLeaderLock(options: LeaderLockOptions): LeaderLock {
  const ttl = options.ttlMs ?? 10_000;
  const key = `${options.prefix ?? "gitmesh:"}lock:${options.name}`;
  const token = randomUUID();
  const log = options.logger ?? silentLogger;
  let held = false;
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
      if (r === 1) return true;
      lost("the lease expired and is held by another instance");
    } catch (err) {
      lost(`renewal failed: ${err instanceof Error ? err.message : String(err)}`);
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
      timer = setInterval(() => void renew(), Math.max(50, Math.floor(ttl / 3)));
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
