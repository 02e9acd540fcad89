/**
 * Traffic-aware pull-request review (`gitmesh diff --prometheus`): which changes of a rendered diff
 * meet requests flowing now, and the current traffic of every changed route, destination and security
 * policy. Pure: the edges (trafficEdges over the last hour) and both renders are handed in.
 *
 * What counts as the traffic of an object of cluster C (Istio applies routing at the client's proxy and
 * security policy at the server's):
 * - VirtualService: requests sent from C (source_cluster) to the hosts it answers for and the hosts it
 *   routes to (destination_service); a gateway-bound one (gateways other than "mesh"): only those its
 *   gateways' namespaces send.
 * - DestinationRule: requests sent from C to its host; ServiceEntry: to its hosts.
 * - AuthorizationPolicy, PeerAuthentication, RequestAuthentication: requests received in C
 *   (destination_cluster) by the workloads of its namespace that its selector's `app` label picks (the
 *   whole namespace without a selector; in the root namespace istio-system: every workload of C).
 */
import type { ClusterDiff, DiffReport, DiffTraffic, LiveTrafficTouch, ObjectTraffic, ResourceId } from "../git-sync/index.js";
import type { TrafficEdge } from "./edges.js";
import { routeDestinations, routeHosts, type RenderedObject } from "./graph.js";

export interface TrafficReviewInput {
  readonly report: DiffReport;
  /** Rendered objects per cluster of base and head (the same renders the report compares). */
  readonly base: ReadonlyMap<string, readonly RenderedObject[]>;
  readonly head: ReadonlyMap<string, readonly RenderedObject[]>;
  readonly edges: readonly TrafficEdge[];
  /** Where the edges come from (no credentials) and their window. */
  readonly source: string;
  readonly window: string;
  /** Istio's root namespace (default istio-system): a mesh-wide policy lives there. */
  readonly rootNamespace?: string;
}

const SECURITY_KINDS: ReadonlySet<string> = new Set(["AuthorizationPolicy", "PeerAuthentication", "RequestAuthentication"]);
const ROUTED_KINDS: ReadonlySet<string> = new Set(["VirtualService", "DestinationRule", "ServiceEntry", ...SECURITY_KINDS]);

/* eslint-disable @typescript-eslint/no-explicit-any -- rendered objects are untyped JSON */
const specOf = (r: RenderedObject) => (r.spec ?? {}) as Record<string, any>;

/** Namespaces of the gateways a VirtualService binds to ("ns/name"; a bare name is in the VirtualService's namespace), or undefined for a mesh route. */
function gatewayNamespaces(r: RenderedObject): Set<string> | undefined {
  const gws = ((specOf(r).gateways ?? []) as unknown[]).filter((g): g is string => typeof g === "string" && g !== "mesh");
  if (gws.length === 0) return undefined;
  return new Set(gws.map((g) => (g.includes("/") ? g.slice(0, g.indexOf("/")) : (r.metadata.namespace ?? ""))));
}

/** Which edges an object of `cluster` governs. */
function selects(r: RenderedObject, cluster: string, rootNamespace: string): ((e: TrafficEdge) => boolean) | undefined {
  const spec = specOf(r);
  const ns = r.metadata.namespace ?? "";
  if (r.kind === "VirtualService") {
    const hosts = new Set([...routeHosts(r), ...routeDestinations(r)]);
    const from = gatewayNamespaces(r);
    return (e) => e.source.cluster === cluster && hosts.has(e.destination.service) && (from === undefined || from.has(e.source.namespace));
  }
  if (r.kind === "DestinationRule") return typeof spec.host === "string" ? (e) => e.source.cluster === cluster && e.destination.service === spec.host : undefined;
  if (r.kind === "ServiceEntry") {
    const hosts = new Set(((spec.hosts ?? []) as unknown[]).filter((h): h is string => typeof h === "string"));
    return (e) => e.source.cluster === cluster && hosts.has(e.destination.service);
  }
  if (SECURITY_KINDS.has(r.kind)) {
    const labels = ((spec.selector ?? {}) as { matchLabels?: Record<string, string> }).matchLabels ?? {};
    const app = labels.app;
    if (ns === rootNamespace && app === undefined) return (e) => e.destination.cluster === cluster;
    return (e) => e.destination.cluster === cluster && e.destination.namespace === ns && (app === undefined || e.destination.app === app || e.destination.workload === app);
  }
  return undefined;
}
/* eslint-enable @typescript-eslint/no-explicit-any */

