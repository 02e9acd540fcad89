/**
 * What the translators that insert an Envoy HTTP filter calling a server (rate-limit.ts, ext-auth.ts)
 * share: finding the objects a policy names, where a filter goes (gateway pods, or a destination's
 * sidecars on one inbound port), the Envoy cluster of the server as those proxies see it, and the
 * inbound ports a destination selector picks.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import type { WorkspaceContext } from "./context.js";
import { objectSelector, selectServices } from "./destination-common.js";
import type { DiscoveredService, InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { serviceHost } from "./names.js";
import { asArray, asNumber, asRecord, asString, type Labels } from "./selectors.js";
import { TranslateCode, type Emitted } from "./types.js";

/** A problem found while resolving a policy, attached to the object it is about (the policy or an object it names). */
export interface PolicyIssue {
  readonly obj: InputObject;
  readonly path: string;
  readonly message: string;
  readonly severity: Diagnostic["severity"];
  readonly code: string;
}

/** Reports a PolicyIssue (default: an INVALID_FIELD error). */
export type ReportIssue = (obj: InputObject, path: string, message: string, severity?: Diagnostic["severity"], code?: string) => void;

export interface Resolved<T> {
  /** Absent when nothing can be rendered for the policy (its issues say why). */
  readonly config?: T;
  readonly issues: readonly PolicyIssue[];
}

/**
 * A policy resolver computed once per policy and workspace context: route tables ask for each route,
 * the policy's own translator asks again, and its issues must be reported once.
 */
export function resolvedOncePerWorkspace<T>(resolve: (ctx: WorkspaceContext, policy: InputObject, report: ReportIssue) => T | undefined): (ctx: WorkspaceContext, policy: InputObject) => Resolved<T> {
  const memo = new WeakMap<WorkspaceContext, Map<InputObject, Resolved<T>>>();
  return (ctx, policy) => {
    let m = memo.get(ctx);
    if (m === undefined) {
      m = new Map<InputObject, Resolved<T>>();
      memo.set(ctx, m);
    }
    const hit = m.get(policy);
    if (hit !== undefined) return hit;
    const issues: PolicyIssue[] = [];
    const config = resolve(ctx, policy, (obj, path, message, severity = Severity.Error, code = TranslateCode.InvalidField) => issues.push({ obj, path, message, severity, code }));
    const r: Resolved<T> = config === undefined ? { issues } : { config, issues };
    m.set(policy, r);
    return r;
  };
}

/** Whether a policy applies to routes: only with `applyToRoutes` (Gloo's RateLimitPolicy and ExtAuthPolicy: empty = no route). */
export function selectsRoutes(policy: InputObject): boolean {
  return asArray(asRecord(policy.spec).applyToRoutes).length > 0;
}

/** The object of `kind` an ObjectReference names (namespace defaults to the referring object's). */
export function findByRef(ctx: WorkspaceContext, kind: string, ref: unknown, from: InputObject): InputObject | undefined {
  const r = asRecord(ref);
  const name = asString(r.name);
  const namespace = asString(r.namespace) ?? from.metadata.namespace ?? ctx.index.adminNamespace;
  const cluster = asString(r.cluster);
  return (ctx.index.byKind.get(kind) ?? []).find((o) => o.metadata.name === name && (o.metadata.namespace ?? ctx.index.adminNamespace) === namespace && (cluster === undefined || o.cluster === undefined || o.cluster === cluster));
}

/** `namespace/name` of a reference, for messages. */
export function refText(ref: unknown, from: InputObject): string {
  const r = asRecord(ref);
  return `${asString(r.namespace) ?? from.metadata.namespace ?? ""}/${asString(r.name) ?? ""}`;
}

/** A set of proxies: a cluster, the namespace of their pods, and the pods' labels. */
export interface ProxySet {
  readonly cluster: string;
  readonly namespace: string;
  readonly labels: Labels;
}

