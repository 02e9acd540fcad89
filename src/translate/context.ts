/**
 * Per-workspace resolution: which clusters and namespaces a workspace owns, which objects it owns,
 * which objects it sees through import/export, and how diagnostics point back at source lines.
 *
 * `indexOf(desired, discovery)` builds the shared, read-only index once per input pair (memoised
 * by identity, so `translateAll` over many workspaces does not re-index); `workspaceContext`
 * gives one workspace's view of it. Both are pure.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import { objectsOf, type DesiredInput, type DiscoveredService, type DiscoveryInput, type DiscoveryMap, type InputObject } from "./input.js";
import type { ParentRef } from "./labels.js";
import {
  asArray,
  asLabels,
  asRecord,
  asString,
  globMatch,
  labelsMatch,
  objectSelectorMatches,
  type Labels,
  type ObjectSelectorSpec,
  type Selectable,
} from "./selectors.js";

export const DEFAULT_ADMIN_NAMESPACE = "gloo-mesh";

/** Kinds shareable through WorkspaceSettings import/export, by their Gloo resource-kind name. */
export const SHAREABLE_KIND: Readonly<Record<string, string>> = {
  RouteTable: "ROUTE_TABLE",
  Service: "SERVICE",
  VirtualDestination: "VIRTUAL_DESTINATION",
  ExternalService: "EXTERNAL_SERVICE",
};

export interface WorkspaceInfo {
  readonly name: string;
  readonly object: InputObject;
  readonly labels: Labels;
  /** Clusters with at least one owned namespace entry, sorted. */
  readonly clusters: readonly string[];
  /** Cluster → owned namespaces that discovery reports there, sorted. */
  readonly namespaces: ReadonlyMap<string, readonly string[]>;
  /** The workspace's WorkspaceSettings object, if any. */
  readonly settings: InputObject | undefined;
}

export interface TranslationIndex {
  readonly adminNamespace: string;
  /** Every input object, sorted by key. */
  readonly objects: readonly InputObject[];
  readonly byKind: ReadonlyMap<string, readonly InputObject[]>;
  readonly workspaces: ReadonlyMap<string, WorkspaceInfo>;
  /** Workspace names, sorted. */
  readonly workspaceNames: readonly string[];
  /** Owning workspace per object key ('' = none). */
  readonly owner: ReadonlyMap<string, string>;
  readonly discovery: DiscoveryMap;
  /** Every known cluster (discovery ∪ KubernetesCluster objects), sorted. */
  readonly clusters: readonly string[];
  /** KubernetesCluster labels by cluster name. */
  readonly clusterLabels: ReadonlyMap<string, Labels>;
  /**
   * Identity of everything that decides workspaces, clusters and namespace ownership (Workspace,
   * WorkspaceSettings and KubernetesCluster objects, admin namespace, discovery). Two indexes
   * with the same `structure` object share it: derived tables that depend on nothing else (the
   * fleet's service index, principals, federated identities) are memoised by it, so an index
   * built after a change to an ordinary object (a policy, a route table) reuses them.
   */
  readonly structure: object;
}

const memo = new WeakMap<object, WeakMap<object, TranslationIndex>>();
/** The last index built per discovery map: the base the next index is derived from. */
const lastIndex = new WeakMap<object, TranslationIndex>();

export function indexOf(desired: DesiredInput, discovery: DiscoveryMap): TranslationIndex {
  let inner = memo.get(desired);
  if (inner === undefined) {
    inner = new WeakMap();
    memo.set(desired, inner);
  }
  let idx = inner.get(discovery);
  if (idx === undefined) {
    idx = buildIndex(desired, discovery, lastIndex.get(discovery));
    inner.set(discovery, idx);
    lastIndex.set(discovery, idx);
  }
  return idx;
}

const STRUCTURE_KINDS = ["KubernetesCluster", "Workspace", "WorkspaceSettings"] as const;

