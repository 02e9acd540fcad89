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
import { envoyFilter, insertBeforeRouter, mergeIntoGatewayRoute, type ProxySet } from "./envoy-filters.js";
import type { InputObject } from "./input.js";
import { stableName } from "./names.js";
import { asArray, asNumber, asRecord } from "./selectors.js";
import type { Emitted } from "./types.js";
import type { WorkspaceContext } from "./context.js";

const FILTER = "envoy.filters.http.csrf";

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
  const disabled = { "@type": CSRF_TYPE, filter_enabled: { default_value: { numerator: 0, denominator: "HUNDRED" } } };
  return envoyFilter(ctx, e, stableName("csrf-filter", e.namespace, e.cluster, ctx.workspace.name), e.gateway, [insertBeforeRouter({}, { name: FILTER, typed_config: disabled })]);
}

/** Where the gateway's csrf filter lives: its pods, and the VirtualGateway that owns the filter. */
interface Enforcement extends ProxySet {
  readonly gateway: InputObject;
}

/** EnvoyFilters that turn CSRF protection on for `routes` (VirtualService route name → policy) of one route table on one gateway. */
export function renderCsrf(ctx: WorkspaceContext, table: InputObject, e: Enforcement, routes: ReadonlyMap<string, InputObject>): Emitted[] {
  if (routes.size === 0) return [];
  const configPatches = [...routes.keys()].sort().map((name) => mergeIntoGatewayRoute(name, { typed_per_filter_config: { [FILTER]: csrfRouteConfig(routes.get(name)!) } }));
  const policies = [...new Set(routes.values())];
  const name = stableName("csrf", table.metadata.name, table.metadata.namespace ?? "", e.cluster, ctx.workspace.name);
  return [filterInsertion(ctx, e), envoyFilter(ctx, e, name, policies.length === 1 ? policies[0]! : table, configPatches)];
}

