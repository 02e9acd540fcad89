/**
 * Route ordering by specificity, checked with Istio's first-match semantics (evaluator.ts).
 *
 * Gloo sorts routes only where a delegating route asks for it (`delegate.sortMethod:
 * ROUTE_SPECIFICITY`, route_table.proto DelegateAction.SortMethod): all delegated routes (children
 * and grandchildren) are sorted exact > regex > prefix, exact and prefix by path length (longest
 * first), regex all equal; ties by table weight (heavier first), then user order. Top-level routes
 * of a route table keep the user's order (RouteTableSpec.weight: "individual routes are kept in the
 * order that they appear"), so there a general route listed first does shadow a specific one.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadDesiredState } from "../../src/config/index.js";
import { translateAll, type IstioResource } from "../../src/translate/index.js";
import { evaluate } from "./evaluator.js";
import { FIXTURES, loadCase } from "./golden.js";

const HOST = "api.bookinfo-backends.svc.cluster.local";

/** Workspaces and settings of the delegation-specificity case (its first four documents). */
function workspaces(): string {
  return readFileSync(join(FIXTURES, "delegation-specificity", "input.yaml"), "utf8").split(/^---$/m).slice(0, 4).join("---");
}

const route = (name: string, kind: "prefix" | "exact" | "regex", path: string, svc: string): string =>
  `  - {name: ${name}, matchers: [{uri: {${kind}: '${path}'}}], forwardTo: {destinations: [{ref: {name: ${svc}}, port: {number: 9080}}]}}\n`;

function render(tables: string): readonly IstioResource[] {
  const c = loadCase("delegation-specificity");
  const state = loadDesiredState([{ path: "input.yaml", content: `${workspaces()}---\n${tables}` }]).state;
  const result = translateAll(state, c.discovery);
  expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  return result.clusters.get("cluster1")!.resources;
}

function routeNames(resources: readonly IstioResource[]): string[] {
  const vs = resources.find((r) => r.kind === "VirtualService" && (r.spec.hosts as string[]).includes(HOST))!;
  return (vs.spec.http as { name: string }[]).map((h) => h.name);
}

function picked(resources: readonly IstioResource[], path: string): string | undefined {
  const o = evaluate(resources, { host: HOST, path });
  return o.kind === "none" ? undefined : o.route;
}

