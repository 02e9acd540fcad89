/**
 * ExtAuthPolicy (with ExtAuthServer) → Envoy's ext_authz filter on upstream Istio, in the shape Gloo
 * renders it:
 *
 * - the **filter**: `envoy.filters.http.ext_authz` inserted before the router, disabled by default
 *   (HttpFilter `disabled`), on the gateway pods that serve the selected routes or on the sidecars
 *   (inbound, per port) of the selected destinations; one filter per ExtAuthServer, named
 *   `envoy.filters.http.ext_authz.<server>`. The ExtAuthServer gives the service (gRPC, or HTTP with
 *   `httpService`: path prefix, headers to and from the server), `requestTimeout` (default 2s),
 *   `failureModeAllow`, `requestBody`, `clearRouteCache`, `statusOnError`, `statPrefix`; without
 *   one, Gloo's default: Service `ext-auth-service` in `gloo-mesh`, port 8083, gRPC;
 * - **per route / per inbound virtual host**: `typed_per_filter_config` ExtAuthzPerRoute, which
 *   turns the filter on there, with `check_settings.context_extensions`: the policy's
 *   `customAuth.contextExtensions`, or for `glooAuth` `config_id: <namespace>.<name>` of the policy
 *   (the configuration Gloo's ext-auth-service looks up).
 *
 * A `glooAuth` chain that open-source Envoy can run (gloo-auth.ts: an OIDC authorization-code
 * configuration) becomes Envoy's oauth2 filter instead of ext_authz: inserted disabled on the
 * gateway, turned on per route by an empty `FilterConfig`, its token endpoint a cluster of its own
 * (the Service's, or a ServiceEntry + DestinationRule for an external identity provider). Other
 * `glooAuth` configurations (API keys, OPA modules, LDAP, …) are evaluated by Gloo's
 * ext-auth-service, which receives them from Gloo's management plane, so each is
 * NEEDS_GLOO_DATA_PLANE (error) with the reason: the requests still go to the server with the
 * configuration's id and are denied unless it holds that configuration (fail closed). A chain of
 * one `basicAuth` whose hashes Envoy can verify becomes Envoy's basic_auth filter the same way
 * (inserted disabled, on per selected route or inbound port; gloo-auth-credentials.ts).
 * Where the server is not discovered, no filter can be rendered (Envoy rejects a filter naming an
 * unknown cluster, with the whole listener): the selected routes answer 403 and the selected
 * destination ports are denied by an AuthorizationPolicy, with an error — never left open.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import type { WorkspaceContext } from "./context.js";
import { EXT_AUTHZ_PER_ROUTE_TYPE, EXT_AUTHZ_TYPE } from "./envoy-config.js";
import { ENABLE_FILTER, oauth2Config, planGlooAuth, type OidcUpstream } from "./gloo-auth.js";
import type { CredentialFilterStep } from "./gloo-auth-credentials.js";
import { FILTER_PRIORITY, destinationSelectors, envoyDuration, findByRef, refText, resolvedOncePerWorkspace, envoyFilter, insertBeforeRouter, mergeIntoGatewayRoute, mergeIntoInboundHost, selectedInboundPorts, selectsRoutes, serverCluster, type FilterProxy, type ProxySet, type ServerRef } from "./envoy-filters.js";
import type { InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { stableName } from "./names.js";
import { asArray, asNumber, asRecord, asString, type Labels } from "./selectors.js";
import { TranslateCode, type Emitted, type TranslatorOutput } from "./types.js";

export const DEFAULT_EXT_AUTH_SERVER = { name: "ext-auth-service", namespace: "gloo-mesh", port: 8083 } as const;
const FILTER = "envoy.filters.http.ext_authz";
export const EXT_AUTH_DENIED_BODY = "gitmesh: external authorization for this route cannot be enforced; see the diagnostics of its ExtAuthPolicy";

/** A policy's server and per-route settings, resolved once per workspace. */
export interface ExtAuthConfig {
  /** The ExtAuthServer (`<name>.<namespace>`, or `default`): one filter per server. */
  readonly serverId: string;
  /** The filter's name: `envoy.filters.http.ext_authz.<serverId>`. */
  readonly filterName: string;
  readonly server: ServerRef;
  /** The ExtAuthServer's settings (spec), `{}` for Gloo's default server. */
  readonly settings: Record<string, unknown>;
  /** ExtAuthzPerRoute of the selected routes / virtual hosts (an empty FilterConfig for `oidc`). */
  readonly perRoute: Record<string, unknown>;
  /** Set when the policy's glooAuth chain runs on Envoy's oauth2 filter instead (no ext_authz; `server` is the token endpoint). */
  readonly oidc?: OidcUpstream;
  /** Set when the chain runs on a filter that calls nothing (basic_auth; `server` is unused): gloo-auth-credentials.ts. */
  readonly local?: CredentialFilterStep;
}

