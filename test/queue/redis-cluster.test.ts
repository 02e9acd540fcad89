/**
 * The pipeline on a real Redis Cluster (three masters): BullMQ's jobs, the store's scripts and
 * transactions, the lock and pub/sub all work when every key gitmesh writes carries one hash tag.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Cluster } from "ioredis";
import { createLeaderLock, createPipeline, createRedisClient, parseRedisUrl, scanRedisKeys, type Pipeline, type RedisClient } from "../../src/queue/index.js";
import { startRedisCluster, type TestRedisCluster } from "../helpers/redis-cluster.js";
import { faultInjectionChange, loadFixture, outputSink, reference, until, type Fixture } from "./fixture.js";

let cluster: TestRedisCluster;
let fx: Fixture;
const open: Pipeline[] = [];
const clients: RedisClient[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
  fx = await loadFixture();
});
afterAll(async () => {
  for (const p of open) await p.close().catch(() => undefined);
  for (const c of clients) c.disconnect();
  await cluster.stop();
});

describe("Redis Cluster", () => {
  it("two replicas converge: jobs run, outputs reach the replica that delivers them over pub/sub, every key in one slot", async () => {
    const [c1, c2] = [...fx.discovery.keys()].sort();
    const make = async (work: boolean, want: string) => {
      const sink = outputSink();
      const p = await createPipeline({ redis: cluster.url, prefix: "cl:", work, wantsOutput: (c) => c === want, onOutput: sink.onOutput, backoffMs: 20 });
      open.push(p);
      expect(p.mode()).toBe("redis");
      return { p, sink };
    };
    // a holds cluster1's agent and runs no jobs; b runs them and holds cluster2
    const a = await make(false, c1!);
    const b = await make(true, c2!);
    for (const [name, snap] of fx.discovery) await a.p.setDiscovery(name, snap);
    await a.p.setDesiredState({ commit: "c1", ref: "main", state: fx.state, changedKeys: [] });
    const ref = reference(fx.state, fx.discovery);
    await until(() => a.sink.json().get(c1!) === ref.get(c1!) && b.sink.json().get(c2!) === ref.get(c2!), 30_000, "outputs on both replicas");
    await b.p.idle();
    expect([...a.sink.last.keys()]).toEqual([c1]);
    expect([...b.sink.last.keys()]).toEqual([c2]);

    // a one-workspace change flows the same way
    const next = faultInjectionChange(fx);
    await a.p.setDesiredState({ commit: "c2", ref: "main", state: next.state, changedKeys: next.changedKeys });
    const ref2 = reference(next.state, fx.discovery);
    await until(() => a.sink.json().get(c1!) === ref2.get(c1!) && b.sink.json().get(c2!) === ref2.get(c2!), 30_000, "outputs of c2");
    await b.p.idle();

    // The store on the Cluster: scans see every key (from every master), versions and pointer are there.
    const store = b.p.store();
    expect(store.kind).toBe("redis");
    expect((await store.getDesiredPointer())?.commit).toBe("c2");
    expect((await store.listFragments()).length).toBeGreaterThan(0);
    expect([...(await store.outputVersions()).keys()].sort()).toEqual([c1, c2]);

    // Every key gitmesh wrote carries the hash tag of the prefix: one slot, on one master.
    const client = createRedisClient(parseRedisUrl(cluster.url), { lazyConnect: true });
    clients.push(client);
    expect(client).toBeInstanceOf(Cluster);
    await expect(scanRedisKeys(client, "*")).rejects.toThrow(/no primary known yet/);
    await client.connect();
    const keys = await scanRedisKeys(client, "*");
    expect(keys.length).toBeGreaterThan(10);
    expect(keys.filter((k) => !k.startsWith("{cl}:"))).toEqual([]);
    expect(keys.some((k) => k.startsWith("{cl}:bull:workspace:"))).toBe(true);
    const slots = new Set(await Promise.all(keys.slice(0, 20).map((k) => client.cluster("KEYSLOT", k))));
    expect(slots.size).toBe(1);
  });

  it("the leader lock works on a Cluster client", async () => {
    const mk = () => {
      const c = createRedisClient(parseRedisUrl(cluster.url));
      clients.push(c);
      return c;
    };
    const l1 = createLeaderLock({ redis: mk(), name: "git-poll", prefix: "{cl}:", ttlMs: 300 });
    const l2 = createLeaderLock({ redis: mk(), name: "git-poll", prefix: "{cl}:", ttlMs: 300 });
    expect(await l1.acquire()).toBe(true);
    expect(await l2.acquire()).toBe(false);
    await new Promise((r) => setTimeout(r, 500)); // renewed past its TTL
    expect(await l2.acquire()).toBe(false);
    await l1.release();
    expect(await l2.acquire()).toBe(true);
    await l2.release();
  });
});
