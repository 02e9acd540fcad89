/** Redis outages under a running pipeline, replicas on one Redis, and the leader lock. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createLeaderLock, createPipeline, type Pipeline, type PipelineMode, type PipelineOptions } from "../../src/queue/index.js";
import { startTcpBalancer } from "../../src/devtools/index.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { faultInjectionChange, loadFixture, outputSink, reference, until, type Fixture } from "./fixture.js";

let redis: TestRedis;
let fx: Fixture;
const open: Pipeline[] = [];
const clients: Redis[] = [];

beforeAll(async () => {
  redis = await startRedis({ outages: true });
  fx = await loadFixture();
});
afterAll(async () => {
  for (const p of open) await p.close().catch(() => undefined);
  for (const c of clients) c.disconnect();
  await redis.stop();
});

async function make(options: Partial<PipelineOptions> = {}) {
  const sink = outputSink();
  const modes: PipelineMode[] = [];
  const p = await createPipeline({ redis: redis.url, onOutput: sink.onOutput, onModeChange: (m) => modes.push(m), backoffMs: 20, ...options });
  open.push(p);
  return { p, sink, modes };
}

async function feed(p: Pipeline, commit = "c1") {
  for (const [cluster, snap] of fx.discovery) await p.setDiscovery(cluster, snap);
  await p.setDesiredState({ commit, ref: "main", state: fx.state, changedKeys: [] });
}

describe("Redis outage", () => {
  it("keeps translating in-process, writes state back when Redis returns (empty), versions never go backwards", async () => {
    const { p, sink, modes } = await make({ prefix: "outage:" });
    await feed(p);
    await p.idle();
    const before = new Map([...sink.last].map(([c, e]) => [c, e.version]));
    expect(before.size).toBeGreaterThan(0);

    await redis.stop();
    await until(() => p.mode() === "degraded", 10_000, "degraded mode");
    const next = faultInjectionChange(fx);
    await p.setDesiredState({ commit: "c2", ref: "main", state: next.state, changedKeys: next.changedKeys });
    await until(() => [...sink.last.values()].some((e) => e.sourceCommit === "c2"), 20_000, "output of c2 while Redis is down");
    await p.idle();
    expect(sink.json()).toEqual(reference(next.state, fx.discovery));

    await redis.start(); // a restarted server is EMPTY
    await until(() => p.mode() === "redis", 20_000, "back to redis mode");
    await p.idle();
    expect(modes).toEqual(["redis", "degraded", "redis"]);
    // state was written back
    const store = p.store();
    expect((await store.getDesiredPointer())?.commit).toBe("c2");
    expect((await store.listDiscovery()).map((d) => d.cluster).sort()).toEqual([...fx.discovery.keys()].sort());
    const versions = await store.outputVersions();
    for (const [c, v] of before) expect(versions.get(c)).toBeGreaterThanOrEqual(v);
    for (const [c, e] of sink.last) expect(versions.get(c)).toBe(e.version);
    // versions delivered per cluster only ever increase
    const seen = new Map<string, number>();
    for (const v of sink.versions) {
      expect(v.version).toBeGreaterThan(seen.get(v.cluster) ?? 0);
      seen.set(v.cluster, v.version);
    }
    // the queue resumed: a new change flows through Redis
    const third = faultInjectionChange(fx, "7s");
    await p.setDesiredState({ commit: "c3", ref: "main", state: third.state, changedKeys: third.changedKeys });
    await p.idle();
    expect(p.mode()).toBe("redis");
    expect(sink.json()).toEqual(reference(third.state, fx.discovery));
    expect((await store.getOutput([...sink.last.keys()][0]!))?.sourceCommit).toBe("c3");
  });
});

describe("replicas through one outage", () => {
  it("a replica that missed a commit while Redis was down does not write its older translations back over newer ones", async () => {
    // Replica B reaches Redis through a proxy the test controls, so it comes back after A.
    const proxy = await startTcpBalancer({ backends: [{ host: redis.host, port: redis.port }] });
    const proxied = redis.url.replace(`:${String(redis.port)}/`, `:${String(proxy.port)}/`);
    // A only enqueues (and delivers): B translates c1, so B's memory holds c1's translations.
    const a = await make({ prefix: "stale:", work: false });
    const b = await make({ prefix: "stale:", redis: proxied });
    await feed(a.p);
    await until(() => b.sink.last.size === fx.discovery.size, 20_000, "c1 on B");
    await a.p.idle();

    await proxy.stop();
    await redis.stop();
    await until(() => a.p.mode() === "degraded" && b.p.mode() === "degraded", 10_000, "both degraded");
    // c2 reaches A only (the replicas cannot tell each other while Redis is down).
    const next = faultInjectionChange(fx, "9s");
    await a.p.setDesiredState({ commit: "c2", ref: "main", state: next.state, changedKeys: next.changedKeys });
    await until(() => [...a.sink.last.values()].every((e) => e.sourceCommit === "c2") && a.sink.last.size === fx.discovery.size, 20_000, "c2 on A, from memory");

    await redis.start(); // empty: A writes c2 back first
    await until(() => a.p.mode() === "redis", 20_000, "A back on Redis");
    // (A runs no job: its reconciliation waits in the queue for B.)
    await until(async () => (await a.p.store().getDesiredPointer())?.commit === "c2" && (await a.p.store().listFragments()).length > 0, 20_000, "c2 written back by A");
    const again = await startTcpBalancer({ backends: [{ host: redis.host, port: redis.port }], port: proxy.port });
    try {
      await until(() => b.p.mode() === "redis", 20_000, "B back on Redis");
      await b.p.idle();
      await a.p.idle();
      // B's translations of c1 are older than what Redis holds: the outputs stay c2's.
      expect(a.sink.json()).toEqual(reference(next.state, fx.discovery));
      // The workspace c2 changed keeps A's translation of c2 in Redis (B's of c1 was not written back).
      const changed = (await a.p.store().listFragments()).filter((f) => f.workspace === "bookinfo-backends");
      expect(changed.length).toBeGreaterThan(0);
      for (const f of changed) expect(f.commit, `${f.workspace}/${f.cluster}`).toBe("c2");
      expect((await a.p.store().getWorkspaceStatus("bookinfo-backends"))?.commit).toBe("c2");
    } finally {
      await again.stop();
    }
  }, 90_000);
});

describe("replicas", () => {
  it("an output computed anywhere reaches the replica that delivers its cluster", async () => {
    const [c1, c2] = [...fx.discovery.keys()].sort();
    // replica A holds cluster1's agent and does no work; replica B runs the jobs and holds cluster2
    const a = await make({ prefix: "rep:", work: false, wantsOutput: (c) => c === c1 });
    const b = await make({ prefix: "rep:", wantsOutput: (c) => c === c2 });
    await feed(a.p);
    await until(() => a.sink.last.has(c1!) && b.sink.last.has(c2!), 20_000, "outputs on both replicas");
    await b.p.idle();
    expect([...a.sink.last.keys()]).toEqual([c1]);
    expect([...b.sink.last.keys()]).toEqual([c2]);
    const ref = reference(fx.state, fx.discovery);
    expect(a.sink.json().get(c1!)).toBe(ref.get(c1!));
    expect(a.sink.last.get(c1!)?.version).toBe(1);
  });

  it("the lock is held by one replica at a time and moves when the holder stops", async () => {
    const mk = () => {
      const c = new Redis(redis.url);
      clients.push(c);
      return c;
    };
    const lost: string[] = [];
    const l1 = createLeaderLock({ redis: mk(), name: "git-poll", ttlMs: 300, onLost: (r) => lost.push(r) });
    const l2 = createLeaderLock({ redis: mk(), name: "git-poll", ttlMs: 300 });
    expect(await l1.acquire()).toBe(true);
    expect(await l2.acquire()).toBe(false);
    await new Promise((r) => setTimeout(r, 700)); // renewals keep it past its TTL
    expect(await l2.acquire()).toBe(false);
    expect(l1.isHeld()).toBe(true);
    await l1.release();
    expect(await l2.acquire()).toBe(true);
    // a holder that dies without releasing: the lease expires and another takes over
    const c3 = mk();
    const l3 = createLeaderLock({ redis: c3, name: "audit", ttlMs: 300 });
    const l4 = createLeaderLock({ redis: mk(), name: "audit", ttlMs: 300 });
    expect(await l3.acquire()).toBe(true);
    c3.disconnect(); // crash: no release, no renewals reach Redis
    await until(() => l4.acquire(), 5_000, "lock to move");
    await until(() => !l3.isHeld(), 5_000, "old holder to notice");
    await l2.release();
    await l4.release();
    expect(lost).toEqual([]);
  });
});