/** Whether two loaded objects are the same input (same object, or same content digest and position). */
function sameInput(a: InputObject, b: InputObject): boolean {
  if (a === b) return true;
  const da = (a as { digest?: unknown }).digest;
  const db = (b as { digest?: unknown }).digest;
  return (
    typeof da === "string" &&
    da === db &&
    a.key === b.key &&
    a.workspace === b.workspace &&
    a.cluster === b.cluster &&
    a.source.file === b.source.file &&
    a.source.line === b.source.line &&
    a.source.column === b.source.column
  );
}

function sameStructure(prev: TranslationIndex, adminNamespace: string, byKind: ReadonlyMap<string, readonly InputObject[]>): boolean {
  if (prev.adminNamespace !== adminNamespace) return false;
  for (const kind of STRUCTURE_KINDS) {
    const a = prev.byKind.get(kind) ?? [];
    const b = byKind.get(kind) ?? [];
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameInput(a[i]!, b[i]!)) return false;
  }
  return true;
}

function buildIndex(desired: DesiredInput, discovery: DiscoveryMap, prev: TranslationIndex | undefined): TranslationIndex {
  const adminNamespace = desired.adminNamespace ?? DEFAULT_ADMIN_NAMESPACE;
  const objects = [...objectsOf(desired)].sort((a, b) => cmp(a.key, b.key));
  const byKind = new Map<string, InputObject[]>();
  for (const o of objects) {
    const list = byKind.get(o.kind);
    if (list) list.push(o);
    else byKind.set(o.kind, [o]);
  }
  if (prev !== undefined && prev.discovery === discovery && sameStructure(prev, adminNamespace, byKind)) {
    // Incremental: workspaces, clusters and namespace ownership are unchanged; only ownership of
    // objects not seen before is resolved (loader-resolved owners are read from the object).
    // Ownership resolved here depends only on the key (kind, cluster, namespace) and the structure.
    const owner = new Map<string, string>();
    let partial: { name: string; entries: readonly ClusterEntry[] }[] | undefined;
    for (const o of objects) {
      let w = o.workspace ?? prev.owner.get(o.key);
      if (w === undefined) {
        partial ??= prev.workspaceNames.map((n) => ({ name: n, entries: asArray(asRecord(prev.workspaces.get(n)!.object.spec).workloadClusters).map(parseClusterEntry) }));
        w = resolveOwner(o, partial, prev.clusters, adminNamespace);
      }
      owner.set(o.key, w);
    }
    return { ...prev, objects, byKind, owner };
  }
  const clusterLabels = new Map<string, Labels>();
  for (const kc of byKind.get("KubernetesCluster") ?? []) clusterLabels.set(kc.metadata.name, kc.metadata.labels ?? {});
  const clusters = [...new Set([...discovery.keys(), ...clusterLabels.keys()])].sort(cmp);

  const wsObjects = byKind.get("Workspace") ?? [];
  const workspaces = new Map<string, WorkspaceInfo>();
  const partial: { name: string; object: InputObject; entries: readonly ClusterEntry[] }[] = [];
  for (const w of wsObjects) {
    const entries = asArray(asRecord(w.spec).workloadClusters).map(parseClusterEntry);
    partial.push({ name: w.metadata.name, object: w, entries });
  }
  const owner = new Map<string, string>();
  for (const o of objects) {
    owner.set(o.key, o.workspace ?? resolveOwner(o, partial, clusters, adminNamespace));
  }
  for (const p of partial) {
    const namespaces = new Map<string, string[]>();
    for (const cluster of clusters) {
      const labels = clusterLabels.get(cluster) ?? {};
      const snap = discovery.get(cluster);
      const owned = new Set<string>();
      for (const e of p.entries) {
        if (!globMatch(e.name, cluster) || !labelsMatch(e.selector, labels)) continue;
        for (const ns of snap?.namespaces ?? []) {
          if (e.namespaces.some((n) => globMatch(n.name, ns.name) && labelsMatch(n.labels, ns.labels))) owned.add(ns.name);
        }
      }
      if (owned.size > 0) namespaces.set(cluster, [...owned].sort(cmp));
    }
    const settings = (byKind.get("WorkspaceSettings") ?? []).find((s) => owner.get(s.key) === p.name);
    workspaces.set(p.name, {
      name: p.name,
      object: p.object,
      labels: p.object.metadata.labels ?? {},
      clusters: [...namespaces.keys()].sort(cmp),
      namespaces,
      settings,
    });
  }
  return {
    adminNamespace,
    objects,
    byKind,
    workspaces,
    workspaceNames: [...workspaces.keys()].sort(cmp),
    owner,
    discovery,
    clusters,
    clusterLabels,
    structure: {},
  };
}

