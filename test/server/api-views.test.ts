// What the API shows (src/server/api-views.ts), over a real memory store, real agent sessions and a
// real convergence tracker mirrored into the store: a registered cluster whose agent never came is
// waiting, not stale; one held here that runs its output is in sync; one removed from Git is cut off;
// a commit that left an output unchanged counts once the relay ACKs that version; an applied output
// that holds deletions back or is incomplete is never "in sync"; the reissue action checks the name and
// the registration before it mints.
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import { emptySnapshot, snapshotChecksum } from "../../src/discovery/index.js";
import type { AppliedVersion } from "../../src/relay/index.js";
import { createMemoryStore, type HeldObjects, type OutputRecord } from "../../src/store/index.js";
import { createApiViews, type ApiViewsOptions } from "../../src/server/api-views.js";
import { createAgentSessions } from "../../src/server/agent-sessions.js";
import { registeredClusters } from "../../src/server/commit-in-force.js";
import { createConvergenceTracker, createServerMetrics } from "../../src/server/index.js";
import { clustersState, sha } from "./fixtures.js";

const output = (cluster: string, version: number, sourceCommit: string): OutputRecord => ({
  cluster,
  version,
  sourceCommit,
  hash: `h${String(version)}`,
  resources: [],
  complete: true,
  diagnostics: [],
  atMs: 1,
});

function setup(overrides: Partial<ApiViewsOptions> = {}) {
  const store = createMemoryStore();
  const state = clustersState(["cluster1", "cluster2"]);
  const registered = registeredClusters(state);
  const inForce = { value: { state, commit: sha("a"), committedAt: 1_700_000_000 } as { state: typeof state; commit: string; committedAt: number } | undefined };
  const sessions = createAgentSessions({ replica: "r1", metrics: createServerMetrics(new Registry()), logger: createMemoryLogger().logger, now: () => 5_000 });
  const convergence = createConvergenceTracker();
  const applied = new Map<string, AppliedVersion>();
  const refusals = new Map<string, { reason: string; message: string; atMs: number }>();
  const minted: string[] = [];
  const stopped = { value: false };
  const views = createApiViews({
    replica: "r1",
    auditBranch: "",
    repository: "config.git",
    store: () => store,
    pipeline: { status: () => Promise.resolve({ mode: "standalone", reason: "no Redis", queues: {} }) as never },
    inForce: { current: () => inForce.value, registered: () => (inForce.value ? registered : []), isRegistered: (c) => inForce.value !== undefined && registered.some((r) => r.name === c) },
    source: { status: () => ({ source: "config.git", ref: "main", subPath: "" }) },
    publishing: { warming: () => undefined, published: () => undefined },
    sessions,
    relay: () => ({ appliedVersions: () => applied, refusals: () => refusals }),
    identities: { read: () => Promise.resolve(undefined) as never },
    convergence,
    audited: () => undefined,
    diffs: { diff: () => Promise.reject(new Error("not in this test")) },
    mintCredential: (cluster) => {
      minted.push(cluster);
      return Promise.resolve({ credential: `cred-${cluster}`, expiresAtMs: 10_000 });
    },
    isLeader: () => true,
    stopped: () => stopped.value,
    logger: createMemoryLogger("server").logger,
    now: () => 5_000,
    ...overrides,
  });
  return { views, store, sessions, convergence, applied, refusals, minted, stopped, inForce };
}

async function call(views: ReturnType<typeof createApiViews>, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const route = views.routes.find((r) => r.method === "POST" && r.pattern.test(path))!;
  const match = route.pattern.exec(path)!;
  let status = 0;
  let text = "";
  const res = {
    writeHead: (s: number) => {
      status = s;
      return res;
    },
    end: (t: string) => {
      text = t;
    },
  };
  try {
    await route.handler({} as never, res as never, match.slice(1), { role: "admin", actor: "admin token" });
  } catch (err) {
    return { status: (err as { status: number }).status, body: { message: (err as Error).message } };
  }
  return { status, body: JSON.parse(text) as Record<string, unknown> };
}

