/**
 * The traffic graph as the UI and `GET /api/traffic` show it: the workloads of every cluster (nodes)
 * and the edges between them, filtered by workspace, cluster and namespace, with each destination
 * linked to the Gloo resources that route to it (read from the rendered output: a VirtualService's
 * parent labels name the RouteTable or VirtualDestination it came from). Pure.
 */
import { workloadKey, type TrafficEdge, type WorkloadRef } from "./edges.js";

/** The minimum of a rendered Istio object this module reads. */
export interface RenderedObject {
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly labels?: Readonly<Record<string, string>>; readonly annotations?: Readonly<Record<string, string>> };
  readonly spec?: unknown;
}

/** A Gloo resource in Git that routes to a destination. */
export interface GlooRouteRef {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  /** The Gloo file, when the rendered object names it. */
  readonly file?: string;
  /** The rendered VirtualService that carries the route. */
  readonly via: string;
}

export interface TrafficNode extends WorkloadRef {
  /** Workspace owning (cluster, namespace); null when none (or several) do, or the workload is outside the mesh. */
  readonly workspace: string | null;
  /** Requests per second into and out of the workload. */
  readonly inboundRequestsPerSecond: number;
  readonly outboundRequestsPerSecond: number;
}

export interface TrafficGraphEdge extends TrafficEdge {
  /** Gloo resources that route to the destination's service in the destination's cluster. */
  readonly routedBy: readonly GlooRouteRef[];
}

export interface TrafficGraph {
  readonly nodes: readonly TrafficNode[];
  readonly edges: readonly TrafficGraphEdge[];
  readonly clusters: readonly string[];
  readonly namespaces: readonly string[];
  readonly workspaces: readonly string[];
}

export interface TrafficFilter {
  readonly workspace?: string;
  readonly cluster?: string;
  readonly namespace?: string;
}

/** Which workspace owns a namespace of a cluster (undefined: none, or several). */
export type WorkspaceOwner = (cluster: string, namespace: string) => string | undefined;

/* eslint-disable @typescript-eslint/no-explicit-any -- rendered objects are untyped JSON */
/** Hosts a VirtualService sends requests to (http, tls and tcp routes). */
export function routeDestinations(vs: RenderedObject): string[] {
  const spec = (vs.spec ?? {}) as Record<string, any>;
  const out = new Set<string>();
  for (const kind of ["http", "tls", "tcp"]) {
    for (const r of (spec[kind] ?? []) as { route?: { destination?: { host?: unknown } }[] }[]) {
      for (const d of r.route ?? []) if (typeof d.destination?.host === "string") out.add(d.destination.host);
    }
  }
  return [...out].sort();
}

/** Hosts a VirtualService answers for. */
export function routeHosts(vs: RenderedObject): string[] {
  const hosts: unknown = ((vs.spec ?? {}) as Record<string, any>).hosts;
  return Array.isArray(hosts) ? (hosts as unknown[]).filter((h): h is string => typeof h === "string").sort() : [];
}
/* eslint-enable @typescript-eslint/no-explicit-any */

/**
 * Per `cluster\0host`: the Gloo resources whose rendered VirtualServices answer for that host or send
 * requests to it, from each cluster's rendered output.
 */
export function routesByHost(outputs: Iterable<{ readonly cluster: string; readonly resources: readonly RenderedObject[] }>): Map<string, GlooRouteRef[]> {
  const out = new Map<string, Map<string, GlooRouteRef>>();
  for (const { cluster, resources } of outputs) {
    for (const r of resources) {
      if (r.kind !== "VirtualService") continue;
      const labels = r.metadata.labels ?? {};
      const kind = labels["gitmesh.io/parent-kind"];
      const name = labels["gitmesh.io/parent-name"];
      if (kind === undefined || name === undefined) continue;
      const file = r.metadata.annotations?.["gitmesh.io/source-file"];
      const ref: GlooRouteRef = { kind, namespace: labels["gitmesh.io/parent-namespace"] ?? "", name, ...(file === undefined ? {} : { file }), via: `${r.metadata.namespace ?? ""}/${r.metadata.name}` };
      for (const host of new Set([...routeHosts(r), ...routeDestinations(r)])) {
        const k = `${cluster}\u0000${host}`;
        const refs = out.get(k) ?? new Map<string, GlooRouteRef>();
        refs.set(`${ref.kind}/${ref.namespace}/${ref.name}`, refs.get(`${ref.kind}/${ref.namespace}/${ref.name}`) ?? ref);
        out.set(k, refs);
      }
    }
  }
  return new Map([...out].map(([k, refs]) => [k, [...refs.values()].sort((a, b) => `${a.kind}/${a.namespace}/${a.name}`.localeCompare(`${b.kind}/${b.namespace}/${b.name}`))]));
}

/** The graph of `edges`, filtered: an edge is kept when its source or its destination passes the filter. */
export function trafficGraph(edges: readonly TrafficEdge[], options: { readonly filter?: TrafficFilter; readonly owner?: WorkspaceOwner; readonly routes?: ReadonlyMap<string, readonly GlooRouteRef[]> } = {}): TrafficGraph {
  const filter = options.filter ?? {};
  const owner = options.owner ?? (() => undefined);
  const workspaceOf = (w: WorkloadRef) => (w.namespace === "" || w.namespace === "unknown" ? undefined : owner(w.cluster, w.namespace));
  const passes = (w: WorkloadRef) =>
    (filter.cluster === undefined || w.cluster === filter.cluster) &&
    (filter.namespace === undefined || w.namespace === filter.namespace) &&
    (filter.workspace === undefined || workspaceOf(w) === filter.workspace);
  const clusters = new Set<string>();
  const namespaces = new Set<string>();
  const workspaces = new Set<string>();
  for (const e of edges) {
    for (const w of [e.source, e.destination]) {
      if (w.cluster !== "" && w.cluster !== "unknown") clusters.add(w.cluster);
      if (w.namespace !== "" && w.namespace !== "unknown") namespaces.add(w.namespace);
      const ws = workspaceOf(w);
      if (ws !== undefined) workspaces.add(ws);
    }
  }
  const kept = edges.filter((e) => passes(e.source) || passes(e.destination));
  const nodes = new Map<string, { ref: WorkloadRef; inbound: number; outbound: number }>();
  const node = (w: WorkloadRef) => {
    const k = workloadKey(w);
    let n = nodes.get(k);
    if (n === undefined) nodes.set(k, (n = { ref: { cluster: w.cluster, namespace: w.namespace, workload: w.workload }, inbound: 0, outbound: 0 }));
    return n;
  };
  for (const e of kept) {
    node(e.source).outbound += e.requestsPerSecond;
    node(e.destination).inbound += e.requestsPerSecond;
  }
  const routes = options.routes ?? new Map<string, readonly GlooRouteRef[]>();
  return {
    nodes: [...nodes.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, n]) => ({ ...n.ref, workspace: workspaceOf(n.ref) ?? null, inboundRequestsPerSecond: n.inbound, outboundRequestsPerSecond: n.outbound })),
    edges: kept.map((e) => ({ ...e, routedBy: routes.get(`${e.destination.cluster}\u0000${e.destination.service}`) ?? [] })),
    clusters: [...clusters].sort(),
    namespaces: [...namespaces].sort(),
    workspaces: [...workspaces].sort(),
  };
}
