// Provenance beside the translation (src/translate/provenance.ts), written from Gloo's documented
// semantics (docs.solo.io, Gloo Mesh v2 "policies": a policy's applyToRoutes selects routes by their
// labels — empty selects every route of the policy's workspace; when two policies of one kind select a
// route the oldest applies; delegated child route tables contribute their routes to the parent's
// VirtualService; a destination policy applies to the destinations of its workspace that
// applyToDestinations selects). Nothing here is read from the rendered output.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { contributions, translateAll, type Provenance } from "../../src/translate/index.js";
import { FIXTURES } from "./golden.js";
import { desiredFromYaml, discoveryFromYaml } from "./helpers.js";

const base = readFileSync(join(FIXTURES, "delegation-table-weight/input.yaml"), "utf8")
  // Labels on the delegated child's route (route selectors match route labels).
  .replace("  - name: reviews\n", "  - name: reviews\n    labels: {resilience: retry}\n");
const discovery = discoveryFromYaml(readFileSync(join(FIXTURES, "delegation-table-weight/discovery.yaml"), "utf8"));

const policies = `
---
apiVersion: resilience.policy.gloo.solo.io/v2
kind: RetryTimeoutPolicy
metadata: {name: retry-reviews, namespace: bookinfo-backends, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  applyToRoutes: [{route: {labels: {resilience: retry}}}]
  config: {requestTimeout: 5s, retries: {attempts: 3, perTryTimeout: 1s}}
---
apiVersion: resilience.policy.gloo.solo.io/v2
kind: RetryTimeoutPolicy
metadata: {name: retry-newer, namespace: bookinfo-backends, creationTimestamp: "2025-01-01T00:00:00Z"}
spec:
  applyToRoutes: [{route: {labels: {resilience: retry}}}]
  config: {requestTimeout: 9s}
---
apiVersion: resilience.policy.gloo.solo.io/v2
kind: FaultInjectionPolicy
metadata: {name: fault-all, namespace: bookinfo-frontends}
spec:
  config: {abort: {httpStatus: 503, percentage: 1}}
---
apiVersion: resilience.policy.gloo.solo.io/v2
kind: FaultInjectionPolicy
metadata: {name: fault-gateways, namespace: istio-gateways}
spec:
  config: {delay: {fixedDelay: 1s, percentage: 5}}
---
apiVersion: resilience.policy.gloo.solo.io/v2
kind: OutlierDetectionPolicy
metadata: {name: outlier-reviews, namespace: bookinfo-backends}
spec:
  applyToDestinations: [{selector: {labels: {app: reviews}}}]
  config: {consecutiveErrors: 2, interval: 5s, baseEjectionTime: 30s, maxEjectionPercent: 50}
---
apiVersion: security.policy.gloo.solo.io/v2
kind: JWTPolicy
metadata: {name: jwt-reviews, namespace: bookinfo-backends}
spec:
  applyToRoutes: [{route: {labels: {resilience: retry}}}]
  config:
    providers:
      p: {issuer: https://issuer.example.com, remote: {url: https://issuer.example.com/jwks}}
---
apiVersion: security.policy.gloo.solo.io/v2
kind: CSRFPolicy
metadata: {name: csrf-all, namespace: bookinfo-frontends}
spec:
  config: {filterEnabled: true}
---
apiVersion: trafficcontrol.policy.gloo.solo.io/v2
kind: RateLimitPolicy
metadata: {name: rl-reviews, namespace: bookinfo-backends}
spec:
  applyToRoutes: [{route: {labels: {resilience: retry}}}]
  config:
    ratelimitServerConfig: {name: limits, namespace: gloo-mesh-addons}
    serverSettings: {name: rate-limit-server}
    ratelimitClientConfig: {name: per-user}
---
apiVersion: security.policy.gloo.solo.io/v2
kind: ExtAuthPolicy
metadata: {name: auth-unselected, namespace: bookinfo-frontends}
spec:
  config:
    server: {name: gloo-ext-auth}
    glooAuth: {configs: [{oauth2: {oidcAuthorizationCode: {appUrl: https://bookinfo.example.com, callbackPath: /callback, clientId: c, clientSecretRef: {name: s, namespace: gloo-mesh}, issuerUrl: https://issuer.example.com/}}}]}
`;

const prov: Provenance = contributions(desiredFromYaml(base + policies), discovery);
const root = prov.parents.find((p) => p.parent.kind === "RouteTable" && p.parent.name === "root")!;
const from = (name: string) => root.contributions.find((c) => c.from.name === name);
const reach = (name: string) => prov.policies.find((p) => p.policy.name === name)!;