interface ClusterEntry {
  readonly name: string | undefined;
  readonly selector: Labels | undefined;
  readonly namespaces: readonly { readonly name: string | undefined; readonly labels: Labels | undefined }[];
}

function parseClusterEntry(raw: unknown): ClusterEntry {
  const r = asRecord(raw);
  const nss = asArray(r.namespaces).map((n) => ({ name: asString(asRecord(n).name), labels: asLabels(asRecord(n).labels) }));
  return { name: asString(r.name), selector: asLabels(r.selector), namespaces: nss.length === 0 ? [{ name: "*", labels: undefined }] : nss };
}

/** Fallback ownership when the loader did not resolve it: the most specific matching entry wins, then workspace name. */
function resolveOwner(o: InputObject, ws: readonly { name: string; entries: readonly ClusterEntry[] }[], clusters: readonly string[], admin: string): string {
  if (o.kind === "Workspace" || o.kind === "KubernetesCluster") return "";
  const ns = o.metadata.namespace ?? admin;
  let best: { name: string; score: number } | undefined;
  for (const w of [...ws].sort((a, b) => cmp(a.name, b.name))) {
    for (const e of w.entries) {
      const clusterOk = o.cluster !== undefined ? globMatch(e.name, o.cluster) : clusters.length === 0 || clusters.some((c) => globMatch(e.name, c));
      if (!clusterOk) continue;
      for (const n of e.namespaces) {
        if (!globMatch(n.name, ns)) continue;
        const score = (n.name === undefined || n.name.includes("*") ? 0 : 2) + (e.name === undefined || e.name.includes("*") ? 0 : 1);
        if (best === undefined || score > best.score) best = { name: w.name, score };
      }
    }
  }
  return best?.name ?? "";
}

// ------------------------------------------------------------------------------------------------

/** One workspace's view of the index. */
export interface WorkspaceContext {
  readonly workspace: WorkspaceInfo;
  readonly index: TranslationIndex;
  /** Objects of a kind owned by this workspace, sorted by key. */
  own(kind: string): readonly InputObject[];
  /** Objects of a kind owned or imported (shareable kinds only), sorted by key. */
  visible(kind: string): readonly InputObject[];
  /** Workspaces (other than this one) that can see `obj` of this workspace, sorted. */
  consumersOf(obj: Selectable): readonly string[];
  /** Whether a discovered Service is visible to this workspace (owned namespace or imported). */
  serviceVisible(cluster: string, svc: DiscoveredService): boolean;
  ownerOf(obj: InputObject): string;
  selectable(obj: InputObject): Selectable;
  /** Objects of `kind` visible to this workspace matching an ObjectSelector. */
  select(kind: string, sel: ObjectSelectorSpec): readonly InputObject[];
  parentOf(obj: InputObject): ParentRef;
  /** A diagnostic attached to `obj` at JSON pointer `path`, with file and line. */
  diag(obj: InputObject, code: string, severity: Diagnostic["severity"], path: string, message: string): Diagnostic;
  snapshot(cluster: string): DiscoveryInput | undefined;
  /** A discovered Service by cluster, namespace and name (indexed once per snapshot). */
  service(cluster: string, namespace: string, name: string): DiscoveredService | undefined;
}

const serviceIndex = new WeakMap<DiscoveryInput, Map<string, DiscoveredService>>();

function serviceLookup(snap: DiscoveryInput | undefined, namespace: string, name: string): DiscoveredService | undefined {
  if (snap === undefined) return undefined;
  let m = serviceIndex.get(snap);
  if (m === undefined) {
    m = new Map();
    for (const s of snap.services) if (!m.has(`${s.namespace}/${s.name}`)) m.set(`${s.namespace}/${s.name}`, s);
    serviceIndex.set(snap, m);
  }
  return m.get(`${namespace}/${name}`);
}

