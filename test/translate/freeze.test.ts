/** FREEZE_CONFIG: translation reports which tables it froze per cluster, with the labels their objects carry. */
import { describe, expect, it } from "vitest";
import { translateAll } from "../../src/translate/index.js";
import { loadCase } from "./golden.js";

describe("FREEZE_CONFIG reports frozen tables", () => {
  it("names the table per cluster, with a selector that matches the VirtualService it rendered before", () => {
    const c = loadCase("freeze-config");
    const r = translateAll(c.desired, c.discovery);
    const frozen = r.workspaces.get("bookinfo")!.frozen;
    expect(frozen?.map((f) => [f.cluster, f.workspace, f.kind, f.namespace, f.name])).toEqual([
      ["cluster1", "bookinfo", "RouteTable", "bookinfo-backends", "frozen"],
      ["cluster2", "bookinfo", "RouteTable", "bookinfo-backends", "frozen"],
    ]);
    // The healthy table's VirtualService carries the same kind of labels; the selector of the frozen
    // table matches its own objects and not the healthy one's.
    const healthy = r.clusters.get("cluster1")!.resources.find((x) => x.metadata.labels["gitmesh.io/parent-name"] === "healthy")!;
    const sel = frozen![0]!.selector;
    expect(sel).toMatchObject({ "gitmesh.io/parent-kind": "RouteTable", "gitmesh.io/parent-name": "frozen", "gitmesh.io/parent-namespace": "bookinfo-backends", "gitmesh.io/workspace": "bookinfo", "gitmesh.io/cluster": "cluster1" });
    expect(Object.keys(sel).sort()).toEqual(Object.keys(healthy.metadata.labels).filter((k) => k !== "gitmesh.io/managed").sort());
    expect(r.workspaces.get("gateways")!.frozen).toBeUndefined();
  });
});
