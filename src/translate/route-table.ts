/**
 * RouteTable → VirtualService (+ DestinationRule subsets).
 *
 * - East-west (no `virtualGateways`, or a non-empty `workloadSelectors`; see `gatewayOnly`): one VirtualService per cluster
 *   of the owning workspace where the table's namespace exists, in that namespace, `gateways:
 *   [mesh]`, `exportTo` = the workspace's namespaces there, `workloadSelectors` labels →
 *   `match[].sourceLabels`.
 * - North-south: rendered by the workspace that owns the VirtualGateway, for every route table
 *   it can see (own or imported) that references it: one VirtualService per gateway binding, in
 *   the gateway's namespace, `gateways: [<ns>/<generated Gateway name>]`, `exportTo: ["."]`.
 * - Routes are flattened through delegation (delegation.ts), converted one by one
 *   (`convertHttpRoute`), and get their route policies (route-policies.ts). A route whose action
 *   cannot be translated becomes a 500 direct response (ROUTE_REPLACEMENT); with
 *   `failureMode: FREEZE_CONFIG` the whole table renders nothing for that cluster instead
 *   (ROUTE_TABLE_FROZEN) and is reported in `frozen` (cluster, table, label selector); the delivery
 *   layer (src/queue) keeps the objects it last published for that table in that cluster.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import { sortedKeys } from "./canonical.js";
import { reportUnsupported, type WorkspaceContext } from "./context.js";
import { dottedField, unreadKeys, type ReadTree } from "./read-keys.js";
import { flattenRoutes, type FlatRoute } from "./delegation.js";
import type { DiscoveredService, InputObject } from "./input.js";
import { renderCsrf } from "./csrf-policy.js";
import { EXT_AUTH_DENIED_BODY, extAuthBlocked, extAuthSelectsRoutes, renderExtAuthRoutes } from "./ext-auth.js";
import { rateLimitSelectsRoutes, renderRateLimitRoutes } from "./rate-limit.js";
import { jwtSelectsRoutes, renderJwt, routeOperations, type Operation } from "./jwt-policy.js";
import { LABEL_MANAGED, outputLabels, outputMetadata } from "./labels.js";
import { serviceHost, stableName, subsetName } from "./names.js";
import { createMatches } from "./route-matchers.js";
import { applyRoutePolicies, routePolicyDiagnostics, winningPolicies, winningPolicy, type DestinationResolver } from "./route-policies.js";
import { unreachableRoutes } from "./route-reachability.js";
import { asArray, asLabels, asNumber, asRecord, asString, type Labels } from "./selectors.js";
import { TranslateCode, type Emitted, type FrozenTable, type TranslatorOutput } from "./types.js";
import { gatewayBindings, httpTargetPorts, listenerServerPorts } from "./virtual-gateway.js";

const RT_FIELDS = ["hosts", "virtualGateways", "workloadSelectors", "defaultDestination", "http", "tcp", "tls", "weight", "failureMode", "virtualServiceAnnotations"];
const FORWARD_FIELDS = ["destinations", "pathRewrite", "regexRewrite", "hostRewrite"];
const DEST_FIELDS = ["ref", "kind", "port", "subset", "weight"];
/** AWS Lambda destinations: `awsLambda` (Gloo ≥ 2.3) or `kind: CLOUD_PROVIDER` + `function` (Gloo 2.2/2.3). */
const LAMBDA_FIELDS = ["awsLambda", "function"];
/** What a `tcp` / `tls` route translation reads (read-keys.ts); every other set key is reported where it is. */
const STREAM_READS: ReadTree = {
  matchers: { port: true, sniHosts: true },
  forwardTo: {
    destinations: {
      ref: true,
      kind: true,
      port: true,
      weight: true,
      subset: "subsets of a TCP or TLS route's destination are not translated: the connection goes to every endpoint of the destination",
      awsLambda: true, // resolveDestination: NEEDS_GLOO_DATA_PLANE
      function: "function destinations need Gloo's data plane; a TCP or TLS route cannot invoke a function",
    },
    hostRewrite: "hostRewrite rewrites an HTTP request's Host header; a TCP or TLS route carries no HTTP request",
    autoHostRewrite: "autoHostRewrite rewrites an HTTP request's Host header; a TCP or TLS route carries no HTTP request",
    pathRewrite: "pathRewrite rewrites an HTTP request's path; a TCP or TLS route carries no HTTP request",
    regexRewrite: "regexRewrite rewrites an HTTP request's path; a TCP or TLS route carries no HTTP request",
  },
};
const REDIRECT_CODES: Readonly<Record<string, number>> = { MOVED_PERMANENTLY: 301, FOUND: 302, SEE_OTHER: 303, TEMPORARY_REDIRECT: 307, PERMANENT_REDIRECT: 308 };
export const REPLACEMENT_BODY = "gitmesh: this route could not be translated; see the diagnostics of its route table";

/** Where one VirtualService goes and how it is scoped. */
interface Target {
  /** Subset name → canonical labels, per destination host, to catch two label sets with one subset name. */
  readonly subsetNames?: Map<string, string>;
  readonly cluster: string;
  readonly namespace: string;
  readonly gateways: readonly string[];
  readonly sourceLabels: readonly Labels[];
  readonly exportTo: readonly string[];
  /** North-south: the gateway pods that receive the requests (where a JWTPolicy is enforced). */
  readonly enforce?: { readonly namespace: string; readonly labels: Labels; readonly gateway: InputObject; readonly ports: readonly number[] };
  /** North-south: listener (gateway Service) port → Gateway server port, for matcher ports. */
  readonly serverPorts?: ReadonlyMap<number, number>;
}

/**
 * Matches with their `port` as the gateway route sees it: on a gateway, the server port of the
 * listener the matcher names (Gloo's matcher port is the listener's; Istio matches the server's).
 * A port that is neither a listener port nor a server port is kept, with a warning: it never matches.
 */
