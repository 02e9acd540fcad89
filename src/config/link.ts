/**
 * Whole-tree stage: from the per-file records to the objects in force, with what needs every file:
 * duplicates, workspace ownership, one WorkspaceSettings per workspace, admin namespace placement,
 * and references that point at nothing. Incremental: an update re-decides only what the changed files can affect.
 */
import { sortDiagnostics, type Diagnostic } from "../core/index.js";
import { ConfigCode } from "./codes.js";
import { compileGlob } from "./ignore.js";
import { diag, isRecord, objectRef, positionOf } from "./parse-file.js";
import type { FileRecord, LoadedObject, ObjectLocation, RepoSettings } from "./types.js";

/** Kinds that live only in the admin namespace and belong to no workspace. */
export const ADMIN_ONLY_KINDS: ReadonlySet<string> = new Set(["Workspace", "KubernetesCluster", "RootTrustPolicy", "IstioLifecycleManager", "GatewayLifecycleManager"]);
export const GLOBAL_WORKSPACE_SETTINGS = "global";

export interface LinkResult {
  readonly files: Record<string, FileRecord>;
  readonly objects: Record<string, ObjectLocation>;
  readonly diagnostics: Diagnostic[];
  /** Keys whose object in force may have changed (incremental links only; a full link may have changed any). */
  readonly touchedKeys?: ReadonlySet<string>;
  /** What an update needs to re-link only what changed; kept beside the state (not part of it). */
  readonly index: LinkIndex;
}

interface Candidate {
  readonly obj: LoadedObject;
  readonly file: string;
  readonly index: number;
  readonly valid: boolean;
}

/** The link decisions about one key. */
interface KeyResult {
  /** The object in force: the first candidate (by path, then position), when it passed schema validation. */
  readonly winner?: Candidate;
  readonly workspace?: string;
  /** Duplicates of this key, admin namespace placement, ownership. */
  readonly diags: readonly Diagnostic[];
  /** References of the winner that point at nothing. */
  readonly refDiags: readonly Diagnostic[];
}

/**
 * Everything the whole-tree stage derived, by key, so that an update re-decides only the keys in
 * changed files and the objects whose references name a (kind, name) that appeared or disappeared.
 * Immutable: an update copies the maps (shallowly) and replaces entries, so a state can be updated
 * any number of times.
 */
export interface LinkIndex {
  readonly adminNamespace: string;
  readonly owner: Owner;
  /** key → every candidate (incl. duplicates and schema-invalid ones), by path then position. */
  readonly byKey: ReadonlyMap<string, readonly Candidate[]>;
  /** `kind\0name` → keys that have candidates (reference targets). */
  readonly byName: ReadonlyMap<string, ReadonlySet<string>>;
  /** `kind\0name\0namespace` → keys that have candidates. */
  readonly byNamespace: ReadonlyMap<string, ReadonlySet<string>>;
  /** `kind\0name` → keys of objects in force whose references name it. */
  readonly dependents: ReadonlyMap<string, ReadonlySet<string>>;
  readonly results: ReadonlyMap<string, KeyResult>;
  readonly settingsKeys: ReadonlySet<string>;
  readonly settingsDiags: readonly Diagnostic[];
}

export interface LinkPrevious {
  readonly files: Readonly<Record<string, FileRecord>>;
  /** The previous state's index, whose entries are reused when unchanged (fewer allocations). */
  readonly objects: Readonly<Record<string, ObjectLocation>>;
  /** The previous link index, when it is still in memory (not after a trip through JSON). */
  readonly index?: LinkIndex | undefined;
}

/** A map copied on its first write (the previous index keeps the original). */
class CopyOnWrite {
  map: Map<string, ReadonlySet<string>>;
  private copied: boolean;
  constructor(base: ReadonlyMap<string, ReadonlySet<string>> | undefined) {
    this.copied = base === undefined;
    this.map = base === undefined ? new Map<string, ReadonlySet<string>>() : (base as Map<string, ReadonlySet<string>>);
  }
  writable(): Map<string, ReadonlySet<string>> {
    if (!this.copied) {
      this.map = new Map<string, ReadonlySet<string>>(this.map);
      this.copied = true;
    }
    return this.map;
  }
}

const kindOfKey = (key: string): string => key.slice(0, key.indexOf("/"));
const nameKey = (kind: string, name: string): string => `${kind}\u0000${name}`;
const byPosition = (a: Candidate, b: Candidate): number => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.index - b.index);