/** Whether an ExtAuthPolicy protects routes: only with `applyToRoutes` (Gloo: empty = no route). */
export const extAuthSelectsRoutes = selectsRoutes;

/** The policy's server and per-route settings (undefined when nothing can call a server; the policy's routes are then denied). */
export const resolveExtAuth = resolvedOncePerWorkspace<ExtAuthConfig>((ctx, policy, issue) => {
  const c = asRecord(asRecord(policy.spec).config);
  let glooOnly: string[] = [];
  if (c.customAuth === undefined && c.glooAuth !== undefined) {
    const plan = planGlooAuth(policy, issue);
    if ("upstream" in plan) {
      const u = plan.upstream;
      return { serverId: u.filterName, filterName: u.filterName, server: { name: u.tokenEndpoint.host, namespace: "", port: { number: u.tokenEndpoint.port } }, settings: {}, perRoute: ENABLE_FILTER, oidc: u };
    }
    if ("local" in plan) return { serverId: plan.local.filterName, filterName: plan.local.filterName, server: { name: "", namespace: "", port: {} }, settings: {}, perRoute: ENABLE_FILTER, local: plan.local };
    glooOnly = plan.reasons;
  }
  let serverObj: InputObject | undefined;
  if (c.server !== undefined) {
    serverObj = findByRef(ctx, "ExtAuthServer", c.server, policy);
    if (serverObj === undefined) {
      issue(policy, "/spec/config/server", `ExtAuthServer ${refText(c.server, policy)} does not exist; the policy's routes and destinations are denied until it does`, Severity.Error, TranslateCode.ReferenceNotFound);
      return undefined;
    }
  }
  const settings = asRecord(serverObj?.spec);
  const dest = asRecord(settings.destinationServer);
  if (dest.ref === undefined && dest.awsLambda !== undefined) {
    issue(serverObj!, "/spec/destinationServer", "an ext auth server must be a Kubernetes Service; the policy's routes and destinations are denied");
    return undefined;
  }
  const kind = asString(dest.kind) ?? "SERVICE";
  if (kind !== "SERVICE") {
    issue(serverObj!, "/spec/destinationServer/kind", `an ext auth server of kind ${kind} is not translated (a Kubernetes Service is); the policy's routes and destinations are denied`, Severity.Error, TranslateCode.UnsupportedField);
    return undefined;
  }
  const ref = asRecord(dest.ref);
  const server: ServerRef =
    dest.ref === undefined
      ? { name: DEFAULT_EXT_AUTH_SERVER.name, namespace: DEFAULT_EXT_AUTH_SERVER.namespace, port: { number: DEFAULT_EXT_AUTH_SERVER.port } }
      : { name: asString(ref.name) ?? DEFAULT_EXT_AUTH_SERVER.name, namespace: asString(ref.namespace) ?? serverObj!.metadata.namespace ?? ctx.index.adminNamespace, port: dest.port === undefined ? { number: DEFAULT_EXT_AUTH_SERVER.port } : asRecord(dest.port) };
  const id = serverObj === undefined ? "default" : `${serverObj.metadata.name}.${serverObj.metadata.namespace ?? ""}`;
  let contextExtensions: Record<string, string>;
  if (c.customAuth !== undefined) {
    contextExtensions = Object.fromEntries(Object.entries(asRecord(asRecord(c.customAuth).contextExtensions)).filter((e): e is [string, string] => typeof e[1] === "string"));
  } else {
    const configId = `${policy.metadata.namespace ?? ""}.${policy.metadata.name}`;
    contextExtensions = { config_id: configId };
    const kinds = asArray(asRecord(c.glooAuth).configs).flatMap((x) => Object.keys(asRecord(x)).filter((k) => k !== "name"));
    issue(
      policy,
      c.glooAuth === undefined ? "/spec/config" : "/spec/config/glooAuth",
      `${kinds.length > 0 ? `${[...new Set(kinds)].join(", ")}: ` : ""}glooAuth configurations are evaluated by Gloo's ext-auth-service, which receives them from Gloo's management plane; ` +
        (glooOnly.length > 0 ? `open-source Envoy cannot run this chain (${glooOnly.join("; ")}). ` : "upstream Istio has nothing that evaluates them. ") +
        `gitmesh sends the selected requests to ${server.namespace}/${server.name} with context extension config_id=${configId}: they are denied unless that service holds this configuration. Use customAuth with your own ext_authz server to enforce it without Gloo.`,
      Severity.Error,
      TranslateCode.NeedsGlooDataPlane,
    );
  }
  return {
    serverId: id,
    filterName: `${FILTER}.${id}`,
    server,
    settings,
    perRoute: { "@type": EXT_AUTHZ_PER_ROUTE_TYPE, check_settings: Object.keys(contextExtensions).length > 0 ? { context_extensions: contextExtensions } : {} },
  };
});

