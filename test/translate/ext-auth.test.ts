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

// glooAuth on open-source Envoy (issue #36 item 4), case ext-auth-glooauth. Gloo's
// oidcAuthorizationCode: unauthenticated requests on the selected routes go to the provider's
// authorization endpoint, the code comes back to appUrl + callbackPath and is exchanged at the token
// endpoint with the client secret. Chains Envoy cannot run keep going to Gloo's ext-auth-service.
describe("ExtAuthPolicy glooAuth on Envoy's oauth2 filter", () => {
  const result = runCase(loadCase("ext-auth-glooauth")).result;
  const out = result.clusters.get("cluster1")!.resources;
  const gatewayPatches = out.filter((r) => r.kind === "EnvoyFilter" && r.metadata.namespace === "istio-gateways").flatMap(patches);
  const inserted = (name: string) => gatewayPatches.find((p) => p.applyTo === "HTTP_FILTER" && p.patch.value.name === name)?.patch.value;
  type OAuth2 = { config: { authorization_endpoint: string; redirect_uri: string; redirect_path_matcher: unknown; signout_path?: unknown; auth_scopes: string[]; token_endpoint: { uri: string; cluster: string }; credentials: Record<string, unknown> } };

  /** The filters a request on `path` meets (names of the per-route configs that turn on a filter inserted on the gateway). */
  function filtersOn(path: string): string[] {
    const outcome = evaluate(out, { host: "bookinfo.example.com", path, gateway: GATEWAY });
    if (outcome.kind !== "route") throw new Error(`no route for ${path}`);
    const perRoute = gatewayPatches.find((p) => p.match.routeConfiguration?.vhost?.route.name === outcome.route)?.patch.value.typed_per_filter_config as Record<string, { disabled?: boolean }> | undefined;
    return Object.entries(perRoute ?? {})
      .filter(([name, c]) => c.disabled !== true && inserted(name)?.disabled === true)
      .map(([name]) => name);
  }

  it("a selected route runs its own policy's OIDC login, other routes none", () => {
    expect(filtersOn("/app/page")).toEqual(["envoy.filters.http.oauth2.bookinfo-frontends.keycloak"]);
    expect(filtersOn("/app/callback")).toEqual(["envoy.filters.http.oauth2.bookinfo-frontends.keycloak"]);
    expect(filtersOn("/shop")).toEqual(["envoy.filters.http.oauth2.bookinfo-frontends.okta"]);
    expect(filtersOn("/portal")).toEqual(["envoy.filters.http.oauth2.bookinfo-frontends.in-mesh"]);
    expect(filtersOn("/")).toEqual([]);
  });

  it("an OIDC + opaAuth chain meets the login, then the OPA-Envoy decision; an opaAuth chain the decision only", () => {
    expect(filtersOn("/reports").sort()).toEqual(["envoy.filters.http.ext_authz.opa-envoy.opa-envoy.gloo-mesh-addons", "envoy.filters.http.oauth2.bookinfo-frontends.oidc-opa"]);
    expect(filtersOn("/api/pets")).toEqual(["envoy.filters.http.ext_authz.opa-envoy.opa-envoy-pets.opa"]);
    // Envoy runs the filters in insertion order: the OPA filter's EnvoyFilter has the higher priority (applied after the login's).
    const priority = (name: string) => out.find((r) => r.kind === "EnvoyFilter" && patches(r).some((p) => p.applyTo === "HTTP_FILTER" && p.patch.value.name === name))!.spec.priority as number;
    expect(priority("envoy.filters.http.oauth2.bookinfo-frontends.oidc-opa")).toBeLessThan(priority("envoy.filters.http.ext_authz.opa-envoy.opa-envoy.gloo-mesh-addons"));
    const perRoute = (path: string) => {
      const outcome = evaluate(out, { host: "bookinfo.example.com", path, gateway: GATEWAY });
      return gatewayPatches.find((p) => outcome.kind === "route" && p.match.routeConfiguration?.vhost?.route.name === outcome.route)!.patch.value.typed_per_filter_config as Record<string, { check_settings?: { context_extensions: Record<string, string> } }>;
    };
    expect(perRoute("/reports")["envoy.filters.http.ext_authz.opa-envoy.opa-envoy.gloo-mesh-addons"]!.check_settings).toEqual({ context_extensions: { gitmesh_policy: "bookinfo-frontends.oidc-opa" } });
    expect(perRoute("/api/pets/1")["envoy.filters.http.ext_authz.opa-envoy.opa-envoy-pets.opa"]!.check_settings).toEqual({ context_extensions: { gitmesh_policy: "bookinfo-frontends.opa-only" } });
    const opa = out.filter((r) => r.kind === "EnvoyFilter" && JSON.stringify(r).includes("opa-envoy"));
    for (const f of opa) expect(validateIstioResource(f)).toEqual([]);
    const differences = result.diagnostics.filter((d) => d.message.includes("through gitmesh's wrapper"));
    expect(differences.map((d) => [d.severity, d.path])).toEqual([
      ["warning", "/spec/config/glooAuth/configs/1/opaAuth"],
      ["warning", "/spec/config/glooAuth/configs/0/opaAuth"],
      ["warning", "/spec/config/glooAuth/configs/1/opaAuth"],
      ["warning", "/spec/config/glooAuth/configs/0/opaServerAuth"],
      ["warning", "/spec/config/glooAuth/configs/1/opaAuth"],
    ]);
    // opaServerAuth (without serverAddr) is the same decision on the default OPA-Envoy, beside Gloo's ext-auth-service.
    expect(filtersOn("/status")).toEqual(["envoy.filters.http.ext_authz.opa-envoy.opa-envoy.gloo-mesh-addons"]);
    expect(differences[0]!.message).toMatch(/input.state.jwt is the ID token from the IdToken cookie/);
  });

  it("the login flow is Gloo's: appUrl + callbackPath, logoutPath, openid first, the provider's endpoints", () => {
    const keycloak = (inserted("envoy.filters.http.oauth2.bookinfo-frontends.keycloak")!.typed_config as OAuth2).config;
    expect(keycloak.redirect_uri).toBe("https://bookinfo.example.com/app/callback");
    expect(keycloak.redirect_path_matcher).toEqual({ path: { exact: "/app/callback" } });
    expect(keycloak.signout_path).toEqual({ path: { exact: "/app/logout" } });
    expect(keycloak.auth_scopes).toEqual(["openid", "email"]);
    expect(keycloak.authorization_endpoint).toBe("http://keycloak.example.com:8080/realms/master/protocol/openid-connect/auth");
    expect(keycloak.token_endpoint).toMatchObject({ uri: "http://keycloak.example.com:8080/realms/master/protocol/openid-connect/token", cluster: "outbound|8080||keycloak.example.com" });
    const portal = (inserted("envoy.filters.http.oauth2.bookinfo-frontends.in-mesh")!.typed_config as OAuth2).config;
    expect(portal.authorization_endpoint).toBe("https://login.example.com/authorize");
    expect(portal.token_endpoint.cluster).toBe("outbound|8080||keycloak.keycloak.svc.cluster.local");
  });

  it("an external token endpoint gets a cluster seen by the gateway only, with TLS for https", () => {
    const entries = out.filter((r) => r.kind === "ServiceEntry");
    expect(entries.map((e) => [e.metadata.namespace, e.spec.hosts, e.spec.exportTo, e.spec.ports])).toEqual(
      expect.arrayContaining([
        ["istio-gateways", ["dev-1.okta.com"], ["."], [{ name: "https", number: 443, protocol: "HTTPS" }]],
        ["istio-gateways", ["keycloak.example.com"], ["."], [{ name: "http", number: 8080, protocol: "HTTP" }]],
      ]),
    );
    expect(entries.some((e) => (e.spec.hosts as string[]).some((h) => h.endsWith(".svc.cluster.local")))).toBe(false);
    const tls = out.filter((r) => r.kind === "DestinationRule" && r.spec.host === "dev-1.okta.com");
    expect(tls.map((d) => d.spec.trafficPolicy)).toEqual([{ portLevelSettings: [{ port: { number: 443 }, tls: { mode: "SIMPLE", sni: "dev-1.okta.com" } }] }]);
  });

  it("secrets are SDS file references, never values; an inline secret fails the Envoy check", () => {
    const keycloak = inserted("envoy.filters.http.oauth2.bookinfo-frontends.keycloak")!.typed_config as OAuth2;
    expect(keycloak.config.credentials).toEqual({
      client_id: "bookinfo",
      token_secret: { name: "token", sds_config: { path_config_source: { path: "/etc/gitmesh/oauth2/gloo-mesh-addons.keycloak-client/token-secret.yaml" }, resource_api_version: "V3" } },
      hmac_secret: { name: "hmac", sds_config: { path_config_source: { path: "/etc/gitmesh/oauth2/gloo-mesh-addons.keycloak-client/hmac-secret.yaml" }, resource_api_version: "V3" } },
    });
    expect(JSON.stringify(out)).not.toMatch(/inline_string|inline_bytes|generic_secret/);
    expect(result.diagnostics.filter((d) => d.code === "SECRET_MOUNT_REQUIRED").map((d) => d.path)).toHaveLength(4);
    const filter = out.find((r) => r.kind === "EnvoyFilter" && JSON.stringify(r).includes("oauth2.bookinfo-frontends.keycloak") && patches(r).some((p) => p.applyTo === "HTTP_FILTER"))!;
    expect(validateIstioResource(filter)).toEqual([]);
    const broken = structuredClone(filter) as IstioResource & { spec: { configPatches: Patch[] } };
    const creds = (broken.spec.configPatches[0]!.patch.value.typed_config as OAuth2).config.credentials;
    creds.token_secret = { name: "token", sds_config: { inline_string: "s3cret" } };
    expect(validateIstioResource(broken).map((i) => i.path)).toContain("/spec/configPatches/0/patch/value/typed_config/config/credentials/token_secret/sds_config");
  });

  it("chains Envoy cannot run go to Gloo's ext-auth-service with their config id, each with the reason", () => {
    const needs = result.diagnostics.filter((d) => d.code === "NEEDS_GLOO_DATA_PLANE").map((d) => d.message);
    expect(needs).toHaveLength(2);
    expect(needs.find((m) => m.includes("config_id=bookinfo-frontends.apikeys"))).toMatch(/api_key_auth filter \(envoy.filters.http.api_key_auth\) is not compiled into Istio.s proxy/);
    expect(needs.find((m) => m.includes("config_id=bookinfo-frontends.unknown-idp"))).toMatch(/discoveryOverride.authEndpoint/);
    for (const path of ["/api", "/other"]) expect(filtersOn(path)).toEqual(["envoy.filters.http.ext_authz.gloo-ext-auth.bookinfo-frontends"]);
  });
});