/**
 * From per-file records to the objects in force and the whole-tree diagnostics. With `prev` (and its
 * index), only keys of files that differ from `prev.files` are re-decided, plus references to names
 * that appeared or disappeared; a change to a Workspace or KubernetesCluster (ownership) or to the
 * admin namespace re-links everything. Either way the result equals a full link of `files`.
 */
export function link(settings: RepoSettings, files: Readonly<Record<string, FileRecord>>, prev?: LinkPrevious): LinkResult {
  let prevIndex = prev?.index !== undefined && prev.index.adminNamespace === settings.adminNamespace ? prev.index : undefined;
  const prevFiles = prev?.files ?? {};
  const prevObjects = prev?.objects ?? {};

  // Which files changed, and the keys they hold (before and after).
  let changedPaths: string[] = [];
  const affected = new Set<string>();
  if (prevIndex) {
    for (const path of Object.keys(prevFiles)) if (files[path] !== prevFiles[path]) changedPaths.push(path);
    for (const path of Object.keys(files)) if (prevFiles[path] === undefined) changedPaths.push(path);
    for (const path of changedPaths) {
      for (const obj of prevFiles[path]?.objects ?? []) affected.add(obj.key);
      for (const obj of files[path]?.objects ?? []) affected.add(obj.key);
    }
    for (const key of affected) {
      const kind = kindOfKey(key);
      if (kind === "Workspace" || kind === "KubernetesCluster") {
        prevIndex = undefined; // ownership may change anywhere
        break;
      }
    }
  }
  const full = prevIndex === undefined;
  if (full) {
    changedPaths = Object.keys(files);
    affected.clear();
  }
  changedPaths.sort();
  const changedSet = new Set(changedPaths);

  // 1. Candidates per key.
  const byKey = new Map<string, readonly Candidate[]>(prevIndex?.byKey);
  const fresh = new Map<string, Candidate[]>();
  for (const path of changedPaths) {
    const rec = files[path];
    if (!rec) continue;
    rec.objects.forEach((obj, index) => {
      if (full) affected.add(obj.key);
      const c: Candidate = { obj, file: path, index, valid: rec.invalid.length === 0 || !rec.invalid.includes(index) };
      const list = fresh.get(obj.key);
      if (list) list.push(c);
      else fresh.set(obj.key, [c]);
    });
  }
  for (const key of affected) {
    const kept = (prevIndex?.byKey.get(key) ?? []).filter((c) => !changedSet.has(c.file));
    const added = fresh.get(key) ?? [];
    const list = kept.length === 0 ? added : added.length === 0 ? kept : [...kept, ...added].sort(byPosition);
    if (list.length > 0) byKey.set(key, list);
    else byKey.delete(key);
  }

  // Reference targets that appeared or disappeared. Sets are copied on first write in this link
  // (the previous index keeps its own), then edited in place.
  const owned = new Set<ReadonlySet<string>>();
  const edit = (cow: CopyOnWrite, name: string, key: string, add: boolean): void => {
    const old = cow.map.get(name);
    if (old !== undefined && old.has(key) === add) return;
    const map = cow.writable();
    let set: Set<string>;
    if (old !== undefined && owned.has(old)) set = old as Set<string>;
    else {
      set = new Set(old);
      owned.add(set);
      map.set(name, set);
    }
    if (add) set.add(key);
    else {
      set.delete(key);
      if (set.size === 0) map.delete(name);
    }
  };
  const byNameCow = new CopyOnWrite(prevIndex?.byName);
  const byNamespaceCow = new CopyOnWrite(prevIndex?.byNamespace);
  const changedNames = new Set<string>();
  for (const key of affected) {
    const before = prevIndex?.byKey.get(key)?.[0]?.obj;
    const after = byKey.get(key)?.[0]?.obj;
    if ((before === undefined) === (after === undefined)) continue;
    const obj = (after ?? before)!;
    const name = nameKey(obj.kind, obj.metadata.name);
    edit(byNameCow, name, key, after !== undefined);
    edit(byNamespaceCow, `${name}\u0000${obj.metadata.namespace}`, key, after !== undefined);
    changedNames.add(name);
  }
  const byName = byNameCow.map;
  const byNamespace = byNamespaceCow.map;

  // 2. Ownership rules (from the Workspaces and KubernetesClusters in force).
  let owner: Owner;
  if (prevIndex) owner = prevIndex.owner;
  else {
    const ownershipObjects: LoadedObject[] = [];
    for (const [key, list] of byKey) {
      const kind = kindOfKey(key);
      if ((kind === "Workspace" || kind === "KubernetesCluster") && list[0]!.valid) ownershipObjects.push(list[0]!.obj);
    }
    ownershipObjects.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    owner = createOwnership(settings, ownershipObjects);
  }

  // 3. Decisions for the affected keys; references of unaffected objects that name a changed target.
  const results = new Map<string, KeyResult>(prevIndex?.results);
  const dependentsCow = new CopyOnWrite(prevIndex?.dependents);
  const exists = (w: Wanted): boolean => targetExists(byName, byNamespace, byKey, w);
  const targetsOf = (r: KeyResult | undefined): Set<string> => new Set(r?.winner ? cachedReferencesOf(r.winner.obj).map((w) => nameKey(w.kind, w.name)) : []);
  for (const key of affected) {
    const old = prevIndex?.results.get(key);
    const list = byKey.get(key);
    const r = list ? decide(list, settings, owner, exists) : undefined;
    if (r) results.set(key, r);
    else results.delete(key);
    if (old?.winner === undefined && r?.winner === undefined) continue;
    const before = targetsOf(old);
    const after = targetsOf(r);
    for (const name of before) if (!after.has(name)) edit(dependentsCow, name, key, false);
    for (const name of after) if (!before.has(name)) edit(dependentsCow, name, key, true);
  }
  const dependents = dependentsCow.map;
  if (!full) {
    for (const name of changedNames) {
      for (const key of dependents.get(name) ?? []) {
        if (affected.has(key)) continue;
        const r = results.get(key)!;
        results.set(key, { ...r, refDiags: checkReferences(r.winner!, exists) });
      }
    }
  }

  // 4. One WorkspaceSettings per workspace.
  let settingsKeys: ReadonlySet<string> = prevIndex?.settingsKeys ?? new Set();
  let settingsDiags = prevIndex?.settingsDiags ?? [];
  const touched = [...affected].filter((k) => kindOfKey(k) === "WorkspaceSettings");
  if (full || touched.length > 0) {
    const keys = new Set(settingsKeys);
    for (const key of touched) {
      if (byKey.has(key)) keys.add(key);
      else keys.delete(key);
    }
    settingsKeys = keys;
    settingsDiags = checkWorkspaceSettings(keys, results, settings);
  }

  // 5. Records with the resolved workspace on each object; objects that did not change are reused.
  const outFiles: Record<string, FileRecord> = { ...files };
  const rewrite = new Set(changedPaths);
  if (!full) for (const key of affected) for (const c of byKey.get(key) ?? []) rewrite.add(c.file);
  for (const path of rewrite) {
    const rec = files[path];
    if (!rec) continue;
    let next: LoadedObject[] | undefined;
    rec.objects.forEach((obj, index) => {
      const w = results.get(obj.key)?.winner;
      const ws = w !== undefined && w.file === path && w.index === index ? results.get(obj.key)!.workspace : undefined;
      if (obj.workspace === ws) return;
      next ??= [...rec.objects];
      next[index] = withWorkspace(obj, ws);
    });
    if (next) outFiles[path] = Object.freeze({ ...rec, objects: Object.freeze(next) });
  }
  // Candidates and winners point at the objects of the output records.
  for (const key of affected) {
    const list = byKey.get(key);
    if (!list) continue;
    const next = list.map((c) => {
      const obj = outFiles[c.file]!.objects[c.index]!;
      return obj === c.obj ? c : { ...c, obj };
    });
    if (next.every((c, i) => c === list[i])) continue;
    byKey.set(key, next);
    const r = results.get(key)!;
    if (r.winner) results.set(key, { ...r, winner: next[0]! });
  }

  // 6. The index of objects in force, sorted by key (the previous one when no key or place changed).
  let reuse = !full;
  if (reuse) {
    for (const key of affected) {
      const w = results.get(key)?.winner;
      const old = prevObjects[key];
      if ((w === undefined) !== (old === undefined) || (w && old && (old.file !== w.file || old.index !== w.index))) {
        reuse = false;
        break;
      }
    }
  }
  let keys: string[];
  if (reuse) keys = [];
  else if (full) keys = [...results.keys()].filter((k) => results.get(k)!.winner !== undefined).sort();
  else {
    keys = Object.keys(prevObjects).filter((k) => !affected.has(k) || results.get(k)?.winner !== undefined);
    const present = new Set(keys);
    const added = [...affected].filter((k) => !present.has(k) && results.get(k)?.winner !== undefined);
    if (added.length > 0) keys = [...keys, ...added].sort();
  }
  const objects: Record<string, ObjectLocation> = reuse ? prevObjects : {};
  for (const key of keys) {
    const w = results.get(key)!.winner!;
    const old = prevObjects[key];
    objects[key] = old && old.file === w.file && old.index === w.index ? old : Object.freeze({ file: w.file, index: w.index });
  }

  const diagnostics: Diagnostic[] = [...settingsDiags];
  for (const r of results.values()) {
    if (r.diags.length > 0) diagnostics.push(...r.diags);
    if (r.refDiags.length > 0) diagnostics.push(...r.refDiags);
  }
  const index: LinkIndex = { adminNamespace: settings.adminNamespace, owner, byKey, byName, byNamespace, dependents, results, settingsKeys, settingsDiags };
  // Keys whose object in force may differ from the previous link: those in changed or rewritten files.
  const touchedKeys = new Set(affected);
  for (const path of rewrite) for (const obj of files[path]?.objects ?? []) touchedKeys.add(obj.key);
  return { files: outFiles, objects, diagnostics: sortDiagnostics(diagnostics), index, ...(full ? {} : { touchedKeys }) };
}

