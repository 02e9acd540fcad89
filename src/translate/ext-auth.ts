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
 * A `glooAuth` chain that open-source Envoy can run (gloo-auth.ts) becomes its steps' filters
 * instead, in the chain's order (EnvoyFilter priority): an OIDC authorization code → Envoy's oauth2
 * filter, inserted disabled on the gateway, turned on per route by an empty `FilterConfig`, its
 * token endpoint a cluster of its own (the Service's, or a ServiceEntry + DestinationRule for an
 * external identity provider); OPA configurations → an ext_authz filter per OPA-Envoy service with
 * context extension `gitmesh_policy`, and the wrapper ConfigMap beside that service (opa-auth.ts).
 * Other `glooAuth` configurations (API keys, LDAP, pass-through, …) are evaluated by Gloo's
 * ext-auth-service, which receives them from Gloo's management plane, so each is
 * NEEDS_GLOO_DATA_PLANE (error) with the reason: the requests still go to the server with the
 * configuration's id and are denied unless it holds that configuration (fail closed).
 * Where the server is not discovered, no filter can be rendered (Envoy rejects a filter naming an
 * unknown cluster, with the whole listener): the selected routes answer 403 and the selected
 * destination ports are denied by an AuthorizationPolicy, with an error — never left open.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import type { WorkspaceContext } from "./context.js";