describe("contributions: which Gloo objects wrote the Istio objects of a root route table", () => {
  it("lists the root itself and each delegated child with the routes it contributed", () => {
    expect(from("root")).toMatchObject({ role: "parent", routes: ["home"] });
    expect(from("root")!.fields).toEqual(expect.arrayContaining(["hosts", "gateways", "http[]"]));
    // The child route "outside" does not fall under the parent's /api matcher: it is dropped, not contributed.
    expect(from("reviews-api")).toMatchObject({ role: "delegated-child", fields: ["http[]"], routes: ["reviews"] });
    expect(from("ratings-api")).toMatchObject({ role: "delegated-child", routes: ["api-fallback", "ratings"] });
  });

  it("a retry policy selecting a child's route by its labels wrote retries and timeout on that route only", () => {
    expect(from("retry-reviews")).toMatchObject({ role: "route-policy", fields: ["http[].retries", "http[].timeout"], routes: ["reviews"] });
  });

  it("of two retry policies on one route the oldest applies; the newer contributes nothing", () => {
    expect(from("retry-newer")).toBeUndefined();
    expect(reach("retry-newer").routes).toEqual([]);
    expect(reach("retry-reviews").routes).toEqual([{ table: { kind: "RouteTable", namespace: "bookinfo-backends", name: "reviews-api" }, route: "reviews" }]);
  });

  it("a policy without applyToRoutes applies to every route of its workspace, delegated ones included", () => {
    expect(from("fault-all")).toMatchObject({ role: "route-policy", fields: ["http[].fault"], routes: ["api-fallback", "home", "ratings", "reviews"] });
    expect(reach("fault-all").routes).toHaveLength(4);
    expect(reach("fault-all").parents).toEqual([{ kind: "RouteTable", namespace: "bookinfo-frontends", name: "root" }]);
  });

  it("a policy of another workspace does not reach routes it does not own", () => {
    expect(from("fault-gateways")).toBeUndefined();
    expect(reach("fault-gateways")).toMatchObject({ routes: [], destinations: [], parents: [] });
  });

  it("an outlier detection policy reaches the selected Service in every cluster that has it, as a traffic policy field", () => {
    expect(reach("outlier-reviews").destinations).toEqual(["service/cluster1/bookinfo-backends/reviews", "service/cluster2/bookinfo-backends/reviews"]);
    const dr = prov.parents.find((p) => p.contributions.some((c) => c.from.name === "outlier-reviews"))!;
    expect(dr.contributions.find((c) => c.from.name === "outlier-reviews")).toMatchObject({ role: "destination-policy", fields: ["trafficPolicy.outlierDetection"] });
  });

  it("policies enforced on the gateway (JWT, CSRF, rate limits) are listed on the routes they guard, with the objects that do it", () => {
    expect(from("jwt-reviews")).toMatchObject({ role: "gateway-policy", routes: ["reviews"] });
    expect(from("jwt-reviews")!.fields).toEqual(expect.arrayContaining(["RequestAuthentication"]));
    expect(reach("jwt-reviews").routes).toEqual([{ table: { kind: "RouteTable", namespace: "bookinfo-backends", name: "reviews-api" }, route: "reviews" }]);
    expect(from("rl-reviews")).toMatchObject({ role: "gateway-policy", routes: ["reviews"] });
    // A CSRFPolicy without applyToRoutes: every route of its workspace.
    expect(from("csrf-all")).toMatchObject({ role: "gateway-policy", routes: ["api-fallback", "home", "ratings", "reviews"] });
  });

  it("an ExtAuthPolicy without applyToRoutes guards no route (Gloo: an empty applyToRoutes selects none for external auth)", () => {
    expect(from("auth-unselected")).toBeUndefined();
    expect(prov.policies.find((p) => p.policy.name === "auth-unselected")).toBeUndefined();
  });

  it("agrees with the rendering: the gateway policy it lists renders objects of its own in the output", () => {
    const rendered = [...translateAll(desiredFromYaml(base + policies), discovery).clusters.values()].flatMap((c) => c.resources);
    const parentNames = new Set(rendered.map((r) => (r as { metadata?: { labels?: Record<string, string> } }).metadata?.labels?.["gitmesh.io/parent-name"]));
    for (const name of ["jwt-reviews", "csrf-all"]) expect(parentNames.has(name), name).toBe(true);
  });

  it("is a side result: the rendered output is the same with or without asking for it, and it is deterministic", () => {
    const desired = desiredFromYaml(base + policies);
    const before = JSON.stringify([...translateAll(desired, discovery).clusters]);
    expect(JSON.stringify(contributions(desired, discovery))).toBe(JSON.stringify(prov));
    expect(JSON.stringify([...translateAll(desired, discovery).clusters])).toBe(before);
  });
});
