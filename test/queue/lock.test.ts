// The leader lock under a slow machine and a slow Redis (#35): Kubernetes' leader-election rules —
// renew every retry period, lost only after the renew deadline without a renewal or when another
// instance holds the key — against a real redis-server.
import { Redis, type RedisOptions } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
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
/** Polls until `cond` holds: the positive event after which an absence ("nothing was lost") is a fact. */
async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await sleep(10);
  }
}
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
    // The next renewal ran: it put the key back with this holder's token. Only then is "not lost" a fact.
    await until("the next renewal took the expired key back (or the lock lost)", async () => lost.length > 0 || (await c.get("gitmesh:lock:starved")) === lock.token);
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
    await until("the holder's next renewal found the key taken", () => lost.length > 0);
    expect(lock.isHeld()).toBe(false);
    expect(lost).toEqual(["the lease expired and is held by another instance"]);
    expect(other.isHeld()).toBe(true);
    await other.release();
  });

  it("renewals that fail for less than the renew deadline keep the lock; past it the lock is lost, naming the deadline", async () => {
    const lost: string[] = [];
    // A slow Redis: commands time out after 50 ms while it is paused.
    const mem = createMemoryLogger("lock");
    const lock = createLeaderLock({ redis: client({ commandTimeout: 50 }), name: "slow", ttlMs: 6_000, renewDeadlineMs: 2_000, retryPeriodMs: 100, onLost: (r) => lost.push(r), logger: mem.logger });
    expect(await lock.acquire()).toBe(true);
    const admin = client();
    const failures = () => mem.records.filter((r) => r.msg === "lock renewal failed; retrying").length;
    await admin.call("CLIENT", "PAUSE", "800", "ALL");
    // Renewals failed during the pause, and one succeeded after it (the key's TTL is back near the full
    // lease; without a renewal since the pause it would be 800 ms+ short): then "not lost" is a fact.
    await until("renewals failing during the pause (or the lock lost)", () => lost.length > 0 || failures() >= 2);
    await until("a renewal after the pause (or the lock lost)", async () => lost.length > 0 || (await admin.pttl("gitmesh:lock:slow")) > 5_850);
    expect(lost).toEqual([]);
    expect(lock.isHeld()).toBe(true);

    await admin.call("CLIENT", "PAUSE", "3500", "ALL");
    await until("the lock lost past the renew deadline", () => lost.length > 0);
    expect(lock.isHeld()).toBe(false);
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatch(/^renewal failed for \d+ ms \(renew deadline 2000 ms\): Command timed out/);
  }, 20_000);
});