import { EXT_AUTHZ_PER_ROUTE_TYPE, EXT_AUTHZ_TYPE } from "./envoy-config.js";
import { ENABLE_FILTER, oauth2Config, planGlooAuth, stepPriority, type GlooAuthStep, type OidcUpstream } from "./gloo-auth.js";
import type { CredentialFilterStep } from "./gloo-auth-credentials.js";
import { FILTER_PRIORITY, destinationSelectors, envoyDuration, findByRef, refText, resolvedOncePerWorkspace, envoyFilter, insertBeforeRouter, mergeIntoGatewayRoute, mergeIntoInboundHost, selectedInboundPorts, selectsRoutes, serverCluster, type FilterProxy, type ProxySet, type ServerRef } from "./envoy-filters.js";
import type { InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { stableName } from "./names.js";
import { OPA_CONTEXT_KEY, OPA_POLICY_LABEL, opaEnvoyService, type OpaPolicy } from "./opa-auth.js";
import { asArray, asNumber, asRecord, asString, type Labels } from "./selectors.js";
import { TranslateCode, type Emitted, type TranslatorOutput } from "./types.js";

export const DEFAULT_EXT_AUTH_SERVER = { name: "ext-auth-service", namespace: "gloo-mesh", port: 8083 } as const;
const FILTER = "envoy.filters.http.ext_authz";
export const EXT_AUTH_DENIED_BODY = "gitmesh: external authorization for this route cannot be enforced; see the diagnostics of its ExtAuthPolicy";

/** An ext_authz filter a policy's requests meet: its server and per-route settings. */
export interface ExtAuthzFilter {
  readonly kind: "ext_authz";
  /** The ExtAuthServer (`<name>.<namespace>`, or `default`), or `opa-envoy.<name>.<namespace>`: one filter per server. */
  readonly serverId: string;
  /** The filter's name: `envoy.filters.http.ext_authz.<serverId>`. */
  readonly filterName: string;
  readonly server: ServerRef;
  /** The ExtAuthServer's settings (spec), `{}` for Gloo's default server and OPA-Envoy. */
  readonly settings: Record<string, unknown>;
  /** ExtAuthzPerRoute of the selected routes / virtual hosts. */
  readonly perRoute: Record<string, unknown>;
  /** EnvoyFilter priority of the insertion (Gloo's phase, then the step's place in a glooAuth chain). */
  readonly priority: number;
  /** Set for a glooAuth chain's opaAuth step: the OPA-Envoy decision and its wrapper module. */
  readonly opa?: OpaPolicy;
}

/** A glooAuth chain's OIDC login on Envoy's oauth2 filter (the token endpoint has a cluster of its own). */
export interface OAuth2Filter {
  readonly kind: "oauth2";
  readonly filterName: string;
  readonly oidc: OidcUpstream;
  /** An empty FilterConfig: turns the filter on. */
  readonly perRoute: Record<string, unknown>;
  readonly priority: number;
}

/** A glooAuth chain's basicAuth on Envoy's basic_auth filter (calls nothing; gloo-auth-credentials.ts). */
export interface BasicAuthFilter {
  readonly kind: "basic_auth";
  readonly filterName: string;
  readonly credentials: CredentialFilterStep;
  /** An empty FilterConfig: turns the filter on. */
  readonly perRoute: Record<string, unknown>;
  readonly priority: number;
}

export type ExtAuthFilter = ExtAuthzFilter | OAuth2Filter | BasicAuthFilter;

/** A policy's filters, in the order a request meets them, resolved once per workspace. */
export interface ExtAuthConfig {
  readonly filters: readonly ExtAuthFilter[];
}

/** Whether an ExtAuthPolicy protects routes: only with `applyToRoutes` (Gloo: empty = no route). */
export const extAuthSelectsRoutes = selectsRoutes;

/** The policy's server and per-route settings (undefined when nothing can call a server; the policy's routes are then denied). */
export const resolveExtAuth = resolvedOncePerWorkspace<ExtAuthConfig>((ctx, policy, issue) => {
  const c = asRecord(asRecord(policy.spec).config);
  const serverObj = c.server === undefined ? undefined : findByRef(ctx, "ExtAuthServer", c.server, policy);
  let glooOnly: string[] = [];
  if (c.customAuth === undefined && c.glooAuth !== undefined) {
    const serverRef = asRecord(asRecord(asRecord(serverObj?.spec).destinationServer).ref);
    const serverNamespace = serverObj === undefined ? DEFAULT_EXT_AUTH_SERVER.namespace : (asString(serverRef.namespace) ?? serverObj.metadata.namespace ?? ctx.index.adminNamespace);
    const plan = planGlooAuth(policy, issue, opaEnvoyService(serverObj, serverNamespace, issue));
    if ("steps" in plan) {
      // The OPA-Envoy service is found through the ExtAuthServer: a missing one cannot be guessed.
      if (c.server !== undefined && serverObj === undefined && plan.steps.some((s) => s.kind === "opa")) {
        issue(policy, "/spec/config/server", `ExtAuthServer ${refText(c.server, policy)} does not exist (it locates the policy's OPA-Envoy service); the policy's routes and destinations are denied until it does`, Severity.Error, TranslateCode.ReferenceNotFound);
        return undefined;
      }
      return { filters: plan.steps.map(stepFilter) };
    }
    glooOnly = plan.reasons;
  }
  if (c.server !== undefined && serverObj === undefined) {
    issue(policy, "/spec/config/server", `ExtAuthServer ${refText(c.server, policy)} does not exist; the policy's routes and destinations are denied until it does`, Severity.Error, TranslateCode.ReferenceNotFound);
    return undefined;
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
    filters: [
      {
        kind: "ext_authz",
        serverId: id,
        filterName: `${FILTER}.${id}`,
        server,
        settings,
        perRoute: { "@type": EXT_AUTHZ_PER_ROUTE_TYPE, check_settings: Object.keys(contextExtensions).length > 0 ? { context_extensions: contextExtensions } : {} },
        priority: FILTER_PRIORITY.extAuth,
      },
    ],
  };
});

/** The Envoy filter of one step of a glooAuth chain that open-source Envoy runs. */
function stepFilter(step: GlooAuthStep): ExtAuthFilter {
  const priority = stepPriority(step, FILTER_PRIORITY.extAuth);
  if (step.kind === "oauth2") return { kind: "oauth2", filterName: step.upstream.filterName, oidc: step.upstream, perRoute: ENABLE_FILTER, priority };
  if (step.kind === "basic_auth") return { kind: "basic_auth", filterName: step.credentials.filterName, credentials: step.credentials, perRoute: ENABLE_FILTER, priority };
  const s = step.policy.service;
  const serverId = `opa-envoy.${s.name}.${s.namespace}`;
  return {
    kind: "ext_authz",
    serverId,
    filterName: `${FILTER}.${serverId}`,
    server: { name: s.name, namespace: s.namespace, port: { number: s.port } },
    settings: {},
    perRoute: { "@type": EXT_AUTHZ_PER_ROUTE_TYPE, check_settings: { context_extensions: { [OPA_CONTEXT_KEY]: step.policy.id } } },
    priority,
    opa: step.policy,
  };
}

const patterns = (names: unknown) => ({ patterns: asArray(names).filter((h): h is string => typeof h === "string").map((exact) => ({ exact, ignore_case: true })) });

/** The ext_authz filter's configuration for a server reached through `cluster` (Envoy cluster name). */
function filterConfig(config: ExtAuthzFilter, cluster: { name: string; host: string; port: number }): Record<string, unknown> {
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
function filterInsertion(ctx: WorkspaceContext, config: ExtAuthzFilter, proxy: FilterProxy, cluster: { name: string; host: string; port: number }): Emitted {
  const scope = proxy.inboundPort === undefined ? [proxy.owner.metadata.name] : [proxy.owner.metadata.name, String(proxy.inboundPort)];
  const name = stableName("extauth-filter", config.serverId, ...scope, proxy.namespace, proxy.cluster, ctx.workspace.name);
  return envoyFilter(ctx, proxy, name, proxy.owner, [insertBeforeRouter(proxy, { name: config.filterName, disabled: true, typed_config: filterConfig(config, cluster) })], config.priority);
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

/** Why a filter's requests cannot reach its server in `cluster` (undefined when they can). */
function filterBlocked(ctx: WorkspaceContext, policy: InputObject, f: ExtAuthFilter, cluster: string): string | undefined {
  if (f.kind === "basic_auth") return undefined;
  const r = f.kind === "oauth2" ? tokenCluster(ctx, f.oidc, { cluster, namespace: "", labels: {}, owner: policy }) : serverCluster(ctx, f.opa === undefined ? "ext auth server" : "OPA-Envoy server", f.server, cluster);
  return "error" in r ? r.error : undefined;
}

/** Why a policy's requests cannot reach a server in `cluster` (undefined when they can). */
export function extAuthBlocked(ctx: WorkspaceContext, policy: InputObject, cluster: string): string | undefined {
  const { config } = resolveExtAuth(ctx, policy);
  if (config === undefined) return "its ExtAuthServer cannot be used (see the policy's other errors)";
  for (const f of config.filters) {
    const why = filterBlocked(ctx, policy, f, cluster);
    if (why !== undefined) return why;
  }
  return undefined;
}

/** A policy's oauth2 filter inserted, disabled, on the gateway, and its token endpoint's cluster. */
function oidcInsertion(ctx: WorkspaceContext, f: OAuth2Filter, proxy: FilterProxy): Emitted[] {
  const u = f.oidc;
  const token = tokenCluster(ctx, u, proxy);
  if ("error" in token) return [];
  const name = stableName("oauth2", u.policy, proxy.owner.metadata.name, proxy.namespace, proxy.cluster, ctx.workspace.name);
  return [...token.resources, envoyFilter(ctx, proxy, name, proxy.owner, [insertBeforeRouter(proxy, { name: u.filterName, disabled: true, typed_config: oauth2Config(u, token.name) })], f.priority)];
}

/** One filter inserted, disabled, on one set of proxies (undefined when its server is not reachable there). */
function insertion(ctx: WorkspaceContext, f: ExtAuthFilter, proxy: FilterProxy): Emitted[] {
  if (f.kind === "oauth2") return oidcInsertion(ctx, f, proxy);
  if (f.kind === "basic_auth") {
    // One per policy and proxy (each policy has its own users); an inbound port's gets that port in its name.
    const scope = proxy.inboundPort === undefined ? [proxy.owner.metadata.name] : [proxy.owner.metadata.name, String(proxy.inboundPort)];
    const name = stableName("basic-auth", f.credentials.policy, ...scope, proxy.namespace, proxy.cluster, ctx.workspace.name);
    return [envoyFilter(ctx, proxy, name, proxy.owner, [insertBeforeRouter(proxy, { name: f.filterName, disabled: true, typed_config: f.credentials.typedConfig })], f.priority)];
  }
  const cluster = serverCluster(ctx, "ext auth server", f.server, proxy.cluster);
  return "error" in cluster ? [] : [filterInsertion(ctx, f, proxy, cluster)];
}

/** The per-filter configs that turn a policy's filters on (each enabled separately, as Envoy runs them in order). */
function perFilterConfig(config: ExtAuthConfig): Record<string, unknown> {
  return Object.fromEntries(config.filters.map((f) => [f.filterName, f.perRoute]));
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
    if (config === undefined || extAuthBlocked(ctx, policy, proxy.cluster) !== undefined) continue;
    for (const f of config.filters) {
      if (inserted.has(f.filterName)) continue;
      inserted.add(f.filterName);
      resources.push(...insertion(ctx, f, proxy));
    }
    policies.add(policy);
    patches.push(mergeIntoGatewayRoute(name, { typed_per_filter_config: perFilterConfig(config) }));
  }
  if (patches.length === 0) return resources;
  const name = stableName("extauth", table.metadata.name, table.metadata.namespace ?? "", proxy.cluster, ctx.workspace.name);
  resources.push(envoyFilter(ctx, proxy, name, policies.size === 1 ? [...policies][0]! : table, patches));
  return resources;
}

/**
 * The ConfigMap with a policy's OPA wrapper modules, beside its OPA-Envoy server in every cluster of
 * the workspace where that server is discovered (labelled for kube-mgmt, which loads it into OPA).
 */
function opaConfigMaps(ctx: WorkspaceContext, policy: InputObject, opa: OpaPolicy): Emitted[] {
  const ws = ctx.workspace.name;
  const s = opa.service;
  return ctx.workspace.clusters
    .filter((cluster) => ctx.service(cluster, s.namespace, s.name) !== undefined)
    .map((cluster) => {
      const m = outputMetadata(stableName("opa", policy.metadata.name, policy.metadata.namespace ?? "", s.name, cluster, ws), s.namespace, cluster, ws, ctx.parentOf(policy));
      // A ConfigMap has `data`, not `spec` (rendered as Kubernetes defines it, as rate-limit.ts does).
      const configMap = { apiVersion: "v1", kind: "ConfigMap", metadata: { ...m, labels: { ...m.labels, [OPA_POLICY_LABEL.key]: OPA_POLICY_LABEL.value } }, data: { ...opa.files } };
      return { cluster, resource: configMap as unknown as Emitted["resource"] };
    });
}

/**
 * The ExtAuthPolicy translator of a workspace: each policy's issues (once), its OPA wrapper
 * ConfigMaps, and its destinations (`applyToDestinations`, or every destination of the workspace
 * when neither selector is given). Routes are rendered with their VirtualServices (route-table.ts).
 */
export function translateExtAuth(ctx: WorkspaceContext): TranslatorOutput {
  const resources: Emitted[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const policy of ctx.own("ExtAuthPolicy")) {
    const { config, issues } = resolveExtAuth(ctx, policy);
    for (const i of issues) diagnostics.push(ctx.diag(i.obj, i.code, i.severity, i.path, i.message));
    for (const f of config?.filters ?? []) if (f.kind === "ext_authz" && f.opa !== undefined) resources.push(...opaConfigMaps(ctx, policy, f.opa));
    const { selectors, path } = destinationSelectors(policy);
    if (selectors.length === 0) continue;
    const selected = selectedInboundPorts(ctx, policy, selectors, path, "external authorization");
    diagnostics.push(...selected.diagnostics);
    const ws = ctx.workspace.name;
    for (const p of selected.ports) {
      const proxy: FilterProxy & { inboundPort: number } = { cluster: p.cluster, namespace: p.service.namespace, labels: p.labels, owner: policy, inboundPort: p.port };
      if (config?.filters.some((f) => f.kind === "oauth2") === true) {
        // A browser login flow belongs on the gateway that serves the application's routes.
        diagnostics.push(ctx.diag(policy, TranslateCode.UnsupportedField, Severity.Error, asRecord(policy.spec).applyToDestinations === undefined ? "/spec" : "/spec/applyToDestinations", `Service ${p.service.namespace}/${p.service.name}: an OIDC authorization-code login on a destination is not translated (Envoy's oauth2 filter is rendered for gateway routes, applyToRoutes); requests to port ${String(p.port)} are denied instead`));
        resources.push(denyPort(ctx, policy, p.service.name, proxy));
        continue;
      }
      const filters = (config?.filters ?? []).filter((f): f is ExtAuthzFilter => f.kind === "ext_authz");
      const clusters = filters.map((f) => serverCluster(ctx, f.opa === undefined ? "ext auth server" : "OPA-Envoy server", f.server, p.cluster));
      const unreachable = clusters.find((c) => "error" in c);
      if (config === undefined || unreachable !== undefined) {
        // Fail closed: the port is denied rather than left without its authorization.
        if (unreachable !== undefined && "error" in unreachable) diagnostics.push(ctx.diag(policy, TranslateCode.DestinationNotFound, Severity.Error, asRecord(asRecord(policy.spec).config).server === undefined ? "/spec/config" : "/spec/config/server", `Service ${p.service.namespace}/${p.service.name}: ${unreachable.error}; requests to port ${String(p.port)} are denied instead`));
        resources.push(denyPort(ctx, policy, p.service.name, proxy));
        continue;
      }
      const name = stableName("extauth", policy.metadata.name, p.service.name, String(p.port), p.service.namespace, p.cluster, ws);
      filters.forEach((f, i) => {
        const cluster = clusters[i]!;
        if (!("error" in cluster)) resources.push(filterInsertion(ctx, f, proxy, cluster));
      });
      for (const f of config.filters) if (f.kind === "basic_auth") resources.push(...insertion(ctx, f, proxy));
      resources.push(envoyFilter(ctx, proxy, name, policy, [mergeIntoInboundHost(p.port, { typed_per_filter_config: perFilterConfig(config) })]));
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