const NONE: readonly InputObject[] = [];
const ownedMemo = new WeakMap<TranslationIndex, Map<string, Map<string, InputObject[]>>>();

/**
 * Objects per owning workspace and kind (each list in byKind's order), grouped once per index: every
 * workspace asks for its own objects of every kind, and filtering all objects of a kind for each of
 * them made the cost grow with workspaces × objects (100 × 2,101 lookups for the large fleet, #20).
 */
function ownedByWorkspace(index: TranslationIndex): Map<string, Map<string, InputObject[]>> {
  let m = ownedMemo.get(index);
  if (m === undefined) {
    m = new Map();
    for (const [kind, list] of index.byKind) {
      for (const o of list) {
        const w = index.owner.get(o.key) ?? "";
        let perKind = m.get(w);
        if (perKind === undefined) m.set(w, (perKind = new Map<string, InputObject[]>()));
        let objects = perKind.get(kind);
        if (objects === undefined) perKind.set(kind, (objects = []));
        objects.push(o);
      }
    }
    ownedMemo.set(index, m);
  }
  return m;
}

const ctxMemo = new WeakMap<TranslationIndex, Map<string, WorkspaceContext>>();

export function workspaceContext(index: TranslationIndex, workspace: string): WorkspaceContext | undefined {
  let m = ctxMemo.get(index);
  if (m === undefined) {
    m = new Map();
    ctxMemo.set(index, m);
  }
  const cached = m.get(workspace);
  if (cached) return cached;
  const info = index.workspaces.get(workspace);
  if (info === undefined) return undefined;
  const ctx = createContext(index, info);
  m.set(workspace, ctx);
  return ctx;
}

function createContext(index: TranslationIndex, info: WorkspaceInfo): WorkspaceContext {
  const ownerOf = (o: InputObject): string => index.owner.get(o.key) ?? "";
  const selectable = (o: InputObject): Selectable => ({
    kind: o.kind,
    name: o.metadata.name,
    namespace: o.metadata.namespace ?? index.adminNamespace,
    cluster: o.cluster ?? "",
    labels: o.metadata.labels ?? {},
    workspace: ownerOf(o),
  });
  const parentCache = new Map<InputObject, ParentRef>();
  const ownCache = new Map<string, readonly InputObject[]>();
  const own = (kind: string): readonly InputObject[] => {
    let r = ownCache.get(kind);
    if (r === undefined) {
      r = ownedByWorkspace(index).get(info.name)?.get(kind) ?? NONE;
      ownCache.set(kind, r);
    }
    return r;
  };
  const visibleCache = new Map<string, readonly InputObject[]>();
  const visible = (kind: string): readonly InputObject[] => {
    let r = visibleCache.get(kind);
    if (r === undefined) {
      r =
        SHAREABLE_KIND[kind] === undefined
          ? own(kind)
          : (index.byKind.get(kind) ?? []).filter((o) => {
              const w = ownerOf(o);
              return w === info.name || (w !== "" && shared(index, w, info.name, selectable(o)));
            });
      visibleCache.set(kind, r);
    }
    return r;
  };
  return {
    workspace: info,
    index,
    own,
    visible,
    consumersOf: (obj) => workspacePeers(index, info.name).consumers.filter((w) => shared(index, info.name, w, obj)),
    serviceVisible: (cluster, svc) => {
      const owners = namespaceOwners(index).get(cluster)?.get(svc.namespace);
      if (owners === undefined) return false;
      if (owners.includes(info.name)) return true;
      // One literal per owner, not { ...sel, workspace }: a literal that starts with a spread gets a hidden class per object.
      for (const w of owners) if (shared(index, w, info.name, { kind: "Service", name: svc.name, namespace: svc.namespace, cluster, labels: svc.labels ?? {}, workspace: w })) return true;
      return false;
    },
    ownerOf,
    selectable,
    select: (kind, sel) => visible(kind).filter((o) => objectSelectorMatches(sel, selectable(o))),
    parentOf: (o) => {
      // One ParentRef per input object, so that outputMetadata can share label maps between the outputs of one parent.
      let p = parentCache.get(o);
      if (p === undefined) {
        p = { kind: o.kind, name: o.metadata.name, namespace: o.metadata.namespace ?? index.adminNamespace, cluster: o.cluster ?? "", file: o.source.file };
        parentCache.set(o, p);
      }
      return p;
    },
    diag: (o, code, severity, path, message) => makeDiagnostic(o, code, severity, path, message, index.adminNamespace),
    snapshot: (cluster) => index.discovery.get(cluster),
    service: (cluster, namespace, name) => serviceLookup(index.discovery.get(cluster), namespace, name),
  };
}