const patterns = (names: unknown) => ({ patterns: asArray(names).filter((h): h is string => typeof h === "string").map((exact) => ({ exact, ignore_case: true })) });

/** The ext_authz filter's configuration for a server reached through `cluster` (Envoy cluster name). */
function filterConfig(config: ExtAuthConfig, cluster: { name: string; host: string; port: number }): Record<string, unknown> {
  const s = config.settings;
  const timeout = envoyDuration(asString(s.requestTimeout) ?? "2s");
  const out: Record<string, unknown> = { "@type": EXT_AUTHZ_TYPE, transport_api_version: "V3" };
  if (s.httpService !== undefined) {
    const h = asRecord(s.httpService);
    const req = asRecord(h.request);
    const res = asRecord(h.response);
    const headersToAdd = Object.entries(asRecord(req.headersToAdd)).filter((e): e is [string, string] => typeof e[1] === "string");
    out.http_service = {
      server_uri: { uri: `http://${cluster.host}:${String(cluster.port)}`, cluster: cluster.name, timeout },
      ...(asString(h.pathPrefix) !== undefined ? { path_prefix: h.pathPrefix } : {}),
      ...(req.allowedHeaders !== undefined || headersToAdd.length > 0
        ? { authorization_request: { ...(req.allowedHeaders !== undefined ? { allowed_headers: patterns(req.allowedHeaders) } : {}), ...(headersToAdd.length > 0 ? { headers_to_add: headersToAdd.map(([key, value]) => ({ key, value })) } : {}) } }
        : {}),
      ...(res.allowedUpstreamHeaders !== undefined || res.allowedClientHeaders !== undefined
        ? { authorization_response: { ...(res.allowedUpstreamHeaders !== undefined ? { allowed_upstream_headers: patterns(res.allowedUpstreamHeaders) } : {}), ...(res.allowedClientHeaders !== undefined ? { allowed_client_headers: patterns(res.allowedClientHeaders) } : {}) } }
        : {}),
    };
  } else {
    out.grpc_service = { envoy_grpc: { cluster_name: cluster.name }, timeout };
  }
  if (s.failureModeAllow === true) out.failure_mode_allow = true;
  if (s.requestBody !== undefined) {
    const b = asRecord(s.requestBody);
    out.with_request_body = { max_request_bytes: asNumber(b.maxRequestBytes) ?? 4096, ...(b.allowPartialMessage === true ? { allow_partial_message: true } : {}), ...(b.packAsBytes === true ? { pack_as_bytes: true } : {}) };
  }
  if (s.clearRouteCache === true) out.clear_route_cache = true;
  if (asNumber(s.statusOnError) !== undefined) out.status_on_error = { code: s.statusOnError };
  if (asString(s.statPrefix) !== undefined) out.stat_prefix = s.statPrefix;
  return out;
}

