// The fleet analysis, one block per insight code: a case written from what Gloo's and Istio's documents
// say makes the risk real (it must trigger) and a case that looks alike but is safe (it must not).
// docs.test.ts checks that every code of docs/insights.md has both here.
import { describe, expect, it } from "vitest";
import { analyze, INSIGHT_CODES } from "../../src/insights/index.js";
import { CLUSTERS, insightsOf, lineOf, only, workspace, type ClusterSpec } from "./fleet.js";

const TWO_CLUSTERS_WITH_CART: ClusterSpec[] = [
  { name: "cluster1", services: ["shop/cart"] },
  { name: "cluster2", services: ["shop/cart"] },
];

const accessPolicy = (mode: string) => `apiVersion: security.policy.gloo.solo.io/v2
kind: AccessPolicy
metadata:
  name: cart-access
  namespace: shop
spec:
  applyToDestinations:
  - selector:
      labels:
        app: cart
  config:
    authn:
      tlsMode: ${mode}
`;

const ISOLATED = "  options:\n    serviceIsolation:\n      enabled: true";

describe("MTLS_PERMISSIVE", () => {
  it("MTLS_PERMISSIVE triggers: an AccessPolicy sets PERMISSIVE in a workspace that isolates its services (STRICT)", () => {
    const policy = accessPolicy("PERMISSIVE");
    const found = only(insightsOf({ files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop", ISOLATED), "shop/access.yaml": policy }, clusters: TWO_CLUSTERS_WITH_CART }), "MTLS_PERMISSIVE");
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ severity: "warning", workspace: "shop", object: { kind: "AccessPolicy", name: "cart-access", namespace: "shop" }, file: "shop/access.yaml", line: lineOf(policy, "tlsMode") });
    expect(found[0]!.message).toContain("PERMISSIVE");
    expect(found[0]!.fix).toContain("STRICT");
  });

  it("MTLS_PERMISSIVE triggers for DISABLE too (plaintext only)", () => {
    const found = only(insightsOf({ files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop", ISOLATED), "shop/access.yaml": accessPolicy("DISABLE") }, clusters: TWO_CLUSTERS_WITH_CART }), "MTLS_PERMISSIVE");
    expect(found).toHaveLength(1);
  });

  it("MTLS_PERMISSIVE does not trigger: STRICT in an isolated workspace, or PERMISSIVE where the workspace does not isolate", () => {
    expect(only(insightsOf({ files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop", ISOLATED), "shop/access.yaml": accessPolicy("STRICT") }, clusters: TWO_CLUSTERS_WITH_CART }), "MTLS_PERMISSIVE")).toEqual([]);
    expect(only(insightsOf({ files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop"), "shop/access.yaml": accessPolicy("PERMISSIVE") }, clusters: TWO_CLUSTERS_WITH_CART }), "MTLS_PERMISSIVE")).toEqual([]);
  });
});

const virtualDestination = `apiVersion: networking.gloo.solo.io/v2
kind: VirtualDestination
metadata:
  name: cart
  namespace: shop
  labels:
    app: cart
spec:
  hosts:
  - cart.shop.global
  services:
  - labels:
      app: cart
  ports:
  - number: 8080
    protocol: HTTP
`;

const outlierPolicy = (labels: string) => `apiVersion: resilience.policy.gloo.solo.io/v2
kind: OutlierDetectionPolicy
metadata:
  name: cart-outliers
  namespace: shop
spec:
  applyToDestinations:
  - kind: VIRTUAL_DESTINATION
    selector:
      labels:
        ${labels}
  config:
    consecutiveErrors: 5
    interval: 10s
    baseEjectionTime: 30s
`;

describe("POLICY_SELECTS_NOTHING", () => {
  it("POLICY_SELECTS_NOTHING triggers: an OutlierDetectionPolicy's selector matches no VirtualDestination", () => {
    const policy = outlierPolicy("app: checkout");
    const found = only(insightsOf({ files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop"), "shop/vd.yaml": virtualDestination, "shop/outliers.yaml": policy }, clusters: TWO_CLUSTERS_WITH_CART }), "POLICY_SELECTS_NOTHING");
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ severity: "warning", workspace: "shop", object: { kind: "OutlierDetectionPolicy", name: "cart-outliers" }, file: "shop/outliers.yaml", line: lineOf(policy, "- kind: VIRTUAL_DESTINATION") });
  });

  it("POLICY_SELECTS_NOTHING does not trigger: the selector matches the VirtualDestination's labels", () => {
    const found = only(insightsOf({ files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop"), "shop/vd.yaml": virtualDestination, "shop/outliers.yaml": outlierPolicy("app: cart") }, clusters: TWO_CLUSTERS_WITH_CART }), "POLICY_SELECTS_NOTHING");
    expect(found).toEqual([]);
  });
});

describe("MULTICLUSTER_NO_OUTLIER_DETECTION", () => {
  it("MULTICLUSTER_NO_OUTLIER_DETECTION triggers: a VirtualDestination backed in two clusters, no OutlierDetectionPolicy", () => {
    const found = only(insightsOf({ files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop"), "shop/vd.yaml": virtualDestination }, clusters: TWO_CLUSTERS_WITH_CART }), "MULTICLUSTER_NO_OUTLIER_DETECTION");
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ severity: "warning", workspace: "shop", object: { kind: "VirtualDestination", name: "cart" }, file: "shop/vd.yaml", line: 1 });
    expect(found[0]!.message).toContain("cluster1, cluster2");
  });

  it("MULTICLUSTER_NO_OUTLIER_DETECTION does not trigger: an OutlierDetectionPolicy selects it, or it is backed in one cluster only", () => {
    const covered = insightsOf({ files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop"), "shop/vd.yaml": virtualDestination, "shop/outliers.yaml": outlierPolicy("app: cart") }, clusters: TWO_CLUSTERS_WITH_CART });
    expect(only(covered, "MULTICLUSTER_NO_OUTLIER_DETECTION")).toEqual([]);
    const single = insightsOf({ files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop"), "shop/vd.yaml": virtualDestination }, clusters: [{ name: "cluster1", services: ["shop/cart"] }, { name: "cluster2" }] });
    expect(only(single, "MULTICLUSTER_NO_OUTLIER_DETECTION")).toEqual([]);
  });
});

const routeTable = (route: string) => `apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata:
  name: cart
  namespace: shop
spec:
  hosts:
  - cart.shop.svc.cluster.local
  http:
${route}`;

const FORWARD = `  - name: cart
    labels:
      route: cart
    forwardTo:
      destinations:
      - ref:
          name: cart
          namespace: shop
        port:
          number: 8080
`;

const timeoutPolicy = (config: string) => `apiVersion: resilience.policy.gloo.solo.io/v2
kind: RetryTimeoutPolicy
metadata:
  name: cart-timeout
  namespace: shop
spec:
  applyToRoutes:
  - route:
      labels:
        route: cart
  config:
${config}`;

describe("ROUTE_WITHOUT_TIMEOUT", () => {
  it("ROUTE_WITHOUT_TIMEOUT triggers: a forwarding route with no RetryTimeoutPolicy, with file:line of the route", () => {
    const rt = routeTable(FORWARD);
    const found = only(insightsOf({ files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop"), "shop/rt.yaml": rt }, clusters: TWO_CLUSTERS_WITH_CART }), "ROUTE_WITHOUT_TIMEOUT");
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ severity: "info", workspace: "shop", object: { kind: "RouteTable", name: "cart" }, file: "shop/rt.yaml", line: lineOf(rt, "- name: cart") });
  });

  it("ROUTE_WITHOUT_TIMEOUT triggers when the policy that applies sets only retries, and names it", () => {
    const found = only(
      insightsOf({ files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop"), "shop/rt.yaml": routeTable(FORWARD), "shop/timeout.yaml": timeoutPolicy("    retries:\n      attempts: 3\n") }, clusters: TWO_CLUSTERS_WITH_CART }),
      "ROUTE_WITHOUT_TIMEOUT",
    );
    expect(found).toHaveLength(1);
    expect(found[0]!.message).toContain("cart-timeout");
  });

  it("ROUTE_WITHOUT_TIMEOUT does not trigger: a RetryTimeoutPolicy with requestTimeout selects the route; a direct response needs none", () => {
    const timed = insightsOf({ files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop"), "shop/rt.yaml": routeTable(FORWARD), "shop/timeout.yaml": timeoutPolicy("    requestTimeout: 5s\n") }, clusters: TWO_CLUSTERS_WITH_CART });
    expect(only(timed, "ROUTE_WITHOUT_TIMEOUT")).toEqual([]);
    const direct = insightsOf({ files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop"), "shop/rt.yaml": routeTable("  - name: teapot\n    directResponse:\n      status: 418\n") }, clusters: TWO_CLUSTERS_WITH_CART });
    expect(only(direct, "ROUTE_WITHOUT_TIMEOUT")).toEqual([]);
  });
});

describe("ISTIO_VERSION_SKEW", () => {
  it("ISTIO_VERSION_SKEW triggers: one cluster runs an older Istio minor version (reported for that cluster)", () => {
    const found = only(insightsOf({ clusters: [{ name: "cluster1", istio: ["1.29.0"] }, { name: "cluster2", istio: ["1.28.2"] }] }), "ISTIO_VERSION_SKEW");
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ severity: "warning", cluster: "cluster2" });
    expect(found[0]!.message).toContain("1.28");
    expect(found[0]!.fix).toContain("1.29");
  });

  it("ISTIO_VERSION_SKEW does not trigger: only patch versions differ; a cluster mid canary upgrade counts by its newest revision", () => {
    expect(only(insightsOf({ clusters: [{ name: "cluster1", istio: ["1.29.0"] }, { name: "cluster2", istio: ["1.29.3"] }] }), "ISTIO_VERSION_SKEW")).toEqual([]);
    expect(only(insightsOf({ clusters: [{ name: "cluster1", istio: ["1.29.0"] }, { name: "cluster2", istio: ["1.28.2", "1.29.1"] }] }), "ISTIO_VERSION_SKEW")).toEqual([]);
  });
});

describe("ISTIO_END_OF_LIFE", () => {
  it("ISTIO_END_OF_LIFE triggers: Istio 1.24 on or after its end of life (June 24, 2025), as an error", () => {
    for (const today of ["2025-06-24", "2026-11-29"]) {
      const found = only(insightsOf({ clusters: [{ name: "cluster1", istio: ["1.24.3"] }], today }), "ISTIO_END_OF_LIFE");
      expect(found).toHaveLength(1);
      expect(found[0]).toMatchObject({ severity: "error", cluster: "cluster1", object: { kind: "Deployment", name: "istiod", namespace: "istio-system" } });
      expect(found[0]!.message).toContain("2025-06-24");
    }
  });

  it("ISTIO_END_OF_LIFE does not trigger: the day before end of life, or a version newer than the release table", () => {
    expect(only(insightsOf({ clusters: [{ name: "cluster1", istio: ["1.24.3"] }], today: "2025-06-23" }), "ISTIO_END_OF_LIFE")).toEqual([]);
    expect(only(insightsOf({ clusters: [{ name: "cluster1", istio: ["1.29.0"] }], today: "2026-11-29" }), "ISTIO_END_OF_LIFE")).toEqual([]);
  });
});

describe("EXPORT_NOT_IMPORTED", () => {
  const exporting = "  exportTo:\n  - workspaces:\n    - name: web";
  const clusters: ClusterSpec[] = [{ name: "cluster1", namespaces: { shop: {}, web: {} }, services: ["shop/cart"] }];

  it("EXPORT_NOT_IMPORTED triggers: shop exports to web, web does not import from shop", () => {
    const ws = workspace("shop", "shop", exporting);
    const found = only(insightsOf({ files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": ws, "web/workspace.yaml": workspace("web", "web") }, clusters }), "EXPORT_NOT_IMPORTED");
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ severity: "info", workspace: "shop", object: { kind: "WorkspaceSettings", name: "shop" }, file: "shop/workspace.yaml", line: lineOf(ws, "  - workspaces:") });
    expect(found[0]!.message).toContain('"web"');
  });

  it("EXPORT_NOT_IMPORTED does not trigger: web imports from shop", () => {
    const found = only(
      insightsOf({ files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop", exporting), "web/workspace.yaml": workspace("web", "web", "  importFrom:\n  - workspaces:\n    - name: shop") }, clusters }),
      "EXPORT_NOT_IMPORTED",
    );
    expect(found).toEqual([]);
  });
});

describe("CERTIFICATE_EXPIRING", () => {
  it("CERTIFICATE_EXPIRING triggers: a warning within 7 days, an error once expired", () => {
    const found = only(
      insightsOf({
        today: "2026-11-29T00:00:00Z",
        certificates: [
          { cluster: "cluster1", subject: "relay client certificate", notAfter: "2026-12-02T00:00:00Z" },
          { cluster: "cluster2", subject: "relay client certificate", notAfter: "2026-11-28T12:00:00Z" },
        ],
      }),
      "CERTIFICATE_EXPIRING",
    );
    expect(found.map((i) => [i.cluster, i.severity])).toEqual([
      ["cluster2", "error"],
      ["cluster1", "warning"],
    ]);
    expect(found[1]!.message).toContain("in 3 days");
  });

  it("CERTIFICATE_EXPIRING does not trigger: 20 days left (and the window is an option)", () => {
    const certificates = [{ cluster: "cluster1", subject: "relay client certificate", notAfter: "2026-12-19T00:00:00Z" }];
    expect(only(insightsOf({ today: "2026-11-29", certificates }), "CERTIFICATE_EXPIRING")).toEqual([]);
    expect(only(insightsOf({ today: "2026-11-29", certificates, options: { certificateWarningDays: 30 } }), "CERTIFICATE_EXPIRING")).toHaveLength(1);
  });
});

describe("SIDECAR_MISSING", () => {
  const optedOut = { kind: "Deployment" as const, name: "legacy", namespace: "shop", podLabels: { app: "legacy", "sidecar.istio.io/inject": "false" }, serviceAccount: "legacy", localities: [] };

  it("SIDECAR_MISSING triggers: a workload opts out in a namespace labelled istio-injection=enabled, or istio.io/rev", () => {
    for (const labels of [{ "istio-injection": "enabled" }, { "istio.io/rev": "1-29" }]) {
      const found = only(insightsOf({ clusters: [{ name: "cluster1", namespaces: { shop: labels }, workloads: [optedOut] }] }), "SIDECAR_MISSING");
      expect(found).toHaveLength(1);
      expect(found[0]).toMatchObject({ severity: "warning", cluster: "cluster1", object: { kind: "Deployment", name: "legacy", namespace: "shop" } });
    }
  });

  it("SIDECAR_MISSING does not trigger: the namespace injects nothing (no label, or istio-injection=disabled over istio.io/rev); an injected workload", () => {
    for (const labels of [{}, { "istio.io/rev": "1-29", "istio-injection": "disabled" }]) {
      expect(only(insightsOf({ clusters: [{ name: "cluster1", namespaces: { shop: labels }, workloads: [optedOut] }] }), "SIDECAR_MISSING")).toEqual([]);
    }
    expect(only(insightsOf({ clusters: [{ name: "cluster1", namespaces: { shop: { "istio-injection": "enabled" } }, services: ["shop/cart"] }] }), "SIDECAR_MISSING")).toEqual([]);
  });
});

describe("TRAFFIC_WITHOUT_ROUTE", () => {
  const edge = (rps: number) => ({ source: { cluster: "cluster1", namespace: "shop", workload: "web" }, destination: { cluster: "cluster1", namespace: "shop", workload: "cart", service: "cart" }, rps, errorRate: 0 });

  it("TRAFFIC_WITHOUT_ROUTE triggers: traffic reaches a Service no RouteTable or VirtualDestination routes to (rates summed per Service)", () => {
    const found = only(insightsOf({ files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop") }, clusters: TWO_CLUSTERS_WITH_CART, traffic: [edge(3), { ...edge(2), source: { cluster: "cluster1", namespace: "shop", workload: "api" } }] }), "TRAFFIC_WITHOUT_ROUTE");
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ severity: "info", cluster: "cluster1", workspace: "shop", object: { kind: "Service", name: "cart", namespace: "shop" } });
    expect(found[0]!.message).toContain("5.0 req/s");
  });

  it("TRAFFIC_WITHOUT_ROUTE does not trigger: a RouteTable forwards to the Service, a VirtualDestination is backed by it, or no request flows", () => {
    const base = { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop") };
    expect(only(insightsOf({ files: { ...base, "shop/rt.yaml": routeTable(FORWARD) }, clusters: TWO_CLUSTERS_WITH_CART, traffic: [edge(3)] }), "TRAFFIC_WITHOUT_ROUTE")).toEqual([]);
    expect(only(insightsOf({ files: { ...base, "shop/vd.yaml": virtualDestination }, clusters: TWO_CLUSTERS_WITH_CART, traffic: [edge(3)] }), "TRAFFIC_WITHOUT_ROUTE")).toEqual([]);
    expect(only(insightsOf({ files: base, clusters: TWO_CLUSTERS_WITH_CART, traffic: [edge(0)] }), "TRAFFIC_WITHOUT_ROUTE")).toEqual([]);
  });
});

describe("the analysis", () => {
  it("is deterministic and sorted: errors first, then warnings, then info", () => {
    const input = { files: { "clusters.yaml": CLUSTERS, "shop/workspace.yaml": workspace("shop", "shop"), "shop/vd.yaml": virtualDestination, "shop/rt.yaml": routeTable(FORWARD) }, clusters: [{ name: "cluster1", services: ["shop/cart"], istio: ["1.24.1"] }, { name: "cluster2", services: ["shop/cart"], istio: ["1.29.0"] }] };
    const a = insightsOf(input);
    expect(insightsOf(input)).toEqual(a);
    const ranks = a.map((i) => ({ error: 0, warning: 1, info: 2 })[i.severity]);
    expect(ranks).toEqual([...ranks].sort());
    expect(new Set(a.map((i) => i.code))).toEqual(new Set(["ISTIO_END_OF_LIFE", "ISTIO_VERSION_SKEW", "MULTICLUSTER_NO_OUTLIER_DETECTION", "ROUTE_WITHOUT_TIMEOUT"]));
    for (const i of a) expect(INSIGHT_CODES[i.code].title.length).toBeGreaterThan(0);
  });

  it("refuses a 'today' that is not a date, saying what it expects", () => {
    expect(() => analyze({ discovery: new Map(), today: "yesterday" })).toThrow(/today "yesterday" is not an ISO 8601 date/);
  });
});
