// ExtAuthPolicy (issue #15): which authorization server a request on each route meets. The gateway
// routes are chosen with the Istio routing model (evaluator.ts); the ext_authz filters are inserted
// disabled and a route meets a filter only when its per-route config names a filter inserted on the
// same gateway (Envoy's HttpFilter.disabled semantics). A route whose server cannot be reached must
// answer 403, never pass unauthenticated.
import { describe, expect, it } from "vitest";
import { validateIstioResource, type IstioResource } from "../../src/translate/index.js";
import { evaluate } from "./evaluator.js";
import { loadCase, runCase } from "./golden.js";

type Patch = { applyTo: string; match: { context: string; routeConfiguration?: { portNumber?: number; vhost?: { route: { name: string } } } }; patch: { value: Record<string, unknown> } };
const patches = (r: IstioResource) => r.spec.configPatches as Patch[];
const GATEWAY = "istio-gateways/virtualgateway-north-south-gw-istio-gateways-cluster1-gateways";

describe("ExtAuthPolicy", () => {
  const result = runCase(loadCase("ext-auth")).result;
  const out = result.clusters.get("cluster1")!.resources;
  const filters = out.filter((r) => r.kind === "EnvoyFilter");
  const gatewayFilters = filters.filter((f) => f.metadata.namespace === "istio-gateways");

  /** The authorization a request meets on the gateway: the server's cluster and the context extensions, 403, or none. */
  function authorization(path: string): { server: string; context: Record<string, string> } | { status: number } | "none" {
    const outcome = evaluate(out, { host: "bookinfo.example.com", path, gateway: GATEWAY });
    if (outcome.kind === "direct") return { status: outcome.status };
    if (outcome.kind !== "route") throw new Error(`no route for ${path}`);
    const perRoute = gatewayFilters.flatMap(patches).find((p) => p.match.routeConfiguration?.vhost?.route.name === outcome.route)?.patch.value.typed_per_filter_config as Record<string, { check_settings: { context_extensions?: Record<string, string> } }> | undefined;
    if (perRoute === undefined) return "none";
    const [name, config] = Object.entries(perRoute)[0]!;
    const inserted = gatewayFilters.flatMap(patches).find((p) => p.applyTo === "HTTP_FILTER" && p.patch.value.name === name)!.patch.value;
    expect(inserted.disabled).toBe(true);
    const typed = inserted.typed_config as { grpc_service?: { envoy_grpc: { cluster_name: string } }; http_service?: { server_uri: { cluster: string } } };
    return { server: typed.grpc_service?.envoy_grpc.cluster_name ?? typed.http_service!.server_uri.cluster, context: config.check_settings.context_extensions ?? {} };
  }

  it("each gateway route meets its own server, with its context extensions; other routes meet none", () => {
    expect(authorization("/login")).toEqual({ server: "outbound|8083||ext-auth-service.gloo-mesh-addons.svc.cluster.local", context: { config_id: "bookinfo-frontends.oidc" } });
    expect(authorization("/api/v1")).toEqual({ server: "outbound|8080||authz.gloo-mesh-addons.svc.cluster.local", context: { team: "bookinfo" } });
    expect(authorization("/")).toBe("none");
  });

  it("fails closed: a route whose server is not discovered answers 403, a destination whose server does not exist is denied in every cluster", () => {
    expect(authorization("/admin")).toEqual({ status: 403 });
    for (const cluster of ["cluster1", "cluster2"]) {
      const deny = result.clusters.get(cluster)!.resources.filter((r) => r.kind === "AuthorizationPolicy" && r.metadata.labels["gitmesh.io/parent-name"] === "reviews-auth");
      expect(deny.map((d) => d.spec), cluster).toEqual([{ selector: { matchLabels: { app: "reviews" } }, action: "DENY", rules: [{ to: [{ operation: { ports: ["9080"] } }] }] }]);
    }
    expect(result.diagnostics.map((d) => d.code)).toEqual(expect.arrayContaining(["REFERENCE_NOT_FOUND", "DESTINATION_NOT_FOUND", "NEEDS_GLOO_DATA_PLANE"]));
  });

  it("a destination is protected on its inbound port, by the server's filter on its own pods", () => {
    const onDetails = filters.filter((f) => JSON.stringify(f.spec.workloadSelector) === JSON.stringify({ labels: { app: "details" } }));
    const insert = onDetails.flatMap(patches).find((p) => p.applyTo === "HTTP_FILTER")!;
    const vhost = onDetails.flatMap(patches).find((p) => p.applyTo === "VIRTUAL_HOST")!;
    expect(insert.match).toMatchObject({ context: "SIDECAR_INBOUND", listener: { portNumber: 9080 } });
    expect(vhost.match).toEqual({ context: "SIDECAR_INBOUND", routeConfiguration: { portNumber: 9080 } });
    expect(Object.keys(vhost.patch.value.typed_per_filter_config as object)).toEqual([insert.patch.value.name]);
  });

  it("the ext_authz configuration is checked against Envoy's API", () => {
    for (const f of filters) expect(validateIstioResource(f)).toEqual([]);
    const broken = structuredClone(gatewayFilters.find((f) => patches(f).some((p) => p.applyTo === "HTTP_FILTER"))!) as IstioResource & { spec: { configPatches: Patch[] } };
    const typed = broken.spec.configPatches[0]!.patch.value.typed_config as Record<string, unknown>;
    typed.http_service = { server_uri: { uri: "http://x" } };
    typed.failureModeAllow = true;
    const paths = validateIstioResource(broken).map((i) => i.path);
    expect(paths).toEqual(expect.arrayContaining(["/spec/configPatches/0/patch/value/typed_config", "/spec/configPatches/0/patch/value/typed_config/http_service/server_uri"]));
  });
});
