/**
 * Whole-tree stage: from the per-file records to the objects in force, with what needs every file:
 * duplicates, workspace ownership, one WorkspaceSettings per workspace, admin namespace placement,
 * and references that point at nothing. Cheap (no parsing), so it re-runs on every update.
 */
import type { Diagnostic } from "../core/index.js";
import { ConfigCode } from "./codes.js";
import { compileGlob } from "./ignore.js";
import { diag, isRecord, objectRef, positionOf } from "./parse-file.js";
import type { FileRecord, LoadedObject, ObjectLocation, RepoSettings } from "./types.js";

/** Kinds that live only in the admin namespace and belong to no workspace. */
export const ADMIN_ONLY_KINDS: ReadonlySet<string> = new Set(["Workspace", "KubernetesCluster", "RootTrustPolicy"]);
export const GLOBAL_WORKSPACE_SETTINGS = "global";

export interface LinkResult {
  readonly files: Record<string, FileRecord>;
  readonly objects: Record<string, ObjectLocation>;
  readonly diagnostics: Diagnostic[];
}

interface Candidate {
  readonly obj: LoadedObject;
  readonly file: string;
  readonly index: number;
  readonly valid: boolean;
}

/** `prevObjects`: the previous state's index, whose entries are reused when unchanged (fewer allocations on updates). */
export function link(settings: RepoSettings, files: Readonly<Record<string, FileRecord>>, prevObjects: Readonly<Record<string, ObjectLocation>> = {}): LinkResult {
  const diagnostics: Diagnostic[] = [];
  const paths = Object.keys(files).sort();

  // 1. Duplicates: the first object for a key (by path, then position) wins.
  const winners = new Map<string, Candidate>();
  // every candidate (incl. duplicates and invalid ones), for reference checks
  const existing: Existing = new Map();
  for (const path of paths) {
    const rec = files[path]!;
    rec.objects.forEach((obj, index) => {
      const c: Candidate = { obj, file: path, index, valid: rec.invalid.length === 0 || !rec.invalid.includes(index) };
      addExisting(existing, obj.kind, obj.metadata.name, obj.metadata.namespace, c);
      const first = winners.get(obj.key);
      if (first) {
        diagnostics.push({
          ...diag(
            ConfigCode.DUPLICATE_OBJECT,
            path,
            [obj.source.line, obj.source.column],
            `${describeObj(obj)} is defined twice; first at ${first.file}:${first.obj.source.line}:${first.obj.source.column}. Remove one, or rename it (this one is ignored)`,
          ),
          object: objectRef(obj),
        });
        return;
      }
      winners.set(obj.key, c);
    });
  }
  const inForce = [...winners.values()].filter((c) => c.valid);

  // 2. Ownership.
  const owner = createOwnership(settings, inForce.map((c) => c.obj));
  const workspaceOf = new Map<string, string | undefined>();
  for (const c of inForce) {
    const { obj } = c;
    if (ADMIN_ONLY_KINDS.has(obj.kind)) {
      if (obj.metadata.namespace !== settings.adminNamespace) {
        diagnostics.push({
          ...diag(
            ConfigCode.ADMIN_NAMESPACE_REQUIRED,
            c.file,
            positionOf(obj.positions, "/metadata/namespace"),
            `${obj.kind} ${obj.metadata.name} must be in the admin namespace ${settings.adminNamespace}, not ${obj.metadata.namespace}; change metadata.namespace (or adminNamespace in gitmesh.yaml)`,
            "/metadata/namespace",
          ),
          object: objectRef(obj),
        });
      }
      workspaceOf.set(obj.key, undefined);
      continue;
    }
    if (isGlobalSettings(obj, settings)) {
      workspaceOf.set(obj.key, undefined);
      continue;
    }
    const result = owner(obj.cluster, obj.metadata.namespace);
    if (result.kind === "one") {
      workspaceOf.set(obj.key, result.workspace);
      continue;
    }
    workspaceOf.set(obj.key, undefined);
    const where = `namespace ${obj.metadata.namespace}${obj.cluster !== undefined ? ` in cluster ${obj.cluster}` : ""}`;
    const at = positionOf(obj.positions, "/metadata/namespace");
    if (result.kind === "none") {
      diagnostics.push({
        ...diag(
          ConfigCode.NOT_OWNED,
          c.file,
          at,
          `no Workspace owns ${where}, so ${describeObj(obj)} belongs to no workspace; add the namespace to a Workspace's spec.workloadClusters or move the object`,
          "/metadata/namespace",
        ),
        object: objectRef(obj),
      });
    } else if (obj.cluster === undefined) {
      diagnostics.push({
        ...diag(
          ConfigCode.AMBIGUOUS_OWNER,
          c.file,
          at,
          `${where} is owned by workspaces ${result.workspaces.join(", ")} (in different clusters); add the annotation cluster.solo.io/cluster: <cluster> to ${describeObj(obj)}`,
          "/metadata/namespace",
        ),
        object: objectRef(obj),
      });
    } else {
      diagnostics.push({
        ...diag(
          ConfigCode.OVERLAPPING_WORKSPACES,
          c.file,
          at,
          `${where} is owned by several workspaces (${result.workspaces.join(", ")}); narrow their spec.workloadClusters so one workspace owns it`,
          "/metadata/namespace",
        ),
        object: objectRef(obj),
      });
    }
  }

  // 3. One WorkspaceSettings per workspace.
  const settingsByWorkspace = new Map<string, Candidate>();
  for (const c of inForce) {
    if (c.obj.kind !== "WorkspaceSettings" || isGlobalSettings(c.obj, settings)) continue;
    const ws = workspaceOf.get(c.obj.key);
    if (ws === undefined) continue;
    const first = settingsByWorkspace.get(ws);
    if (!first) {
      settingsByWorkspace.set(ws, c);
      continue;
    }
    diagnostics.push({
      ...diag(
        ConfigCode.DUPLICATE_WORKSPACE_SETTINGS,
        c.file,
        [c.obj.source.line, c.obj.source.column],
        `workspace ${ws} already has WorkspaceSettings ${first.obj.metadata.namespace}/${first.obj.metadata.name} at ${first.file}:${first.obj.source.line}:${first.obj.source.column}; merge ${c.obj.metadata.namespace}/${c.obj.metadata.name} into it`,
      ),
      object: objectRef(c.obj),
    });
  }

  // 4. References.
  for (const c of inForce) checkReferences(c, existing, diagnostics);

  // 5. Records with the resolved workspace on each object; objects that did not change are reused.
  const outFiles: Record<string, FileRecord> = {};
  const objects: Record<string, ObjectLocation> = {};
  const inForceKeys = new Map(inForce.map((c) => [c.obj.key, c]));
  for (const path of paths) {
    const rec = files[path]!;
    const next: LoadedObject[] = [];
    rec.objects.forEach((obj, index) => {
      const c = inForceKeys.get(obj.key);
      const isWinner = c !== undefined && c.file === path && c.index === index;
      const ws = isWinner ? workspaceOf.get(obj.key) : undefined;
      if (obj.workspace === ws) next.push(obj);
      else next.push(withWorkspace(obj, ws));
    });
    const changed = next.some((obj, i) => obj !== rec.objects[i]);
    outFiles[path] = changed ? Object.freeze({ ...rec, objects: Object.freeze(next) }) : rec;
  }
  for (const key of [...inForceKeys.keys()].sort()) {
    const c = inForceKeys.get(key)!;
    const old = prevObjects[key];
    objects[key] = old && old.file === c.file && old.index === c.index ? old : Object.freeze({ file: c.file, index: c.index });
  }
  return { files: outFiles, objects, diagnostics };
}

