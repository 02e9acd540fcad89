// What the demo waits for and says while it waits (src/cli/demo.ts converged, stillWaitingFor): the
// server's one answer per cluster (src/server/cluster-sync.ts), never a reading of its own.
import { describe, expect, it } from "vitest";
import { converged, stillWaitingFor, type ClusterStatus } from "../../src/cli/demo.js";
import { clusterSync, type ClusterSyncFacts } from "../../src/server/index.js";

const COMMIT = "c".repeat(40);
const OLD = "b".repeat(40);
const facts = (over: Partial<ClusterSyncFacts> = {}): ClusterSyncFacts => ({
  commit: COMMIT,
  cutOff: null,
  agent: "connected",
  output: { version: 2, sourceCommit: COMMIT },
  publishedVersion: 2,
  applied: { version: 2, sourceCommit: COMMIT },
  progress: { version: 2, appliedAtMs: 1 },
  held: null,
  ...over,
});
const cluster = (name: string, over: Partial<ClusterSyncFacts> = {}): ClusterStatus => {
  const sync = clusterSync(facts(over));
  return { name, connected: true, warmed: true, output: { version: 2, sourceCommit: COMMIT, resources: 27, complete: true }, applied: { version: 2, sourceCommit: COMMIT }, inSync: sync.state === "in-sync", sync };
};

describe("demo: still waiting for", () => {
  it("names the server while it does not answer or is not ready", () => {
    expect(stillWaitingFor(undefined)).toBe("the server's status API to answer");
    expect(stillWaitingFor({ ready: false, readiness: "warming: waiting for discovery from cluster2 (window 30 s)", clusters: [] })).toBe(
      "the server (warming: waiting for discovery from cluster2 (window 30 s))",
    );
  });

  it("says, per cluster not in sync, the server's summary — a connected agent is never 'waiting to connect'", () => {
    const st = { ready: true, readiness: "ready", clusters: [cluster("cluster1", { applied: { version: 1, sourceCommit: OLD }, progress: { version: 2 } }), cluster("cluster2", { agent: "disconnected", applied: undefined, progress: undefined })] };
    expect(stillWaitingFor(st)).toBe(`cluster1: not applied yet — agent applying output v2 of ${COMMIT.slice(0, 12)} (it runs v1); cluster2: not applied yet — agent disconnected; the cluster keeps its last applied config`);
    expect(stillWaitingFor({ ready: true, readiness: "ready", clusters: [cluster("cluster1")] })).toBe("cluster2: its agent to register");
    expect(stillWaitingFor({ ready: true, readiness: "ready", clusters: [cluster("cluster1"), cluster("cluster2")] })).toBe("the clusters to report the commit applied");
  });
});

describe("demo: converged", () => {
  const status = (clusters: ClusterStatus[], sha = COMMIT) => ({ ready: true, commit: { sha }, clusters });
  it("only when the commit waited for is in force and every cluster applied its output", () => {
    expect(converged(status([cluster("cluster1"), cluster("cluster2")]), COMMIT, ["cluster1", "cluster2"])).toBe(true);
    // The case: the version matched, but the applied output was rendered from another commit.
    expect(converged(status([cluster("cluster1"), cluster("cluster2", { applied: { version: 2, sourceCommit: OLD }, progress: undefined })]), COMMIT, ["cluster1", "cluster2"])).toBe(false);
    expect(converged(status([cluster("cluster1"), cluster("cluster2")], OLD), COMMIT, ["cluster1", "cluster2"])).toBe(false);
    expect(converged(status([cluster("cluster1")]), COMMIT, ["cluster1", "cluster2"])).toBe(false);
    expect(converged({ ...status([cluster("cluster1"), cluster("cluster2")]), ready: false }, COMMIT, ["cluster1", "cluster2"])).toBe(false);
    // Refused, held, retrying: not converged.
    expect(converged(status([cluster("cluster1", { applied: { version: 1, sourceCommit: OLD }, progress: { version: 2, nack: "VirtualService/ns/r: not owned by gitmesh" } })]), COMMIT, ["cluster1"])).toBe(false);
    expect(converged(status([cluster("cluster1", { held: { reason: "workspace failing", since: "2026-01-01T00:00:00.000Z", objects: 1 } })]), COMMIT, ["cluster1"])).toBe(false);
  });
});
