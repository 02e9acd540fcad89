/**
 * Which replica holds which cluster's agent, shared through Redis so that every replica's status
 * tells a cluster connected to another replica from a stale one (agent gone). Each replica refreshes
 * `<prefix>:presence:<cluster> = <replica>` with a short TTL for the clusters it holds; a key that
 * expires means no replica has heard from the agent for that long. Without Redis (standalone, or while
 * Redis is down) only this replica's own connections are known.
 */
import type { RedisClient } from "../queue/index.js";

export interface PresenceRegistry {
  /** Refreshes the clusters this replica holds now. */
  refresh(clusters: readonly string[]): Promise<void>;
  /** cluster → replica holding it, for the clusters some replica announced recently. */
  holders(clusters: readonly string[]): Promise<Map<string, string>>;
}

export interface RedisPresenceOptions {
  readonly redis: RedisClient;
  /** Key prefix, e.g. `gitmesh:`. */
  readonly prefix: string;
  readonly replica: string;
  /** How long an announcement lasts (default 5000 ms; refresh more often). */
  readonly ttlMs?: number;
}

export function createRedisPresence(options: RedisPresenceOptions): PresenceRegistry {
  const ttl = options.ttlMs ?? 5000;
  const key = (c: string) => `${options.prefix}presence:${c}`;
  return {
    async refresh(clusters) {
      if (clusters.length === 0) return;
      const m = options.redis.multi();
      for (const c of clusters) m.set(key(c), options.replica, "PX", ttl);
      await m.exec();
    },
    async holders(clusters) {
      const out = new Map<string, string>();
      if (clusters.length === 0) return out;
      const values = await options.redis.mget(...clusters.map(key));
      clusters.forEach((c, i) => {
        const v = values[i];
        if (typeof v === "string" && v !== "") out.set(c, v);
      });
      return out;
    },
  };
}