/** The EnvoyFilter that inserts one server's ext_authz filter, disabled, on one set of proxies. */
function filterInsertion(ctx: WorkspaceContext, config: ExtAuthConfig, proxy: FilterProxy, cluster: { name: string; host: string; port: number }): Emitted {
  const scope = proxy.inboundPort === undefined ? [proxy.owner.metadata.name] : [proxy.owner.metadata.name, String(proxy.inboundPort)];
  const name = stableName("extauth-filter", config.serverId, ...scope, proxy.namespace, proxy.cluster, ctx.workspace.name);
  return envoyFilter(ctx, proxy, name, proxy.owner, [insertBeforeRouter(proxy, { name: config.filterName, disabled: true, typed_config: filterConfig(config, cluster) })], FILTER_PRIORITY.extAuth);
}

/**
 * The Envoy cluster of an oauth2 filter's token endpoint as the proxies of `proxy` see it: a
 * discovered Kubernetes Service's (`<name>.<ns>.svc[.cluster.local]`), or for any other host a
 * ServiceEntry (MESH_EXTERNAL, DNS) exported to the gateway's namespace only, with a DestinationRule
 * that originates TLS (SIMPLE, SNI = host; Istio verifies the server with the system's CAs) for https.
 */
function tokenCluster(ctx: WorkspaceContext, u: OidcUpstream, proxy: ProxySet & { readonly owner: InputObject }): { name: string; resources: Emitted[] } | { error: string } {
  const t = u.tokenEndpoint;
  const svc = /^([a-z0-9-]+)\.([a-z0-9-]+)\.svc(\.cluster\.local)?$/.exec(t.host);
  if (svc !== null) {
    const r = serverCluster(ctx, "OIDC token endpoint", { name: svc[1]!, namespace: svc[2]!, port: { number: t.port } }, proxy.cluster);
    return "error" in r ? r : { name: r.name, resources: [] };
  }
  const ws = ctx.workspace.name;
  const parent = ctx.parentOf(proxy.owner);
  const name = stableName("oauth2-idp", t.host, String(t.port), proxy.namespace, proxy.cluster, ws);
  const meta = outputMetadata(name, proxy.namespace, proxy.cluster, ws, parent);
  const resources: Emitted[] = [
    {
      cluster: proxy.cluster,
      resource: {
        apiVersion: "networking.istio.io/v1",
        kind: "ServiceEntry",
        metadata: meta,
        spec: { exportTo: ["."], hosts: [t.host], location: "MESH_EXTERNAL", ports: [{ name: t.tls ? "https" : "http", number: t.port, protocol: t.tls ? "HTTPS" : "HTTP" }], resolution: "DNS" },
      },
    },
  ];
  if (t.tls) {
    resources.push({
      cluster: proxy.cluster,
      resource: { apiVersion: "networking.istio.io/v1", kind: "DestinationRule", metadata: meta, spec: { exportTo: ["."], host: t.host, trafficPolicy: { portLevelSettings: [{ port: { number: t.port }, tls: { mode: "SIMPLE", sni: t.host } }] } } },
    });
  }
  return { name: `outbound|${String(t.port)}||${t.host}`, resources };
}

/** Why a policy's requests cannot reach a server in `cluster` (undefined when they can). */
export function extAuthBlocked(ctx: WorkspaceContext, policy: InputObject, cluster: string): string | undefined {
  const { config } = resolveExtAuth(ctx, policy);
  if (config === undefined) return "its ExtAuthServer cannot be used (see the policy's other errors)";
  if (config.local !== undefined) return undefined;
  if (config.oidc !== undefined) {
    const r = tokenCluster(ctx, config.oidc, { cluster, namespace: "", labels: {}, owner: policy });
    return "error" in r ? r.error : undefined;
  }
  const r = serverCluster(ctx, "ext auth server", config.server, cluster);
  return "error" in r ? r.error : undefined;
}