describe("route ordering by specificity", () => {
  // The example of route_table.proto (DelegateAction.SortMethod.ROUTE_SPECIFICITY), verbatim.
  const proto = `apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata: {name: root, namespace: bookinfo-backends}
spec:
  hosts: [${HOST}]
  http:
  - name: api
    matchers: [{uri: {prefix: /}}]
    delegate:
      routeTables: [{labels: {table: a}}, {labels: {table: b}}]
      sortMethod: ROUTE_SPECIFICITY
---
apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata: {name: table-a, namespace: bookinfo-backends, labels: {table: a}}
spec:
  weight: 1
  http:
${route("a-foo", "prefix", "/foo", "reviews")}${route("a-foo-more", "prefix", "/foo/more/specific", "reviews")}${route("a-foo-even", "prefix", "/foo/even/more/specific", "reviews")}${route("a-foo-exact", "exact", "/foo/exact", "reviews")}${route("a-foo-another", "exact", "/foo/another/exact", "reviews")}${route("a-foo-regex", "regex", "/foo/*", "reviews")}${route("a-fooo-regex", "regex", "/fooo/*", "reviews")}---
apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata: {name: table-b, namespace: bookinfo-backends, labels: {table: b}}
spec:
  weight: 2
  http:
${route("b-bar", "prefix", "/bar", "ratings")}${route("b-bar-more", "prefix", "/bar/more/specific", "ratings")}${route("b-bar-even", "prefix", "/bar/even/more/specific", "ratings")}${route("b-bar-exact", "exact", "/bar/exact", "ratings")}${route("b-bar-regex", "regex", "/bar/*", "ratings")}`;

  it("sorts delegated routes exactly as the proto's example documents", () => {
    expect(routeNames(render(proto))).toEqual(
      [
        "a-foo-another", // exact: /foo/another/exact
        "b-bar-exact", // exact: /bar/exact (tie on length: table weight 2 first)
        "a-foo-exact", // exact: /foo/exact
        "b-bar-regex", // regex: /bar/*  (regexes are equal: weight, then order)
        "a-foo-regex", // regex: /foo/*
        "a-fooo-regex", // regex: /fooo/*
        "b-bar-even", // prefix: /bar/even/more/specific
        "a-foo-even", // prefix: /foo/even/more/specific
        "b-bar-more", // prefix: /bar/more/specific
        "a-foo-more", // prefix: /foo/more/specific
        "b-bar", // prefix: /bar
        "a-foo", // prefix: /foo
      ].map((n) => `${n}-${n.startsWith("a-") ? "table-a" : "table-b"}`),
    );
  });

  it("no more specific delegated route is shadowed by a less specific one under first-match", () => {
    const r = render(proto);
    expect(picked(r, "/foo/another/exact")).toBe("a-foo-another-table-a");
    expect(picked(r, "/foo/exact")).toBe("a-foo-exact-table-a");
    expect(picked(r, "/bar/exact")).toBe("b-bar-exact-table-b");
    // "/fooo" is matched by prefix /foo too; the regex comes first
    expect(picked(r, "/fooo")).toBe("a-fooo-regex-table-a");
    expect(picked(r, "/foo/")).toBe("a-foo-regex-table-a");
    // longer prefixes before shorter ones, whatever the table order
    expect(picked(r, "/barx/more")).toBe("b-bar-table-b");
    expect(picked(r, "/foox")).toBe("a-foo-table-a");
    expect(picked(r, "/bar/even/more/specific/1")).toBe("b-bar-even-table-b");
    expect(picked(r, "/bar/more/specific/1")).toBe("b-bar-more-table-b");
    // every route is reachable: each one is picked by some request
    const reachable = new Set(
      ["/foo/another/exact", "/foo/exact", "/bar/exact", "/bar/", "/foo/", "/fooo", "/bar/even/more/specific/1", "/foo/even/more/specific/1", "/bar/more/specific/1", "/foo/more/specific/1", "/barx", "/foox"].map((p) => picked(r, p)),
    );
    expect(reachable.size).toBe(12);
  });

  it("delegated grandchildren take part in the parent's sort", () => {
    const nested = `apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata: {name: root, namespace: bookinfo-backends}
spec:
  hosts: [${HOST}]
  http:
  - name: api
    delegate:
      routeTables: [{labels: {table: a}}]
      sortMethod: ROUTE_SPECIFICITY
---
apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata: {name: table-a, namespace: bookinfo-backends, labels: {table: a}}
spec:
  http:
${route("short", "prefix", "/v1", "reviews")}  - name: to-c
    matchers: [{uri: {prefix: /v1/deep}}]
    delegate: {routeTables: [{labels: {table: c}}]}
---
apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata: {name: table-c, namespace: bookinfo-backends, labels: {table: c}}
spec:
  http:
${route("deeper", "prefix", "/v1/deep/er", "ratings")}`;
    const r = render(nested);
    expect(picked(r, "/v1/deep/er/x")).toBe("deeper-table-c");
    expect(picked(r, "/v1/other")).toBe("short-table-a");
  });

  it("top-level routes keep the user's order, as in Gloo: a general route listed first shadows a specific one", () => {
    const r = render(`apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata: {name: root, namespace: bookinfo-backends}
spec:
  hosts: [${HOST}]
  http:
${route("general", "prefix", "/", "reviews")}${route("specific", "exact", "/ratings", "ratings")}`);
    expect(routeNames(r)).toEqual(["general-root", "specific-root"]);
    expect(picked(r, "/ratings")).toBe("general-root");
  });
});
