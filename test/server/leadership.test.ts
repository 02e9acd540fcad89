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
  const leadership = createLeadership({
    lock: createLeaderLock({ redis: client, name: "server-leader", prefix: `t-${name.slice(0, 1)}:`, ttlMs, onLost: (r) => leadership.lostLease(r) }),
    retryMs: 100,
    logger: silentLogger,
  });
  leadership.onChange((l) => changes.push(l));
  await until(`${name} connected`, () => client.status === "ready");
  return { leadership, changes, client };
}
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
    await redis.stop();
    await new Promise((r) => setTimeout(r, 1500)); // longer than the 600 ms lease
    expect(a.leadership.isLeader()).toBe(true);
    expect(b.leadership.isLeader()).toBe(false);
    await redis.start();
    await until("exactly one leader after Redis returned", () => a.leadership.isLeader() !== b.leadership.isLeader() && a.client.status === "ready" && b.client.status === "ready");
    await new Promise((r) => setTimeout(r, 500));
    expect([a.leadership.isLeader(), b.leadership.isLeader()].filter(Boolean)).toHaveLength(1);
    await a.leadership.stop();
    await b.leadership.stop();
  });
});
