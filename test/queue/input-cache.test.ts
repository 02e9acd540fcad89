/** The pipeline's input caches (input-cache.ts): same objects across reads, rebuilt only for what changed. */
import { describe, expect, it } from "vitest";
import type { DiscoverySnapshot } from "../../src/discovery/index.js";
import { createMemoryStore, type DesiredRecord, type SnapshotStore } from "../../src/store/index.js";
import { createInputCache } from "../../src/queue/input-cache.js";

const desired = (commit: string): DesiredRecord => ({ commit, ref: "main", generation: 1, state: {} as DesiredRecord["state"], changedKeys: [], atMs: 1 });
const snapshot = (cluster: string) => ({ cluster }) as unknown as DiscoverySnapshot;

function counting(store: SnapshotStore) {
  const reads = { desired: 0, discovery: [] as string[] };
  const wrapped: SnapshotStore = {
    ...store,
    getDesired: (c) => (reads.desired++, store.getDesired(c)),
    getDiscovery: (c) => (reads.discovery.push(c), store.getDiscovery(c)),
  };
  return { store: wrapped, reads };
}

describe("input cache", () => {
  it("reads a commit's desired state once, remembers what was written, and does not keep a miss", async () => {
    const base = createMemoryStore();
    const { store, reads } = counting(base);
    const cache = createInputCache();
    await base.putDesired(desired("c1"));
    const a = await cache.desired(store, "c1");
    expect(await cache.desired(store, "c1")).toBe(a);
    expect(reads.desired).toBe(1);

    expect(await cache.desired(store, "c2")).toBeUndefined();
    await base.putDesired(desired("c2"));
    expect((await cache.desired(store, "c2"))?.commit).toBe("c2");
    expect(reads.desired).toBe(3);

    const c3 = desired("c3");
    cache.remember(c3);
    expect(await cache.desired(store, "c3")).toBe(c3);
    expect(reads.desired).toBe(3);
  });

  it("rebuilds the discovery map when a checksum changes, re-reading only that cluster, with a new fingerprint", async () => {
    const base = createMemoryStore();
    const { store, reads } = counting(base);
    const cache = createInputCache();
    await base.putDiscovery({ cluster: "a", checksum: "1", snapshot: snapshot("a"), atMs: 1 });
    await base.putDiscovery({ cluster: "b", checksum: "1", snapshot: snapshot("b"), atMs: 1 });
    const first = await cache.discovery(store);
    expect([...first.map.keys()]).toEqual(["a", "b"]);
    const again = await cache.discovery(store);
    expect(again.map).toBe(first.map);
    expect(again.fingerprint).toBe(first.fingerprint);
    expect(reads.discovery).toEqual(["a", "b"]);

    await base.putDiscovery({ cluster: "b", checksum: "2", snapshot: snapshot("b"), atMs: 2 });
    const next = await cache.discovery(store);
    expect(next.fingerprint).not.toBe(first.fingerprint);
    expect(next.map.get("a")).toBe(first.map.get("a"));
    expect(next.map.get("b")).not.toBe(first.map.get("b"));
    expect(reads.discovery).toEqual(["a", "b", "b"]);
  });
});
