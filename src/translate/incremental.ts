/**
 * Which workspaces an input change touches, so that a one-file change re-runs one workspace.
 *
 * - A changed Gloo object (added, modified or removed) touches the workspace that owns it, before
 *   and after the change, and every workspace that can see it through import/export; a route
 *   policy also touches the workspaces that see the owner's route tables (they render them on
 *   their gateways, with the owner's policies).
 * - A VirtualGateway also touches the owners of the ExternalServices whose egressGatewayRoutes name
 *   it, and the workspaces that see those ExternalServices (their AccessPolicies).
 * - An object no workspace owns (admin namespace): a RootTrustPolicy or lifecycle manager touches the workspaces that
 *   render RootTrustPolicies (the first with namespaces in each cluster, and the first of the
 *   fleet); any other unowned object touches every workspace.
 * - A change to a Workspace, WorkspaceSettings or KubernetesCluster can move ownership and
 *   sharing anywhere: it touches every workspace (old and new).
 * - A cluster's discovery change touches every workspace with namespaces in that cluster (before
 *   or after) and every workspace that imports from one of those.
 */
import { indexOf, shared, sharingRules, type TranslationIndex } from "./context.js";
import { toDesiredInput, type Desired, type DiscoveryMap, type InputObject } from "./input.js";
import { asArray, asRecord, asString } from "./selectors.js";

export interface InputChange {
  /** Keys (`<kind>/<cluster>/<namespace>/<name>`) of objects added, modified or removed. */
  readonly changedKeys?: Iterable<string>;
  /** Clusters whose discovery snapshot changed. */
  readonly discoveryClusters?: Iterable<string>;
}

/** Admin objects rendered per cluster by the first workspace with namespaces there (and reported by the first of the fleet). */
const RENDERED_PER_CLUSTER: ReadonlySet<string> = new Set(["RootTrustPolicy", "IstioLifecycleManager", "GatewayLifecycleManager"]);
const GLOBAL_KINDS: ReadonlySet<string> = new Set(["Workspace", "WorkspaceSettings", "KubernetesCluster"]);
const ROUTE_POLICY_KINDS: ReadonlySet<string> = new Set(["RetryTimeoutPolicy", "FaultInjectionPolicy", "CORSPolicy", "HeaderManipulationPolicy", "MirrorPolicy", "JWTPolicy", "CSRFPolicy", "RateLimitPolicy", "ExtAuthPolicy"]);
/** Objects policies of any workspace reference by name (RateLimitPolicy, ExtAuthPolicy `config`): a change re-renders every workspace. */
const REFERENCED_KINDS: ReadonlySet<string> = new Set(["RateLimitServerConfig", "RateLimitServerSettings", "RateLimitClientConfig", "ExtAuthServer"]);

export function affectedWorkspaces(
  previous: { readonly desired: Desired; readonly discovery: DiscoveryMap },
  next: { readonly desired: Desired; readonly discovery: DiscoveryMap },
  change: InputChange,
): string[] {
  const before = indexOf(toDesiredInput(previous.desired), previous.discovery);
  const after = indexOf(toDesiredInput(next.desired), next.discovery);
  const out = new Set<string>();
  const everything = (): string[] => [...new Set([...before.workspaceNames, ...after.workspaceNames])].sort();
  for (const key of change.changedKeys ?? []) {
    const kind = key.slice(0, key.indexOf("/"));
    if (GLOBAL_KINDS.has(kind) || REFERENCED_KINDS.has(kind)) return everything();
    for (const idx of [before, after]) {
      const obj = findByKey(idx, key);
      if (obj === undefined) continue;
      const owner = idx.owner.get(obj.key) ?? "";
      if (owner === "") {
        // No workspace owns it (an admin-namespace object): find who renders it.
        if (RENDERED_PER_CLUSTER.has(obj.kind)) for (const w of perClusterRenderers(idx)) out.add(w);
        else return everything();
        continue;
      }
      out.add(owner);
      for (const w of consumers(idx, obj, owner)) out.add(w);
      // Route policies also shape the north-south VirtualServices that other workspaces (the
      // gateway's) render from this workspace's route tables.
      if (ROUTE_POLICY_KINDS.has(obj.kind)) {
        for (const rt of idx.byKind.get("RouteTable") ?? []) if (idx.owner.get(rt.key) === owner) for (const w of consumers(idx, rt, owner)) out.add(w);
      }
      // An egress VirtualGateway shapes the egress routing of the ExternalServices that name it
      // (egressGatewayRoutes), rendered by their owners, and the AccessPolicies on them, rendered by
      // workspaces that see those ExternalServices.
      if (obj.kind === "VirtualGateway") {
        for (const es of idx.byKind.get("ExternalService") ?? []) {
          if (!namesGateway(idx, es, obj)) continue;
          const esOwner = idx.owner.get(es.key) ?? "";
          if (esOwner === "") continue;
          out.add(esOwner);
          for (const w of consumers(idx, es, esOwner)) out.add(w);
        }
      }
    }
  }
  for (const cluster of change.discoveryClusters ?? []) {
    for (const idx of [before, after]) {
      const direct = idx.workspaceNames.filter((w) => idx.workspaces.get(w)?.namespaces.has(cluster) === true);
      for (const w of direct) out.add(w);
      // Importers of a touched workspace may route to its services in that cluster.
      for (const w of idx.workspaceNames) {
        if (direct.length > 0 && !direct.includes(w) && hasImports(idx, w)) out.add(w);
      }
    }
  }
  return [...out].sort();
}

function consumers(idx: TranslationIndex, obj: InputObject, owner: string): string[] {
  const sel = { kind: obj.kind, name: obj.metadata.name, namespace: obj.metadata.namespace ?? idx.adminNamespace, cluster: obj.cluster ?? "", labels: obj.metadata.labels ?? {}, workspace: owner };
  return idx.workspaceNames.filter((w) => w !== owner && shared(idx, owner, w, sel));
}

/** Whether an ExternalService's egressGatewayRoutes reference VirtualGateway `vg` (namespace defaults to the ExternalService's). */
function namesGateway(idx: TranslationIndex, es: InputObject, vg: InputObject): boolean {
  const esNs = es.metadata.namespace ?? idx.adminNamespace;
  return asArray(asRecord(es.spec).ports).some((p) =>
    asArray(asRecord(asRecord(p).egressGatewayRoutes).virtualGatewayRefs).some((r) => {
      const ref = asRecord(r);
      return asString(ref.name) === vg.metadata.name && (asString(ref.namespace) ?? esNs) === (vg.metadata.namespace ?? idx.adminNamespace);
    }),
  );
}

function hasImports(idx: TranslationIndex, workspace: string): boolean {
  return sharingRules(idx, workspace).importFrom.length > 0;
}

/** Workspaces that render RootTrustPolicies (root-trust.ts) and lifecycle managers (lifecycle.ts): the first by name with namespaces in each cluster, and the first of the fleet (it reports the policies' diagnostics). */
function perClusterRenderers(idx: TranslationIndex): string[] {
  const out = new Set<string>();
  if (idx.workspaceNames[0] !== undefined) out.add(idx.workspaceNames[0]);
  for (const c of idx.clusters) {
    const w = idx.workspaceNames.find((n) => idx.workspaces.get(n)?.namespaces.has(c) === true);
    if (w !== undefined) out.add(w);
  }
  return [...out];
}

function findByKey(idx: TranslationIndex, key: string): InputObject | undefined {
  const kind = key.slice(0, key.indexOf("/"));
  return idx.byKind.get(kind)?.find((o) => o.key === key);
}