/**
 * EnvoyFilter `priority` of the filter insertions, in Gloo's phase order. Istio applies a context's
 * EnvoyFilters by increasing priority (then creation time), and each INSERT_BEFORE the router lands
 * after the filters inserted before it: a lower priority runs earlier. Gloo runs external auth in
 * its authorization phase and a RateLimitPolicy (default phase postAuthz) after it; with equal
 * priorities the order would be the EnvoyFilters' creation order.
 */
export const FILTER_PRIORITY = { extAuth: 10, rateLimit: 20 } as const;

/** One EnvoyFilter (networking.istio.io/v1alpha3, the only version Istio serves) on a set of proxies, named `name`, rendered from `parent`. */
export function envoyFilter(ctx: WorkspaceContext, proxies: ProxySet, name: string, parent: InputObject, configPatches: readonly Record<string, unknown>[], priority?: number): Emitted {
  const ws = ctx.workspace.name;
  return {
    cluster: proxies.cluster,
    resource: {
      apiVersion: "networking.istio.io/v1alpha3",
      kind: "EnvoyFilter",
      metadata: outputMetadata(name, proxies.namespace, proxies.cluster, ws, ctx.parentOf(parent)),
      spec: priority === undefined ? { workloadSelector: { labels: proxies.labels }, configPatches } : { configPatches, priority, workloadSelector: { labels: proxies.labels } },
    },
  };
}

/** The patch that inserts the HTTP filter `filter` before the router: on gateway listeners, or on the sidecar's inbound port. */
export function insertBeforeRouter(proxy: { readonly inboundPort?: number }, filter: Record<string, unknown>): Record<string, unknown> {
  return { applyTo: "HTTP_FILTER", match: routerMatch(proxy), patch: { operation: "INSERT_BEFORE", value: filter } };
}

/** The patch that merges `value` into a gateway route, found by its name (Istio names the Envoy route after the VirtualService route). */
export function mergeIntoGatewayRoute(route: string, value: Record<string, unknown>): Record<string, unknown> {
  return { applyTo: "HTTP_ROUTE", match: { context: "GATEWAY", routeConfiguration: { vhost: { route: { name: route } } } }, patch: { operation: "MERGE", value } };
}

/** The patch that merges `value` into the inbound virtual host of a sidecar's workload port. */
export function mergeIntoInboundHost(port: number, value: Record<string, unknown>): Record<string, unknown> {
  return { applyTo: "VIRTUAL_HOST", match: { context: "SIDECAR_INBOUND", routeConfiguration: { portNumber: port } }, patch: { operation: "MERGE", value } };
}

/** Where a filter goes: the proxies, and what owns the filter. */
export interface FilterProxy extends ProxySet {
  /** The object whose output the filter is (the VirtualGateway, or the policy for a destination). */
  readonly owner: InputObject;
  /** SIDECAR_INBOUND on this workload port, or GATEWAY when undefined. */
  readonly inboundPort?: number;
}

/** EnvoyFilter `match` of the router in the HTTP connection manager (insert before it). */
function routerMatch(proxy: { readonly inboundPort?: number }): Record<string, unknown> {
  return {
    context: proxy.inboundPort === undefined ? "GATEWAY" : "SIDECAR_INBOUND",
    listener: {
      ...(proxy.inboundPort !== undefined ? { portNumber: proxy.inboundPort } : {}),
      filterChain: { filter: { name: "envoy.filters.network.http_connection_manager", subFilter: { name: "envoy.filters.http.router" } } },
    },
  };
}

/** A server a filter calls: a Kubernetes Service and a port selector (`{number}` or `{name}`). */
export interface ServerRef {
  readonly name: string;
  readonly namespace: string;
  readonly port: Record<string, unknown>;
}

/** The server's Envoy cluster (`outbound|<port>||<host>`) as proxies in `cluster` see it, or why there is none. */
export function serverCluster(ctx: WorkspaceContext, what: string, s: ServerRef, cluster: string): { name: string; host: string; port: number } | { error: string } {
  const svc = ctx.service(cluster, s.namespace, s.name);
  const where = `${what} ${s.namespace}/${s.name}`;
  if (svc === undefined) return { error: `${where} is not discovered in cluster "${cluster}"; an Envoy filter naming an unknown cluster would be rejected with the whole listener` };
  let port = asNumber(s.port.number);
  const portName = asString(s.port.name);
  if (portName !== undefined) port = svc.ports.find((p) => p.name === portName)?.port;
  if (port === undefined) return { error: `${where} has no port named "${portName ?? ""}" in cluster "${cluster}"` };
  const host = serviceHost(s.name, s.namespace);
  return { name: `outbound|${String(port)}||${host}`, host, port };
}