function gatewayMatchPorts(ctx: WorkspaceContext, table: InputObject, path: string, target: Target, matches: readonly Record<string, unknown>[], diagnostics: Diagnostic[]): Record<string, unknown>[] {
  const ports = target.serverPorts;
  if (ports === undefined) return [...matches];
  return matches.map((m, i) => {
    const port = m.port;
    if (typeof port !== "number") return m;
    const server = ports.get(port);
    if (server !== undefined) return server === port ? m : { ...m, port: server };
    if (![...ports.values()].includes(port)) {
      const known = [...ports.keys()].sort((a, b) => a - b).join(", ") || "(none)";
      diagnostics.push(ctx.diag(table, TranslateCode.InvalidField, Severity.Warning, `${path}/${String(i)}/port`, `port ${String(port)} is not a listener port of the gateway in cluster "${target.cluster}" (listener ports: ${known}); this matcher never matches there. Use the listener's port.`));
    }
    return m;
  });
}

export function translateRouteTables(ctx: WorkspaceContext): TranslatorOutput {
  const resources: Emitted[] = [];
  const diagnostics: Diagnostic[] = [];
  const frozen: FrozenTable[] = [];
  const policyRoutes: FlatRoute[] = [];
  const flatCache = new Map<string, ReturnType<typeof flattenRoutes>>();
  const flat = (rt: InputObject): ReturnType<typeof flattenRoutes> => {
    let f = flatCache.get(rt.key);
    if (f === undefined) {
      f = flattenRoutes(ctx, rt);
      flatCache.set(rt.key, f);
    }
    return f;
  };

  for (const rt of ctx.own("RouteTable")) {
    const spec = asRecord(rt.spec);
    diagnostics.push(...reportUnsupported(ctx, rt, spec, "/spec", RT_FIELDS));
    for (const kind of ["tcp", "tls"] as const) {
      for (const u of unreadKeys(spec[kind], STREAM_READS, `/spec/${kind}`)) {
        diagnostics.push(ctx.diag(rt, TranslateCode.UnsupportedField, Severity.Warning, u.path, u.reason ?? `${dottedField(u.path)} is not translated by gitmesh; it has no effect on the rendered Istio configuration`));
      }
    }
    for (const [i, r] of asArray(spec.http).entries()) {
      const route = asRecord(r);
      if (route.delegate === undefined) policyRoutes.push({ table: rt, path: `/spec/http/${i}`, name: asString(route.name) ?? `route-${i}`, labels: asLabels(route.labels) ?? {}, matchers: [], route });
    }
    const hosts = asArray(spec.hosts);
    if (hosts.length === 0) continue; // a delegated child: rendered through its parents
    diagnostics.push(...flat(rt).diagnostics);
    diagnostics.push(...checkGatewayRefs(ctx, rt));
    if (gatewayOnly(spec)) continue;
    const r = eastWest(ctx, rt, flat(rt).routes);
    resources.push(...r.resources);
    diagnostics.push(...r.diagnostics);
    frozen.push(...(r.frozen ?? []));
  }

  for (const vg of ctx.own("VirtualGateway")) {
    const bindings = gatewayBindings(ctx, vg);
    // Where each binding's HTTP requests arrive (a JWTPolicy's DENY rules are limited to them): once per binding.
    const httpPorts = new Map(bindings.map((b) => [b, httpTargetPorts(ctx, vg, b)] as const));
    const serverPorts = new Map(bindings.map((b) => [b, listenerServerPorts(ctx, vg, b)] as const));
    for (const rt of ctx.visible("RouteTable")) {
      if (!referencesGateway(ctx, rt, vg)) continue;
      if (!allowedOnGateway(ctx, rt, vg)) {
        diagnostics.push(ctx.diag(rt, TranslateCode.RouteTableNotAllowed, Severity.Warning, "/spec/virtualGateways", `VirtualGateway ${vg.metadata.namespace ?? ""}/${vg.metadata.name} does not allow this route table (listeners[].allowedRouteTables); it is not rendered on that gateway. Add a matching allowedRouteTables entry or remove the reference.`));
        continue;
      }
      for (const b of bindings) {
        const target: Target = { cluster: b.cluster, namespace: b.namespace, gateways: [b.ref], sourceLabels: [], exportTo: ["."], enforce: { namespace: b.namespace, labels: b.podLabels, gateway: vg, ports: httpPorts.get(b) ?? [] }, serverPorts: serverPorts.get(b) ?? new Map() };
        const r = renderVirtualService(ctx, rt, flat(rt).routes, target);
        resources.push(...r.resources);
        diagnostics.push(...r.diagnostics);
        frozen.push(...(r.frozen ?? []));
      }
    }
  }

  const p = routePolicyDiagnostics(ctx, policyRoutes);
  diagnostics.push(...p.diagnostics);
  return { resources, diagnostics: dedupe(diagnostics), ...(frozen.length > 0 ? { frozen } : {}) };
}

/**
 * Whether a route table applies to its virtual gateways only (no sidecar routing). route_table.proto
 * (gloo-mesh-v2.6.x), on `virtualGateways`: "applies to the `my-gateway` virtual gateway … and no
 * sidecars: set `virtualGateways.name` … and `workloadSelectors` to `[]`", while `workloadSelectors`
 * `{}` adds "sidecars of all the workloads"; on `workloadSelectors`: "If you specify a virtual
 * gateway, workloads are not automatically selected for east-west routing." So with gateways, only
 * a non-empty `workloadSelectors` list adds east-west routing; omitted, `null` and `[]` do not.
 */
export function gatewayOnly(spec: Record<string, unknown>): boolean {
  return asArray(spec.virtualGateways).length > 0 && asArray(spec.workloadSelectors).length === 0;
}