/** A policy's oauth2 filter inserted, disabled, on the gateway, and its token endpoint's cluster. */
function oidcInsertion(ctx: WorkspaceContext, u: OidcUpstream, proxy: FilterProxy): Emitted[] {
  const token = tokenCluster(ctx, u, proxy);
  if ("error" in token) return [];
  const name = stableName("oauth2", u.policy, proxy.owner.metadata.name, proxy.namespace, proxy.cluster, ctx.workspace.name);
  return [...token.resources, envoyFilter(ctx, proxy, name, proxy.owner, [insertBeforeRouter(proxy, { name: u.filterName, disabled: true, typed_config: oauth2Config(u, token.name) })], FILTER_PRIORITY.extAuth)];
}

/** A policy's credential filter (basic_auth) inserted, disabled, on the gateway or on one inbound port. */
function localInsertion(ctx: WorkspaceContext, step: CredentialFilterStep, proxy: FilterProxy): Emitted {
  const scope = proxy.inboundPort === undefined ? [proxy.owner.metadata.name] : [proxy.owner.metadata.name, String(proxy.inboundPort)];
  const name = stableName("basic-auth", step.policy, ...scope, proxy.namespace, proxy.cluster, ctx.workspace.name);
  return envoyFilter(ctx, proxy, name, proxy.owner, [insertBeforeRouter(proxy, { name: step.filterName, disabled: true, typed_config: step.typedConfig })], FILTER_PRIORITY.extAuth);
}

/**
 * EnvoyFilters that put `routes` (VirtualService route name → policy) of one route table on one
 * gateway behind their servers: each server's filter, and the routes' per-filter config. Routes
 * whose server is unreachable were turned into 403s by the caller (`extAuthBlocked`).
 */
export function renderExtAuthRoutes(ctx: WorkspaceContext, table: InputObject, proxy: FilterProxy, routes: ReadonlyMap<string, InputObject>): Emitted[] {
  const resources: Emitted[] = [];
  const patches: Record<string, unknown>[] = [];
  const inserted = new Set<string>();
  const policies = new Set<InputObject>();
  for (const name of [...routes.keys()].sort()) {
    const policy = routes.get(name)!;
    const { config } = resolveExtAuth(ctx, policy);
    if (config === undefined) continue;
    if (config.oidc !== undefined) {
      if (extAuthBlocked(ctx, policy, proxy.cluster) !== undefined) continue;
      if (!inserted.has(config.filterName)) {
        inserted.add(config.filterName);
        resources.push(...oidcInsertion(ctx, config.oidc, proxy));
      }
      policies.add(policy);
      patches.push(mergeIntoGatewayRoute(name, { typed_per_filter_config: { [config.filterName]: config.perRoute } }));
      continue;
    }
    if (config.local !== undefined) {
      if (!inserted.has(config.filterName)) {
        inserted.add(config.filterName);
        resources.push(localInsertion(ctx, config.local, proxy));
      }
      policies.add(policy);
      patches.push(mergeIntoGatewayRoute(name, { typed_per_filter_config: { [config.filterName]: config.perRoute } }));
      continue;
    }
    const cluster = serverCluster(ctx, "ext auth server", config.server, proxy.cluster);
    if ("error" in cluster) continue;
    if (!inserted.has(config.filterName)) {
      inserted.add(config.filterName);
      resources.push(filterInsertion(ctx, config, proxy, cluster));
    }
    policies.add(policy);
    patches.push(mergeIntoGatewayRoute(name, { typed_per_filter_config: { [config.filterName]: config.perRoute } }));
  }
  if (patches.length === 0) return resources;
  const name = stableName("extauth", table.metadata.name, table.metadata.namespace ?? "", proxy.cluster, ctx.workspace.name);
  resources.push(envoyFilter(ctx, proxy, name, policies.size === 1 ? [...policies][0]! : table, patches));
  return resources;
}

/**
 * The ExtAuthPolicy translator of a workspace: each policy's issues (once), and its destinations
 * (`applyToDestinations`, or every destination of the workspace when neither selector is given).
 * Routes are rendered with their VirtualServices (route-table.ts).
 */
