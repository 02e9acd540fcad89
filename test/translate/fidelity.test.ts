/**
 * Behaviour Gloo users depend on (issue #21), checked on the produced Istio objects of the golden
 * cases. Each case's input.yaml quotes the Gloo passage it follows.
 */
import { describe, expect, it } from "vitest";
import { discoveryFromFiles } from "../../src/discovery/index.js";
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

/**
 * Istio's authorization for one workload (istio.io, "Authorization Policy": DENY policies first; then,
 * if any ALLOW policy selects the workload, the request must match one of their rules). Enough of it
 * for the rendered rules: principals, hosts and methods.
 */
function authorized(resources: readonly IstioResource[], req: { namespace: string; podLabels: Record<string, string>; principal: string; host: string; method: string }): boolean {
  type Rule = { from?: { source: { principals?: string[] } }[]; to?: { operation: { hosts?: string[]; methods?: string[] } }[] };
  const selects = (p: IstioResource): boolean => {
    const ml = ((p.spec.selector as { matchLabels?: Record<string, string> } | undefined)?.matchLabels ?? {});
    return p.metadata.namespace === req.namespace && Object.entries(ml).every(([k, v]) => req.podLabels[k] === v) && p.metadata.annotations?.["istio.io/dry-run"] !== "true";
  };
  const matches = (r: Rule): boolean =>
    (r.from ?? [{ source: {} }]).some((f) => f.source.principals === undefined || f.source.principals.includes(req.principal)) &&
    (r.to ?? [{ operation: {} }]).some((t) => (t.operation.hosts === undefined || t.operation.hosts.includes(req.host)) && (t.operation.methods === undefined || t.operation.methods.includes(req.method)));
  const policies = resources.filter((r) => r.kind === "AuthorizationPolicy" && selects(r));
  if (policies.some((p) => p.spec.action === "DENY" && ((p.spec.rules ?? []) as Rule[]).some(matches))) return false;
  const allow = policies.filter((p) => (p.spec.action ?? "ALLOW") === "ALLOW");
  return allow.length === 0 || allow.some((p) => ((p.spec.rules ?? []) as Rule[]).some(matches));
}