function eastWest(ctx: WorkspaceContext, rt: InputObject, routes: readonly FlatRoute[]): TranslatorOutput {
  const ns = rt.metadata.namespace ?? ctx.index.adminNamespace;
  const diagnostics: Diagnostic[] = [];
  const sourceLabels: Labels[] = [];
  asArray(asRecord(rt.spec).workloadSelectors).forEach((w, i) => {
    const ws = asRecord(w);
    const sel = asRecord(ws.selector);
    diagnostics.push(...reportUnsupported(ctx, rt, sel, `/spec/workloadSelectors/${i}/selector`, ["labels"]));
    // selectors.proto: port "only applies to policies which select specific workload ports"; kind VM
    // selects VMs only, where the rendered sourceLabels match pods and VMs alike.
    if (ws.kind === "VM") diagnostics.push(ctx.diag(rt, TranslateCode.UnsupportedField, Severity.Warning, `/spec/workloadSelectors/${i}/kind`, "kind VM is not translated: the route's sourceLabels match Kubernetes pods and VMs (WorkloadEntries) with those labels alike"));
    if (isSet(ws.port)) diagnostics.push(ctx.diag(rt, TranslateCode.UnsupportedField, Severity.Warning, `/spec/workloadSelectors/${i}/port`, "a workload port selects nothing for a RouteTable (Gloo: it applies to policies that select workload ports); it has no effect"));
    const labels = asLabels(sel.labels);
    if (labels !== undefined && Object.keys(labels).length > 0) sourceLabels.push(labels);
  });
  // One selector without labels selects every workload: no sourceLabels restriction at all.
  const anyAll = asArray(asRecord(rt.spec).workloadSelectors).some((w) => Object.keys(asLabels(asRecord(asRecord(w).selector).labels) ?? {}).length === 0);
  const clusters = ctx.workspace.clusters.filter((c) => ctx.workspace.namespaces.get(c)?.includes(ns) === true);
  if (clusters.length === 0) {
    diagnostics.push(ctx.diag(rt, TranslateCode.NoTargetCluster, Severity.Warning, "/metadata/namespace", `namespace "${ns}" of this route table exists in no discovered cluster of workspace "${ctx.workspace.name}"; no east-west VirtualService is rendered. Create the namespace or move the route table into a namespace of the workspace.`));
    return { resources: [], diagnostics };
  }
  const resources: Emitted[] = [];
  const frozen: FrozenTable[] = [];
  // Sidecars of the workspace and of every workspace the table is exported to (and that imports it) use it.
  const consumers = ctx.consumersOf(ctx.selectable(rt));
  for (const cluster of clusters) {
    const namespaces = [ctx.workspace.name, ...consumers].flatMap((w) => ctx.index.workspaces.get(w)?.namespaces.get(cluster) ?? []);
    const target: Target = { cluster, namespace: ns, gateways: ["mesh"], sourceLabels: anyAll ? [] : sourceLabels, exportTo: [...new Set(namespaces)].sort() };
    const r = renderVirtualService(ctx, rt, routes, target);
    resources.push(...r.resources);
    diagnostics.push(...r.diagnostics);
    frozen.push(...(r.frozen ?? []));
  }
  return { resources, diagnostics, frozen };
}