function withWorkspace(obj: LoadedObject, ws: string | undefined): LoadedObject {
  const { workspace: _old, ...rest } = obj;
  return Object.freeze(ws === undefined ? rest : { ...rest, workspace: ws });
}

function isGlobalSettings(obj: LoadedObject, settings: RepoSettings): boolean {
  return obj.kind === "WorkspaceSettings" && obj.metadata.name === GLOBAL_WORKSPACE_SETTINGS && obj.metadata.namespace === settings.adminNamespace;
}

export function describeObj(obj: LoadedObject): string {
  return `${obj.kind} ${obj.metadata.namespace}/${obj.metadata.name}${obj.cluster !== undefined ? ` (cluster ${obj.cluster})` : ""}`;
}

// ---------------------------------------------------------------------------------------------
// Ownership

type OwnerResult = { kind: "one"; workspace: string } | { kind: "none" } | { kind: "many"; workspaces: string[] };

interface WorkspaceRule {
  readonly workspace: string;
  /** Cluster names the entry matches (glob), or `undefined` when it matches by KubernetesCluster labels. */
  readonly clusterGlob?: RegExp;
  readonly clusterNames?: ReadonlySet<string>;
  readonly namespaces: readonly RegExp[];
}

/** Workspace ownership of (cluster, namespace) pairs, following Workspace.spec.workloadClusters. */
export function createOwnership(settings: RepoSettings, objects: readonly LoadedObject[]): (cluster: string | undefined, namespace: string) => OwnerResult {
  const clusters = objects.filter((o) => o.kind === "KubernetesCluster");
  const rules: WorkspaceRule[] = [];
  for (const ws of objects) {
    if (ws.kind !== "Workspace" || ws.metadata.namespace !== settings.adminNamespace) continue;
    const entries = isRecord(ws.spec) && Array.isArray(ws.spec.workloadClusters) ? ws.spec.workloadClusters : [];
    for (const entry of entries) {
      if (!isRecord(entry)) continue;
      const namespaces = (Array.isArray(entry.namespaces) ? entry.namespaces : [])
        .filter(isRecord)
        .map((n) => compileGlob(typeof n.name === "string" && n.name !== "" ? n.name : "*"));
      const name = typeof entry.name === "string" && entry.name !== "" ? entry.name : undefined;
      const selector = isRecord(entry.selector) ? entry.selector : undefined;
      if (name === undefined && selector && Object.keys(selector).length > 0) {
        const names = new Set(
          clusters.filter((k) => Object.entries(selector).every(([lk, lv]) => k.metadata.labels[lk] === lv)).map((k) => k.metadata.name),
        );
        rules.push({ workspace: ws.metadata.name, clusterNames: names, namespaces });
      } else {
        rules.push({ workspace: ws.metadata.name, clusterGlob: compileGlob(name ?? "*"), namespaces });
      }
    }
  }
  const cache = new Map<string, OwnerResult>();
  return (cluster, namespace) => {
    const cacheKey = `${cluster ?? ""}\u0000${namespace}`;
    const hit = cache.get(cacheKey);
    if (hit) return hit;
    const owners = new Set<string>();
    for (const r of rules) {
      if (!r.namespaces.some((re) => re.test(namespace))) continue;
      if (cluster !== undefined) {
        const ok = r.clusterNames ? r.clusterNames.has(cluster) : r.clusterGlob!.test(cluster);
        if (!ok) continue;
      } else if (r.clusterNames?.size === 0) continue; // a label selector that matches no cluster owns nothing
      owners.add(r.workspace);
    }
    const list = [...owners].sort();
    const result: OwnerResult =
      list.length === 0 ? { kind: "none" } : list.length === 1 ? { kind: "one", workspace: list[0]! } : { kind: "many", workspaces: list };
    cache.set(cacheKey, result);
    return result;
  };
}

