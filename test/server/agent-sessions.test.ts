// The agents this replica holds (src/server/agent-sessions.ts): streams per cluster, last heard from,
// drift repairs newest first and bounded; pure, with real metrics.
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import { createAgentSessions } from "../../src/server/agent-sessions.js";
import { createServerMetrics } from "../../src/server/index.js";

async function gauge(registry: Registry, name: string): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  return ((m?.values ?? []) as { value: number }[]).reduce((a, v) => a + v.value, 0);
}

describe("agent sessions", () => {
  it("a cluster is held while one of its streams is open; connected counts clusters with both; connected and lost are said of clusters that had both, once", async () => {
    const registry = new Registry();
    const mem = createMemoryLogger("server");
    let t = 1_000;
    const sessions = createAgentSessions({ replica: "r1", metrics: createServerMetrics(registry), logger: mem.logger, now: () => t });
    expect(sessions.streams("cluster1")).toBeUndefined();
    sessions.streamChanged("cluster1", "push", true);
    sessions.streamChanged("cluster2", "push", true);
    sessions.streamChanged("cluster2", "pull", true);
    expect(sessions.held()).toEqual(["cluster1", "cluster2"]);
    expect(await gauge(registry, "gitmesh_server_clusters_connected")).toBe(1);
    t = 2_000;
    sessions.streamChanged("cluster1", "push", false);
    expect(sessions.held()).toEqual(["cluster2"]);
    expect(sessions.known()).toEqual(["cluster1", "cluster2"]);
    expect([...(sessions.streams("cluster1") ?? ["missing"])]).toEqual([]);
    expect([...(sessions.streams("cluster2") ?? [])].sort()).toEqual(["pull", "push"]);
    expect(sessions.lastSeen("cluster1")).toBe(2_000);
    t = 3_000;
    sessions.seen("cluster2");
    expect(sessions.lastSeen("cluster2")).toBe(3_000);
    // cluster1 never had both streams: its session ending is no loss (debug only).
    expect(mem.records.filter((r) => r.level !== "debug").map((r) => `${r.msg} ${String(r.fields.cluster)}`)).toEqual(["cluster connected cluster2"]);
    sessions.streamChanged("cluster2", "pull", false);
    sessions.streamChanged("cluster2", "push", false);
    sessions.streamChanged("cluster2", "push", true);
    sessions.streamChanged("cluster2", "push", false);
    expect(mem.records.filter((r) => r.level !== "debug").map((r) => `${r.msg} ${String(r.fields.cluster)}`)).toEqual(["cluster connected cluster2", "cluster lost; it keeps its last applied config cluster2"]);
  });

  it("drift repairs are kept newest first, at most driftRepairsKept per cluster", () => {
    const sessions = createAgentSessions({ replica: "r1", metrics: createServerMetrics(new Registry()), logger: createMemoryLogger().logger, driftRepairsKept: 3 });
    const repair = (key: string, atMs: number) => ({ key, why: "changed" as const, atMs, managers: ["kubectl"] });
    sessions.driftRepaired({ cluster: "cluster1", repairs: [repair("a", 1), repair("b", 2)] });
    sessions.driftRepaired({ cluster: "cluster1", repairs: [repair("c", 3), repair("d", 4)] });
    expect(sessions.driftRepairs("cluster1").map((r) => r.key)).toEqual(["d", "c", "b"]);
    expect(sessions.driftRepairs("cluster1")[0]).toEqual({ key: "d", why: "changed", at: new Date(4).toISOString(), managers: ["kubectl"] });
    expect(sessions.driftRepairs("cluster2")).toEqual([]);
  });
});
