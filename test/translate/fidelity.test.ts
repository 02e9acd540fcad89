/**
 * Behaviour Gloo users depend on (issue #21), checked on the produced Istio objects of the golden
 * cases. Each case's input.yaml quotes the Gloo passage it follows.
 */
import { describe, expect, it } from "vitest";
import type { IstioResource } from "../../src/translate/index.js";
import { evaluate } from "./evaluator.js";
import { loadCase, runCase } from "./golden.js";

function output(name: string, cluster = "cluster1"): readonly IstioResource[] {
  return runCase(loadCase(name)).result.clusters.get(cluster)?.resources ?? [];
}

const GW = "istio-gateways/virtualgateway-north-south-gw-istio-gateways-cluster1-gateways";

describe("gateway-only route tables (virtualGateways + workloadSelectors: [])", () => {
  const r = output("gateway-only-route-table");

  it("serve the gateway and no sidecar", () => {
    expect(evaluate(r, { host: "bookinfo.example.com", path: "/productpage", gateway: GW })).toMatchObject({ kind: "route", route: "productpage-productpage" });
    // `hosts: ['*']` on a sidecar VirtualService would capture every request of every sidecar.
    expect(evaluate(r, { host: "bookinfo.example.com", path: "/productpage", sourceLabels: { app: "productpage" } })).toEqual({ kind: "none" });
    expect(evaluate(r, { host: "reviews.bookinfo-backends.svc.cluster.local", path: "/productpage" })).toMatchObject({ route: "reviews-reviews" });
    const vs = r.filter((o) => o.kind === "VirtualService" && o.metadata.labels["gitmesh.io/parent-name"] === "productpage");
    expect(vs.map((o) => o.spec.gateways)).toEqual([[GW]]);
  });

  it("workloadSelectors [{}] adds every sidecar; no virtualGateways and [] is every sidecar", () => {
    const reviews = "reviews.bookinfo-backends.svc.cluster.local";
    expect(evaluate(r, { host: reviews, path: "/", gateway: GW })).toMatchObject({ route: "reviews-reviews" });
    expect(evaluate(r, { host: reviews, path: "/", sourceLabels: { app: "anything" } })).toMatchObject({ route: "reviews-reviews" });
    expect(evaluate(r, { host: "details.bookinfo-backends.svc.cluster.local", path: "/", sourceLabels: { app: "anything" } })).toMatchObject({ route: "details-details" });
    expect(evaluate(r, { host: "details.bookinfo-backends.svc.cluster.local", path: "/", gateway: GW })).toEqual({ kind: "none" });
  });
});

describe("delegated child route tables' defaultDestination", () => {
  const r = output("delegation-child-default-destination");
  const host = "details.bookinfo-backends.svc.cluster.local";

  it("routes without destinations go to the child's own default, not a 500", () => {
    expect(evaluate(r, { host, path: "/ratings/1" })).toMatchObject({ kind: "route", destinations: [{ host: "ratings.bookinfo-backends.svc.cluster.local", port: 9080 }] });
    expect(evaluate(r, { host, path: "/reviews/1" })).toMatchObject({ kind: "route", destinations: [{ host, port: 9080 }] });
    expect(evaluate(r, { host, path: "/other" })).toMatchObject({ kind: "route", destinations: [{ host, port: 9080 }] });
  });
});

describe("VirtualGateway listener tls.parameters", () => {
  const gw = output("gateway-tls-parameters").find((o) => o.kind === "Gateway");
  const servers = (gw?.spec.servers ?? []) as { hosts: string[]; tls?: Record<string, unknown> }[];
  const byHost = (h: string) => servers.find((s) => s.hosts.includes(h))?.tls;

  it("the rendered Gateway refuses the TLS versions the listener excludes", () => {
    expect(byHost("*/strict.example.com")).toMatchObject({ mode: "SIMPLE", minProtocolVersion: "TLSV1_3" });
    expect(byHost("*/mtls.example.com")).toMatchObject({ mode: "MUTUAL", minProtocolVersion: "TLSV1_2", maxProtocolVersion: "TLSV1_3", cipherSuites: ["ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-AES128-GCM-SHA256"] });
  });

  it("parameters that cannot be enforced as written never leave a listener serving weaker TLS", () => {
    // TLSv1_0 without ciphers and an empty version range: the listener is not rendered at all.
    expect(byHost("*/legacy.example.com")).toBeUndefined();
    expect(byHost("*/broken.example.com")).toBeUndefined();
    const diags = runCase(loadCase("gateway-tls-parameters")).result.diagnostics;
    expect(diags.filter((d) => d.path?.includes("/tls/parameters") === true).map((d) => d.severity)).toEqual(["error", "error", "error"]);
  });
});

describe("AWS Lambda destinations", () => {
  it("load without schema errors and are reported as needing Gloo's data plane, the route answering 500", () => {
    const c = loadCase("lambda-destinations");
    expect(c.inputDiagnostics).toEqual([]);
    const { result } = runCase(c);
    expect(result.diagnostics.filter((d) => d.code === "NEEDS_GLOO_DATA_PLANE").map((d) => [d.severity, d.path])).toEqual([
      ["error", "/spec/http/0/forwardTo/destinations/0/function"],
      ["error", "/spec/http/1/forwardTo/destinations/0/awsLambda"],
    ]);
    const r = result.clusters.get("cluster1")!.resources;
    const gateway = "istio-gateways/virtualgateway-north-south-gw-istio-gateways-cluster1-gateways";
    expect(evaluate(r, { host: "x.example.com", path: "/lambda-22", gateway })).toMatchObject({ kind: "direct", status: 500 });
    expect(evaluate(r, { host: "x.example.com", path: "/other", gateway })).toMatchObject({ kind: "route", route: "productpage-lambda" });
  });
});