// ---------------------------------------------------------------------------------------------
// References

interface Wanted {
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
  readonly cluster?: string;
  /** Pointer of the reference, for the diagnostic. */
  readonly pointer: string;
  readonly what: string;
}

const DESTINATION_KINDS: Readonly<Record<string, string>> = { VIRTUAL_DESTINATION: "VirtualDestination", EXTERNAL_SERVICE: "ExternalService" };

function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/** An ObjectReference: namespace (and cluster) default to the parent's. */
function objectReference(ref: unknown, kind: string, parent: LoadedObject, pointer: string, what: string, out: Wanted[]): void {
  if (!isRecord(ref)) return;
  const name = str(ref.name);
  if (name === undefined) return;
  const cluster = str(ref.cluster) ?? parent.cluster;
  out.push({ kind, name, namespace: str(ref.namespace) ?? parent.metadata.namespace, ...(cluster !== undefined ? { cluster } : {}), pointer: `${pointer}/name`, what });
}

/** An ObjectSelector that names one object (no wildcard): namespace and cluster are optional filters. */
function namedSelector(sel: unknown, kind: string, pointer: string, what: string, out: Wanted[]): void {
  if (!isRecord(sel)) return;
  const name = str(sel.name);
  if (name === undefined || name.includes("*")) return;
  const namespace = str(sel.namespace);
  const cluster = str(sel.cluster);
  out.push({
    kind,
    name,
    ...(namespace !== undefined && !namespace.includes("*") ? { namespace } : {}),
    ...(cluster !== undefined && !cluster.includes("*") ? { cluster } : {}),
    pointer: `${pointer}/name`,
    what,
  });
}

/** A DestinationSelector `{selector, kind}`: only VirtualDestinations and ExternalServices live in Git. */
function destinationSelector(ds: unknown, pointer: string, what: string, out: Wanted[]): void {
  if (!isRecord(ds)) return;
  const kind = DESTINATION_KINDS[str(ds.kind) ?? "SERVICE"];
  if (kind !== undefined) namedSelector(ds.selector, kind, `${pointer}/selector`, what, out);
}

/** A DestinationReference `{ref, kind}` (route targets, mirror destination). */
function destinationReference(dr: unknown, parent: LoadedObject, pointer: string, what: string, out: Wanted[]): void {
  if (!isRecord(dr)) return;
  const kind = DESTINATION_KINDS[str(dr.kind) ?? "SERVICE"];
  if (kind !== undefined) objectReference(dr.ref, kind, parent, `${pointer}/ref`, what, out);
}

