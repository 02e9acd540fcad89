/**
 * RateLimitPolicy (with RateLimitServerConfig, RateLimitServerSettings, RateLimitClientConfig) →
 * Envoy's global rate limiting on upstream Istio, as istio.io's "Enabling Rate Limits using Envoy"
 * sets it up:
 *
 * - the **filter**: `envoy.filters.http.ratelimit` inserted before the router (EnvoyFilter
 *   HTTP_FILTER) on the gateway pods that serve the selected routes, or on the sidecars (inbound, per
 *   port) of the selected destinations; its `domain` is the RateLimitServerConfig's (`<name>.<namespace>`),
 *   its gRPC service the RateLimitServerSettings' `destinationServer`
 *   (`outbound|<port>||<host>`, default Service `rate-limiter` in `gloo-mesh`, port 8083), `timeout`
 *   (default 100ms) and `failure_mode_deny` (`denyOnFail`). One filter per domain: a second domain on
 *   the same proxy gets its own filter, and each filter asks its own domain (a descriptor the
 *   rate-limit service has no rule for is allowed), so limits never mix;
 * - the **actions**: the RateLimitClientConfig's (or the policy's inline) `raw.rateLimits` become
 *   Envoy `rate_limits` — on each selected route (HTTP_ROUTE MERGE, matched by the VirtualService
 *   route's name) or on the inbound virtual host of each selected destination port;
 * - the **limits**: each RateLimitServerConfig renders the envoyproxy/ratelimit configuration of its
 *   domain (`domain`, `descriptors` with `key`, `value`, `rate_limit {unit, requests_per_unit}`) as a
 *   ConfigMap in each destination server's namespace and cluster, labelled
 *   `gitmesh.io/ratelimit-server: <service>` for the rate limiter to mount. Agents write it only
 *   when installed with `rateLimit.configNamespaces` (see the agent chart).
 *
 * Solo's extensions to the rate-limit API (`setDescriptors`, `setActions`, `weight`, `alwaysApply`)
 * need Gloo's own rate limiter: reported where they are written, the rest still renders.
 * The ratelimit filter runs after ext_authz (EnvoyFilter priority, FILTER_PRIORITY): Gloo's
 * default phase postAuthz; `phase.preAuthz` is reported.
 * A filter is rendered only where its rate-limit Service is discovered: an Envoy ratelimit filter
 * naming an unknown cluster is rejected by Envoy, taking the whole listener down with it.
 */
