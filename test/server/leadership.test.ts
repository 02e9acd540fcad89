// Leadership over a real Redis (src/queue's lease): one replica leads, the lease moves when the holder
// stops or dies, and a Redis outage does not demote the holder (Git must still be polled) nor promote
// a follower.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/core/index.js";
import { createLeaderLock } from "../../src/queue/index.js";
import { createLeadership } from "../../src/server/index.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

let redis: TestRedis;
const clients: Redis[] = [];
beforeAll(async () => {
  redis = await startRedis({ outages: true });
});
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await redis.stop();
});

const until = async (what: string, cond: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

async function replica(name: string, ttlMs = 600) {
  const client = new Redis(redis.url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, retryStrategy: () => 100 });
  client.on("error", () => undefined);
  clients.push(client);
  const changes: boolean[] = [];
  // Every attempt the leadership makes on the real lock, with its outcome: the positive events that
  // prove time passed for the lease (an attempt after it would have lapsed, a completed round after Redis returned).
  const attempts: { atMs: number; result: boolean | "unreachable" }[] = [];
  const lock = createLeaderLock({ redis: client, name: "server-leader", prefix: `t-${name.slice(0, 1)}:`, ttlMs, onLost: (r) => leadership.lostLease(r) });
  const leadership = createLeadership({
    lock: {
      acquire: async () => {
        try {
          const result = await lock.acquire();
          attempts.push({ atMs: Date.now(), result });
          return result;
        } catch (err) {
          attempts.push({ atMs: Date.now(), result: "unreachable" });
          throw err;
        }
      },
      release: () => lock.release(),
      isHeld: () => lock.isHeld(),
    },
    retryMs: 100,
    logger: silentLogger,
  });
  leadership.onChange((l) => changes.push(l));
  await until(`${name} connected`, () => client.status === "ready");
  return { leadership, changes, client, attempts };
}
/** Waits until `r` has made `n` more attempts with this outcome, started after `afterMs`. */
const attemptsAfter = (r: { attempts: { atMs: number; result: boolean | "unreachable" }[] }, afterMs: number, result: boolean | "unreachable", n = 2) =>
  until(`${String(n)} attempt(s) ending ${String(result)} after ${new Date(afterMs).toISOString()}`, () => r.attempts.filter((a) => a.atMs > afterMs && a.result === result).length >= n);
describe("leadership", () => {
  it("without a lock (standalone) this replica always leads", async () => {
    const l = createLeadership({ logger: silentLogger });
    await l.start();
    expect(l.isLeader()).toBe(true);
    await l.stop();
  });

  it("one of two replicas leads; the lease moves on stop and when the holder dies", async () => {
    const a = await replica("x1");
    const b = await replica("x2");
    await a.leadership.start();
    await b.leadership.start();
    expect(a.leadership.isLeader()).toBe(true);
    expect(b.leadership.isLeader()).toBe(false);
    await a.leadership.stop();
    await until("b leads after a stopped", () => b.leadership.isLeader());
    expect(b.changes).toEqual([true]);
    // b dies without releasing (its connection is cut): the lease expires and c takes it.
    const c = await replica("x3");
    await c.leadership.start();
    expect(c.leadership.isLeader()).toBe(false);
    b.client.disconnect();
    await until("c leads after b died", () => c.leadership.isLeader(), 5_000);
    await c.leadership.stop();
    await b.leadership.stop();
  });

  it("a Redis outage keeps the holder leading and the follower following; afterwards one leads", async () => {
    const a = await replica("y1");
    const b = await replica("y2");
    await a.leadership.start();
    await b.leadership.start();
    expect(a.leadership.isLeader()).toBe(true);
    const before = { a: [...a.changes], b: [...b.changes] };
    await redis.stop();
    // Not a fixed sleep: both replicas tried the lease, and found Redis unreachable, after the 600 ms
    // lease would have lapsed (had the holder been demoted or the follower promoted, it would be by now).
    const lapsed = Date.now() + 600;
    await attemptsAfter(a, lapsed, "unreachable");
    await attemptsAfter(b, lapsed, "unreachable");
    expect(a.leadership.isLeader()).toBe(true);
    expect(b.leadership.isLeader()).toBe(false);
    expect({ a: a.changes, b: b.changes }).toEqual(before);
    await redis.start();
    await until("exactly one leader after Redis returned", () => a.leadership.isLeader() !== b.leadership.isLeader() && a.client.status === "ready" && b.client.status === "ready");
    // Each replica completed further rounds on the lease since then (the holder renewed, the follower was
    // refused): only then is "exactly one" a fact rather than a moment.
    const settled = Date.now();
    await attemptsAfter(a, settled, a.leadership.isLeader());
    await attemptsAfter(b, settled, b.leadership.isLeader());
    expect([a.leadership.isLeader(), b.leadership.isLeader()].filter(Boolean)).toHaveLength(1);
    await a.leadership.stop();
    await b.leadership.stop();
  });
});
