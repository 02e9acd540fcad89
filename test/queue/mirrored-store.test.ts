/** Redis with a write-through memory mirror (mirrored-store.ts), over two memory stores: "redis" and the mirror. */
import { describe, expect, it } from "vitest";
import { createMemoryStore, type OutputRecord, type SnapshotStore, type WorkspaceStatus } from "../../src/store/index.js";
import type { DiscoverySnapshot } from "../../src/discovery/index.js";
import { createMirroredStore } from "../../src/queue/mirrored-store.js";

const output = (cluster: string, version: number): OutputRecord => ({ cluster, version, sourceCommit: `c${version}`, hash: `h${version}`, resources: [], complete: true, diagnostics: [], atMs: version });
const status = (workspace: string): WorkspaceStatus => ({ workspace, commit: "c1", generation: 1, diagnostics: [], atMs: 1 });
const snapshot = (cluster: string) => ({ cluster }) as unknown as DiscoverySnapshot;

describe("mirrored store", () => {
  it("writes to Redis and to the mirror; reads what Redis holds and copies it into the mirror", async () => {
    const redis = createMemoryStore();
    const mirror = createMemoryStore();
    const store = createMirroredStore(redis, mirror);
    expect(store.kind).toBe("redis");

    await store.putWorkspaceStatus(status("w1"));
    await store.addPending("c1", ["w1", "w2"]);
    await store.removePending("c1", "w2");
    await store.recordConvergence("c1", { cluster: "a", version: 1, publishedAtMs: 1 });
    for (const s of [redis, mirror]) {
      expect((await s.getWorkspaceStatus("w1"))?.commit).toBe("c1");
      expect(await s.pending("c1")).toEqual(["w1"]);
      expect((await s.getConvergence("c1"))?.clusters.a?.version).toBe(1);
    }
    // Another replica wrote to Redis: reading it through the mirrored store brings it into the mirror.
    await redis.putDiscovery({ cluster: "b", checksum: "1", snapshot: snapshot("b"), atMs: 1 });
    await redis.putOutput(output("b", 1), 0);
    expect((await store.getDiscovery("b"))?.checksum).toBe("1");
    expect((await store.getOutput("b"))?.version).toBe(1);
    expect((await mirror.getDiscovery("b"))?.checksum).toBe("1");
    expect((await mirror.getOutput("b"))?.version).toBe(1);
  });

  it("the mirror's outputs never go backwards and hold only what Redis accepted", async () => {
    const redis = createMemoryStore();
    const mirror = createMemoryStore();
    const store = createMirroredStore(redis, mirror);
    expect(await store.putOutput(output("a", 1), 0)).toBe(true);
    // A concurrent publish (compare-and-set on the wrong previous version): neither store takes it.
    expect(await store.putOutput(output("a", 5), 0)).toBe(false);
    expect((await mirror.getOutput("a"))?.version).toBe(1);
    // The mirror is ahead (written while degraded): an older version read from Redis does not replace it.
    await mirror.putOutputIfNewer(output("a", 3));
    expect((await store.getOutput("a"))?.version).toBe(1);
    expect((await mirror.getOutput("a"))?.version).toBe(3);
  });

  it("a write Redis refuses reaches neither store; locks are Redis' alone", async () => {
    const redis = createMemoryStore();
    const mirror = createMemoryStore();
    const failing: SnapshotStore = { ...redis, putWorkspaceStatus: () => Promise.reject(new Error("Redis gone")) };
    const store = createMirroredStore(failing, mirror);
    await expect(store.putWorkspaceStatus(status("w1"))).rejects.toThrow("Redis gone");
    expect(await mirror.getWorkspaceStatus("w1")).toBeUndefined();

    const token = await store.tryLock("workspace:w1", 1000);
    expect(token).toBeDefined();
    expect(await redis.tryLock("workspace:w1", 1000)).toBeUndefined();
    expect(await mirror.tryLock("workspace:w1", 1000)).toBeDefined();
  });
});