describe("egress gateways and AccessPolicy on ExternalServices", () => {
  const r = output("egress-gateway");
  const egressGw = "istio-gateways/virtualgateway-egress-gw-istio-gateways-cluster1-gateways";
  const gwPod = { namespace: "istio-gateways", podLabels: { app: "istio-egressgateway", istio: "egressgateway" } };

  it("a Service labelled istio: egressgateway is discovered as an egress gateway", () => {
    const manifest = [
      "apiVersion: v1",
      "kind: Service",
      "metadata: {name: istio-egressgateway, namespace: istio-gateways, labels: {app: istio-egressgateway, istio: egressgateway}}",
      "spec: {type: ClusterIP, selector: {app: istio-egressgateway, istio: egressgateway}, ports: [{name: https, port: 443, targetPort: 8443, protocol: TCP}]}",
    ].join("\n");
    const { snapshots } = discoveryFromFiles([{ path: "cluster1/gw.yaml", content: manifest }]);
    expect(snapshots.get("cluster1")?.gateways).toMatchObject([{ kind: "egress", name: "istio-egressgateway", podLabels: { istio: "egressgateway" } }]);
  });

  it("clients see only the ports they send to; the external port is visible to the egress gateway only", () => {
    const ses = r.filter((o) => o.kind === "ServiceEntry" && o.metadata.labels["gitmesh.io/parent-name"] === "httpbin");
    const ports = (o: IstioResource) => (o.spec.ports as { number: number }[]).map((p) => p.number);
    expect(ses.map((o) => [o.spec.exportTo, ports(o)])).toEqual(
      expect.arrayContaining([
        [["bookinfo-backends", "bookinfo-frontends"], [8080, 80]],
        [["istio-gateways"], [443, 8080]],
      ]),
    );
    expect(ses).toHaveLength(2);
  });

  it("sidecars send the ExternalService's traffic (portMatch 80) to the egress gateway, which forwards it to the external host", () => {
    expect(evaluate(r, { host: "httpbin.org", path: "/get", port: 80 })).toMatchObject({ kind: "route", destinations: [{ host: "istio-egressgateway.istio-gateways.svc.cluster.local", port: 443, subset: "egress-httpbin-org" }] });
    expect(evaluate(r, { host: "httpbin.org", path: "/get", port: 8443, gateway: egressGw })).toMatchObject({ kind: "route", destinations: [{ host: "httpbin.org", port: 443 }] });
    // a port without egressGatewayRoutes still reaches the host directly (the VirtualService must not 404 it)
    expect(evaluate(r, { host: "httpbin.org", path: "/get", port: 8080 })).toMatchObject({ kind: "route", destinations: [{ host: "httpbin.org", port: 8080 }] });
    const gw = r.find((o) => o.kind === "Gateway" && o.metadata.name === "virtualgateway-egress-gw-istio-gateways-cluster1-gateways");
    expect(gw?.spec).toMatchObject({ selector: { istio: "egressgateway" }, servers: [{ hosts: ["*/httpbin.org"], port: { number: 8443 }, tls: { mode: "ISTIO_MUTUAL" } }] });
  });

  it("the egress gateway lets only the allowed client through to the external host, with the allowed method", () => {
    const productpage = "cluster1.local/ns/bookinfo-frontends/sa/bookinfo-productpage";
    const reviews = "cluster1.local/ns/bookinfo-backends/sa/bookinfo-reviews";
    expect(authorized(r, { ...gwPod, principal: productpage, host: "httpbin.org", method: "GET" })).toBe(true);
    expect(authorized(r, { ...gwPod, principal: productpage, host: "httpbin.org", method: "POST" })).toBe(false);
    expect(authorized(r, { ...gwPod, principal: reviews, host: "httpbin.org", method: "GET" })).toBe(false);
  });

  it("an access policy Istio cannot enforce is an error, never skipped silently", () => {
    const diags = runCase(loadCase("egress-gateway")).result.diagnostics.filter((d) => d.code === "ACCESS_NOT_ENFORCED");
    expect(diags.every((d) => d.severity === "error")).toBe(true);
    expect(diags.map((d) => d.message)).toEqual([
      expect.stringContaining('"cluster2"'),
      expect.stringContaining("port(s) 8080 of ExternalService bookinfo-frontends/httpbin have no egressGatewayRoutes"),
      expect.stringContaining("direct-api is reached directly"),
    ]);
    // nothing is rendered for the ExternalService without an egress gateway
    expect(r.filter((o) => o.kind === "AuthorizationPolicy").map((o) => o.metadata.labels["gitmesh.io/parent-name"])).toEqual(["allow-get-httpbin"]);
  });
});

describe("VirtualDestination WorkloadEntries of remote clusters", () => {
  // A published Gloo-generated WorkloadEntry (solo-io workshop notes, `kubectl get workloadentry
  // vd-productpage-global-bookinfo-app-productpage-172-23-0-6 -oyaml`): `spec.locality: us-east-1`
  // (region only) and `ports: {http-9080: 15443}`; the tlsMode label is the one Istio's own
  // multi-network WorkloadEntries carry (`security.istio.io/tlsMode: istio`).
  it("carry the tlsMode label and the gateway's region only", () => {
    const we = output("dest-vd-local-and-remote").filter((o) => o.kind === "WorkloadEntry");
    expect(we.length).toBeGreaterThan(0);
    for (const w of we) {
      expect(w.spec.labels).toMatchObject({ app: "reviews", "security.istio.io/tlsMode": "istio" });
      expect(w.spec.locality).toMatch(/^[a-z0-9-]+$/);
      expect(Object.values(w.spec.ports as Record<string, number>)).toEqual([15443]);
    }
  });
});
