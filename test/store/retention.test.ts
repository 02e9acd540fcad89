/**
 * Retention (issue #17): what the store keeps per commit is bounded by count and age, in both
 * stores, and never the current commit's desired state or convergence record. The memory store
 * runs on an injected clock; the Redis store on Redis's own expiry (PEXPIRE, checked with PTTL, and
 * short ages that really pass).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import {
  createMemoryStore,
  createRedisStore,
  DEFAULT_RETENTION,
  resolveRetention,
  type DesiredRecord,
  type FragmentRecord,
  type OutputRecord,
  type RetentionOptions,
  type SnapshotStore,
} from "../../src/store/index.js";
import type { DesiredState } from "../../src/config/index.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

let redis: TestRedis;
let client: Redis;
beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url);
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
});

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const desired = (commit: string, generation: number): DesiredRecord => ({ commit, ref: "main", generation, state: { marker: commit } as unknown as DesiredState, changedKeys: [], atMs: generation });
const frag = (workspace: string, cluster: string): FragmentRecord => ({ workspace, cluster, hash: `${workspace}-${cluster}`, resources: [], commit: "c1" });
const applied = (cluster: string, atMs: number) => ({ cluster, version: 1, appliedAtMs: atMs });
const output = (cluster: string, version: number, sourceCommit: string): OutputRecord => ({ cluster, version, sourceCommit, hash: `h${version}`, resources: [], complete: true, diagnostics: [], atMs: version });

/** One store kind, and how time passes for it (a clock for memory; real time for Redis, whose keys expire by themselves). */
interface Harness {
  make(retention: RetentionOptions): SnapshotStore;
  advance(ms: number): Promise<void>;
}

const memoryHarness = (): Harness => {
  let clock = 1_000_000;
  return {
    make: (retention) => createMemoryStore({ retention, now: () => clock }),
    advance: (ms) => {
      clock += ms;
      return Promise.resolve();
    },
  };
};
const redisHarness = (): Harness => ({
  make: (retention) => createRedisStore({ redis: client, prefix: `r${Math.random().toString(36).slice(2)}:`, retention }),
  advance: sleep,
});

/** Ages for the shared tests: long enough that a busy machine does not age a record early, short enough to wait for in Redis. */
const AGE = 1000;

