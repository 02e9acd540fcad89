// Audit scheduling (src/server/audit-scheduling.ts) with a real audit writer into a real bare Git
// repository and a real memory store: the leader writes the outputs of the commit in force once they
// are settled, complete and nothing is pending; a follower, unsettled or held outputs write nothing;
// pending workspaces are retried; only registered clusters are written.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import { emptySnapshot, snapshotChecksum } from "../../src/discovery/index.js";
import { createAuditWriter } from "../../src/git-sync/index.js";
import { createMemoryStore, type MemoryStore, type OutputRecord } from "../../src/store/index.js";
import { createAuditScheduling, type AuditSchedulingOptions } from "../../src/server/audit-scheduling.js";
import type { PipelineOutput } from "../../src/server/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { clustersState, sha } from "./fixtures.js";

let git: GitServer;
let repos = 0;
beforeAll(async () => {
  git = await startGitServer();
});
afterAll(() => git.stop());

const record = (cluster: string, version: number, extra: Partial<OutputRecord> = {}): OutputRecord => ({
  cluster,
  version,
  sourceCommit: sha("a"),
  hash: `h${String(version)}`,
  resources: [{ apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: `web-${cluster}`, namespace: "apps", labels: {} }, spec: { hosts: ["web"] } }],
  complete: true,
  diagnostics: [],
  atMs: 1,
  ...extra,
});

interface Flags {
  readonly leader?: { value: boolean };
  readonly settled?: { value: boolean };
  /** This replica's copies of outputs. */
  readonly mine?: Map<string, PipelineOutput>;
}

async function setup(flags: Flags = {}, overrides: Partial<AuditSchedulingOptions> = {}) {
  const repo = `audit${String(++repos)}`;
  await git.createRepo(repo);
  await git.commitFiles(repo, { "README.md": "audit\n" }, "init");
  const store: MemoryStore = createMemoryStore();
  for (const c of ["cluster1", "cluster2"]) {
    const snapshot = emptySnapshot(c);
    await store.putDiscovery({ cluster: c, checksum: snapshotChecksum(snapshot), snapshot, atMs: 1 });
  }
  const state = clustersState(["cluster1", "cluster2"]);
  const leader = flags.leader ?? { value: true };
  const settled = flags.settled ?? { value: true };
  const mem = createMemoryLogger("server");
  const audit = createAuditScheduling({
    writer: createAuditWriter({ target: { kind: "local", path: git.repoPath(repo) }, branch: "gitmesh/rendered", logger: mem.logger }),
    branch: "gitmesh/rendered",
    ref: "main",
    store: () => store,
    inForce: () => ({ state, commit: sha("a"), committedAt: 1_700_000_000 }),
    isRegistered: (c) => c === "cluster1" || c === "cluster2",
    isLeader: () => leader.value,
    settled: () => settled.value,
    latest: (c) => flags.mine?.get(c),
    debounceMs: 10,
    logger: mem.logger,
    ...overrides,
  });
  const files = async () => (await git.git(repo, ["ls-tree", "-r", "--name-only", "gitmesh/rendered"]).catch(() => "")).trim().split("\n").filter((f) => f.startsWith("clusters/"));
  return { audit, store, leader, settled, files, repo };
}

