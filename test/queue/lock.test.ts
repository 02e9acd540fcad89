// The leader lock under a slow machine and a slow Redis (#35): Kubernetes' leader-election rules —
// renew every retry period, lost only after the renew deadline without a renewal or when another
// instance holds the key — against a real redis-server.
import { Redis, type RedisOptions } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLeaderLock, LEASE_DEFAULTS, leaseTimings } from "../../src/queue/index.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

let redis: TestRedis;
const clients: Redis[] = [];
beforeAll(async () => {
  redis = await startRedis({ outages: true }); // CLIENT PAUSE would stall a shared server's other users
});
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await redis.stop();
});

function client(options: RedisOptions = {}): Redis {
  const c = new Redis(redis.url, options);
  c.on("error", () => undefined);
  clients.push(c);
  return c;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Keeps this process's event loop busy, as a starved or overloaded process is. */
function block(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // busy
  }
}

describe("leader lock timings", () => {
  it("defaults to Kubernetes' leader election: 15 s lease, 10 s renew deadline, 2 s retry; a lone ttl scales all three; a wrong order is refused", () => {
    expect(leaseTimings({})).toEqual({ ttlMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 });
    expect(LEASE_DEFAULTS).toEqual({ ttlMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 });
    expect(leaseTimings({ ttlMs: 3_000 })).toEqual({ ttlMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 400 });
    expect(() => leaseTimings({ ttlMs: 5_000, renewDeadlineMs: 6_000 })).toThrow(/renew deadline \(6000 ms\) < lease \(5000 ms\)/);
    expect(() => leaseTimings({ renewDeadlineMs: 1_000, retryPeriodMs: 1_000 })).toThrow(/retry period/);
  });

  it("a holder whose process was starved past its lease takes the lock back when nobody took it: no step-down", async () => {
    const lost: string[] = [];
    const lock = createLeaderLock({ redis: client(), name: "starved", ttlMs: 300, onLost: (r) => lost.push(r) });
    expect(await lock.acquire()).toBe(true);
    const c = client();
    await c.ping(); // connected, so its next command is sent before the lock's overdue renewal
    block(900); // three leases without a renewal: the key expires in Redis
    expect(await c.exists("gitmesh:lock:starved")).toBe(0);
    await sleep(200); // the next renewal runs
    expect(lost).toEqual([]);
    expect(lock.isHeld()).toBe(true);
    expect(await c.get("gitmesh:lock:starved")).toBe(lock.token);
    await lock.release();
    expect(await c.exists("gitmesh:lock:starved")).toBe(0);
  });

  it("a holder whose lease another instance took meanwhile steps down at its next renewal", async () => {
    const lost: string[] = [];
    const lock = createLeaderLock({ redis: client(), name: "taken", ttlMs: 300, onLost: (r) => lost.push(r) });
    expect(await lock.acquire()).toBe(true);
    const other = createLeaderLock({ redis: client(), name: "taken", ttlMs: 3_000 });
    await client().del("gitmesh:lock:taken"); // as if it expired while this process stalled …
    expect(await other.acquire()).toBe(true); // … and another replica took it
    await sleep(300);
    expect(lock.isHeld()).toBe(false);
    expect(lost).toEqual(["the lease expired and is held by another instance"]);
    expect(other.isHeld()).toBe(true);
    await other.release();
  });

  it("renewals that fail for less than the renew deadline keep the lock; past it the lock is lost, naming the deadline", async () => {
    const lost: string[] = [];
    // A slow Redis: commands time out after 50 ms while it is paused.
    const lock = createLeaderLock({ redis: client({ commandTimeout: 50 }), name: "slow", ttlMs: 6_000, renewDeadlineMs: 2_000, retryPeriodMs: 100, onLost: (r) => lost.push(r) });
    expect(await lock.acquire()).toBe(true);
    const admin = client();
    await admin.call("CLIENT", "PAUSE", "800", "ALL");
    await sleep(1_300);
    expect(lost).toEqual([]);
    expect(lock.isHeld()).toBe(true);

    await admin.call("CLIENT", "PAUSE", "3500", "ALL");
    await sleep(3_800);
    expect(lock.isHeld()).toBe(false);
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatch(/^renewal failed for \d+ ms \(renew deadline 2000 ms\): Command timed out/);
  }, 20_000);
});