/** Duplicates, admin namespace placement, ownership and references of one key. */
function decide(list: readonly Candidate[], settings: RepoSettings, owner: Owner, exists: (w: Wanted) => boolean): KeyResult {
  const first = list[0]!;
  const diags: Diagnostic[] = [];
  for (let i = 1; i < list.length; i++) {
    const { obj, file } = list[i]!;
    diags.push({
      ...diag(
        ConfigCode.DUPLICATE_OBJECT,
        file,
        [obj.source.line, obj.source.column],
        `${describeObj(obj)} is defined twice; first at ${first.file}:${first.obj.source.line}:${first.obj.source.column}. Remove one, or rename it (this one is ignored)`,
      ),
      object: objectRef(obj),
    });
  }
  if (!first.valid) return { diags, refDiags: [] };
  const { obj } = first;
  const refDiags = checkReferences(first, exists);
  if (ADMIN_ONLY_KINDS.has(obj.kind)) {
    if (obj.metadata.namespace !== settings.adminNamespace) {
      diags.push({
        ...diag(
          ConfigCode.ADMIN_NAMESPACE_REQUIRED,
          first.file,
          positionOf(obj.positions, "/metadata/namespace"),
          `${obj.kind} ${obj.metadata.name} must be in the admin namespace ${settings.adminNamespace}, not ${obj.metadata.namespace}; change metadata.namespace (or adminNamespace in gitmesh.yaml)`,
          "/metadata/namespace",
        ),
        object: objectRef(obj),
      });
    }
    return { winner: first, diags, refDiags };
  }
  if (isGlobalSettings(obj, settings)) return { winner: first, diags, refDiags };
  const result = owner(obj.cluster, obj.metadata.namespace);
  if (result.kind === "one") return { winner: first, workspace: result.workspace, diags, refDiags };
  const where = `namespace ${obj.metadata.namespace}${obj.cluster !== undefined ? ` in cluster ${obj.cluster}` : ""}`;
  const at = positionOf(obj.positions, "/metadata/namespace");
  if (result.kind === "none") {
    diags.push({
      ...diag(
        ConfigCode.NOT_OWNED,
        first.file,
        at,
        `no Workspace owns ${where}, so ${describeObj(obj)} belongs to no workspace; add the namespace to a Workspace's spec.workloadClusters or move the object`,
        "/metadata/namespace",
      ),
      object: objectRef(obj),
    });
  } else if (obj.cluster === undefined) {
    diags.push({
      ...diag(
        ConfigCode.AMBIGUOUS_OWNER,
        first.file,
        at,
        `${where} is owned by workspaces ${result.workspaces.join(", ")} (in different clusters); add the annotation cluster.solo.io/cluster: <cluster> to ${describeObj(obj)}`,
        "/metadata/namespace",
      ),
      object: objectRef(obj),
    });
  } else {
    diags.push({
      ...diag(
        ConfigCode.OVERLAPPING_WORKSPACES,
        first.file,
        at,
        `${where} is owned by several workspaces (${result.workspaces.join(", ")}); narrow their spec.workloadClusters so one workspace owns it`,
        "/metadata/namespace",
      ),
      object: objectRef(obj),
    });
  }
  return { winner: first, diags, refDiags };
}

