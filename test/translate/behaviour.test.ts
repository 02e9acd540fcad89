/** Behavioural tests: which destination Istio's first-match routing picks in the produced VirtualServices. */
import { describe, expect, it } from "vitest";
import type { IstioResource } from "../../src/translate/index.js";
import { evaluate, type Request } from "./evaluator.js";
import { loadCase, runCase } from "./golden.js";

function cluster1(name: string): readonly IstioResource[] {
  return runCase(loadCase(name)).result.clusters.get("cluster1")!.resources;
}

function pick(resources: readonly IstioResource[], req: Request): string {
  const o = evaluate(resources, req);
  switch (o.kind) {
    case "route":
      return o.destinations.map((d) => `${d.host.split(".")[0] ?? ""}${d.subset ? `/${d.subset}` : ""}${d.port ? `:${d.port}` : ""}${d.weight !== undefined ? `@${d.weight}` : ""}`).join(",");
    case "direct":
      return `direct ${o.status}`;
    case "redirect":
      return `redirect ${o.code} ${o.authority ?? ""}${o.uri ?? ""}`;
    case "none":
      return "none";
  }
}

describe("first-match routing of produced VirtualServices", () => {
  it("east-west: source labels and headers select the subset", () => {
    const r = cluster1("eastwest-basic");
    const host = "reviews.bookinfo-backends.svc.cluster.local";
    expect(pick(r, { host, path: "/", headers: { "End-User": "jason" }, sourceLabels: { app: "productpage" } })).toBe("reviews/version-v2:9080");
    expect(pick(r, { host, path: "/", sourceLabels: { app: "productpage" } })).toBe("reviews/version-v1:9080");
    expect(pick(r, { host, path: "/", sourceLabels: { app: "ratings" } })).toBe("none");
  });

  it("north-south delegation: parent prefix and header gate the children, heavier table first", () => {
    const r = cluster1("delegation-table-weight");
    const gateway = "istio-gateways/virtualgateway-gw-istio-gateways-cluster1-gateways";
    const host = "bookinfo.example.com";
    const tenant = { "x-tenant": "a" };
    expect(pick(r, { host, gateway, path: "/api/ratings/1", headers: tenant })).toBe("ratings:9080");
    // ratings-api (weight 20) comes before reviews-api (weight 10), so its api-fallback (which inherits
    // the parent's /api prefix) shadows reviews-api's /api/reviews: TABLE_WEIGHT keeps table order.
    expect(pick(r, { host, gateway, path: "/api/reviews", headers: tenant })).toBe("details:9080");
    expect(pick(r, { host, gateway, path: "/api/other", headers: tenant })).toBe("details:9080");
    expect(pick(r, { host, gateway, path: "/api/ratings/1" })).toBe("productpage:9080");
    expect(pick(r, { host, gateway: "mesh", path: "/api/ratings/1", headers: tenant })).toBe("none");
  });

  it("ROUTE_SPECIFICITY: exact beats regex beats longer prefix beats shorter prefix", () => {
    const r = cluster1("delegation-specificity");
    const host = "api.bookinfo-backends.svc.cluster.local";
    expect(pick(r, { host, path: "/foo/exact" })).toBe("reviews:9080");
    expect(pick(r, { host, path: "/bar/exact" })).toBe("ratings:9080");
    expect(evaluate(r, { host, path: "/foo/more/specific/x" })).toMatchObject({ route: "foo-regex-table-a" });
    expect(evaluate(r, { host, path: "/bar/more/specific/x" })).toMatchObject({ route: "bar-more-table-b" });
    expect(evaluate(r, { host, path: "/bar" })).toMatchObject({ route: "bar-table-b" });
  });

  it("matchers: case-insensitive exact path, method, port, regex headers, inverted and presence headers, query params, suffix", () => {
    const r = cluster1("matchers-all");
    const host = "ratings.bookinfo-backends.svc.cluster.local";
    expect(evaluate(r, { host, path: "/ratings/1", method: "GET", port: 9080 })).toMatchObject({ route: "exact-ci-ratings" });
    expect(evaluate(r, { host, path: "/ratings/1", method: "POST", port: 9080 })).toMatchObject({ route: "catch-all-ratings" });
    expect(pick(r, { host, path: "/ratings/12", headers: { "x-version": "v1", "x-debug": "1" } })).toBe("ratings:9090");
    expect(evaluate(r, { host, path: "/ratings/12", headers: { "x-version": "v1", "x-debug": "1", "x-canary": "true" } })).toMatchObject({ route: "catch-all-ratings" });
    expect(evaluate(r, { host, path: "/ratings/12", headers: { "x-version": "v1" } })).toMatchObject({ route: "catch-all-ratings" });
    expect(evaluate(r, { host, path: "/a/b.json", method: "POST", query: { format: "full", id: "42" } })).toMatchObject({ route: "query-ratings" });
    expect(evaluate(r, { host, path: "/a/b.json", method: "POST", query: { format: "full", id: "x" } })).toMatchObject({ route: "catch-all-ratings" });
    // the route with the invalid regex is dropped, not turned into a catch-all 500
    expect(evaluate(r, { host, path: "/broken/x" })).toMatchObject({ route: "catch-all-ratings" });
  });

  it("weights, replacements, redirects and direct responses", () => {
    const w = cluster1("subsets-weights");
    const host = "reviews.bookinfo-backends.svc.cluster.local";
    expect(pick(w, { host, path: "/three" })).toBe("reviews/version-v1:9080@50,reviews/version-v2:9080@25,reviews/version-v3:9080@25");
    expect(pick(w, { host, path: "/over" })).toBe("direct 500");
    expect(pick(w, { host, path: "/" })).toBe("reviews/tier-gold-version-v2:9080");

    const b = cluster1("route-replacement");
    const bh = "broken.bookinfo-backends.svc.cluster.local";
    expect(pick(b, { host: bh, path: "/missing/x" })).toBe("direct 500");
    expect(pick(b, { host: bh, path: "/port" })).toBe("direct 500");
    expect(pick(b, { host: bh, path: "/elsewhere" })).toBe("details:9080");

    const d = cluster1("rewrites-redirect-direct");
    const dh = "details.bookinfo-backends.svc.cluster.local";
    expect(pick(d, { host: dh, path: "/old/page" })).toBe("redirect 308 new.example.com/new");
    expect(pick(d, { host: dh, path: "/legacy" })).toBe("redirect 301 /");
    expect(pick(d, { host: dh, path: "/teapot" })).toBe("direct 418");
    expect(pick(d, { host: dh, path: "/api/v1/x" })).toBe("details:9080");

    const def = cluster1("default-destination");
    const rh = "reviews.bookinfo-backends.svc.cluster.local";
    expect(pick(def, { host: rh, path: "/v2/x" })).toBe("reviews/version-v2:9080");
    expect(pick(def, { host: rh, path: "/other" })).toBe("reviews/version-v1:9080");
  });
});
