/**
 * CSRFPolicy → Envoy's csrf filter on the gateway that serves the selected routes, as Gloo renders it:
 * one EnvoyFilter per gateway workload inserts `envoy.filters.http.csrf` before the router, disabled
 * (0 %); one EnvoyFilter per route table turns it on for its selected routes (HTTP_ROUTE MERGE of
 * `typed_per_filter_config`, matched by the route's name — the VirtualService route name). Routes
 * without a CSRF policy keep the disabled filter.
 *
 * `filterEnabled` → `filter_enabled` (the percentage, default 100 %; 0 when not enabled),
 * `shadowEnabled` → `shadow_enabled` (only meaningful when not enforcing), `additionalOrigins` →
 * `additional_origins` (StringMatcher). East-west routes are reported (not translated).
 */
import { CSRF_TYPE } from "./envoy-config.js";
import type { InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { stableName } from "./names.js";
import { asArray, asNumber, asRecord, type Labels } from "./selectors.js";
import type { Emitted } from "./types.js";
import type { WorkspaceContext } from "./context.js";

const FILTER = "envoy.filters.http.csrf";
const GATEWAY_MATCH = { context: "GATEWAY", listener: { filterChain: { filter: { name: "envoy.filters.network.http_connection_manager", subFilter: { name: "envoy.filters.http.router" } } } } };

/** `percent` (0–100, decimals allowed) as an Envoy FractionalPercent. */
function fraction(percent: number): Record<string, unknown> {
  return Number.isInteger(percent) ? { numerator: percent, denominator: "HUNDRED" } : { numerator: Math.round(percent * 10_000), denominator: "MILLION" };
}

/** The per-route CsrfPolicy of a policy. */
export function csrfRouteConfig(policy: InputObject): Record<string, unknown> {
  const c = asRecord(asRecord(policy.spec).config);
  const pct = asNumber(c.percentage) ?? 100;
  const origins = asArray(c.additionalOrigins).map(asRecord).map((o) => {
    const m: Record<string, unknown> = {};
    for (const k of ["exact", "prefix", "suffix"] as const) if (typeof o[k] === "string") m[k] = o[k];
    if (typeof o.regex === "string") m.safe_regex = { regex: o.regex };
    if (o.ignoreCase === true) m.ignore_case = true;
    return m;
  });
  const enforce = c.filterEnabled === true;
  return {
    "@type": CSRF_TYPE,
    filter_enabled: { default_value: fraction(enforce ? pct : 0) },
    ...(!enforce && c.shadowEnabled === true ? { shadow_enabled: { default_value: fraction(pct) } } : {}),
    ...(origins.length > 0 ? { additional_origins: origins } : {}),
  };
}

/** The gateway-wide EnvoyFilter that inserts the (disabled) csrf filter, owned by the VirtualGateway; identical for every table on that gateway. */
function filterInsertion(ctx: WorkspaceContext, e: Enforcement): Emitted {
  const { cluster, namespace, labels } = e;
  const ws = ctx.workspace.name;
  return {
    cluster,
    resource: {
      apiVersion: "networking.istio.io/v1alpha3",
      kind: "EnvoyFilter",
      metadata: outputMetadata(stableName("csrf-filter", namespace, cluster, ws), namespace, cluster, ws, ctx.parentOf(e.gateway)),
      spec: {
        workloadSelector: { labels },
        configPatches: [
          {
            applyTo: "HTTP_FILTER",
            match: GATEWAY_MATCH,
            patch: { operation: "INSERT_BEFORE", value: { name: FILTER, typed_config: { "@type": CSRF_TYPE, filter_enabled: { default_value: { numerator: 0, denominator: "HUNDRED" } } } } },
          },
        ],
      },
    },
  };
}

/** Where the gateway's csrf filter lives: its pods, and the VirtualGateway that owns the filter. */
interface Enforcement {
  readonly cluster: string;
  readonly namespace: string;
  readonly labels: Labels;
  readonly gateway: InputObject;
}

/** EnvoyFilters that turn CSRF protection on for `routes` (VirtualService route name → policy) of one route table on one gateway. */
export function renderCsrf(ctx: WorkspaceContext, table: InputObject, e: Enforcement, routes: ReadonlyMap<string, InputObject>): Emitted[] {
  if (routes.size === 0) return [];
  const ws = ctx.workspace.name;
  const configPatches = [...routes.keys()].sort().map((name) => ({
    applyTo: "HTTP_ROUTE",
    match: { context: "GATEWAY", routeConfiguration: { vhost: { route: { name } } } },
    patch: { operation: "MERGE", value: { typed_per_filter_config: { [FILTER]: csrfRouteConfig(routes.get(name)!) } } },
  }));
  const policies = [...new Set(routes.values())];
  return [
    filterInsertion(ctx, e),
    {
      cluster: e.cluster,
      resource: {
        apiVersion: "networking.istio.io/v1alpha3",
        kind: "EnvoyFilter",
        metadata: outputMetadata(stableName("csrf", table.metadata.name, table.metadata.namespace ?? "", e.cluster, ws), e.namespace, e.cluster, ws, ctx.parentOf(policies.length === 1 ? policies[0]! : table)),
        spec: { workloadSelector: { labels: e.labels }, configPatches },
      },
    },
  ];
}