export function translateExtAuth(ctx: WorkspaceContext): TranslatorOutput {
  const resources: Emitted[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const policy of ctx.own("ExtAuthPolicy")) {
    const { config, issues } = resolveExtAuth(ctx, policy);
    for (const i of issues) diagnostics.push(ctx.diag(i.obj, i.code, i.severity, i.path, i.message));
    const { selectors, path } = destinationSelectors(policy);
    if (selectors.length === 0) continue;
    const selected = selectedInboundPorts(ctx, policy, selectors, path, "external authorization");
    diagnostics.push(...selected.diagnostics);
    const ws = ctx.workspace.name;
    for (const p of selected.ports) {
      const proxy: FilterProxy & { inboundPort: number } = { cluster: p.cluster, namespace: p.service.namespace, labels: p.labels, owner: policy, inboundPort: p.port };
      if (config?.oidc !== undefined) {
        // A browser login flow belongs on the gateway that serves the application's routes.
        diagnostics.push(ctx.diag(policy, TranslateCode.UnsupportedField, Severity.Error, asRecord(policy.spec).applyToDestinations === undefined ? "/spec" : "/spec/applyToDestinations", `Service ${p.service.namespace}/${p.service.name}: an OIDC authorization-code login on a destination is not translated (Envoy's oauth2 filter is rendered for gateway routes, applyToRoutes); requests to port ${String(p.port)} are denied instead`));
        resources.push(denyPort(ctx, policy, p.service.name, proxy));
        continue;
      }
      if (config?.local !== undefined) {
        const name = stableName("basic-auth-port", policy.metadata.name, p.service.name, String(p.port), p.service.namespace, p.cluster, ws);
        resources.push(localInsertion(ctx, config.local, proxy), envoyFilter(ctx, proxy, name, policy, [mergeIntoInboundHost(p.port, { typed_per_filter_config: { [config.filterName]: config.perRoute } })]));
        continue;
      }
      const cluster = config === undefined ? undefined : serverCluster(ctx, "ext auth server", config.server, p.cluster);
      if (config === undefined || cluster === undefined || "error" in cluster) {
        // Fail closed: the port is denied rather than left without its authorization.
        if (cluster !== undefined && "error" in cluster) diagnostics.push(ctx.diag(policy, TranslateCode.DestinationNotFound, Severity.Error, asRecord(asRecord(policy.spec).config).server === undefined ? "/spec/config" : "/spec/config/server", `Service ${p.service.namespace}/${p.service.name}: ${cluster.error}; requests to port ${String(p.port)} are denied instead`));
        resources.push(denyPort(ctx, policy, p.service.name, proxy));
        continue;
      }
      const name = stableName("extauth", policy.metadata.name, p.service.name, String(p.port), p.service.namespace, p.cluster, ws);
      resources.push(filterInsertion(ctx, config, proxy, cluster), envoyFilter(ctx, proxy, name, policy, [mergeIntoInboundHost(p.port, { typed_per_filter_config: { [config.filterName]: config.perRoute } })]));
    }
    if (selected.ports.length === 0) diagnostics.push(ctx.diag(policy, TranslateCode.SelectsNothing, Severity.Warning, asRecord(policy.spec).applyToDestinations === undefined ? "/spec" : "/spec/applyToDestinations", "the policy selects no port of a Service of this workspace with a pod selector; no destination is protected"));
  }
  return { resources, diagnostics };
}

/** A DENY AuthorizationPolicy for one inbound port: what a destination gets when its authorization cannot be rendered. */
function denyPort(ctx: WorkspaceContext, policy: InputObject, service: string, proxy: FilterProxy & { inboundPort: number; labels: Labels }): Emitted {
  const ws = ctx.workspace.name;
  return {
    cluster: proxy.cluster,
    resource: {
      apiVersion: "security.istio.io/v1",
      kind: "AuthorizationPolicy",
      metadata: outputMetadata(stableName("extauth-deny", policy.metadata.name, service, String(proxy.inboundPort), proxy.namespace, proxy.cluster, ws), proxy.namespace, proxy.cluster, ws, ctx.parentOf(policy)),
      spec: { selector: { matchLabels: proxy.labels }, action: "DENY", rules: [{ to: [{ operation: { ports: [String(proxy.inboundPort)] } }] }] },
    },
  };
}
