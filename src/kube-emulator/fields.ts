/**
 * Field ownership for server-side apply, simplified: a manager owns a set of leaf paths (a path
 * ends at a scalar, a list or an empty map; LISTS ARE ATOMIC — owned as a whole, never merged by
 * key). The sets are stored in `metadata.managedFields[].fieldsV1` in the real encoding
 * (`{"f:spec":{"f:replicas":{}}}`), so clients that read them see the familiar shape.
 */
import { clone, deepEqual, dropKey, isObject, type Json, type JsonObject } from "./patch.js";

export type FieldPath = readonly string[];

/** Metadata fields that belong to the server or identify the object; never owned by a manager. */
const SERVER_METADATA = new Set(["name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp"]);

export interface ManagedEntry {
  manager: string;
  operation: "Apply" | "Update";
  apiVersion: string;
  time: string;
  paths: Map<string, FieldPath>;
}

export const pathKey = (p: FieldPath): string => JSON.stringify(p);

/** `.spec.replicas`, as the real server prints a field in conflict messages. */
export function formatPath(p: FieldPath): string {
  return p.map((s) => `.${s}`).join("");
}

/** Every leaf path of an object, skipping apiVersion, kind and server-owned metadata. */
export function leafPaths(obj: JsonObject): Map<string, FieldPath> {
  const out = new Map<string, FieldPath>();
  const walk = (v: Json, path: string[]): void => {
    if (isObject(v) && Object.keys(v).length > 0) {
      for (const [k, child] of Object.entries(v)) {
        if (path.length === 0 && (k === "apiVersion" || k === "kind")) continue;
        if (path.length === 1 && path[0] === "metadata" && SERVER_METADATA.has(k)) continue;
        walk(child, [...path, k]);
      }
      return;
    }
    if (path.length > 0) out.set(pathKey(path), path);
  };
  walk(obj, []);
  return out;
}

export function getPath(obj: Json | undefined, p: FieldPath): Json | undefined {
  let cur: Json | undefined = obj;
  for (const k of p) {
    if (!isObject(cur) || !Object.hasOwn(cur, k)) return undefined;
    cur = cur[k];
  }
  return cur;
}

/** True when one path equals the other or is a prefix of it. */
export function related(a: FieldPath, b: FieldPath): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Removes the value at `p`, then any map left empty on the way up (unless `keep` says it is owned). */
export function removePath(obj: JsonObject, p: FieldPath, keep: (p: FieldPath) => boolean): void {
  const chain: JsonObject[] = [obj];
  let cur: Json | undefined = obj;
  for (const k of p.slice(0, -1)) {
    if (!isObject(cur)) return;
    cur = cur[k];
    if (!isObject(cur)) return;
    chain.push(cur);
  }
  dropKey(chain[chain.length - 1]!, p[p.length - 1]!);
  for (let i = chain.length - 1; i > 0; i--) {
    const parentPath = p.slice(0, i);
    if (Object.keys(chain[i]!).length > 0 || keep(parentPath)) break;
    dropKey(chain[i - 1]!, p[i - 1]!);
  }
}

/** Apply-style merge: maps merge recursively; scalars and lists replace; `null` leaves the field alone. */
export function applyMerge(base: JsonObject, applied: JsonObject): JsonObject {
  const out = clone(base);
  for (const [k, v] of Object.entries(applied)) {
    if (v === null) continue;
    const cur = out[k];
    out[k] = isObject(v) && isObject(cur) ? applyMerge(cur, v) : clone(v);
  }
  return out;
}

export function toFieldsV1(paths: Iterable<FieldPath>): JsonObject {
  const root: JsonObject = {};
  for (const p of paths) {
    let cur = root;
    for (const k of p) {
      const key = `f:${k}`;
      const next = cur[key];
      if (isObject(next)) cur = next;
      else {
        const created: JsonObject = {};
        cur[key] = created;
        cur = created;
      }
    }
  }
  return root;
}

/** Reads a fieldsV1 set; `k:`/`v:`/`i:` list entries (written by real servers) collapse onto their list. */
export function fromFieldsV1(f: Json | undefined): Map<string, FieldPath> {
  const out = new Map<string, FieldPath>();
  const walk = (node: Json | undefined, path: string[]): void => {
    const keys = isObject(node) ? Object.keys(node).filter((k) => k.startsWith("f:")) : [];
    const listy = isObject(node) && Object.keys(node).some((k) => /^[kvi]:/.test(k));
    if ((keys.length === 0 || listy) && path.length > 0) {
      out.set(pathKey(path), path);
      if (listy) return;
    }
    for (const k of keys) walk((node as JsonObject)[k], [...path, k.slice(2)]);
  };
  walk(f, []);
  return out;
}

export function readManaged(meta: JsonObject): ManagedEntry[] {
  const raw = meta.managedFields;
  if (!Array.isArray(raw)) return [];
  return raw.filter(isObject).map((e) => ({
    manager: typeof e.manager === "string" ? e.manager : "",
    operation: e.operation === "Apply" ? "Apply" : "Update",
    apiVersion: typeof e.apiVersion === "string" ? e.apiVersion : "",
    time: typeof e.time === "string" ? e.time : "",
    paths: fromFieldsV1(e.fieldsV1),
  }));
}