function renderVirtualService(ctx: WorkspaceContext, rt: InputObject, routes: readonly FlatRoute[], target: Target): TranslatorOutput {
  const spec = asRecord(rt.spec);
  const diagnostics: Diagnostic[] = [];
  const resources: Emitted[] = [];
  const http: Record<string, unknown>[] = [];
  /** The Gloo route of each `http` entry. */
  const origins: FlatRoute[] = [];
  let failed = false;
  const scoped: Target = { ...target, subsetNames: new Map() };
  const hosts = asArray(spec.hosts).filter((h): h is string => typeof h === "string");
  const jwt = new Map<InputObject, Operation[]>();
  const csrf = new Map<string, InputObject>();
  const rateLimits = new Map<string, InputObject>();
  const extAuth = new Map<string, InputObject>();
  for (const fr of routes) {
    const r = convertHttpRoute(ctx, rt, fr, scoped);
    diagnostics.push(...r.diagnostics);
    if (r.failed) failed = true;
    if (r.route === undefined) continue;
    const resolver = destinationResolver(ctx, rt, target.cluster);
    diagnostics.push(...applyRoutePolicies(r.route, winningPolicies(ctx, fr), resolver, (p, code, path, msg, severity = Severity.Warning) => ctx.diag(p, code, severity, path, msg)));
    const authPolicy = r.failed ? undefined : winningPolicy(ctx, fr, "ExtAuthPolicy", extAuthSelectsRoutes);
    if (authPolicy !== undefined) {
      const blocked = target.enforce === undefined ? undefined : extAuthBlocked(ctx, authPolicy, target.cluster);
      if (target.enforce === undefined) {
        diagnostics.push(ctx.diag(authPolicy, TranslateCode.UnsupportedField, Severity.Error, "/spec/applyToRoutes", `route "${fr.name}" of RouteTable ${rt.metadata.namespace ?? ""}/${rt.metadata.name} is an east-west route; external authorization on east-west routes is not translated: select the destination with applyToDestinations instead`));
      } else if (blocked !== undefined) {
        // Fail closed: a route whose authorization cannot be rendered is not served.
        diagnostics.push(ctx.diag(authPolicy, TranslateCode.DestinationNotFound, Severity.Error, asRecord(asRecord(authPolicy.spec).config).server === undefined ? "/spec/config" : "/spec/config/server", `route "${fr.name}" of RouteTable ${rt.metadata.namespace ?? ""}/${rt.metadata.name}: ${blocked}; the route answers 403 in cluster "${target.cluster}" instead`));
        http.push({ directResponse: { body: { string: EXT_AUTH_DENIED_BODY }, status: 403 }, ...(r.route.match === undefined ? {} : { match: r.route.match }), name: r.route.name });
        origins.push(fr);
        continue;
      } else extAuth.set(String(r.route.name), authPolicy);
    }
    // Its fields come from the conversion and from route policies: brought to canonical key order here, once.
    http.push(sortedKeys(r.route));
    origins.push(fr);
    resources.push(...r.subsets);
    const csrfPolicy = r.failed ? undefined : winningPolicy(ctx, fr, "CSRFPolicy");
    if (csrfPolicy !== undefined) {
      if (target.enforce === undefined) diagnostics.push(ctx.diag(csrfPolicy, TranslateCode.UnsupportedField, Severity.Error, "/spec/applyToRoutes", `route "${fr.name}" of RouteTable ${rt.metadata.namespace ?? ""}/${rt.metadata.name} is an east-west route; a CSRFPolicy is translated for routes on a VirtualGateway only`));
      else csrf.set(String(r.route.name), csrfPolicy);
    }
    const rateLimit = r.failed ? undefined : winningPolicy(ctx, fr, "RateLimitPolicy", rateLimitSelectsRoutes);
    if (rateLimit !== undefined) {
      if (target.enforce === undefined) diagnostics.push(ctx.diag(rateLimit, TranslateCode.UnsupportedField, Severity.Error, "/spec/applyToRoutes", `route "${fr.name}" of RouteTable ${rt.metadata.namespace ?? ""}/${rt.metadata.name} is an east-west route; rate limits on east-west routes are not translated: select the destination with applyToDestinations instead`));
      else rateLimits.set(String(r.route.name), rateLimit);
    }
    const policy = winningPolicy(ctx, fr, "JWTPolicy", jwtSelectsRoutes);
    if (policy === undefined || r.failed) continue;
    if (target.enforce === undefined) {
      diagnostics.push(ctx.diag(policy, TranslateCode.UnsupportedField, Severity.Error, "/spec/applyToRoutes", `route "${fr.name}" of RouteTable ${rt.metadata.namespace ?? ""}/${rt.metadata.name} is an east-west route; a JWTPolicy on east-west routes is not translated: select the destination with applyToDestinations instead`));
      continue;
    }
    const { operations, widened } = routeOperations(hosts, r.route);
    for (const w of widened) diagnostics.push(ctx.diag(rt, TranslateCode.InvalidField, Severity.Warning, fr.path, `JWTPolicy ${policy.metadata.namespace ?? ""}/${policy.metadata.name} on route "${fr.name}": an authorization rule cannot express ${w}`));
    jwt.set(policy, [...(jwt.get(policy) ?? []), ...operations]);
  }
  if (failed && asString(spec.failureMode) === "FREEZE_CONFIG") {
    const causes = diagnostics.filter((d) => d.code !== TranslateCode.RouteReplacement);
    causes.push(ctx.diag(rt, TranslateCode.RouteTableFrozen, Severity.Error, "/spec/failureMode", `a route of this table failed and failureMode is FREEZE_CONFIG: nothing new is rendered for cluster "${target.cluster}" and the last applied version stays in place. Fix the errors above.`));
    return { resources: [], diagnostics: causes, frozen: [frozenTable(ctx, rt, target.cluster)] };
  }
  for (const u of unreachableRoutes(http)) {
    const fr = origins[u.index]!;
    const other = origins[u.by]!;
    const where = other.table === fr.table ? "" : ` of RouteTable ${other.table.metadata.namespace ?? ""}/${other.table.metadata.name}`;
    const what = u.whole ? `route "${fr.name}" is never used` : `match${u.matches.length > 1 ? "es" : ""} ${u.matches.map((i) => `#${String(i + 1)}`).join(", ")} of route "${fr.name}" ${u.matches.length > 1 ? "are" : "is"} never used`;
    diagnostics.push(
      ctx.diag(fr.table, TranslateCode.RouteUnreachable, Severity.Warning, fr.path,
        `${what}: route "${other.name}"${where}, evaluated before it, matches every request it would (Gloo evaluates routes in order: a table's as written, delegated tables by weight and then as the parent lists them). Move it before "${other.name}", or narrow "${other.name}".`),
    );
  }
  const streams = streamRoutes(ctx, rt, target, hosts);
  diagnostics.push(...streams.diagnostics);
  if (http.length === 0 && streams.tcp.length === 0 && streams.tls.length === 0) return { resources: [], diagnostics };
  const ws = ctx.workspace.name;
  if (target.enforce !== undefined) {
    resources.push(...renderCsrf(ctx, rt, { cluster: target.cluster, ...target.enforce }, csrf));
    resources.push(...renderExtAuthRoutes(ctx, rt, { cluster: target.cluster, namespace: target.enforce.namespace, labels: target.enforce.labels, owner: target.enforce.gateway }, extAuth));
    const limited = renderRateLimitRoutes(ctx, rt, { cluster: target.cluster, namespace: target.enforce.namespace, labels: target.enforce.labels, owner: target.enforce.gateway }, rateLimits);
    resources.push(...limited.resources);
    diagnostics.push(...limited.diagnostics);
  }
  for (const [policy, operations] of jwt) {
    resources.push(...renderJwt(ctx, policy, { cluster: target.cluster, namespace: target.enforce!.namespace, labels: target.enforce!.labels, operations, ports: target.enforce!.ports, scope: [rt.metadata.name, rt.metadata.namespace ?? ""] }));
  }
  const annotations = { ...(asLabels(spec.virtualServiceAnnotations) ?? {}), "cluster.solo.io/cluster": target.cluster };
  resources.push({
    cluster: target.cluster,
    resource: {
      apiVersion: "networking.istio.io/v1",
      kind: "VirtualService",
      metadata: outputMetadata(stableName("routetable", rt.metadata.name, rt.metadata.namespace ?? "", target.cluster, ws), target.namespace, target.cluster, ws, ctx.parentOf(rt), annotations),
      spec: {
        exportTo: target.exportTo,
        gateways: target.gateways,
        hosts,
        ...(http.length > 0 ? { http } : {}),
        ...(streams.tcp.length > 0 ? { tcp: streams.tcp } : {}),
        ...(streams.tls.length > 0 ? { tls: streams.tls } : {}),
      },
    },
  });
  return { resources, diagnostics };
}

/**
 * RouteTable `tcp` and `tls` routes → the VirtualService's `tcp` and `tls` routes: matchers (port;
 * SNI hosts, defaulting to the table's hosts, which Istio requires) and the forwardTo destinations
 * with their weights. A TCP or TLS connection cannot be answered with a 500, so a route whose
 * destinations cannot be resolved is left out, with an error.
 */
