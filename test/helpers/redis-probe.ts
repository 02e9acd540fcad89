/** Small probes the Redis process helpers (Sentinel, Cluster) share while they set processes up. */
import { Redis } from "ioredis";

/** One command on a short-lived connection to 127.0.0.1:`port`; undefined when the node does not answer. */
export async function ask<T>(port: number, fn: (c: Redis) => Promise<T>): Promise<T | undefined> {
  const c = new Redis({ host: "127.0.0.1", port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000, enableOfflineQueue: false });
  c.on("error", () => undefined);
  try {
    await c.connect();
    return await fn(c);
  } catch {
    return undefined;
  } finally {
    c.disconnect();
  }
}

/** Polls `cond` every 100 ms; throws `what()` after `timeoutMs`. */
export async function waitFor(cond: () => Promise<boolean>, timeoutMs: number, what: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(what());
    await new Promise((r) => setTimeout(r, 100));
  }
}