/** The first WorkspaceSettings in force of a workspace (by path, then position) is its one; the others are errors. */
function checkWorkspaceSettings(keys: ReadonlySet<string>, results: ReadonlyMap<string, KeyResult>, settings: RepoSettings): Diagnostic[] {
  const inForce: { c: Candidate; ws: string }[] = [];
  for (const key of keys) {
    const r = results.get(key);
    if (!r?.winner || r.workspace === undefined || isGlobalSettings(r.winner.obj, settings)) continue;
    inForce.push({ c: r.winner, ws: r.workspace });
  }
  inForce.sort((a, b) => byPosition(a.c, b.c));
  const out: Diagnostic[] = [];
  const first = new Map<string, Candidate>();
  for (const { c, ws } of inForce) {
    const f = first.get(ws);
    if (!f) {
      first.set(ws, c);
      continue;
    }
    out.push({
      ...diag(
        ConfigCode.DUPLICATE_WORKSPACE_SETTINGS,
        c.file,
        [c.obj.source.line, c.obj.source.column],
        `workspace ${ws} already has WorkspaceSettings ${f.obj.metadata.namespace}/${f.obj.metadata.name} at ${f.file}:${f.obj.source.line}:${f.obj.source.column}; merge ${c.obj.metadata.namespace}/${c.obj.metadata.name} into it`,
      ),
      object: objectRef(c.obj),
    });
  }
  return out;
}