function streamRoutes(ctx: WorkspaceContext, rt: InputObject, target: Target, hosts: readonly string[]): { tcp: Record<string, unknown>[]; tls: Record<string, unknown>[]; diagnostics: Diagnostic[] } {
  const spec = asRecord(rt.spec);
  const diagnostics: Diagnostic[] = [];
  const sources = target.sourceLabels.length > 0 ? target.sourceLabels : [undefined];
  const render = (kind: "tcp" | "tls") =>
    asArray(spec[kind]).flatMap((raw, i) => {
      const route = asRecord(raw);
      const path = `/spec/${kind}/${String(i)}`;
      const dests = asArray(asRecord(route.forwardTo).destinations).map(asRecord);
      if (dests.length === 0) {
        diagnostics.push(ctx.diag(rt, TranslateCode.InvalidField, Severity.Error, `${path}/forwardTo`, `a ${kind.toUpperCase()} route needs forwardTo.destinations; it is left out`));
        return [];
      }
      const resolved = dests.map((d, j) => ({ d, r: resolveDestination(ctx, rt, d, `${path}/forwardTo/destinations/${String(j)}`, target.cluster) }));
      const failed = resolved.filter((x) => "error" in x.r);
      for (const { r } of failed) if ("error" in r) diagnostics.push(ctx.diag(rt, r.code, Severity.Error, r.path, `${r.error}; this ${kind.toUpperCase()} route is left out for cluster "${target.cluster}"`));
      if (failed.length > 0) return [];
      const weights = splitWeights(dests.map((d) => asNumber(d.weight)));
      if (typeof weights === "string") {
        diagnostics.push(ctx.diag(rt, TranslateCode.InvalidWeights, Severity.Error, `${path}/forwardTo/destinations`, `${weights}; this ${kind.toUpperCase()} route is left out`));
        return [];
      }
      const destinations = resolved.map(({ r }, j) => {
        const ok = r as { host: string; port?: number };
        return { destination: { host: ok.host, ...(ok.port !== undefined ? { port: { number: ok.port } } : {}) }, ...(dests.length > 1 ? { weight: weights[j] } : {}) };
      });
      const matchers = asArray(route.matchers).map(asRecord);
      const base = (matchers.length > 0 ? matchers : [{}]).map((m) => ({
        ...(kind === "tls" ? { sniHosts: asArray(m.sniHosts).length > 0 ? m.sniHosts : hosts.filter((h) => h !== "*") } : {}),
        ...(asNumber(m.port) !== undefined ? { port: m.port } : {}),
      }));
      if (kind === "tls" && base.some((m) => asArray(m.sniHosts).length === 0)) {
        diagnostics.push(ctx.diag(rt, TranslateCode.InvalidField, Severity.Error, `${path}/matchers`, "a TLS route needs SNI hosts (matchers[].sniHosts, or hosts other than `*` on the table); it is left out"));
        return [];
      }
      // Istio (and Gloo: "The SNI value must be a subset of the corresponding virtual service's hosts").
      const outside = base.flatMap((m) => asArray(m.sniHosts)).filter((sni): sni is string => typeof sni === "string" && !hosts.some((h) => h === "*" || h === sni || (h.startsWith("*.") && sni.endsWith(h.slice(1)))));
      if (outside.length > 0) {
        diagnostics.push(ctx.diag(rt, TranslateCode.InvalidField, Severity.Error, `${path}/matchers`, `SNI host(s) ${outside.join(", ")} are not among the route table's hosts (${hosts.join(", ")}); Istio rejects such a route. It is left out`));
        return [];
      }
      const match = gatewayMatchPorts(ctx, rt, `${path}/matchers`, target, base, diagnostics).flatMap((m) => sources.map((labels) => ({ ...m, ...(labels !== undefined ? { sourceLabels: labels } : {}) })));
      const hasMatch = match.some((m) => Object.keys(m).length > 0);
      return [{ ...(hasMatch ? { match } : {}), route: destinations }];
    });
  return { tcp: render("tcp"), tls: render("tls"), diagnostics };
}


/** What identifies a frozen table's objects in one cluster's output: the labels they all carry (but `managed`). */
function frozenTable(ctx: WorkspaceContext, rt: InputObject, cluster: string): FrozenTable {
  const { [LABEL_MANAGED]: _managed, ...selector } = outputLabels(cluster, ctx.workspace.name, ctx.parentOf(rt));
  return { cluster, workspace: ctx.workspace.name, kind: rt.kind, name: rt.metadata.name, namespace: rt.metadata.namespace ?? ctx.index.adminNamespace, selector };
}

interface Converted {
  readonly route: Record<string, unknown> | undefined;
  readonly subsets: readonly Emitted[];
  readonly diagnostics: readonly Diagnostic[];
  readonly failed: boolean;
}

/** One flattened Gloo route → one Istio HTTP route (or a 500 replacement, or nothing when its matchers are invalid). */
export function convertHttpRoute(ctx: WorkspaceContext, root: InputObject, fr: FlatRoute, target: Target): Converted {
  const t = fr.table;
  const name = `${fr.name}-${t.metadata.name}`;
  const m = createMatches(fr.matchers, `${fr.path}/matchers`, target.sourceLabels);
  if ("error" in m) {
    return { route: undefined, subsets: [], failed: true, diagnostics: [ctx.diag(t, TranslateCode.InvalidField, Severity.Error, m.path, `${m.error}; the route is dropped (a 500 replacement would catch requests its matcher was never meant to see). Fix the matcher.`)] };
  }
  const errors: Diagnostic[] = [];
  const base: Record<string, unknown> = { name, ...(m.matches === undefined ? {} : { match: gatewayMatchPorts(ctx, t, `${fr.path}/matchers`, target, m.matches, errors) }) };
  const r = fr.route;
  const err = (code: string, path: string, msg: string): void => {
    errors.push(ctx.diag(t, code, Severity.Error, path, msg));
  };
  let action: Record<string, unknown> | undefined;
  let subsets: Emitted[] = [];
  if (r.forwardTo !== undefined) {
    const f = forwardTo(ctx, root, fr, target, err);
    if (f !== undefined) {
      action = f.action;
      subsets = f.subsets;
    }
  } else if (r.redirect !== undefined) {
    action = redirect(ctx, fr, errors);
  } else if (r.directResponse !== undefined) {
    const d = asRecord(r.directResponse);
    const status = asNumber(d.status);
    if (status === undefined || status < 200 || status > 599) err(TranslateCode.InvalidField, `${fr.path}/directResponse/status`, `directResponse.status must be a number 200–599`);
    else action = { directResponse: { status, ...(asString(d.body) === undefined ? {} : { body: { string: asString(d.body) } }) } };
  } else if (r.graphql === undefined) {
    err(TranslateCode.InvalidField, fr.path, `this route has no action; set one of forwardTo, redirect, directResponse or delegate (a route that only carries labels for policies still needs somewhere to send its requests)`);
  } else {
    err(TranslateCode.UnsupportedField, fr.path, `this route has no action gitmesh can translate (supported: forwardTo, redirect, directResponse, delegate)`);
  }
  const fatal = errors.filter((d) => d.severity === Severity.Error);
  if (action === undefined || fatal.length > 0) {
    const replaced = { ...base, directResponse: { status: 500, body: { string: REPLACEMENT_BODY } } };
    const diag = ctx.diag(t, TranslateCode.RouteReplacement, Severity.Error, fr.path, `route "${fr.name}" of RouteTable ${t.metadata.namespace ?? ""}/${t.metadata.name} could not be translated for cluster "${target.cluster}" and answers 500 instead (failureMode ROUTE_REPLACEMENT). Fix the error(s) reported on this route.`);
    return { route: replaced, subsets: [], failed: true, diagnostics: [...errors, diag] };
  }
  return { route: { ...base, ...action }, subsets, failed: false, diagnostics: errors };
}