describe.each([
  ["memory", memoryHarness],
  ["redis", redisHarness],
] as const)("%s store retention", (_name, harness) => {
  it("keeps the newest desiredStates desired states besides the current one, and the current one whatever its rank", async () => {
    const s = harness().make({ desiredStates: 2 });
    for (const [i, c] of ["a", "b", "c", "d", "e"].entries()) await s.putDesired(desired(c, i + 1));
    expect(await s.getDesired("a")).toBeUndefined();
    expect(await s.getDesired("b")).toBeUndefined();
    for (const c of ["c", "d", "e"]) expect((await s.getDesired(c))?.commit).toBe(c);
    // Late writes of older generations (a write-back after an outage) push the current one out of
    // the newest: it stays, it is what the pipeline translates.
    for (const [i, c] of ["x", "y", "z"].entries()) await s.putDesired(desired(c, i + 1));
    expect(await s.getDesiredPointer()).toEqual({ commit: "e", generation: 5 });
    expect((await s.getDesired("e"))?.commit).toBe("e");
    expect(await s.getDesired("x")).toBeUndefined();
    expect((await s.getDesired("z"))?.commit).toBe("z");
  });

  it("drops a desired state maxAgeMs after it stopped being current, never the current one", async () => {
    const h = harness();
    const s = h.make({ maxAgeMs: AGE });
    await s.putDesired(desired("a", 1));
    await h.advance(AGE * 1.5);
    expect((await s.getDesired("a"))?.commit).toBe("a"); // current: kept whatever its age
    await s.putDesired(desired("b", 2));
    expect((await s.getDesired("a"))?.commit).toBe("a"); // superseded just now
    await h.advance(AGE * 1.5);
    expect(await s.getDesired("a")).toBeUndefined();
    expect((await s.getDesired("b"))?.commit).toBe("b");
    expect(await s.getDesiredPointer()).toEqual({ commit: "b", generation: 2 });
  });

  it("keeps the convergence records of the newest convergenceCommits commits and the current commit's", async () => {
    const s = harness().make({ convergenceCommits: 3 });
    await s.putDesired(desired("c2", 1));
    for (let i = 1; i <= 6; i++) await s.recordConvergence(`c${i}`, applied("east", i));
    // c2 is current (its record stays although three newer commits came); c1 and c3 are beyond the newest three.
    expect(await s.getConvergence("c1")).toBeUndefined();
    expect(await s.getConvergence("c3")).toBeUndefined();
    for (const c of ["c2", "c4", "c5", "c6"]) expect((await s.getConvergence(c))?.clusters.east?.cluster).toBe("east");
    // Once c2 is no longer current, it is one commit too many.
    await s.putDesired(desired("c7", 2));
    await s.recordConvergence("c7", applied("east", 7));
    expect(await s.getConvergence("c2")).toBeUndefined();
    expect(await s.getConvergence("c4")).toBeUndefined();
    for (const c of ["c5", "c6", "c7"]) expect(await s.getConvergence(c)).toBeDefined();
  });

  it("drops a convergence record maxAgeMs after its last entry, the current commit's only once it is superseded", async () => {
    const h = harness();
    const s = h.make({ maxAgeMs: AGE });
    await s.putDesired(desired("cur", 1));
    await s.recordConvergence("cur", applied("east", 1));
    await s.recordConvergence("old", applied("east", 1));
    await h.advance(AGE * 0.6);
    await s.recordConvergence("old", applied("west", 2)); // a late ACK: the record lives on from now
    await h.advance(AGE * 0.6);
    expect(Object.keys((await s.getConvergence("old"))?.clusters ?? {})).toEqual(["east", "west"]);
    await h.advance(AGE * 0.6);
    expect(await s.getConvergence("old")).toBeUndefined();
    expect(await s.getConvergence("cur")).toBeDefined(); // current: kept whatever its age
    await s.putDesired(desired("next", 2));
    expect(await s.getConvergence("cur")).toBeDefined();
    await h.advance(AGE * 1.5);
    expect(await s.getConvergence("cur")).toBeUndefined();
  });

  it("keeps the convergence record a cluster's output comes from, whatever its rank and age, until its output moves on", async () => {
    const h = harness();
    const s = h.make({ convergenceCommits: 2, maxAgeMs: AGE });
    await s.putDesired(desired("c1", 1));
    await s.putOutput(output("east", 1, "c1"), 0);
    await s.recordConvergence("c1", applied("east", 1));
    // Four commits that leave east's output unchanged (only west's changes).
    for (let i = 2; i <= 5; i++) {
      await s.putDesired(desired(`c${i}`, i));
      await s.putOutputIfNewer(output("west", i, `c${i}`));
      await s.recordConvergence(`c${i}`, { cluster: "east", version: 1, publishedAtMs: i, unchangedFrom: "c1" });
    }
    await h.advance(AGE * 1.5);
    // c1 is beyond the newest two and older than maxAgeMs, but east runs its output: its ACK is how
    // the server knows that east runs c5.
    expect((await s.getConvergence("c1"))?.clusters.east?.appliedAtMs).toBe(1);
    expect(await s.getConvergence("c2")).toBeUndefined();
    expect(await s.getConvergence("c4")).toBeUndefined();
    expect(await s.getConvergence("c5")).toBeDefined();
    // east's output moves on to c5: c1 ages from now.
    await s.putOutput(output("east", 2, "c5"), 1);
    expect(await s.getConvergence("c1")).toBeDefined();
    await h.advance(AGE * 1.5);
    expect(await s.getConvergence("c1")).toBeUndefined();
    expect(await s.getConvergence("c5")).toBeDefined();
  });

  it("removes a pending set when it empties, and expires one pendingTtlMs after its last change", async () => {
    const h = harness();
    const s = h.make({ pendingTtlMs: AGE });
    await s.addPending("c1", ["w1", "w2"]);
    await s.removePending("c1", "w1");
    await s.removePending("c1", "w2");
    expect(await s.pending("c1")).toEqual([]);
    await s.addPending("c2", ["w1", "w2", "w3"]);
    await h.advance(AGE * 0.6);
    await s.removePending("c2", "w1"); // a job finished: the set lives on from now
    await h.advance(AGE * 0.6);
    expect(await s.pending("c2")).toEqual(["w2", "w3"]);
    await h.advance(AGE * 0.6);
    expect(await s.pending("c2")).toEqual([]);
    // A removal from a set that expired does not bring it back.
    await s.removePending("c2", "w2");
    expect(await s.pending("c2")).toEqual([]);
  });
});

