/** The same contract checks against both store implementations (Redis: a private redis-server). */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createMemoryStore, createRedisStore, decodeValue, encodeValue, type FragmentRecord, type OutputRecord, type SnapshotStore } from "../../src/store/index.js";
import type { DesiredState } from "../../src/config/index.js";
import type { DiscoverySnapshot } from "../../src/discovery/index.js";
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

const fakeState = (n: number) => ({ formatVersion: 1, marker: n, files: {}, objects: {} }) as unknown as DesiredState;
const frag = (workspace: string, cluster: string, hash: string): FragmentRecord => ({ workspace, cluster, hash, resources: [], commit: "c1" });
const output = (cluster: string, version: number): OutputRecord => ({ cluster, version, sourceCommit: "c1", hash: `h${version}`, resources: [], complete: true, diagnostics: [], atMs: 1 });

const cases: [string, () => SnapshotStore][] = [
  ["memory", () => createMemoryStore()],
  ["redis", () => createRedisStore({ redis: client, prefix: `t${Math.random().toString(36).slice(2)}:` })],
];

describe.each(cases)("%s store", (_name, make) => {
  it("keeps desired states per commit and a pointer that only moves forward", async () => {
    const s = make();
    await s.putDesired({ commit: "a", ref: "main", generation: 1, state: fakeState(1), changedKeys: [], atMs: 1 });
    await s.putDesired({ commit: "b", ref: "main", generation: 2, state: fakeState(2), changedKeys: ["x"], atMs: 2 });
    expect(await s.getDesiredPointer()).toEqual({ commit: "b", generation: 2 });
    // a late write of an older generation does not move the pointer back
    await s.putDesired({ commit: "a", ref: "main", generation: 1, state: fakeState(1), changedKeys: [], atMs: 3 });
    expect(await s.getDesiredPointer()).toEqual({ commit: "b", generation: 2 });
    expect((await s.getDesired("a"))?.state).toEqual(fakeState(1));
    expect(await s.getDesired("zzz")).toBeUndefined();
  });

  it("stores discovery with checksums", async () => {
    const s = make();
    const snap = { cluster: "c1", namespaces: [], services: [] } as unknown as DiscoverySnapshot;
    await s.putDiscovery({ cluster: "c1", checksum: "s1", snapshot: snap, atMs: 1 });
    expect(await s.discoveryChecksums()).toEqual(new Map([["c1", "s1"]]));
    expect((await s.getDiscovery("c1"))?.snapshot).toEqual(snap);
    expect((await s.listDiscovery()).map((r) => r.cluster)).toEqual(["c1"]);
  });

  it("moves the status token with every workspace status write and the discovery token with every discovery write, never with other writes", async () => {
    const s = make();
    expect(await s.versions()).toEqual({ workspaceStatus: undefined, discovery: undefined });
    const status = { workspace: "w1", commit: "c1", generation: 1, diagnostics: [], atMs: 1 };
    await s.putWorkspaceStatus(status);
    const v1 = await s.versions();
    expect(v1.workspaceStatus).toEqual(expect.any(String));
    expect(v1.discovery).toBeUndefined();
    // the same status again is still a write: readers re-read (a token never says "unchanged" wrongly)
    await s.putWorkspaceStatus(status);
    const v2 = await s.versions();
    expect(v2.workspaceStatus).not.toBe(v1.workspaceStatus);
    await s.putDiscovery({ cluster: "c1", checksum: "s1", snapshot: { cluster: "c1" } as unknown as DiscoverySnapshot, atMs: 1 });
    const v3 = await s.versions();
    expect(v3.workspaceStatus).toBe(v2.workspaceStatus);
    expect(v3.discovery).toEqual(expect.any(String));
    await s.putFragments("w1", [frag("w1", "a", "1")]);
    await s.putOutput(output("a", 1), 0);
    await s.addPending("c1", ["w1"]);
    await s.recordConvergence("c1", { cluster: "a", version: 1, publishedAtMs: 1 });
    expect(await s.versions()).toEqual(v3);
    // tokens are unique to a store: another store (a restarted Redis, the memory mirror) never repeats one
    const other = make();
    await other.putWorkspaceStatus(status);
    expect((await other.versions()).workspaceStatus).not.toBe(v3.workspaceStatus);
    await s.clear();
    expect(await s.versions()).toEqual({ workspaceStatus: undefined, discovery: undefined });
  });

  it("replaces a workspace's fragments and reports the clusters that changed", async () => {
    const s = make();
    expect(await s.putFragments("w1", [frag("w1", "a", "1"), frag("w1", "b", "1")])).toEqual(["a", "b"]);
    expect(await s.putFragments("w2", [frag("w2", "a", "9")])).toEqual(["a"]);
    expect(await s.putFragments("w1", [frag("w1", "a", "1"), frag("w1", "b", "2")])).toEqual(["b"]);
    expect(await s.putFragments("w1", [frag("w1", "b", "2")])).toEqual(["a"]);
    expect((await s.fragmentsForCluster("a")).map((f) => f.workspace)).toEqual(["w2"]);
    expect(await s.fragmentHashes("w1")).toEqual(new Map([["b", "2"]]));
    expect((await s.listFragments()).length).toBe(2);
  });

  it("versions outputs with compare-and-set, never backwards", async () => {
    const s = make();
    expect(await s.putOutput(output("a", 1), 0)).toBe(true);
    expect(await s.putOutput(output("a", 2), 0)).toBe(false); // someone else's view of "previous"
    expect(await s.putOutput(output("a", 2), 1)).toBe(true);
    expect(await s.putOutputIfNewer(output("a", 2))).toBe(false);
    expect(await s.putOutputIfNewer(output("a", 5))).toBe(true);
    expect((await s.getOutput("a"))?.version).toBe(5);
    expect(await s.outputVersions()).toEqual(new Map([["a", 5]]));
  });

  it("tracks pending workspaces, status, convergence and unit locks", async () => {
    const s = make();
    await s.addPending("c1", ["w1", "w2"]);
    await s.removePending("c1", "w1");
    expect(await s.pending("c1")).toEqual(["w2"]);
    await s.putWorkspaceStatus({ workspace: "w2", commit: "c1", generation: 1, diagnostics: [], atMs: 1 });
    expect((await s.listWorkspaceStatus()).map((w) => w.workspace)).toEqual(["w2"]);
    await s.recordConvergence("c1", { cluster: "a", version: 3, publishedAtMs: 10 });
    await s.recordConvergence("c1", { cluster: "a", version: 3, appliedAtMs: 20 });
    expect(await s.getConvergence("c1")).toEqual({ commit: "c1", clusters: { a: { cluster: "a", version: 3, publishedAtMs: 10, appliedAtMs: 20 } } });
    const t = await s.tryLock("workspace:w1", 10_000);
    expect(t).toBeDefined();
    expect(await s.tryLock("workspace:w1", 10_000)).toBeUndefined();
    await s.unlock("workspace:w1", "not-the-token");
    expect(await s.tryLock("workspace:w1", 10_000)).toBeUndefined();
    await s.unlock("workspace:w1", t!);
    expect(await s.tryLock("workspace:w1", 10_000)).toBeDefined();
    await s.clear();
    expect(await s.getDesiredPointer()).toBeUndefined();
  });
});