/**
 * `obj` with its owning workspace. Copied member by member in the same order as `{ ...rest, workspace }`
 * would: V8 (Node 20) gives every object made by a literal that starts with a spread a hidden class of its
 * own, which made 1,893 of the large fleet's 2,101 objects each a class apart and every translator's
 * `o.metadata` and `o.spec` megamorphic (test/config/object-shape.test.ts).
 */
function withWorkspace(obj: LoadedObject, ws: string | undefined): LoadedObject {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(obj)) if (k !== "workspace") out[k] = obj[k as keyof LoadedObject];
  if (ws !== undefined) out.workspace = ws;
  return Object.freeze(out) as unknown as LoadedObject;
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
type Owner = (cluster: string | undefined, namespace: string) => OwnerResult;

interface WorkspaceRule {
  readonly workspace: string;
  /** Cluster names the entry matches (glob), or `undefined` when it matches by KubernetesCluster labels. */
  readonly clusterGlob?: RegExp;
  readonly clusterNames?: ReadonlySet<string>;
  readonly namespaces: readonly RegExp[];
}

/** Workspace ownership of (cluster, namespace) pairs, following Workspace.spec.workloadClusters. */
export function createOwnership(settings: RepoSettings, objects: readonly LoadedObject[]): Owner {
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

/** Whether a reference target exists (any candidate, also duplicates and invalid ones, so one error does not cascade). */
function targetExists(
  byName: ReadonlyMap<string, ReadonlySet<string>>,
  byNamespace: ReadonlyMap<string, ReadonlySet<string>>,
  byKey: ReadonlyMap<string, readonly Candidate[]>,
  w: Wanted,
): boolean {
  const name = nameKey(w.kind, w.name);
  const keys = w.namespace !== undefined ? byNamespace.get(`${name}\u0000${w.namespace}`) : byName.get(name);
  if (!keys) return false;
  if (w.cluster === undefined) return true;
  for (const key of keys) {
    const cluster = byKey.get(key)![0]!.obj.cluster; // every candidate of a key has the same kind, name, namespace and cluster
    if (cluster === undefined || cluster === w.cluster) return true;
  }
  return false;
}

/** References depend only on the object; objects of unchanged files are the same instances across updates. */
const referenceCache = new WeakMap<LoadedObject, readonly Wanted[]>();

function cachedReferencesOf(obj: LoadedObject): readonly Wanted[] {
  let refs = referenceCache.get(obj);
  if (!refs) referenceCache.set(obj, (refs = referencesOf(obj)));
  return refs;
}

function checkReferences(c: Candidate, exists: (w: Wanted) => boolean): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const w of cachedReferencesOf(c.obj)) {
    if (exists(w)) continue;
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
  return out;
}