describe("redis store: what Redis itself expires", () => {
  const make = (retention: RetentionOptions = {}) => {
    const prefix = `x${Math.random().toString(36).slice(2)}:`;
    return { s: createRedisStore({ redis: client, prefix, retention }), key: (k: string) => `${prefix}${k}`, prefix };
  };

  it("sets PEXPIRE on what is no longer current and persists what is", async () => {
    const { s, key } = make({ maxAgeMs: 60_000, pendingTtlMs: 30_000 });
    await s.putDesired(desired("a", 1));
    await s.recordConvergence("a", applied("east", 1));
    await s.recordConvergence("z", applied("east", 1)); // not current
    expect(await client.pttl(key("desired:a"))).toBe(-1);
    expect(await client.pttl(key("conv:a"))).toBe(-1);
    const z = await client.pttl(key("conv:z"));
    expect(z).toBeGreaterThan(50_000);
    expect(z).toBeLessThanOrEqual(60_000);

    await s.putDesired(desired("b", 2));
    await s.recordConvergence("b", applied("east", 2));
    for (const k of ["desired:a", "conv:a"]) {
      const ttl = await client.pttl(key(k));
      expect(ttl, k).toBeGreaterThan(50_000);
      expect(ttl, k).toBeLessThanOrEqual(60_000);
    }
    expect(await client.pttl(key("desired:b"))).toBe(-1);
    expect(await client.pttl(key("conv:b"))).toBe(-1);

    await s.addPending("b", ["w1", "w2"]);
    const p = await client.pttl(key("pending:b"));
    expect(p).toBeGreaterThan(20_000);
    expect(p).toBeLessThanOrEqual(30_000);
    await s.removePending("b", "w1");
    await s.removePending("b", "w2");
    expect(await client.exists(key("pending:b"))).toBe(0);
  });

  it("a convergence record an output comes from has no TTL until no output comes from it", async () => {
    const { s, key } = make({ maxAgeMs: 60_000 });
    await s.putDesired(desired("a", 1));
    await s.putOutput(output("east", 1, "a"), 0);
    await s.putOutput(output("west", 1, "a"), 0);
    await s.recordConvergence("a", applied("east", 1));
    await s.putDesired(desired("b", 2));
    await s.recordConvergence("a", applied("west", 2)); // a late ACK of a superseded commit an output comes from
    expect(await client.pttl(key("conv:a"))).toBe(-1);
    await s.putOutput(output("east", 2, "b"), 1);
    expect(await client.pttl(key("conv:a"))).toBe(-1); // west's output still comes from it
    await s.putOutput(output("west", 2, "b"), 1);
    expect(await client.pttl(key("conv:a"))).toBeGreaterThan(50_000);
    expect(await client.hgetall(key("outsrc:refs"))).toEqual({ b: "2" });
  });

  it("an older generation written late is stored but ages, and the current record is persisted even if it had a TTL", async () => {
    const { s, key } = make({ maxAgeMs: 60_000 });
    await s.putDesired(desired("a", 1));
    await s.putDesired(desired("b", 2));
    await s.putDesired(desired("a", 1)); // write-back of an older generation
    expect(await s.getDesiredPointer()).toEqual({ commit: "b", generation: 2 });
    expect(await client.pttl(key("desired:a"))).toBeGreaterThan(0);
    expect(await client.pttl(key("desired:b"))).toBe(-1);
    // The same commit becoming current again (generation 3) is kept without an age.
    await s.putDesired(desired("a", 3));
    expect(await client.pttl(key("desired:a"))).toBe(-1);
    expect(await client.pttl(key("desired:b"))).toBeGreaterThan(0);
  });

  it("trims the commit index with the records and keeps its keys in one family under the prefix", async () => {
    const { s, key, prefix } = make({ convergenceCommits: 2 });
    for (let i = 1; i <= 5; i++) await s.recordConvergence(`c${i}`, applied("east", i));
    expect(await client.zrange(key("conv:commits"), 0, -1)).toEqual(["c4", "c5"]);
    const keys = (await client.keys(`${prefix}*`)).sort();
    expect(keys).toEqual([key("conv:c4"), key("conv:c5"), key("conv:commits")]);
  });

  it("fragment hashes of a cluster that no workspace renders for any more are deleted", async () => {
    const { s, key } = make();
    await s.putFragments("w1", [frag("w1", "gone"), frag("w1", "stays")]);
    await s.putFragments("w1", [frag("w1", "stays")]);
    expect(await client.exists(key("frag:gone"))).toBe(0);
    await s.putFragments("w1", []);
    expect(await client.exists(key("fraghash:w1"))).toBe(0);
  });

  it("bounds keys that an installation without retention left without a TTL, except the current commit's", async () => {
    const { s, key } = make({ maxAgeMs: 60_000, pendingTtlMs: 30_000 });
    await client.set(key("desired:pointer"), JSON.stringify({ commit: "cur", generation: 4 }));
    await client.set(key("desired:cur"), "j{}");
    await client.set(key("desired:old"), "j{}");
    await client.hset(key("conv:cur"), "east", "{}");
    await client.hset(key("conv:old"), "east", "{}");
    await client.sadd(key("pending:old"), "w1");
    await client.sadd(key("pending:cur"), "w1");
    // The first desired state starts the check in the background; a late write of an older
    // generation leaves "cur" current.
    await s.putDesired(desired("late", 1));
    expect(await s.getDesiredPointer()).toEqual({ commit: "cur", generation: 4 });
    const deadline = Date.now() + 10_000;
    while ((await client.pttl(key("pending:old"))) === -1 && Date.now() < deadline) await sleep(20);
    await sleep(100);
    for (const k of ["desired:old", "conv:old", "desired:late"]) {
      const ttl = await client.pttl(key(k));
      expect(ttl, k).toBeGreaterThan(50_000);
      expect(ttl, k).toBeLessThanOrEqual(60_000);
    }
    for (const k of ["pending:old", "pending:cur"]) {
      const ttl = await client.pttl(key(k));
      expect(ttl, k).toBeGreaterThan(20_000);
      expect(ttl, k).toBeLessThanOrEqual(30_000);
    }
    expect(await client.pttl(key("desired:cur"))).toBe(-1);
    expect(await client.pttl(key("conv:cur"))).toBe(-1);
    expect(await client.pttl(key("desired:pointer"))).toBe(-1);
  });
});