const keyOf = (r: { kind: string; namespace: string; name: string }) => `${r.kind}\u0000${r.namespace}\u0000${r.name}`;
const describe = (r: { kind: string; namespace: string; name: string }) => `${r.kind} \`${r.namespace === "" ? r.name : `${r.namespace}/${r.name}`}\``;

function byKey(list: readonly RenderedObject[] | undefined): Map<string, RenderedObject> {
  return new Map((list ?? []).map((r) => [keyOf({ kind: r.kind, namespace: r.metadata.namespace ?? "", name: r.metadata.name }), r]));
}

function sum(edges: readonly TrafficEdge[]): { requestsPerSecond: number; errorRate: number | null } {
  let requests = 0;
  let errors = 0;
  for (const e of edges) {
    requests += e.requestsPerSecond;
    errors += e.errorsPerSecond;
  }
  return { requestsPerSecond: requests, errorRate: requests > 0 ? errors / requests : null };
}

/** The traffic part of a diff report: touches (busiest first) and per-object figures. */
export function reviewTraffic(input: TrafficReviewInput): DiffTraffic {
  const root = input.rootNamespace ?? "istio-system";
  const edges = input.edges;
  const touches: LiveTrafficTouch[] = [];
  const objects: ObjectTraffic[] = [];
  const clusters: readonly ClusterDiff[] = input.report.rejected === undefined ? input.report.clusters : [];
  for (const c of clusters) {
    const before = byKey(input.base.get(c.cluster));
    const after = byKey(input.head.get(c.cluster));
    const trafficOf = (r: RenderedObject) => {
      const pick = selects(r, c.cluster, root);
      return pick === undefined ? undefined : sum(edges.filter(pick));
    };
    const note = (id: ResourceId, r: RenderedObject | undefined) => {
      if (r === undefined || !ROUTED_KINDS.has(id.kind)) return undefined;
      const t = trafficOf(r);
      if (t !== undefined) objects.push({ ...id, cluster: c.cluster, ...t });
      return t;
    };
    for (const id of c.added) note(id, after.get(keyOf(id)));
    for (const id of c.changed) {
      const a = before.get(keyOf(id));
      const b = after.get(keyOf(id));
      const t = note(id, a);
      if (id.kind !== "VirtualService" || a === undefined || b === undefined || t === undefined) continue;
      // Re-pointed: a destination that carries traffic now is no longer routed to.
      const kept = new Set(routeDestinations(b));
      const dropped = routeDestinations(a).filter((h) => !kept.has(h));
      const from = gatewayNamespaces(a);
      const live = sum(edges.filter((e) => e.source.cluster === c.cluster && dropped.includes(e.destination.service) && (from === undefined || from.has(e.source.namespace))));
      if (live.requestsPerSecond > 0) {
        touches.push({ kind: "route-repointed", cluster: c.cluster, message: `${describe(id)} no longer routes to ${dropped.join(", ")} (now ${kept.size > 0 ? [...kept].sort().join(", ") : "nothing"})`, ...live });
      }
      const lostHosts = routeHosts(a).filter((h) => !routeHosts(b).includes(h));
      if (from !== undefined && lostHosts.length > 0 && t.requestsPerSecond > 0) {
        touches.push({ kind: "gateway-host-lost", cluster: c.cluster, message: `${describe(id)} no longer serves ${lostHosts.join(", ")} at the gateway`, ...t });
      }
    }
    for (const id of c.removed) {
      const a = before.get(keyOf(id));
      const t = note(id, a);
      if (t === undefined || t.requestsPerSecond === 0 || a === undefined) continue;
      if (id.kind === "VirtualService") {
        const gw = gatewayNamespaces(a) !== undefined;
        touches.push({
          kind: gw ? "gateway-host-lost" : "route-removed",
          cluster: c.cluster,
          message: gw ? `${describe(id)} is removed: the gateway stops serving ${routeHosts(a).join(", ")}` : `${describe(id)} is removed: requests to ${routeHosts(a).join(", ")} lose its routing`,
          ...t,
        });
      } else if (id.kind === "AuthorizationPolicy" || id.kind === "PeerAuthentication") {
        touches.push({ kind: "security-policy-removed", cluster: c.cluster, message: `${describe(id)} is removed: the requests it governs lose that policy`, ...t });
      }
    }
  }
  touches.sort((x, y) => y.requestsPerSecond - x.requestsPerSecond || (x.cluster < y.cluster ? -1 : x.cluster > y.cluster ? 1 : x.message < y.message ? -1 : 1));
  return { source: input.source, window: input.window, touches, objects };
}
