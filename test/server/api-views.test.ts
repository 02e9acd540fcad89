// What the API shows (src/server/api-views.ts), over a real memory store, real agent sessions and a
// real convergence tracker mirrored into the store: a registered cluster whose agent never came is
// waiting, not stale; one held here that runs its output is in sync; one removed from Git is cut off;
// a commit that left an output unchanged counts once the relay ACKs that version; the reissue action
// checks the name and the registration before it mints.
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import { emptySnapshot, snapshotChecksum } from "../../src/discovery/index.js";
import type { AppliedVersion } from "../../src/relay/index.js";
import { createMemoryStore, type OutputRecord } from "../../src/store/index.js";
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
    await route.handler({} as never, res as never, match.slice(1));
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