describe("memory store counts", () => {
  it("leaves nothing behind for a cluster that no workspace renders for any more", async () => {
    const s = createMemoryStore();
    await s.putFragments("w1", [frag("w1", "gone"), frag("w1", "stays")]);
    await s.putFragments("w2", [frag("w2", "gone")]);
    await s.putFragments("w1", [frag("w1", "stays")]);
    await s.putFragments("w2", []);
    expect(s.counts()).toMatchObject({ fragmentClusters: 1, fragmentWorkspaces: 1 });
  });

  it("counts live entries only", async () => {
    let clock = 0;
    const s = createMemoryStore({ retention: { maxAgeMs: 100, pendingTtlMs: 100 }, now: () => clock });
    await s.putDesired(desired("a", 1));
    await s.putDesired(desired("b", 2));
    await s.recordConvergence("a", applied("east", 1));
    await s.addPending("b", ["w1"]);
    expect(s.counts()).toMatchObject({ desired: 2, convergence: 1, pending: 1 });
    clock += 101;
    expect(s.counts()).toMatchObject({ desired: 1, convergence: 0, pending: 0 });
  });
});

describe("retention options", () => {
  it("documented defaults, and a bad value names the option", () => {
    expect(resolveRetention(undefined)).toEqual({ desiredStates: 8, convergenceCommits: 100, maxAgeMs: 7 * 24 * 3600 * 1000, pendingTtlMs: 3600 * 1000 });
    expect(resolveRetention({ convergenceCommits: 5 })).toEqual({ ...DEFAULT_RETENTION, convergenceCommits: 5 });
    expect(() => resolveRetention({ maxAgeMs: 0 })).toThrow(/maxAgeMs must be an integer ≥ 1, not 0/);
    expect(() => resolveRetention({ desiredStates: 1.5 })).toThrow(/desiredStates/);
    expect(() => createMemoryStore({ retention: { pendingTtlMs: -1 } })).toThrow(RangeError);
  });
});