export function writeManaged(entries: readonly ManagedEntry[]): Json[] {
  return entries
    .filter((e) => e.paths.size > 0)
    .map((e) => ({
      manager: e.manager,
      operation: e.operation,
      apiVersion: e.apiVersion,
      time: e.time,
      fieldsType: "FieldsV1",
      fieldsV1: toFieldsV1([...e.paths.values()].sort((a, b) => pathKey(a).localeCompare(pathKey(b)))),
    }));
}

export interface FieldConflict {
  readonly manager: string;
  readonly apiVersion: string;
  readonly path: FieldPath;
}

export interface ApplyResult {
  readonly object: JsonObject;
  readonly conflicts: readonly FieldConflict[];
}

/**
 * Server-side apply of `applied` by `manager` onto `live` (undefined when creating). Returns the new
 * object with its managedFields rewritten, or the conflicts (then the object must not be stored).
 */
export function serverSideApply(opts: {
  live: JsonObject | undefined;
  applied: JsonObject;
  manager: string;
  force: boolean;
  apiVersion: string;
  now: string;
}): ApplyResult {
  const { live, applied, manager, force, apiVersion, now } = opts;
  const liveMeta = live !== undefined && isObject(live.metadata) ? live.metadata : {};
  const entries = readManaged(liveMeta);
  const appliedPaths = leafPaths(applied);
  const conflicts: FieldConflict[] = [];
  for (const e of entries) {
    if (e.manager === manager && e.operation === "Apply") continue;
    for (const [qk, q] of [...e.paths]) {
      for (const p of appliedPaths.values()) {
        if (!related(p, q)) continue;
        const longer = p.length >= q.length ? p : q;
        if (deepEqual(getPath(live, longer), getPath(applied, longer))) continue; // same value: shared ownership
        if (force) e.paths.delete(qk);
        else conflicts.push({ manager: e.manager, apiVersion: e.apiVersion, path: q });
        break;
      }
    }
  }
  if (conflicts.length > 0) return { object: live ?? applied, conflicts };

  let mine = entries.find((e) => e.manager === manager && e.operation === "Apply");
  const previously = mine?.paths ?? new Map<string, FieldPath>();
  const base: JsonObject = live === undefined ? {} : clone(live);
  const ownedByOthers = (p: FieldPath): boolean =>
    entries.some((e) => e !== mine && [...e.paths.values()].some((q) => related(p, q)));
  for (const [k, p] of previously) {
    if (!appliedPaths.has(k) && !ownedByOthers(p)) {
      removePath(base, p, (pp) => ownedByOthers(pp) || [...appliedPaths.values()].some((q) => related(pp, q)));
    }
  }
  const merged = applyMerge(base, applied);
  if (mine === undefined) {
    mine = { manager, operation: "Apply", apiVersion, time: now, paths: appliedPaths };
    entries.push(mine);
  } else {
    mine.paths = appliedPaths;
    mine.time = now;
    mine.apiVersion = apiVersion;
  }
  const meta = isObject(merged.metadata) ? merged.metadata : {};
  setManaged(meta, entries);
  merged.metadata = meta;
  return { object: merged, conflicts: [] };
}

/**
 * Records a non-apply write (create, update, patch) by `manager`: the fields it changed become its
 * own (taken from anybody else), fields that disappeared are owned by nobody.
 */
export function recordUpdate(opts: {
  old: JsonObject | undefined;
  next: JsonObject;
  manager: string;
  apiVersion: string;
  now: string;
}): void {
  const { old, next, manager, apiVersion, now } = opts;
  const entries = old !== undefined && isObject(old.metadata) ? readManaged(old.metadata) : [];
  const nextPaths = leafPaths(next);
  const changed = [...nextPaths.values()].filter((p) => !deepEqual(getPath(old, p), getPath(next, p)));
  for (const e of entries) {
    for (const [k, q] of [...e.paths]) {
      const v = getPath(next, q);
      const gone = v === undefined || (isObject(v) && Object.keys(v).length > 0); // vanished, or no longer a leaf
      if (gone || (e.manager !== manager || e.operation !== "Update") && changed.some((p) => related(p, q))) e.paths.delete(k);
    }
  }
  if (changed.length > 0) {
    let mine = entries.find((e) => e.manager === manager && e.operation === "Update");
    if (mine === undefined) {
      mine = { manager, operation: "Update", apiVersion, time: now, paths: new Map() };
      entries.push(mine);
    }
    for (const p of changed) mine.paths.set(pathKey(p), p);
    mine.time = now;
  }
  const meta = isObject(next.metadata) ? next.metadata : {};
  setManaged(meta, entries);
  next.metadata = meta;
}

/** Writes managedFields, omitting the key when nobody owns anything (as the real server does). */
function setManaged(meta: JsonObject, entries: readonly ManagedEntry[]): void {
  const written = writeManaged(entries);
  if (written.length > 0) meta.managedFields = written;
  else delete meta.managedFields;
}
