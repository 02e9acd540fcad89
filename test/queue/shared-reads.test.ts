/** The cluster stage's shared reads: decoded once per change of the store's tokens, never stale. */
import { describe, expect, it } from "vitest";
import { createMemoryStore, type SnapshotStore, type WorkspaceStatus } from "../../src/store/index.js";
import type { DiscoverySnapshot } from "../../src/discovery/index.js";
import { createClusterStageReader } from "../../src/queue/shared-reads.js";

const status = (workspace: string, commit: string, extra: Partial<WorkspaceStatus> = {}): WorkspaceStatus => ({ workspace, commit, generation: 1, diagnostics: [], atMs: 1, ...extra });
const snapshot = (cluster: string) => ({ cluster }) as unknown as DiscoverySnapshot;

/** A memory store that counts the reads the cache is meant to save. */
function counting(store: SnapshotStore, opts: { tokens?: boolean } = {}) {
  const reads = { statuses: 0, checksums: 0 };
  const wrapped: SnapshotStore = {
    ...store,
    listWorkspaceStatus: () => (reads.statuses++, store.listWorkspaceStatus()),
    discoveryChecksums: () => (reads.checksums++, store.discoveryChecksums()),
    versions: () => (opts.tokens === false ? Promise.resolve({ workspaceStatus: undefined, discovery: undefined }) : store.versions()),
  };
  return { store: wrapped, reads };
}

describe("cluster stage inputs", () => {
  it("reads statuses and discovery once for many cluster jobs, and again only after a write", async () => {
    const base = createMemoryStore();
    const { store, reads } = counting(base);
    await base.putWorkspaceStatus(status("w1", "c1"));
    await base.putDiscovery({ cluster: "a", checksum: "1", snapshot: snapshot("a"), atMs: 1 });
    const read = createClusterStageReader();

    const first = await Promise.all(Array.from({ length: 20 }, () => read(store)));
    expect(reads).toEqual({ statuses: 1, checksums: 1 });
    expect(first[0]!.statuses.get("w1")?.commit).toBe("c1");
    expect([...first[0]!.discovered]).toEqual(["a"]);
    expect(first.every((r) => r.statuses === first[0]!.statuses)).toBe(true);

    // A status changes (a workspace failed): the next job sees it; discovery is not read again.
    await base.putWorkspaceStatus(status("w1", "c1", { failure: { code: "E", reaction: "transient", message: "boom", attempts: 5, commit: "c2", atMs: 2 } }));
    const second = await read(store);
    expect(second.statuses.get("w1")?.failure?.message).toBe("boom");
    expect(reads).toEqual({ statuses: 2, checksums: 1 });

    // A cluster reports for the first time: discovered grows, statuses are not read again.
    await base.putDiscovery({ cluster: "b", checksum: "1", snapshot: snapshot("b"), atMs: 2 });
    const third = await read(store);
    expect([...third.discovered].sort()).toEqual(["a", "b"]);
    expect(third.statuses).toBe(second.statuses);
    expect(reads).toEqual({ statuses: 2, checksums: 2 });
  });

  it("keeps one cache per store: the memory mirror's data never answers for Redis", async () => {
    const one = createMemoryStore();
    const two = createMemoryStore();
    await one.putWorkspaceStatus(status("w1", "c1"));
    await two.putWorkspaceStatus(status("w1", "c2"));
    const read = createClusterStageReader();
    expect((await read(one)).statuses.get("w1")?.commit).toBe("c1");
    expect((await read(two)).statuses.get("w1")?.commit).toBe("c2");
  });

  it("reads every time when the store gives no token, and does not keep a failed read", async () => {
    const base = createMemoryStore();
    await base.putWorkspaceStatus(status("w1", "c1"));
    const untokened = counting(base, { tokens: false });
    const read = createClusterStageReader();
    await read(untokened.store);
    await read(untokened.store);
    expect(untokened.reads.statuses).toBe(2);

    let fail = true;
    const flaky: SnapshotStore = { ...base, listWorkspaceStatus: () => (fail ? Promise.reject(new Error("redis down")) : base.listWorkspaceStatus()) };
    await expect(read(flaky)).rejects.toThrow("redis down");
    fail = false;
    expect((await read(flaky)).statuses.get("w1")?.commit).toBe("c1");
  });
});
