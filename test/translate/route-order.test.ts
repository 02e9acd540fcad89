/**
 * Route order as Gloo documents it (route_table.proto, RouteTableSpec.weight: "Individual routes are
 * kept in the order that they appear relative to their tables, but tables are sorted by the weight
 * … the request is matched against the routes in the highest-weighted route table first … tables of
 * the same weight stay in the same order that you list them in the parent route table"), and the
 * rule of issue #36: no rendered route is unreachable unless a diagnostic (ROUTE_UNREACHABLE, at the
 * route) says why. Checked with first-match semantics (evaluator.ts) on the rendered VirtualService.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadDesiredState } from "../../src/config/index.js";
import type { Diagnostic } from "../../src/core/index.js";
import { translateAll, type IstioResource } from "../../src/translate/index.js";
import { evaluate } from "./evaluator.js";
import { FIXTURES, loadCase } from "./golden.js";

const HOST = "api.bookinfo-backends.svc.cluster.local";

function workspaces(): string {
  return readFileSync(join(FIXTURES, "delegation-specificity", "input.yaml"), "utf8").split(/^---$/m).slice(0, 4).join("---");
}

const route = (name: string, prefix: string, svc: string): string => `  - {name: ${name}, matchers: [{uri: {prefix: '${prefix}'}}], forwardTo: {destinations: [{ref: {name: ${svc}}, port: {number: 9080}}]}}\n`;

function render(tables: string): { resources: readonly IstioResource[]; unreachable: Diagnostic[] } {
  const c = loadCase("delegation-specificity");
  const state = loadDesiredState([{ path: "input.yaml", content: `${workspaces()}---\n${tables}` }]).state;
  const result = translateAll(state, c.discovery);
  expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  return { resources: result.clusters.get("cluster1")!.resources, unreachable: result.diagnostics.filter((d) => d.code === "ROUTE_UNREACHABLE") };
}

function picked(resources: readonly IstioResource[], path: string): string | undefined {
  const o = evaluate(resources, { host: HOST, path });
  return o.kind === "none" ? undefined : o.route;
}

const root = (routes: string) => `apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata: {name: root, namespace: bookinfo-backends}
spec:
  hosts: [${HOST}]
  http:
${routes}`;

const delegating = `  - name: all
    matchers: [{uri: {prefix: /}}]
    delegate:
      routeTables: [{name: catch-all}, {name: api}]
`;

const child = (name: string, weight: number, routes: string) => `---
apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata: {name: ${name}, namespace: bookinfo-backends}
spec:
  weight: ${String(weight)}
  http:
${routes}`;

describe("route order as Gloo documents it, and unreachable routes reported", () => {
  it("keeps a table's routes as written: a catch-all before a prefix leaves the prefix unreachable, and says so at that route", () => {
    const { resources, unreachable } = render(root(route("everything", "/", "reviews") + route("api", "/api", "ratings")));
    expect(picked(resources, "/api/v1")).toBe("everything-root");
    expect(unreachable).toHaveLength(1);
    expect(unreachable[0]).toMatchObject({ file: "input.yaml", path: "/spec/http/1", severity: "warning" });
    expect(unreachable[0]!.message).toMatch(/^route "api" is never used: route "everything", evaluated before it, matches every request it would/);
  });

  it("reports nothing when the specific route comes first (every route is reachable)", () => {
    const { resources, unreachable } = render(root(route("api", "/api", "ratings") + route("everything", "/", "reviews")));
    expect(picked(resources, "/api/v1")).toBe("api-root");
    expect(picked(resources, "/other")).toBe("everything-root");
    expect(unreachable).toEqual([]);
  });

  it("treats a prefix as a string prefix, as Istio renders it: /api before /apis leaves /apis unreachable", () => {
    const { resources, unreachable } = render(root(route("api", "/api", "ratings") + route("apis", "/apis", "reviews")));
    expect(picked(resources, "/apis/v1")).toBe("api-root");
    expect(unreachable.map((d) => d.path)).toEqual(["/spec/http/1"]);
  });

  it("matches the highest-weighted delegated table first: weight 100's /api before weight 90's catch-all", () => {
    const { resources, unreachable } = render(root(delegating) + child("catch-all", 90, route("fallback", "/", "reviews")) + child("api", 100, route("api", "/api", "ratings")));
    expect(picked(resources, "/api/v1")).toBe("api-api");
    expect(picked(resources, "/x")).toBe("fallback-catch-all");
    expect(unreachable).toEqual([]);
  });

  it("with the weights the other way round, the delegated /api is unreachable and the diagnostic names the table that shadows it", () => {
    const { resources, unreachable } = render(root(delegating) + child("catch-all", 100, route("fallback", "/", "reviews")) + child("api", 90, route("api", "/api", "ratings")));
    expect(picked(resources, "/api/v1")).toBe("fallback-catch-all");
    expect(unreachable.map((d) => [d.path, d.message.slice(0, d.message.indexOf(", evaluated"))])).toEqual([["/spec/http/0", 'route "api" is never used: route "fallback" of RouteTable bookinfo-backends/catch-all']]);
  });

  it("keeps tables of equal weight in the order the parent lists them", () => {
    const { resources, unreachable } = render(root(delegating) + child("catch-all", 0, route("fallback", "/", "reviews")) + child("api", 0, route("api", "/api", "ratings")));
    expect(picked(resources, "/api/v1")).toBe("fallback-catch-all");
    expect(unreachable).toHaveLength(1);
  });
});