const ownersMemo = new WeakMap<object, ReadonlyMap<string, ReadonlyMap<string, readonly string[]>>>();

/** cluster → namespace → workspaces owning it there (sorted by name); memoised per structure. */
export function namespaceOwners(index: TranslationIndex): ReadonlyMap<string, ReadonlyMap<string, readonly string[]>> {
  let m = ownersMemo.get(index.structure);
  if (m === undefined) {
    const built = new Map<string, Map<string, string[]>>();
    for (const w of index.workspaceNames) {
      for (const [cluster, nss] of index.workspaces.get(w)!.namespaces) {
        let byNs = built.get(cluster);
        if (byNs === undefined) {
          byNs = new Map();
          built.set(cluster, byNs);
        }
        for (const ns of nss) {
          const list = byNs.get(ns);
          if (list === undefined) byNs.set(ns, [w]);
          else list.push(w);
        }
      }
    }
    m = built;
    ownersMemo.set(index.structure, m);
  }
  return m;
}

const peersMemo = new WeakMap<object, Map<string, { readonly consumers: readonly string[] }>>();

/**
 * Workspaces that may import from `workspace` at all (its exportTo selects them by name/labels and
 * their importFrom selects it), sorted; the resource filters are applied by `shared`. Memoised per
 * structure: `consumersOf` then checks a handful of peers instead of every workspace.
 */
export function workspacePeers(index: TranslationIndex, workspace: string): { readonly consumers: readonly string[] } {
  let m = peersMemo.get(index.structure);
  if (m === undefined) {
    m = new Map();
    peersMemo.set(index.structure, m);
  }
  let p = m.get(workspace);
  if (p === undefined) {
    const me = index.workspaces.get(workspace);
    const consumers: string[] = [];
    if (me !== undefined) {
      const mine = sharingRules(index, workspace);
      for (const w of index.workspaceNames) {
        if (w === workspace) continue;
        const other = index.workspaces.get(w)!;
        if (selectsWorkspace(mine.exportTo, other) && selectsWorkspace(sharingRules(index, w).importFrom, me)) consumers.push(w);
      }
    }
    p = { consumers };
    m.set(workspace, p);
  }
  return p;
}

function selectsWorkspace(entries: readonly unknown[], peer: WorkspaceInfo): boolean {
  return entries.some((raw) => {
    const wsSel = asArray(asRecord(raw).workspaces);
    return (
      wsSel.length === 0 ||
      wsSel.some((w) => {
        const r = asRecord(w);
        return globMatch(asString(r.name), peer.name) && labelsMatch(asLabels(r.selector), peer.labels);
      })
    );
  });
}

/** A diagnostic on an input object, positioned at the closest known ancestor of `path`. */
export function makeDiagnostic(
  o: InputObject,
  code: string,
  severity: Diagnostic["severity"],
  path: string,
  message: string,
  adminNamespace = DEFAULT_ADMIN_NAMESPACE,
): Diagnostic {
  const [line, column] = positionOf(o, path);
  return {
    code,
    severity,
    file: o.source.file,
    line,
    column,
    path,
    message,
    object: {
      apiVersion: o.apiVersion,
      kind: o.kind,
      name: o.metadata.name,
      namespace: o.metadata.namespace ?? adminNamespace,
      ...(o.cluster === undefined ? {} : { cluster: o.cluster }),
    },
  };
}

function positionOf(o: InputObject, path: string): readonly [number, number] {
  const pos = o.positions;
  if (pos !== undefined) {
    let p = path;
    while (p !== "") {
      const hit = pos[p];
      if (hit !== undefined) return hit;
      p = p.slice(0, p.lastIndexOf("/"));
    }
  }
  return [o.source.line, o.source.column];
}