import { stringify } from "yaml";
import { Severity, type Diagnostic } from "../core/index.js";
import type { WorkspaceContext } from "./context.js";
import { FILTER_PRIORITY, destinationSelectors, envoyDuration, findByRef, refText, resolvedOncePerWorkspace, envoyFilter, insertBeforeRouter, mergeIntoGatewayRoute, mergeIntoInboundHost, selectedInboundPorts, selectsRoutes, serverCluster, type FilterProxy, type ServerRef } from "./envoy-filters.js";
import { RATELIMIT_TYPE } from "./envoy-config.js";
import type { InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { stableName } from "./names.js";
import { asArray, asNumber, asRecord, asString } from "./selectors.js";
import { TranslateCode, type Emitted, type IstioResource, type TranslatorOutput } from "./types.js";

export const DEFAULT_RATE_LIMITER = {
  name: "rate-limiter",
  namespace: "gloo-mesh",
  port: 8083,
} as const;
const FILTER = "envoy.filters.http.ratelimit";
const LABEL_SERVER = "gitmesh.io/ratelimit-server";

/** What a policy needs from the objects it references, resolved once per workspace. */
export interface RateLimitConfig {
  readonly domain: string;
  /** The rate-limit Service (name, namespace, port selector). */
  readonly server: ServerRef;
  readonly timeout: string;
  readonly denyOnFail: boolean;
  /** Envoy RateLimit entries (route or virtual host `rate_limits`). */
  readonly rateLimits: readonly Record<string, unknown>[];
}

/** Whether a RateLimitPolicy limits routes: only with `applyToRoutes` (Gloo: empty = no route). */
export const rateLimitSelectsRoutes = selectsRoutes;

/** The policy's domain, server and actions (undefined when nothing can be enforced; the issues say why). */
export const resolveRateLimit = resolvedOncePerWorkspace<RateLimitConfig>((ctx, policy, issue) => {
  const c = asRecord(asRecord(policy.spec).config);
  // Gloo's default phase, postAuthz, is the order the filters are pinned to (FILTER_PRIORITY).
  if (asRecord(c.phase).preAuthz !== undefined)
    issue(policy, "/spec/config/phase/preAuthz", "a preAuthz rate limit is not translated: gitmesh runs every ratelimit filter after external authorization (Gloo's postAuthz phase), so requests that authorization refuses are not counted", Severity.Warning, TranslateCode.UnsupportedField);
  if (c.ratelimitServerConfig === undefined) {
    issue(policy, "/spec/config/ratelimitServerConfig", "without a ratelimitServerConfig nothing is limited (as in Gloo): name the RateLimitServerConfig that holds the limits");
    return undefined;
  }
  const serverConfig = findByRef(ctx, "RateLimitServerConfig", c.ratelimitServerConfig, policy);
  if (serverConfig === undefined) {
    issue(policy, "/spec/config/ratelimitServerConfig", `RateLimitServerConfig ${refText(c.ratelimitServerConfig, policy)} does not exist; nothing is limited for this policy`, Severity.Error, TranslateCode.ReferenceNotFound);
    return undefined;
  }
  let settingsObj: InputObject | undefined;
  if (c.serverSettings !== undefined) {
    settingsObj = findByRef(ctx, "RateLimitServerSettings", c.serverSettings, policy);
    if (settingsObj === undefined) {
      issue(policy, "/spec/config/serverSettings", `RateLimitServerSettings ${refText(c.serverSettings, policy)} does not exist; nothing is limited for this policy`, Severity.Error, TranslateCode.ReferenceNotFound);
      return undefined;
    }
  }
  let raw = asRecord(c.raw);
  let rawOwner = policy;
  let rawPath = "/spec/config/raw";
  if (c.ratelimitClientConfig !== undefined) {
    const client = findByRef(ctx, "RateLimitClientConfig", c.ratelimitClientConfig, policy);
    if (client === undefined) {
      issue(policy, "/spec/config/ratelimitClientConfig", `RateLimitClientConfig ${refText(c.ratelimitClientConfig, policy)} does not exist; nothing is limited for this policy`, Severity.Error, TranslateCode.ReferenceNotFound);
      return undefined;
    }
    raw = asRecord(asRecord(client.spec).raw);
    rawOwner = client;
    rawPath = "/spec/raw";
  }
  const rateLimits: Record<string, unknown>[] = [];
  asArray(raw.rateLimits).forEach((r, i) => {
    const entry = asRecord(r);
    const path = `${rawPath}/rateLimits/${String(i)}`;
    if (asArray(entry.setActions).length > 0)
      issue(
        rawOwner,
        `${path}/setActions`,
        "setActions are Solo's extension, evaluated by Gloo's rate limiter only; they are not sent (use actions, and descriptors in the RateLimitServerConfig)",
        Severity.Error,
        TranslateCode.NeedsGlooDataPlane,
      );
    const actions = asArray(entry.actions).map(asRecord).map(envoyAction);
    if (actions.length === 0) return;
    const dyn = asRecord(asRecord(entry.limit).dynamicMetadata);
    rateLimits.push({
      actions,
      ...(dyn.metadataKey !== undefined
        ? {
            limit: {
              dynamic_metadata: { metadata_key: metadataKey(dyn.metadataKey) },
            },
          }
        : {}),
    });
  });
  if (rateLimits.length === 0) {
    issue(rawOwner, `${rawPath}/rateLimits`, "no rateLimits with actions: Envoy would send no descriptor, so nothing is limited for this policy");
    return undefined;
  }
  const settings = asRecord(settingsObj?.spec);
  const dest = asRecord(settings.destinationServer);
  const ref = asRecord(dest.ref);
  const server =
    dest.ref === undefined
      ? {
          name: DEFAULT_RATE_LIMITER.name,
          namespace: DEFAULT_RATE_LIMITER.namespace,
          port: { number: DEFAULT_RATE_LIMITER.port },
        }
      : {
          name: asString(ref.name) ?? DEFAULT_RATE_LIMITER.name,
          namespace: asString(ref.namespace) ?? settingsObj!.metadata.namespace ?? ctx.index.adminNamespace,
          port: dest.port === undefined ? { number: DEFAULT_RATE_LIMITER.port } : asRecord(dest.port),
        };
  return {
    domain: domainOf(serverConfig),
    server,
    timeout: asString(settings.requestTimeout) ?? "0.100s",
    denyOnFail: settings.denyOnFail === true,
    rateLimits,
  };
});

/** Where a server problem is reported: the serverSettings reference, or the config that leaves the default server. */
function settingsPath(policy: InputObject): string {
  return asRecord(asRecord(policy.spec).config).serverSettings === undefined ? "/spec/config" : "/spec/config/serverSettings";
}

/** The rate-limit domain of a RateLimitServerConfig: unique per object. */
export function domainOf(serverConfig: InputObject): string {
  return `${serverConfig.metadata.name}.${serverConfig.metadata.namespace ?? ""}`;
}

function metadataKey(raw: unknown): Record<string, unknown> {
  const k = asRecord(raw);
  return {
    key: asString(k.key),
    path: asArray(k.path).map((p) => ({ key: asString(asRecord(p).key) })),
  };
}

const HEADER_STRING: readonly (readonly [string, string])[] = [
  ["exactMatch", "exact"],
  ["prefixMatch", "prefix"],
  ["suffixMatch", "suffix"],
];

/** One Gloo rate-limit action → Envoy's `config.route.v3.RateLimit.Action` (JSON, snake_case). */
function envoyAction(a: Record<string, unknown>): Record<string, unknown> {
  if (a.sourceCluster !== undefined) return { source_cluster: {} };
  if (a.destinationCluster !== undefined) return { destination_cluster: {} };
  if (a.remoteAddress !== undefined) return { remote_address: {} };
  if (a.genericKey !== undefined)
    return {
      generic_key: {
        descriptor_value: asString(asRecord(a.genericKey).descriptorValue),
      },
    };
  if (a.requestHeaders !== undefined) {
    const h = asRecord(a.requestHeaders);
    return {
      request_headers: {
        header_name: asString(h.headerName),
        descriptor_key: asString(h.descriptorKey),
      },
    };
  }
  if (a.headerValueMatch !== undefined) {
    const h = asRecord(a.headerValueMatch);
    const headers = asArray(h.headers)
      .map(asRecord)
      .map((m) => {
        const out: Record<string, unknown> = { name: asString(m.name) };
        for (const [from, to] of HEADER_STRING) if (typeof m[from] === "string") out.string_match = { [to]: m[from] };
        if (typeof m.regexMatch === "string") out.string_match = { safe_regex: { regex: m.regexMatch } };
        if (m.rangeMatch !== undefined)
          out.range_match = {
            start: asNumber(asRecord(m.rangeMatch).start) ?? 0,
            end: asNumber(asRecord(m.rangeMatch).end) ?? 0,
          };
        if (typeof m.presentMatch === "boolean") out.present_match = m.presentMatch;
        if (m.invertMatch === true) out.invert_match = true;
        return out;
      });
    return {
      header_value_match: {
        descriptor_value: asString(h.descriptorValue),
        ...(typeof h.expectMatch === "boolean" ? { expect_match: h.expectMatch } : {}),
        headers,
      },
    };
  }
  const m = asRecord(a.metadata);
  return {
    metadata: {
      descriptor_key: asString(m.descriptorKey),
      metadata_key: metadataKey(m.metadataKey),
      ...(typeof m.defaultValue === "string" ? { default_value: m.defaultValue } : {}),
      ...(m.source === "ROUTE_ENTRY" ? { source: "ROUTE_ENTRY" } : {}),
    },
  };
}

/** The rate limiter's Envoy cluster as the proxies in `cluster` see it, or why no filter is rendered there. */
function limiterCluster(ctx: WorkspaceContext, config: RateLimitConfig, cluster: string): { name: string } | { error: string } {
  const r = serverCluster(ctx, "rate-limit server", config.server, cluster);
  return "error" in r ? { error: `${r.error}, so no ratelimit filter is rendered there (deploy the rate limiter, or point serverSettings at it)` } : r;
}

/** The EnvoyFilter that inserts the ratelimit filter of one domain on one set of proxies. */
function filterInsertion(ctx: WorkspaceContext, config: RateLimitConfig, proxy: FilterProxy, clusterName: string): Emitted {
  const scope = proxy.inboundPort === undefined ? [proxy.owner.metadata.name] : [proxy.owner.metadata.name, String(proxy.inboundPort)];
  const name = stableName("ratelimit-filter", config.domain, ...scope, proxy.namespace, proxy.cluster, ctx.workspace.name);
  return envoyFilter(ctx, proxy, name, proxy.owner, [
    insertBeforeRouter(proxy, {
      name: `${FILTER}.${config.domain}`,
      typed_config: {
        "@type": RATELIMIT_TYPE,
        domain: config.domain,
        timeout: envoyDuration(config.timeout),
        failure_mode_deny: config.denyOnFail,
        rate_limit_service: { grpc_service: { envoy_grpc: { cluster_name: clusterName } }, transport_api_version: "V3" },
      },
    }),
  ], FILTER_PRIORITY.rateLimit);
}


/**
 * EnvoyFilters that rate-limit `routes` (VirtualService route name → policy) of one route table on
 * one gateway: the ratelimit filter of each domain, and the routes' `rate_limits`.
 */
export function renderRateLimitRoutes(ctx: WorkspaceContext, table: InputObject, proxy: FilterProxy, routes: ReadonlyMap<string, InputObject>): { resources: Emitted[]; diagnostics: Diagnostic[] } {
  const resources: Emitted[] = [];
  const diagnostics: Diagnostic[] = [];
  const patches: Record<string, unknown>[] = [];
  const domains = new Map<string, RateLimitConfig>();
  const policies = new Set<InputObject>();
  for (const name of [...routes.keys()].sort()) {
    const policy = routes.get(name)!;
    const { config } = resolveRateLimit(ctx, policy);
    if (config === undefined) continue;
    const server = limiterCluster(ctx, config, proxy.cluster);
    if ("error" in server) {
      diagnostics.push(ctx.diag(policy, TranslateCode.DestinationNotFound, Severity.Error, settingsPath(policy), `route "${name}": ${server.error}`));
      continue;
    }
    const first = domains.get(config.domain);
    if (first === undefined) {
      domains.set(config.domain, config);
      resources.push(filterInsertion(ctx, config, proxy, server.name));
    } else if (first.timeout !== config.timeout || first.denyOnFail !== config.denyOnFail || first.server.name !== config.server.name || first.server.namespace !== config.server.namespace) {
      diagnostics.push(
        ctx.diag(
          policy,
          TranslateCode.PolicyConflict,
          Severity.Warning,
          "/spec/config/serverSettings",
          `routes of one gateway that use rate-limit domain "${config.domain}" share one ratelimit filter (as in Gloo, one server settings per gateway): route "${name}" uses the settings of the first route of that domain`,
        ),
      );
    }
    policies.add(policy);
    patches.push(mergeIntoGatewayRoute(name, { route: { rate_limits: config.rateLimits } }));
  }
  if (patches.length === 0) return { resources, diagnostics };
  const owner = policies.size === 1 ? [...policies][0]! : table;
  resources.push(envoyFilter(ctx, proxy, stableName("ratelimit", table.metadata.name, table.metadata.namespace ?? "", proxy.cluster, ctx.workspace.name), owner, patches));
  return { resources, diagnostics };
}

/**
 * The RateLimitPolicy translator of a workspace: each policy's issues (once), its destinations
 * (`applyToDestinations`, or every destination of the workspace when neither selector is given),
 * and the envoyproxy/ratelimit configuration of the workspace's RateLimitServerConfigs. Routes are
 * rendered with their VirtualServices (route-table.ts).
 */
export function translateRateLimits(ctx: WorkspaceContext): TranslatorOutput {
  const resources: Emitted[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const policy of ctx.own("RateLimitPolicy")) {
    const { config, issues } = resolveRateLimit(ctx, policy);
    for (const i of issues) diagnostics.push(ctx.diag(i.obj, i.code, i.severity, i.path, i.message));
    const { selectors, path } = destinationSelectors(policy);
    if (config === undefined || selectors.length === 0) continue;
    const selected = selectedInboundPorts(ctx, policy, selectors, path, "a rate limit");
    diagnostics.push(...selected.diagnostics);
    for (const p of selected.ports) {
      const server = limiterCluster(ctx, config, p.cluster);
      if ("error" in server) {
        diagnostics.push(ctx.diag(policy, TranslateCode.DestinationNotFound, Severity.Error, settingsPath(policy), `Service ${p.service.namespace}/${p.service.name}: ${server.error}`));
        continue;
      }
      resources.push(...renderDestination(ctx, policy, config, { cluster: p.cluster, namespace: p.service.namespace, labels: p.labels, owner: policy, inboundPort: p.port }, server.name, p.service.name));
    }
    if (selected.ports.length === 0)
      diagnostics.push(
        ctx.diag(
          policy,
          TranslateCode.SelectsNothing,
          Severity.Warning,
          asRecord(policy.spec).applyToDestinations === undefined ? "/spec" : "/spec/applyToDestinations",
          "the policy selects no port of a Service of this workspace with a pod selector; no destination is limited",
        ),
      );
  }
  for (const sc of ctx.own("RateLimitServerConfig")) {
    const r = renderServerConfig(ctx, sc);
    resources.push(...r.resources);
    diagnostics.push(...r.diagnostics);
  }
  return { resources, diagnostics };
}

function renderDestination(ctx: WorkspaceContext, policy: InputObject, config: RateLimitConfig, proxy: FilterProxy & { inboundPort: number }, clusterName: string, service: string): Emitted[] {
  const name = stableName("ratelimit", policy.metadata.name, service, String(proxy.inboundPort), proxy.namespace, proxy.cluster, ctx.workspace.name);
  return [filterInsertion(ctx, config, proxy, clusterName), envoyFilter(ctx, proxy, name, policy, [mergeIntoInboundHost(proxy.inboundPort, { rate_limits: config.rateLimits })])];
}

/** A Gloo descriptor → envoyproxy/ratelimit's YAML form; Solo-only fields reported at their path. */
function serviceDescriptor(raw: unknown, path: string, report: (path: string, message: string) => void): Record<string, unknown> {
  const d = asRecord(raw);
  const out: Record<string, unknown> = { key: asString(d.key) };
  if (typeof d.value === "string") out.value = d.value;
  if (d.rateLimit !== undefined) {
    const rl = asRecord(d.rateLimit);
    const unit = asString(rl.unit);
    if (unit === undefined || unit === "UNKNOWN") report(`${path}/rateLimit/unit`, "a limit needs a unit (SECOND, MINUTE, HOUR or DAY); envoyproxy/ratelimit refuses the whole configuration without one");
    out.rate_limit = {
      unit: (unit ?? "UNKNOWN").toLowerCase(),
      requests_per_unit: asNumber(rl.requestsPerUnit) ?? 0,
    };
  }
  for (const k of ["weight", "alwaysApply"]) if (d[k] !== undefined) report(`${path}/${k}`, `${k} is Solo's extension, evaluated by Gloo's rate limiter only; envoyproxy/ratelimit ignores it`);
  const nested = asArray(d.descriptors);
  if (nested.length > 0) out.descriptors = nested.map((n, i) => serviceDescriptor(n, `${path}/descriptors/${String(i)}`, report));
  return out;
}

/** A RateLimitServerConfig → its domain's envoyproxy/ratelimit configuration, one ConfigMap per destination server and cluster. */
function renderServerConfig(ctx: WorkspaceContext, sc: InputObject): TranslatorOutput {
  const diagnostics: Diagnostic[] = [];
  const spec = asRecord(sc.spec);
  const raw = asRecord(spec.raw);
  if (asArray(raw.setDescriptors).length > 0)
    diagnostics.push(
      ctx.diag(
        sc,
        TranslateCode.NeedsGlooDataPlane,
        Severity.Error,
        "/spec/raw/setDescriptors",
        "setDescriptors are Solo's extension, evaluated by Gloo's rate limiter only; they are not in the rendered configuration (write them as descriptors)",
      ),
    );
  const reported: { path: string; message: string }[] = [];
  const descriptors = asArray(raw.descriptors).map((d, i) => serviceDescriptor(d, `/spec/raw/descriptors/${String(i)}`, (path, message) => reported.push({ path, message })));
  for (const { path, message } of reported) {
    const unit = path.endsWith("/unit");
    diagnostics.push(ctx.diag(sc, unit ? TranslateCode.InvalidField : TranslateCode.NeedsGlooDataPlane, unit ? Severity.Error : Severity.Warning, path, message));
  }
  // envoyproxy/ratelimit refuses a whole configuration with one bad unit: render none rather than one it rejects.
  if (reported.some((r) => r.path.endsWith("/unit"))) return { resources: [], diagnostics };
  const domain = domainOf(sc);
  const data = stringify({ domain, descriptors }, { lineWidth: 0 });
  const ws = ctx.workspace.name;
  const resources: Emitted[] = [];
  asArray(spec.destinationServers).forEach((raw, i) => {
    const ref = asRecord(asRecord(raw).ref);
    const name = asString(ref.name) ?? DEFAULT_RATE_LIMITER.name;
    const namespace = asString(ref.namespace) ?? sc.metadata.namespace ?? ctx.index.adminNamespace;
    const wanted = asString(ref.cluster);
    const clusters = ctx.workspace.clusters.filter((c) => (wanted === undefined || c === wanted) && ctx.service(c, namespace, name) !== undefined);
    if (clusters.length === 0) {
      diagnostics.push(
        ctx.diag(
          sc,
          TranslateCode.DestinationNotFound,
          Severity.Warning,
          `/spec/destinationServers/${String(i)}/ref`,
          `rate-limit server ${namespace}/${name} is not discovered in ${wanted === undefined ? "any cluster" : `cluster "${wanted}"`} of workspace "${ws}"; its configuration is not rendered`,
        ),
      );
      return;
    }
    for (const cluster of clusters) {
      const m = outputMetadata(stableName("ratelimit", sc.metadata.name, sc.metadata.namespace ?? "", name, cluster, ws), namespace, cluster, ws, ctx.parentOf(sc));
      // A ConfigMap has `data`, not `spec` (rendered as Kubernetes defines it, as lifecycle.ts does).
      const configMap = { apiVersion: "v1", kind: "ConfigMap", metadata: { ...m, labels: { ...m.labels, [LABEL_SERVER]: name } }, data: { [`${domain}.yaml`]: data } };
      resources.push({ cluster, resource: configMap as unknown as IstioResource });
    }
  });
  return { resources, diagnostics };
}
