// What the demo says while it waits for convergence and nothing changed for a while (src/cli/demo.ts
// stillWaitingFor): the first thing each cluster still lacks, in the order the system does them.
import { describe, expect, it } from "vitest";
import { stillWaitingFor, type ClusterStatus } from "../../src/cli/demo.js";

const cluster = (name: string, over: Partial<ClusterStatus> = {}): ClusterStatus => ({
  name,
  connected: true,
  warmed: true,
  output: { version: 2, sourceCommit: "c", resources: 27, complete: true },
  applied: { version: 2, sourceCommit: "c" },
  inSync: true,
  ...over,
});

describe("demo: still waiting for", () => {
  it("names the server while it does not answer or is not ready", () => {
    expect(stillWaitingFor(undefined)).toBe("the server's status API to answer");
    expect(stillWaitingFor({ ready: false, readiness: "warming: waiting for discovery from cluster2 (window 30 s)", clusters: [] })).toBe(
      "the server (warming: waiting for discovery from cluster2 (window 30 s))",
    );
  });

  it("names, per cluster, the first step it still lacks: connect, discovery, translation, apply", () => {
    expect(stillWaitingFor({ ready: true, readiness: "ready", clusters: [cluster("cluster1", { connected: false })] })).toBe(
      "cluster1: its agent to connect to the relay; cluster2: its agent to connect to the relay",
    );
    expect(
      stillWaitingFor({
        ready: true,
        readiness: "ready",
        clusters: [cluster("cluster1", { warmed: false }), cluster("cluster2", { output: { version: 1, sourceCommit: "c", resources: 27, complete: false } })],
      }),
    ).toBe("cluster1: its discovery; cluster2: translation");
    expect(stillWaitingFor({ ready: true, readiness: "ready", clusters: [cluster("cluster1", { applied: { version: 1, sourceCommit: "c" } }), cluster("cluster2", { applied: null })] })).toBe(
      "cluster1: its agent to apply output v2 (27 resources); cluster2: its agent to apply output v2 (27 resources)",
    );
  });

  it("when every step is done but the commit is not reported applied yet, says that", () => {
    expect(stillWaitingFor({ ready: true, readiness: "ready", clusters: [cluster("cluster1"), cluster("cluster2", { inSync: false })] })).toBe("cluster2: to report in sync");
    expect(stillWaitingFor({ ready: true, readiness: "ready", clusters: [cluster("cluster1"), cluster("cluster2")] })).toBe("the clusters to report the commit applied");
  });
});