/** One inbound port of a selected destination. */
export interface InboundPort {
  readonly cluster: string;
  readonly service: DiscoveredService;
  readonly labels: Labels;
  /** The workload port (the Service port's numeric targetPort). */
  readonly port: number;
}

/**
 * The inbound ports `applyToDestinations` selects among the workspace's own Services with a pod
 * selector (Gloo: Kubernetes Services only). A port that targets a named container port cannot be
 * matched by an inbound EnvoyFilter: reported, skipped. `what` names the policy kind in messages.
 */
export function selectedInboundPorts(ctx: WorkspaceContext, policy: InputObject, selectors: readonly Record<string, unknown>[], basePath: (i: number) => string, what: string): { ports: InboundPort[]; diagnostics: Diagnostic[] } {
  const ports: InboundPort[] = [];
  const diagnostics: Diagnostic[] = [];
  selectors.forEach((d, i) => {
    const path = basePath(i);
    const kind = asString(d.kind) ?? "SERVICE";
    if (kind !== "SERVICE") {
      diagnostics.push(ctx.diag(policy, TranslateCode.UnsupportedField, Severity.Error, `${path}/kind`, `${what} applies to Kubernetes Services (${kind} is not supported, as in Gloo); nothing is rendered for this selector`));
      return;
    }
    const portSel = asRecord(d.port);
    for (const ref of selectServices(ctx, objectSelector(d.selector))) {
      const svc = ref.service;
      const labels = svc.selector ?? {};
      if (ref.owner !== ctx.workspace.name || Object.keys(labels).length === 0) continue;
      for (const p of svc.ports) {
        if (portSel.number !== undefined && p.port !== portSel.number) continue;
        if (portSel.name !== undefined && p.name !== portSel.name) continue;
        const target = typeof p.targetPort === "number" ? p.targetPort : p.targetPort === undefined ? p.port : undefined;
        if (target === undefined) {
          diagnostics.push(
            ctx.diag(
              policy,
              TranslateCode.UnsupportedField,
              Severity.Warning,
              path,
              `port ${String(p.port)} of Service ${svc.namespace}/${svc.name} in cluster "${ref.cluster}" targets the named container port "${String(p.targetPort)}"; an inbound EnvoyFilter matches port numbers, so ${what} does not apply to this port`,
            ),
          );
          continue;
        }
        ports.push({ cluster: ref.cluster, service: svc, labels, port: target });
      }
    }
  });
  return { ports, diagnostics };
}

/** Destination selectors of a policy: `applyToDestinations`, or every destination when neither selector is given (`[{}]`); none when only routes are selected. */
export function destinationSelectors(policy: InputObject): { selectors: Record<string, unknown>[]; path: (i: number) => string } {
  const spec = asRecord(policy.spec);
  if (spec.applyToDestinations !== undefined) return { selectors: asArray(spec.applyToDestinations).map(asRecord), path: (i) => `/spec/applyToDestinations/${String(i)}` };
  return spec.applyToRoutes === undefined ? { selectors: [{}], path: () => "/spec" } : { selectors: [], path: () => "/spec" };
}

/** A Go duration (`100ms`, `1m30s`) in Envoy's proto-JSON form (`0.100s`). */
export function envoyDuration(d: string): string {
  if (/^\d+(\.\d+)?s$/.test(d)) return d;
  const units: Readonly<Record<string, number>> = {
    h: 3600,
    m: 60,
    s: 1,
    ms: 0.001,
    us: 0.000001,
    µs: 0.000001,
    ns: 0.000000001,
  };
  let total = 0;
  for (const [, n, u] of d.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/g)) total += Number(n) * (units[u!] ?? 0);
  return `${String(Math.round(total * 1000) / 1000)}s`;
}
