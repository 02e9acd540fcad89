// The commit in force (src/server/commit-in-force.ts): which accepted commit is current, what the
// pipeline is handed, and a follower adopting what the leader stored. Real loader, real memory store,
// real metrics; the pipeline is the part's own seam (a recorder of setDesiredState).
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createMemoryLogger, Severity } from "../../src/core/index.js";
import { createMemoryStore } from "../../src/store/index.js";
import { createCommitInForce, registeredClusters, UNCHANGED_KEY, type Adoption } from "../../src/server/commit-in-force.js";
import { createServerMetrics, type DesiredInput } from "../../src/server/index.js";
import { accepted, clustersState, rejected, sha, unchanged } from "./fixtures.js";

async function metric(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  const values = (m?.values ?? []) as { value: number; labels: Record<string, string | number> }[];
  return values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((a, v) => a + v.value, 0);
}

function setup(controller = new AbortController()) {
  const registry = new Registry();
  const store = createMemoryStore();
  const handed: DesiredInput[] = [];
  const adoptions: Adoption[] = [];
  const mem = createMemoryLogger("server");
  const inForce = createCommitInForce({
    pipeline: { setDesiredState: (input) => Promise.resolve(void handed.push(input)) },
    store: () => store,
    ref: "main",
    metrics: createServerMetrics(registry),
    logger: mem.logger,
    signal: controller.signal,
    now: () => 42_000,
  });
  inForce.onAdopted((a) => adoptions.push(a));
  return { inForce, registry, store, handed, adoptions, mem, controller };
}

const error = { code: "SCHEMA", severity: Severity.Error, file: "routes.yaml", line: 3, message: "bad route" };

describe("commit in force", () => {
  it("an accepted commit comes into force: its clusters are registered, listeners told, the pipeline handed its changes", async () => {
    const { inForce, registry, handed, adoptions } = setup();
    const state = clustersState(["cluster2", "cluster1"], ["cluster2"]);
    await inForce.onOutcome(accepted(sha("a"), state));
    expect(inForce.current()).toEqual({ state, commit: sha("a"), committedAt: 1_700_000_000 });
    expect(inForce.registered()).toEqual([{ name: "cluster1", skipWarming: false }, { name: "cluster2", skipWarming: true }]);
    expect(inForce.isRegistered("cluster1")).toBe(true);
    expect(inForce.isRegistered("cluster3")).toBe(false);
    expect(adoptions).toEqual([{ commit: sha("a"), registered: inForce.registered(), atMs: 42_000 }]);
    expect(handed).toEqual([{ commit: sha("a"), ref: "main", state, changedKeys: ["KubernetesCluster/gloo-mesh/x"], atMs: 42_000 }]);
    expect(await metric(registry, "gitmesh_server_commits_total", { result: "accepted" })).toBe(1);
    expect(await metric(registry, "gitmesh_server_clusters_registered")).toBe(2);
  });

  it("a rejected commit leaves the commit in force; the same rejection at every poll is counted once", async () => {
    const { inForce, registry, handed, adoptions, mem } = setup();
    await inForce.onOutcome(accepted(sha("a"), clustersState(["cluster1"])));
    await inForce.onOutcome(rejected(sha("b"), [error]));
    await inForce.onOutcome(rejected(sha("b"), [error]));
    expect(inForce.current()?.commit).toBe(sha("a"));
    expect(handed).toHaveLength(1);
    expect(adoptions).toHaveLength(1);
    expect(await metric(registry, "gitmesh_server_commits_total", { result: "rejected" })).toBe(1);
    expect(await metric(registry, "gitmesh_server_commit_rejected")).toBe(1);
    const warnings = mem.records.filter((r) => r.msg.startsWith("commit rejected"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.fields).toMatchObject({ commit: sha("b"), errors: 1, inForce: sha("a") });
    // A later good commit clears the gauge.
    await inForce.onOutcome(accepted(sha("c"), clustersState(["cluster1"])));
    expect(await metric(registry, "gitmesh_server_commit_rejected")).toBe(0);
  });

  it("a new commit with the same configuration comes into force without re-translation; the same commit again changes nothing", async () => {
    const { inForce, handed, adoptions } = setup();
    const state = clustersState(["cluster1"]);
    // Nothing in force yet: an unchanged outcome is only counted.
    await inForce.onOutcome(unchanged(sha("0"), state));
    expect(inForce.current()).toBeUndefined();
    await inForce.onOutcome(accepted(sha("a"), state));
    await inForce.onOutcome(unchanged(sha("a"), state));
    expect(handed).toHaveLength(1);
    await inForce.onOutcome(unchanged(sha("b"), state));
    expect(inForce.current()?.commit).toBe(sha("b"));
    expect(adoptions.map((a) => a.commit)).toEqual([sha("a"), sha("b")]);
    expect(handed[1]).toMatchObject({ commit: sha("b"), changedKeys: [UNCHANGED_KEY] });
  });

  it("Gitmesh-Allow-Deletion trailers travel with the commit that carries them only; a trailer naming no cluster is ignored", async () => {
    const { inForce, handed, mem } = setup();
    const state = clustersState(["cluster1"]);
    await inForce.onOutcome(accepted(sha("a"), state, "drop routes\n\nGitmesh-Allow-Deletion: cluster1\n"));
    await inForce.onOutcome(accepted(sha("b"), state, "next\n"));
    await inForce.onOutcome(accepted(sha("c"), state, "typo\n\nGitmesh-Allow-Deletion: -\n"));
    expect(handed.map((h) => h.allowMassDeletion)).toEqual([["cluster1"], undefined, undefined]);
    expect(mem.records.some((r) => r.msg.startsWith("Gitmesh-Allow-Deletion trailer names no cluster"))).toBe(true);
  });

  it("a follower adopts the desired state the leader stored, without handing it to the pipeline again", async () => {
    const { inForce, store, handed, adoptions } = setup();
    await inForce.follow();
    expect(inForce.current()).toBeUndefined();
    const state = clustersState(["cluster1", "cluster3"]);
    await store.putDesired({ commit: sha("d"), ref: "main", generation: 4, state, changedKeys: [], atMs: 1_700_000_123_456 });
    await inForce.follow();
    expect(inForce.current()).toEqual({ state, commit: sha("d"), committedAt: 1_700_000_123 });
    expect(adoptions).toEqual([{ commit: sha("d"), registered: registeredClusters(state), atMs: 1_700_000_123_456 }]);
    await inForce.follow();
    expect(adoptions).toHaveLength(1);
    expect(handed).toEqual([]);
  });

  it("a stored state read after the server began stopping is not adopted", async () => {
    const { inForce, store, controller } = setup();
    await store.putDesired({ commit: sha("d"), ref: "main", generation: 1, state: clustersState(["cluster1"]), changedKeys: [], atMs: 1 });
    controller.abort();
    await inForce.follow();
    expect(inForce.current()).toBeUndefined();
  });
});