describe("redis store: convergence entries from several writers", () => {
  it("a publication and an ACK recorded at the same moment by two processes both stay (the merge is atomic)", async () => {
    const prefix = `t${Math.random().toString(36).slice(2)}:`;
    // Two replicas (or a worker and a replica) on one Redis: one records publications, the other ACKs and NACKs.
    const other = new Redis(redis.url);
    try {
      const jobs = createRedisStore({ redis: client, prefix });
      const acks = createRedisStore({ redis: other, prefix });
      const clusters = Array.from({ length: 200 }, (_, i) => `c${i}`);
      const at = 1_764_186_000_123; // a millisecond timestamp keeps every digit through the script
      await Promise.all(
        clusters.flatMap((c, i) => [
          jobs.recordConvergence("k1", { cluster: c, version: i + 1, publishedAtMs: at + i }),
          i % 10 === 0
            ? acks.recordConvergence("k1", { cluster: c, version: i + 1, nack: { message: `ServiceEntry "a/b" refusé: ${"x".repeat(3)} é/ü`, atMs: at } })
            : acks.recordConvergence("k1", { cluster: c, version: i + 1, appliedAtMs: at + 1_000 + i }),
        ]),
      );
      const rec = await jobs.getConvergence("k1");
      for (const [i, c] of clusters.entries()) {
        const expected = i % 10 === 0 ? { cluster: c, version: i + 1, publishedAtMs: at + i, nack: { message: `ServiceEntry "a/b" refusé: xxx é/ü`, atMs: at } } : { cluster: c, version: i + 1, publishedAtMs: at + i, appliedAtMs: at + 1_000 + i };
        expect(rec?.clusters[c]).toEqual(expected);
      }
    } finally {
      other.disconnect();
    }
  });
});

