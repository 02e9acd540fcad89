import { describe, expect, it } from "vitest";
import { validateResource } from "../../src/model/index.js";

const ws = (spec: unknown, metadata: unknown = { name: "web", namespace: "gloo-mesh" }) => ({ apiVersion: "admin.gloo.solo.io/v2", kind: "Workspace", metadata, spec });

describe("admin kinds (first cut)", () => {
  it("accepts a Workspace", () => {
    expect(validateResource(ws({ workloadClusters: [{ name: "*", namespaces: [{ name: "*" }] }] }))).toEqual([]);
  });
  it("points an unknown field at the key itself with a suggestion", () => {
    expect(validateResource(ws({ workloadCluster: [] }))).toEqual([
      { path: "/spec/workloadCluster", keyword: "additionalProperties", message: "unknown field `workloadCluster`; did you mean `workloadClusters`?" },
    ]);
  });
  it("points a missing field at the parent", () => {
    const issues = validateResource(ws({}, { name: "web" }));
    expect(issues.map((i) => [i.path, i.keyword])).toEqual([["/metadata", "required"]]);
    expect(issues[0]!.message).toContain("`namespace`");
  });
});