function redirect(ctx: WorkspaceContext, fr: FlatRoute, diagnostics: Diagnostic[]): Record<string, unknown> {
  const d = asRecord(fr.route.redirect);
  diagnostics.push(...reportUnsupported(ctx, fr.table, d, `${fr.path}/redirect`, ["hostRedirect", "pathRedirect", "responseCode"]));
  const code = REDIRECT_CODES[asString(d.responseCode) ?? "MOVED_PERMANENTLY"] ?? 301;
  const out: Record<string, unknown> = { redirectCode: code };
  const host = asString(d.hostRedirect);
  const path = asString(d.pathRedirect);
  if (host !== undefined) out.authority = host;
  if (path !== undefined) out.uri = path;
  return { redirect: out };
}

type ErrFn = (code: string, path: string, msg: string) => void;

function forwardTo(ctx: WorkspaceContext, root: InputObject, fr: FlatRoute, target: Target, err: ErrFn): { action: Record<string, unknown>; subsets: Emitted[] } | undefined {
  const cluster = target.cluster;
  const f = asRecord(fr.route.forwardTo);
  const path = `${fr.path}/forwardTo`;
  const t = fr.table;
  for (const k of Object.keys(f)) {
    if (!FORWARD_FIELDS.includes(k) && f[k] !== undefined && f[k] !== false) err(TranslateCode.UnsupportedField, `${path}/${k}`, `forwardTo.${k} is not supported by gitmesh`);
  }
  let dests = asArray(f.destinations).map((d, i) => ({ raw: d, path: `${path}/destinations/${i}`, owner: t }));
  if (dests.length === 0) {
    // route_table.proto: "Routes that do not specify a destination forward traffic to this
    // destination" — the defaultDestination of the table that defines the route (a delegated
    // child's own; Gloo's CRD requires it there). A child without one falls back to the root's.
    const owner = isSet(asRecord(t.spec).defaultDestination) ? t : root;
    const def = asRecord(owner.spec).defaultDestination;
    if (!isSet(def)) {
      err(TranslateCode.InvalidField, `${path}/destinations`, `forwardTo has no destinations and the route table has no defaultDestination; add one of them`);
      return undefined;
    }
    dests = [{ raw: def, path: "/spec/defaultDestination", owner }];
  }
  const weights = splitWeights(dests.map((d) => asNumber(asRecord(d.raw).weight)));
  if (typeof weights === "string") {
    err(TranslateCode.InvalidWeights, `${path}/destinations`, weights);
    return undefined;
  }
  const route: Record<string, unknown>[] = [];
  const subsets: Emitted[] = [];
  let ok = true;
  for (const [i, d] of dests.entries()) {
    const raw = asRecord(d.raw);
    for (const k of Object.keys(raw)) if (!DEST_FIELDS.includes(k) && !LAMBDA_FIELDS.includes(k)) err(TranslateCode.UnsupportedField, `${d.path}/${k}`, `destination field "${k}" is not supported by gitmesh`);
    const res = resolveDestination(ctx, d.owner, raw, d.path, cluster);
    if ("error" in res) {
      err(res.code, res.path, res.error);
      ok = false;
      continue;
    }
    const destination: Record<string, unknown> = { host: res.host, ...(res.port === undefined ? {} : { port: { number: res.port } }) };
    const subset = asLabels(raw.subset);
    if (subset !== undefined && Object.keys(subset).length > 0) {
      if (res.service === undefined) {
        err(TranslateCode.UnsupportedField, `${d.path}/subset`, `subsets are supported for Kubernetes Service destinations only`);
        ok = false;
        continue;
      }
      const sname = subsetName(subset);
      const key = `${res.host}|${sname}`;
      const canonical = JSON.stringify(Object.entries(subset).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
      const prev = target.subsetNames?.get(key);
      if (prev !== undefined && prev !== canonical) {
        err(TranslateCode.InvalidField, `${d.path}/subset`, `subset labels ${canonical} map to DestinationRule subset "${sname}", already used for labels ${prev} of ${res.host}; use label values that differ in more than punctuation`);
        ok = false;
        continue;
      }
      target.subsetNames?.set(key, canonical);
      destination.subset = sname;
      subsets.push(subsetRule(ctx, res.service, cluster, subset, t));
    }
    route.push({ destination, ...(dests.length > 1 ? { weight: weights[i] } : {}) });
  }
  if (!ok) return undefined;
  const rewrite: Record<string, unknown> = {};
  const pr = asString(f.pathRewrite);
  if (pr !== undefined) rewrite.uri = pr;
  if (f.regexRewrite !== undefined) {
    const rr = asRecord(f.regexRewrite);
    rewrite.uriRegexRewrite = { match: asString(asRecord(rr.pattern).regex) ?? "", rewrite: asString(rr.substitution) ?? "" };
  }
  const hr = asString(f.hostRewrite);
  if (hr !== undefined) rewrite.authority = hr;
  return { action: { route, ...(Object.keys(rewrite).length > 0 ? { rewrite } : {}) }, subsets };
}

/**
 * Gloo weights: the given weights must not exceed 100; the remainder is split over destinations
 * without a weight (at least 1 each, the first ones get the rounding). All weighted ⇒ must sum to 100.
 */
export function splitWeights(given: readonly (number | undefined)[]): number[] | string {
  if (given.length <= 1) return given.map(() => 100);
  const sum = given.reduce<number>((a, w) => a + (w ?? 0), 0);
  const unweighted = given.filter((w) => w === undefined).length;
  if (sum > 100) return `destination weights sum to ${sum}, over 100; make them sum to 100`;
  if (unweighted === 0) {
    if (sum !== 100) return `destination weights sum to ${sum}; make them sum to 100, or leave some destinations without a weight to take the remainder`;
    return given.map((w) => w ?? 0);
  }
  const rest = 100 - sum;
  if (rest < unweighted) return `destination weights leave ${rest} for ${unweighted} destination(s) without a weight; each needs at least 1`;
  const share = Math.floor(rest / unweighted);
  let extra = rest - share * unweighted;
  return given.map((w) => {
    if (w !== undefined) return w;
    const v = share + (extra > 0 ? 1 : 0);
    if (extra > 0) extra--;
    return v;
  });
}

type Resolved = { readonly host: string; readonly port?: number; readonly service?: DiscoveredService } | { readonly error: string; readonly path: string; readonly code: string };

/** A DestinationReference (Service, VirtualDestination or ExternalService) → Istio host and port, in one cluster. */
function visibleService(ctx: WorkspaceContext, cluster: string, ns: string, name: string): DiscoveredService | undefined {
  const svc = ctx.service(cluster, ns, name);
  return svc !== undefined && ctx.serviceVisible(cluster, svc) ? svc : undefined;
}

/**
 * The Service a destination without `ref.cluster` means: the one in the route's own cluster, else in
 * the workspace's other clusters, else in any other cluster (in index order). Searched in place — it
 * runs for every destination of every route in every cluster, and is found in the first cluster nearly
 * always, so no list of the candidate clusters is built (that list was 134 MB per translation of the
 * large fleet, #20).
 */
function nearestService(ctx: WorkspaceContext, cluster: string, ns: string, name: string): DiscoveredService | undefined {
  const here = visibleService(ctx, cluster, ns, name);
  if (here !== undefined) return here;
  const own = ctx.workspace.clusters;
  for (const c of own) {
    if (c === cluster) continue;
    const svc = visibleService(ctx, c, ns, name);
    if (svc !== undefined) return svc;
  }
  for (const c of ctx.index.clusters) {
    if (c === cluster || own.includes(c)) continue;
    const svc = visibleService(ctx, c, ns, name);
    if (svc !== undefined) return svc;
  }
  return undefined;
}

export function resolveDestination(ctx: WorkspaceContext, owner: InputObject, raw: Record<string, unknown>, path: string, cluster: string): Resolved {
  if (raw.awsLambda !== undefined || raw.function !== undefined || raw.kind === "CLOUD_PROVIDER") {
    const at = raw.awsLambda !== undefined ? `${path}/awsLambda` : raw.function !== undefined ? `${path}/function` : `${path}/kind`;
    return {
      code: TranslateCode.NeedsGlooDataPlane,
      path: at,
      error: `this destination is an AWS Lambda function (CloudProvider). Gloo invokes Lambdas from its own Envoy build (Gloo's data plane, with AWS request signing); upstream Istio cannot, so gitmesh cannot translate it. Route to a Service, VirtualDestination or ExternalService (e.g. an API Gateway in front of the function), or leave this route table to Gloo Gateway`,
    };
  }
  const ref = asRecord(raw.ref);
  const name = asString(ref.name);
  const ns = asString(ref.namespace) ?? owner.metadata.namespace ?? ctx.index.adminNamespace;
  const kind = asString(raw.kind) ?? "SERVICE";
  const portSel = asRecord(raw.port);
  const number = asNumber(portSel.number);
  const pname = asString(portSel.name);
  if (name === undefined) return { code: TranslateCode.InvalidField, path: `${path}/ref`, error: "destination has no ref.name" };
  if (kind === "SERVICE") {
    const refCluster = asString(ref.cluster);
    const found = refCluster !== undefined ? visibleService(ctx, refCluster, ns, name) : nearestService(ctx, cluster, ns, name);
    if (found === undefined) {
      return { code: TranslateCode.DestinationNotFound, path: `${path}/ref`, error: `Service ${ns}/${name} is not in discovery${refCluster === undefined ? "" : ` of cluster "${refCluster}"`} or not visible to workspace "${ctx.workspace.name}" (it must be in the workspace or exported to it and imported)` };
    }
    const port = number !== undefined ? found.ports.find((p) => p.port === number) : pname !== undefined ? found.ports.find((p) => p.name === pname) : found.ports.length === 1 ? found.ports[0] : undefined;
    if (port === undefined) {
      return { code: TranslateCode.PortNotFound, path: `${path}/port`, error: `Service ${ns}/${name} has no port ${number ?? pname ?? "(none given, and it has several)"}; use one of ${found.ports.map((p) => `${p.port}${p.name === undefined ? "" : ` (${p.name})`}`).join(", ") || "(no ports)"}` };
    }
    return { host: serviceHost(name, ns), port: port.port, service: found };
  }
  const gkind = kind === "VIRTUAL_DESTINATION" ? "VirtualDestination" : kind === "EXTERNAL_SERVICE" ? "ExternalService" : undefined;
  if (gkind === undefined) return { code: TranslateCode.UnsupportedField, path: `${path}/kind`, error: `destination kind ${kind} is not supported; use SERVICE, VIRTUAL_DESTINATION or EXTERNAL_SERVICE` };
  const obj = ctx.visible(gkind).find((o) => o.metadata.name === name && (o.metadata.namespace ?? ctx.index.adminNamespace) === ns);
  if (obj === undefined) return { code: TranslateCode.DestinationNotFound, path: `${path}/ref`, error: `${gkind} ${ns}/${name} does not exist or is not visible to workspace "${ctx.workspace.name}" (export it and import it)` };
  const spec = asRecord(obj.spec);
  const host = asString(asArray(spec.hosts)[0]);
  if (host === undefined) return { code: TranslateCode.DestinationNotFound, path: `${path}/ref`, error: `${gkind} ${ns}/${name} has no hosts` };
  const ports = asArray(spec.ports).map(asRecord);
  const port = number !== undefined ? ports.find((p) => asNumber(p.number) === number) : pname !== undefined ? ports.find((p) => asString(p.name) === pname) : ports.length === 1 ? ports[0] : undefined;
  if (port === undefined) return { code: TranslateCode.PortNotFound, path: `${path}/port`, error: `${gkind} ${ns}/${name} has no port ${number ?? pname ?? "(none given, and it has several)"}` };
  const pn = asNumber(port.number);
  return pn === undefined ? { host } : { host, port: pn };
}

function destinationResolver(ctx: WorkspaceContext, rt: InputObject, cluster: string): DestinationResolver {
  return (ref, path, policy) => {
    const r = resolveDestination(ctx, policy.metadata.namespace === undefined ? rt : policy, asRecord(ref), path, cluster);
    return "error" in r ? { error: r.error, path: r.path, code: r.code } : r.port === undefined ? { host: r.host } : { host: r.host, port: r.port };
  };
}

/** DestinationRule subset for a Service destination; merges with other subsets and destination policies of the same Service. */
function subsetRule(ctx: WorkspaceContext, svc: DiscoveredService, cluster: string, labels: Labels, table: InputObject): Emitted {
  const ws = ctx.workspace.name;
  const exportTo = [...new Set([...(ctx.workspace.namespaces.get(cluster) ?? []), svc.namespace])].sort();
  return {
    cluster,
    resource: {
      apiVersion: "networking.istio.io/v1",
      kind: "DestinationRule",
      metadata: outputMetadata(stableName(svc.name, svc.namespace, "svc", cluster, ws), svc.namespace, cluster, ws, ctx.parentOf(table)),
      spec: { exportTo, host: serviceHost(svc.name, svc.namespace), subsets: [{ labels, name: subsetName(labels) }] },
    },
  };
}

function checkGatewayRefs(ctx: WorkspaceContext, rt: InputObject): Diagnostic[] {
  const out: Diagnostic[] = [];
  asArray(asRecord(rt.spec).virtualGateways).forEach((raw, i) => {
    const ref = asRecord(raw);
    const name = asString(ref.name);
    const ns = asString(ref.namespace) ?? rt.metadata.namespace ?? ctx.index.adminNamespace;
    const vg = (ctx.index.byKind.get("VirtualGateway") ?? []).find((v) => v.metadata.name === name && (v.metadata.namespace ?? ctx.index.adminNamespace) === ns);
    if (vg === undefined) {
      out.push(ctx.diag(rt, TranslateCode.VirtualGatewayNotFound, Severity.Error, `/spec/virtualGateways/${i}`, `VirtualGateway ${ns}/${name ?? "(no name)"} does not exist; the route table is not served by it. Fix the reference or create the VirtualGateway.`));
      return;
    }
    const gwWs = ctx.ownerOf(vg);
    if (gwWs !== ctx.workspace.name && !ctx.consumersOf(ctx.selectable(rt)).includes(gwWs)) {
      out.push(ctx.diag(rt, TranslateCode.VirtualGatewayNotFound, Severity.Error, `/spec/virtualGateways/${i}`, `VirtualGateway ${ns}/${name ?? ""} belongs to workspace "${gwWs}", which cannot see this route table; export it (kind ROUTE_TABLE) to "${gwWs}" and import it there.`));
    }
  });
  return out;
}

function referencesGateway(ctx: WorkspaceContext, rt: InputObject, vg: InputObject): boolean {
  return asArray(asRecord(rt.spec).virtualGateways).some((raw) => {
    const ref = asRecord(raw);
    const ns = asString(ref.namespace) ?? rt.metadata.namespace ?? ctx.index.adminNamespace;
    const cl = asString(ref.cluster);
    return asString(ref.name) === vg.metadata.name && ns === (vg.metadata.namespace ?? ctx.index.adminNamespace) && (cl === undefined || vg.cluster === undefined || cl === vg.cluster);
  });
}

function allowedOnGateway(ctx: WorkspaceContext, rt: InputObject, vg: InputObject): boolean {
  const entries = asArray(asRecord(vg.spec).listeners).flatMap((l) => asArray(asRecord(l).allowedRouteTables).map(asRecord));
  if (entries.length === 0) return true;
  const hosts = asArray(asRecord(rt.spec).hosts).filter((h): h is string => typeof h === "string");
  return entries.some((e) => {
    const host = asString(e.host);
    const hostOk = host === undefined || hosts.some((h) => hostAllowed(host, h));
    const sel = asRecord(e.selector);
    const selOk =
      e.selector === undefined ||
      ctx
        .select("RouteTable", { labels: asLabels(sel.labels), name: asString(sel.name), namespace: asString(sel.namespace), cluster: asString(sel.cluster), workspace: asString(sel.workspace) })
        .includes(rt);
    return hostOk && selOk;
  });
}

function hostAllowed(pattern: string, host: string): boolean {
  const p = pattern.includes("/") ? pattern.slice(pattern.indexOf("/") + 1) : pattern;
  if (p === "*") return true;
  if (p.startsWith("*.")) return host.endsWith(p.slice(1));
  return p === host;
}

function isSet(v: unknown): boolean {
  return v !== undefined && v !== null;
}

function dedupe(list: readonly Diagnostic[]): Diagnostic[] {
  const seen = new Set<string>();
  return list.filter((d) => {
    const k = `${d.code}|${d.file ?? ""}|${d.path ?? ""}|${d.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