export function referencesOf(obj: LoadedObject): Wanted[] {
  const out: Wanted[] = [];
  const spec = isRecord(obj.spec) ? obj.spec : {};
  list(spec.applyToDestinations).forEach((d, i) => destinationSelector(d, `/spec/applyToDestinations/${i}`, "applyToDestinations", out));
  list(spec.applyToRoutes).forEach((r, i) => {
    if (isRecord(r)) destinationSelector(r.withDestinations, `/spec/applyToRoutes/${i}/withDestinations`, "applyToRoutes.withDestinations", out);
  });
  list(spec.applyToRouteDestinations).forEach((r, i) => {
    if (!isRecord(r)) return;
    list(r.onDestinations).forEach((d, j) =>
      destinationSelector(d, `/spec/applyToRouteDestinations/${i}/onDestinations/${j}`, "applyToRouteDestinations.onDestinations", out),
    );
  });
  list(spec.applyToListeners).forEach((l, i) => {
    if (isRecord(l)) namedSelector(l.virtualGateway, "VirtualGateway", `/spec/applyToListeners/${i}/virtualGateway`, "applyToListeners.virtualGateway", out);
  });
  if (isRecord(spec.config)) destinationReference(spec.config.destination, obj, "/spec/config/destination", "config.destination", out);

  if (obj.kind === "RouteTable") {
    list(spec.virtualGateways).forEach((ref, i) => objectReference(ref, "VirtualGateway", obj, `/spec/virtualGateways/${i}`, "virtualGateways", out));
    destinationReference(spec.defaultDestination, obj, "/spec/defaultDestination", "defaultDestination", out);
    for (const routeType of ["http", "tcp", "tls"] as const) {
      list(spec[routeType]).forEach((route, i) => {
        if (!isRecord(route)) return;
        const base = `/spec/${routeType}/${i}`;
        if (isRecord(route.forwardTo)) {
          list(route.forwardTo.destinations).forEach((d, j) =>
            destinationReference(d, obj, `${base}/forwardTo/destinations/${j}`, `${routeType} route forwardTo`, out),
          );
        }
        if (isRecord(route.delegate)) {
          list(route.delegate.routeTables).forEach((sel, j) =>
            namedSelector(sel, "RouteTable", `${base}/delegate/routeTables/${j}`, "delegate.routeTables", out),
          );
        }
      });
    }
  } else if (obj.kind === "VirtualDestination") {
    list(spec.externalServices).forEach((sel, i) => namedSelector(sel, "ExternalService", `/spec/externalServices/${i}`, "externalServices", out));
  } else if (obj.kind === "VirtualGateway") {
    list(spec.listeners).forEach((l, i) => {
      if (!isRecord(l)) return;
      list(l.exposedExternalServices).forEach((sel, j) =>
        namedSelector(sel, "ExternalService", `/spec/listeners/${i}/exposedExternalServices/${j}`, "exposedExternalServices", out),
      );
    });
  }
  return out;
}

/** kind → name → namespace → candidates: look-ups without building key strings. */
type Existing = Map<string, Map<string, Map<string, Candidate[]>>>;

function addExisting(existing: Existing, kind: string, name: string, namespace: string, c: Candidate): void {
  let byName = existing.get(kind);
  if (!byName) existing.set(kind, (byName = new Map<string, Map<string, Candidate[]>>()));
  let byNamespace = byName.get(name);
  if (!byNamespace) byName.set(name, (byNamespace = new Map<string, Candidate[]>()));
  const list = byNamespace.get(namespace);
  if (list) list.push(c);
  else byNamespace.set(namespace, [c]);
}

function exists(existing: Existing, w: Wanted): boolean {
  const byNamespace = existing.get(w.kind)?.get(w.name);
  if (!byNamespace) return false;
  const lists = w.namespace !== undefined ? [byNamespace.get(w.namespace) ?? []] : [...byNamespace.values()];
  return lists.some((list) => list.some((e) => w.cluster === undefined || e.obj.cluster === undefined || e.obj.cluster === w.cluster));
}

/** References depend only on the object; objects of unchanged files are the same instances across updates. */
const referenceCache = new WeakMap<LoadedObject, readonly Wanted[]>();

function cachedReferencesOf(obj: LoadedObject): readonly Wanted[] {
  let refs = referenceCache.get(obj);
  if (!refs) referenceCache.set(obj, (refs = referencesOf(obj)));
  return refs;
}

function checkReferences(c: Candidate, existing: Existing, out: Diagnostic[]): void {
  for (const w of cachedReferencesOf(c.obj)) {
    const found = exists(existing, w);
    if (found) continue;
    const target = `${w.kind} ${w.namespace !== undefined ? `${w.namespace}/` : ""}${w.name}${w.cluster !== undefined ? ` in cluster ${w.cluster}` : ""}`;
    out.push({
      ...diag(
        ConfigCode.UNRESOLVED_REFERENCE,
        c.file,
        positionOf(c.obj.positions, w.pointer),
        `${w.what} of ${describeObj(c.obj)} names ${target}, which does not exist; fix the name/namespace or add the ${w.kind}`,
        w.pointer,
      ),
      object: objectRef(c.obj),
    });
  }
}
