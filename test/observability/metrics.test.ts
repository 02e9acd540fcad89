// The pieces of #37 that live in code: the naming rule, gitmesh_build_info, and the per-cluster sync
// gauge read from the server's status (bad input never crashes it).
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { metricNameProblem, registerBuildInfo } from "../../src/core/index.js";
import { clusterSyncSamples, registerClusterSyncMetric } from "../../src/server/index.js";

describe("the naming rule", () => {
  it("accepts gitmesh_<component>_<what>_<unit> and gitmesh_build_info, and says what is wrong with anything else", () => {
    expect(metricNameProblem("gitmesh_relay_stream_bytes_total", "counter")).toBeUndefined();
    expect(metricNameProblem("gitmesh_server_convergence_seconds", "histogram")).toBeUndefined();
    expect(metricNameProblem("gitmesh_build_info", "gauge")).toBeUndefined();
    expect(metricNameProblem("gitmesh_build_info", "counter")).toMatch(/gauge/);
    expect(metricNameProblem("gitmesh_commits_total", "counter")).toMatch(/server\|relay\|pipeline\|agent/);
    expect(metricNameProblem("gitmesh_agent_applies", "counter")).toMatch(/end in _total/);
    expect(metricNameProblem("gitmesh_agent_leader_total", "gauge")).toMatch(/only counters/);
    expect(metricNameProblem("gitmesh_agent_apply_ms", "histogram")).toMatch(/base units/);
    expect(metricNameProblem("gitmesh_Agent_leader", "gauge")).toBeDefined();
  });
});

describe("gitmesh_build_info", () => {
  it("is 1 with version, commit and node; a second registration keeps the first", async () => {
    const registry = new Registry();
    registerBuildInfo(registry, { version: "1.2.3", commit: "", node: "v20.0.0" });
    registerBuildInfo(registry, { version: "9.9.9", commit: "abc", node: "v20.0.0" });
    const text = await registry.metrics();
    expect(text).toContain('gitmesh_build_info{version="1.2.3",commit="unknown",node="v20.0.0"} 1');
    expect(text).not.toContain("9.9.9");
  });
});

describe("gitmesh_server_cluster_sync", () => {
  it("reads /api/status answers defensively: entries without a name or a known state are skipped", () => {
    for (const bad of [null, undefined, 3, "x", {}, { clusters: "x" }, { clusters: [null, 1, { name: 2 }, { name: "c", sync: { state: "bogus" } }] }]) expect(clusterSyncSamples(bad)).toEqual([]);
    expect(clusterSyncSamples({ clusters: [{ name: "c1", sync: { state: "in-sync" } }, { name: "c2", sync: { state: "refused" } }] })).toEqual([
      { cluster: "c1", state: "in-sync" },
      { cluster: "c2", state: "refused" },
    ]);
  });

  it("sets 1 for each cluster's state and 0 for the others at every scrape; a failed read keeps the last values", async () => {
    const registry = new Registry();
    let answer: () => Promise<{ cluster: string; state: "in-sync" | "not-applied" }[]> = () => Promise.resolve([{ cluster: "c1", state: "not-applied" }]);
    registerClusterSyncMetric(registry, () => answer());
    const read = async () => (await registry.getSingleMetricAsString("gitmesh_server_cluster_sync")).split("\n").filter((l) => l.startsWith("gitmesh_server_cluster_sync{"));
    expect(await read()).toEqual(expect.arrayContaining(['gitmesh_server_cluster_sync{cluster="c1",state="not-applied"} 1', 'gitmesh_server_cluster_sync{cluster="c1",state="in-sync"} 0']));
    // One line per state: in-sync, not-applied, refused, held, cut-off, suspended.
    expect(await read()).toHaveLength(6);
    expect(await read()).toContain('gitmesh_server_cluster_sync{cluster="c1",state="suspended"} 0');
    answer = () => Promise.resolve([{ cluster: "c1", state: "in-sync" }]);
    expect(await read()).toContain('gitmesh_server_cluster_sync{cluster="c1",state="in-sync"} 1');
    answer = () => Promise.reject(new Error("store down"));
    expect(await read()).toContain('gitmesh_server_cluster_sync{cluster="c1",state="in-sync"} 1');
  });
});