/** The `global` WorkspaceSettings (name `global` in the admin namespace), if any. */
export function globalWorkspaceSettings(index: Pick<TranslationIndex, "byKind" | "adminNamespace">): InputObject | undefined {
  return (index.byKind.get("WorkspaceSettings") ?? []).find((s) => s.metadata.name === "global" && (s.metadata.namespace ?? index.adminNamespace) === index.adminNamespace);
}

interface SharingRules {
  readonly exportTo: readonly unknown[];
  readonly importFrom: readonly unknown[];
}
const rulesMemo = new WeakMap<object, Map<string, SharingRules>>();

/**
 * A workspace's effective import/export entries: its own WorkspaceSettings' entries followed by
 * those of the `global` WorkspaceSettings, which apply to every workspace (so a global
 * `exportTo`/`importFrom` adds to, never removes, what a workspace shares). Memoised per structure.
 */
export function sharingRules(index: TranslationIndex, workspace: string): SharingRules {
  let m = rulesMemo.get(index.structure);
  if (m === undefined) {
    m = new Map();
    rulesMemo.set(index.structure, m);
  }
  let r = m.get(workspace);
  if (r === undefined) {
    const own = asRecord(index.workspaces.get(workspace)?.settings?.spec);
    const global = asRecord(globalWorkspaceSettings(index)?.spec);
    r = { exportTo: [...asArray(own.exportTo), ...asArray(global.exportTo)], importFrom: [...asArray(own.importFrom), ...asArray(global.importFrom)] };
    m.set(workspace, r);
  }
  return r;
}

/** Whether `from` exports `obj` to `to` and `to` imports it from `from` (both are needed; the `global` WorkspaceSettings' entries count for every workspace). */
export function shared(index: TranslationIndex, from: string, to: string, obj: Selectable): boolean {
  const kind = SHAREABLE_KIND[obj.kind];
  if (kind === undefined) return false;
  const fromWs = index.workspaces.get(from);
  const toWs = index.workspaces.get(to);
  if (fromWs === undefined || toWs === undefined) return false;
  return grants(sharingRules(index, from).exportTo, toWs, kind, obj) && grants(sharingRules(index, to).importFrom, fromWs, kind, obj);
}

function grants(entries: unknown, peer: WorkspaceInfo, kind: string, obj: Selectable): boolean {
  return asArray(entries).some((raw) => {
    const e = asRecord(raw);
    const wsSel = asArray(e.workspaces);
    const wsOk =
      wsSel.length === 0 ||
      wsSel.some((w) => {
        const r = asRecord(w);
        return globMatch(asString(r.name), peer.name) && labelsMatch(asLabels(r.selector), peer.labels);
      });
    if (!wsOk) return false;
    const res = asArray(e.resources);
    return (
      res.length === 0 ||
      res.some((x) => {
        const r = asRecord(x);
        const k = asString(r.kind) ?? "ALL";
        return (
          (k === "ALL" || k === kind) &&
          globMatch(asString(r.name), obj.name) &&
          globMatch(asString(r.namespace), obj.namespace) &&
          (asString(r.cluster) === undefined || obj.cluster === "" || globMatch(asString(r.cluster), obj.cluster)) &&
          labelsMatch(asLabels(r.labels), obj.labels)
        );
      })
    );
  });
}

export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * UNSUPPORTED_FIELD warnings for every set key of `value` (at JSON pointer `path`) that gitmesh does
 * not translate. Nothing is dropped silently.
 */
export function reportUnsupported(
  ctx: WorkspaceContext,
  o: InputObject,
  value: unknown,
  path: string,
  supported: readonly string[],
): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const [k, v] of Object.entries(asRecord(value))) {
    if (supported.includes(k) || v === undefined || v === null) continue;
    out.push(
      ctx.diag(
        o,
        "UNSUPPORTED_FIELD",
        Severity.Warning,
        `${path}/${k}`,
        `gitmesh does not translate "${k}" here; it has no effect on the rendered Istio configuration. Remove it, or keep it knowing it is ignored.`,
      ),
    );
  }
  return out;
}