describe("redis store: records it knows are not decoded again", () => {
  const resources = (tag: string) => Array.from({ length: 40 }, (_, i) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: `cm-${i}`, namespace: "web", labels: {} }, spec: { tag } }));
  const big = (cluster: string, version: number, tag: string): OutputRecord => ({ ...output(cluster, version), hash: `h-${tag}`, resources: resources(tag) });
  const bigFrag = (workspace: string, cluster: string, tag: string): FragmentRecord => ({ ...frag(workspace, cluster, `h-${tag}`), resources: resources(tag) });

  it("returns what it wrote while the stored bytes are the same, and what another writer stored once they change", async () => {
    const prefix = `k${Math.random().toString(36).slice(2)}:`;
    const mine = createRedisStore({ redis: client, prefix });
    const other = createRedisStore({ redis: client, prefix });
    const o1 = big("a", 1, "one");
    expect(await mine.putOutput(o1, 0)).toBe(true);
    expect(await mine.getOutput("a")).toBe(o1);
    // another replica (its own store object) publishes version 2: read back, never the known version 1
    const o2 = big("a", 2, "two");
    expect(await other.putOutput(o2, 1)).toBe(true);
    const read = await mine.getOutput("a");
    expect(read).not.toBe(o1);
    expect(read).toEqual(JSON.parse(JSON.stringify(o2)));
    // decoded once, then known: the next read of the same bytes gives the same object
    expect(await mine.getOutput("a")).toBe(read);

    const f1 = bigFrag("w1", "a", "one");
    await mine.putFragments("w1", [f1]);
    expect((await mine.fragmentsForCluster("a"))[0]).toBe(f1);
    const f2 = bigFrag("w1", "a", "two");
    await other.putFragments("w1", [f2]);
    const frags = await mine.fragmentsForCluster("a");
    expect(frags[0]).not.toBe(f1);
    expect(frags[0]).toEqual(JSON.parse(JSON.stringify(f2)));
    // removed by another writer: gone here too
    await other.putFragments("w1", []);
    expect(await mine.fragmentsForCluster("a")).toEqual([]);
    await mine.clear();
  });
});

describe("codec", () => {
  it("compresses large values and round-trips both forms", () => {
    const small = { a: 1 };
    const large = { items: Array.from({ length: 500 }, (_, i) => ({ name: `svc-${i}`, port: 8080 })) };
    expect(encodeValue(small)[0]).toBe("j".charCodeAt(0));
    const enc = encodeValue(large);
    expect(enc[0]).toBe("z".charCodeAt(0));
    expect(enc.length).toBeLessThan(JSON.stringify(large).length / 4);
    expect(decodeValue(enc)).toEqual(large);
    expect(decodeValue(encodeValue(small))).toEqual(small);
    expect(() => decodeValue(Buffer.from("x{}"))).toThrow(/unknown encoding/);
  });
});