describe("audit scheduling", () => {
  it("the leader writes the registered clusters' outputs of the commit in force, once", async () => {
    const { audit, store, files } = await setup({}, { isRegistered: (c) => c === "cluster1" });
    await store.putOutputIfNewer(record("cluster1", 1));
    await store.putOutputIfNewer(record("cluster3", 1));
    const run = await audit.run();
    expect(run).toMatchObject({ kind: "written", sourceCommit: sha("a") });
    const written = run.kind === "written" ? run.auditCommit : undefined;
    expect(written).toMatch(/^[0-9a-f]{40}$/);
    expect(audit.audited(sha("a"))).toBe(written);
    expect(await files()).toEqual(["clusters/cluster1/apps/virtualservice/web-cluster1.yaml"]);
    // Nothing changed: no new commit, the first one stays the audit of this source commit.
    expect(await audit.run()).toEqual({ kind: "written", sourceCommit: sha("a"), auditCommit: undefined });
    expect(audit.audited(sha("a"))).toBe(written);
  });

  it("a follower, unsettled outputs, or an output that is incomplete or holds deletions write nothing", async () => {
    const leader = { value: false };
    const settled = { value: false };
    const { audit, store, files } = await setup({ leader, settled });
    await store.putOutputIfNewer(record("cluster1", 1));
    await store.putOutputIfNewer(record("cluster2", 1, { held: [{ cause: "workspace", reason: "workspace team failed", sinceMs: 1, objects: ["VirtualService/apps/a"] }] }));
    expect(await audit.run()).toEqual({ kind: "skipped", why: "follower" });
    leader.value = true;
    expect(await audit.run()).toEqual({ kind: "skipped", why: "unsettled" });
    settled.value = true;
    expect(await audit.run()).toEqual({ kind: "skipped", why: "incomplete" });
    await store.putOutputIfNewer(record("cluster2", 2, { complete: false }));
    expect(await audit.run()).toEqual({ kind: "skipped", why: "incomplete" });
    expect(await files()).toEqual([]);
    expect(audit.audited(sha("a"))).toBeUndefined();
  });

  it("what holds the audit branch back is named: a registered cluster without discovery, outputs incomplete or holding deletions; cleared once written", async () => {
    const settled = { value: false };
    const missing = { value: ["cluster9"] as string[] };
    let clock = 1_000;
    const { audit, store, files } = await setup({ settled }, { waitingFor: () => missing.value, now: () => clock });
    expect(audit.held()).toBeUndefined();
    await store.putOutputIfNewer(record("cluster1", 1));
    await store.putOutputIfNewer(record("cluster2", 1, { complete: false }));
    expect(await audit.run()).toEqual({ kind: "skipped", why: "unsettled" });
    expect(audit.held()).toEqual({ reason: expect.stringContaining("waiting for the discovery of cluster9") as string, clusters: ["cluster9"], sinceMs: 1_000 });
    clock = 2_000;
    await audit.run();
    expect(audit.held()?.sinceMs).toBe(1_000); // the same reason keeps its start
    // Discovery known, pipeline not idle yet: waiting, and no cluster to blame.
    missing.value = [];
    expect(await audit.run()).toEqual({ kind: "skipped", why: "unsettled" });
    expect(audit.held()).toMatchObject({ clusters: [], sinceMs: 2_000 });
    settled.value = true;
    expect(await audit.run()).toEqual({ kind: "skipped", why: "incomplete" });
    expect(audit.held()).toMatchObject({ reason: "outputs of cluster2 are incomplete or hold deletions back", clusters: ["cluster2"] });
    await store.putOutputIfNewer(record("cluster2", 2));
    expect(await audit.run()).toMatchObject({ kind: "written" });
    expect(audit.held()).toBeUndefined();
    expect(await files()).toHaveLength(2);
  });

  it("this replica's copy of an output is used when its version is the store's", async () => {
    const mine = { ...record("cluster1", 1), resources: [{ ...record("cluster1", 1).resources[0]!, metadata: { name: "from-memory", namespace: "apps", labels: {} } }] };
    const { audit, store, files } = await setup({ mine: new Map([["cluster1", mine]]) }, { isRegistered: (c) => c === "cluster1" });
    await store.putOutputIfNewer(record("cluster1", 1));
    await audit.run();
    expect(await files()).toEqual(["clusters/cluster1/apps/virtualservice/from-memory.yaml"]);
  });

  it("while workspaces of the commit are pending it tries again by itself, and writes once they are done", async () => {
    const { audit, store, files } = await setup();
    await store.putOutputIfNewer(record("cluster1", 1));
    await store.putOutputIfNewer(record("cluster2", 1));
    await store.addPending(sha("a"), ["team"]);
    expect(await audit.run()).toEqual({ kind: "pending", workspaces: ["team"] });
    await store.removePending(sha("a"), "team");
    // The retry scheduled by the pending attempt writes it.
    for (let i = 0; i < 500 && audit.audited(sha("a")) === undefined; i++) await new Promise((r) => setTimeout(r, 20));
    expect(audit.audited(sha("a"))).toMatch(/^[0-9a-f]{40}$/);
    expect(await files()).toHaveLength(2);
    await audit.stop();
  });

  it("without an audit branch, or once the server is stopping, nothing is written", async () => {
    const controller = new AbortController();
    const { audit } = await setup({}, { signal: controller.signal });
    controller.abort();
    expect(await audit.run()).toEqual({ kind: "skipped", why: "stopping" });
    const off = await setup({}, { writer: undefined });
    off.audit.schedule();
    expect(await off.audit.run()).toEqual({ kind: "skipped", why: "no-audit" });
    await off.audit.stop();
  });
});