describe("API views", () => {
  it("a registered cluster whose agent never came is waiting; one held here running its output is in sync; one removed from Git is cut off", async () => {
    const { views, store, sessions, applied } = setup();
    const snapshot = emptySnapshot("cluster1");
    await store.putDiscovery({ cluster: "cluster1", checksum: snapshotChecksum(snapshot), snapshot, atMs: 2 });
    await store.putOutputIfNewer(output("cluster1", 3, sha("a")));
    sessions.streamChanged("cluster1", "push", true);
    sessions.streamChanged("cluster1", "pull", true);
    applied.set("cluster1", { version: 3, sourceCommit: sha("a"), atMs: 4_000 });
    await store.putOutputIfNewer(output("gone", 1, sha("a")));

    const { clusters } = (await views.api.clusters()) as { clusters: Record<string, unknown>[] };
    expect(clusters.map((c) => c.name)).toEqual(["cluster1", "cluster2", "gone"]);
    const [one, two, gone] = clusters;
    expect(one).toMatchObject({ registered: true, connected: true, replica: "r1", stale: false, waitingForAgent: false, inSync: true, commit: sha("a"), cutOff: null, streams: { push: true, pull: true } });
    expect(two).toMatchObject({ registered: true, connected: false, replica: null, stale: false, waitingForAgent: true, inSync: false, output: null });
    expect(gone).toMatchObject({ registered: false, inSync: false });
    expect(String(gone?.cutOff)).toContain('no KubernetesCluster "gone"');
  });

  it("a commit that left an output unchanged counts as applied once the relay ACKs that version; a cluster removed from Git does not count", async () => {
    const { views, convergence, store, applied } = setup();
    convergence.accepted(sha("b"), 1_000);
    await store.recordConvergence(sha("b"), { cluster: "cluster1", version: 3, unchangedFrom: sha("a") });
    await store.recordConvergence(sha("b"), { cluster: "gone", version: 1, appliedAtMs: 1_500 });
    const before = (await views.api.commit(sha("b"))) as Record<string, unknown>;
    expect(before).toMatchObject({ commit: sha("b"), applied: 0, inForce: false });
    applied.set("cluster1", { version: 3, sourceCommit: sha("a"), atMs: 2_000 });
    const after = (await views.api.commit(sha("b"))) as { applied: number; clusters: Record<string, Record<string, unknown>> };
    expect(after.applied).toBe(1);
    expect(after.clusters.cluster1).toMatchObject({ appliedAtMs: 2_000, unchanged: true, registered: true });
    expect(after.clusters.gone).toMatchObject({ registered: false });
  });

  it("never reports a cluster in sync while its applied output holds deletions back or is incomplete: cluster, status and commit views", async () => {
    const { views, store, sessions, applied, convergence } = setup();
    const snapshot = emptySnapshot("cluster1");
    await store.putDiscovery({ cluster: "cluster1", checksum: snapshotChecksum(snapshot), snapshot, atMs: 2 });
    sessions.streamChanged("cluster1", "push", true);
    sessions.streamChanged("cluster1", "pull", true);
    convergence.accepted(sha("a"), 1_000);
    const held: HeldObjects = { cause: "workspace", reason: 'workspace "team" failed to translate', sinceMs: 1_500, objects: ["VirtualService/team/t2"] };
    const unhealthy: [string, Partial<OutputRecord>, RegExp][] = [
      ["held deletions", { held: [held] }, /1 deletion\(s\) held back .*workspace "team" failed to translate/],
      ["incomplete, with its reason", { complete: false, incompleteReason: 'no discovery from cluster "cluster1" yet' }, /no discovery from cluster "cluster1" yet/],
      ["incomplete, without a reason", { complete: false }, /the output is incomplete: nothing is pruned/],
      ["held and incomplete", { held: [held], complete: false, incompleteReason: "2 object(s) … not known to the server" }, /workspace "team" failed to translate; 2 object\(s\)/],
    ];
    let version = 3;
    // The agent runs (ACKs) each of these outputs of the commit in force: applied, but not healthy.
    const runs = async (over: Partial<OutputRecord>) => {
      version++;
      await store.putOutputIfNewer({ ...output("cluster1", version, sha("a")), ...over });
      await store.recordConvergence(sha("a"), { cluster: "cluster1", version, appliedAtMs: 2_000 + version });
      applied.set("cluster1", { version, sourceCommit: sha("a"), atMs: 2_000 + version });
    };
    for (const [what, over, summary] of unhealthy) {
      await runs(over);
      const one = (await views.api.cluster("cluster1")) as { inSync: boolean; sync: { state: string; summary: string }; pruneHeld: unknown };
      expect(one.sync.state, what).toBe("held");
      expect(one.inSync, what).toBe(false);
      expect(one.sync.summary, what).toMatch(summary);
      expect(one.pruneHeld, what).not.toBeNull();
      const status = (await views.api.status()) as { clusters: { name: string; inSync: boolean; sync: { state: string } }[] };
      expect(status.clusters.find((c) => c.name === "cluster1"), what).toMatchObject({ inSync: false, sync: { state: "held" } });
      const commit = (await views.api.commit(sha("a"))) as { clusters: Record<string, { state: string }> };
      expect(commit.clusters.cluster1?.state, what).toBe("held");
    }
    // The control: the same steps with a complete output that holds nothing are in sync.
    await runs({});
    expect(await views.api.cluster("cluster1")).toMatchObject({ inSync: true, sync: { state: "in-sync" }, pruneHeld: null });
    expect(((await views.api.commit(sha("a"))) as { clusters: Record<string, { state: string }> }).clusters.cluster1?.state).toBe("in-sync");
    views.close();
  });

  it("readiness says what it waits for; reissue refuses a bad name and an unregistered cluster before it mints", async () => {
    const { views, stopped, inForce, minted } = setup();
    expect(views.api.readiness()).toEqual({ ready: true, reason: `commit ${sha("a").slice(0, 12)} in force` });
    expect((await call(views, "/api/clusters/Not_A_Name/reissue")).status).toBe(400);
    expect((await call(views, "/api/clusters/other/reissue")).status).toBe(404);
    expect(minted).toEqual([]);
    const ok = await call(views, "/api/clusters/cluster2/reissue");
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ cluster: "cluster2", revoked: true, credential: "cred-cluster2" });
    expect(minted).toEqual(["cluster2"]);
    inForce.value = undefined;
    expect(views.api.readiness().reason).toBe("no desired state yet (first Git sync pending)");
    stopped.value = true;
    expect(views.api.readiness()).toEqual({ ready: false, reason: "stopping" });
    expect(views.api.healthy()).toBe(false);
    views.close();
  });
});
