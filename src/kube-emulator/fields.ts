/**
 * Field ownership for server-side apply: a manager owns a set of leaf paths. A path ends at a
 * scalar, an empty map, or an atomic list; lists the schema declares `x-kubernetes-list-type: map`
 * are entered element by element, each element named by its key (`k:{"name":"app"}`), and
 * `set` lists value by value (`v:"x"`), as structured-merge-diff does; every other list is atomic
 * (owned and replaced as a whole). The sets are stored in `metadata.managedFields[].fieldsV1` in
 * the real encoding (`{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{}}}}}`).
 */
import { clone, deepEqual, dropKey, isObject, type Json, type JsonObject } from "./patch.js";
import { childSchema, elementKey, listSemantics, type Schema } from "./schema.js";

/** Path segments: a map key as is, a list element as ELEMENT + `k:<json key>` or ELEMENT + `v:<json value>`. */
export type FieldPath = readonly string[];

/** Marks a list-element segment (a map key cannot start with NUL in practice). */
const ELEMENT = "\u0000";

/**
 * The last segment of a map's own entry (fieldsV1 `.`): an Update that creates a map owns the map
 * itself besides its fields, as structured-merge-diff's comparison reports the map as added. Not a
 * leaf: it never conflicts with an applied field and removing it removes nothing.
 */
const SELF = "\u0000.";

/** Metadata fields that belong to the server or identify the object; never owned by a manager. */
const SERVER_METADATA = new Set(["name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"]);

export interface ManagedEntry {
  manager: string;
  operation: "Apply" | "Update";
  apiVersion: string;
  time: string;
  subresource?: string;
  paths: Map<string, FieldPath>;
}

export const pathKey = (p: FieldPath): string => JSON.stringify(p);

function sortedJson(o: JsonObject): string {
  return JSON.stringify(Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]!])));
}

const keySegment = (key: JsonObject): string => `${ELEMENT}k:${sortedJson(key)}`;
const valueSegment = (v: Json): string => `${ELEMENT}v:${JSON.stringify(v)}`;

function parseElement(seg: string): { kind: "k" | "v"; value: Json } | undefined {
  if (!seg.startsWith(ELEMENT)) return undefined;
  const kind = seg[1] === "k" ? "k" : "v";
  return { kind, value: JSON.parse(seg.slice(3)) as Json };
}

/** `.spec.containers[name="app"].image`, as the real server prints a field in conflict messages. */
export function formatPath(p: FieldPath): string {
  return p
    .map((s) => {
      const e = parseElement(s);
      if (e === undefined) return `.${s}`;
      if (e.kind === "v") return `[${JSON.stringify(e.value)}]`;
      return `[${Object.entries(e.value as JsonObject).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(",")}]`;
    })
    .join("");
}

/** Every leaf path of an object, skipping apiVersion, kind and server-owned metadata. */
export function leafPaths(obj: JsonObject, schema?: Schema): Map<string, FieldPath> {
  const out = new Map<string, FieldPath>();
  const walk = (v: Json, path: string[], s: Schema | undefined): void => {
    if (isObject(v) && Object.keys(v).length > 0) {
      for (const [k, child] of Object.entries(v)) {
        if (path.length === 0 && (k === "apiVersion" || k === "kind")) continue;
        if (path.length === 1 && path[0] === "metadata" && SERVER_METADATA.has(k)) continue;
        walk(child, [...path, k], childSchema(s, k));
      }
      return;
    }
    if (Array.isArray(v)) {
      const sem = listSemantics(s);
      // An empty keyed list or set owns no element (and conflicts with nobody's).
      if (v.length === 0 && sem.type !== "atomic") return;
      if (sem.type === "map") {
        const keys = v.map((el) => elementKey(el, sem.keys, s?.items));
        if (keys.every((k) => k !== undefined)) {
          v.forEach((el, i) => walk(el, [...path, keySegment(keys[i]!)], s?.items));
          return;
        }
      } else if (sem.type === "set" && v.every((el) => !isObject(el) && !Array.isArray(el))) {
        for (const el of v) out.set(pathKey([...path, valueSegment(el)]), [...path, valueSegment(el)]);
        return;
      }
    }
    if (path.length > 0) out.set(pathKey(path), path);
  };
  walk(obj, [], schema);
  return out;
}

/** Finds a list element by its segment; returns its index or -1. */
function findElement(list: readonly Json[], seg: string, s: Schema | undefined): number {
  const e = parseElement(seg)!;
  if (e.kind === "v") return list.findIndex((x) => deepEqual(x, e.value));
  const want = e.value as JsonObject;
  return list.findIndex((x) => deepEqual(elementKey(x, Object.keys(want), s?.items), want));
}

export function getPath(obj: Json | undefined, p: FieldPath, schema?: Schema): Json | undefined {
  let cur: Json | undefined = obj;
  let s = schema;
  for (const k of p) {
    if (k === SELF) return isObject(cur) ? cur : undefined;
    if (k.startsWith(ELEMENT)) {
      if (!Array.isArray(cur)) return undefined;
      const i = findElement(cur, k, s);
      if (i < 0) return undefined;
      cur = cur[i];
      s = s?.items;
      continue;
    }
    if (!isObject(cur) || !Object.hasOwn(cur, k)) return undefined;
    cur = cur[k];
    s = childSchema(s, k);
  }
  return cur;
}

/** True when one path equals the other or is a prefix of it. */
export function related(a: FieldPath, b: FieldPath): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

type Container = JsonObject | Json[];

/**
 * Removes the value at `p`, then any map or list left empty on the way up (unless `keep` says it is
 * owned). A key field of a list element stays while the element has other fields.
 */
export function removePath(obj: JsonObject, p: FieldPath, keep: (p: FieldPath) => boolean, schema?: Schema): void {
  // Every step down: the container and where the next value sits in it (a key, or an index found
  // before anything is removed: an element emptied of its key fields can no longer be found by key).
  const steps: { container: Container; at: string | number }[] = [];
  let cur: Json | undefined = obj;
  let s = schema;
  for (const k of p) {
    let at: string | number;
    let next: Json | undefined;
    if (k.startsWith(ELEMENT)) {
      if (!Array.isArray(cur)) return;
      at = findElement(cur, k, s);
      if (at < 0) return;
      next = cur[at];
      s = s?.items;
    } else {
      if (!isObject(cur) || !Object.hasOwn(cur, k)) return;
      at = k;
      next = cur[k];
      s = childSchema(s, k);
    }
    steps.push({ container: cur, at });
    cur = next;
  }
  const last = p[p.length - 1]!;
  const parentSeg = p[p.length - 2];
  const holder = steps[steps.length - 1]!.container;
  if (parentSeg !== undefined && isObject(holder)) {
    const e = parseElement(parentSeg);
    if (e?.kind === "k" && Object.hasOwn(e.value as JsonObject, last) && Object.keys(holder).some((k) => !Object.hasOwn(e.value as JsonObject, k))) return;
  }
  for (let i = steps.length - 1; i >= 0; i--) {
    const { container, at } = steps[i]!;
    if (i < steps.length - 1) {
      const child = Array.isArray(container) ? container[at as number] : container[at as string];
      const empty = Array.isArray(child) ? child.length === 0 : isObject(child) && Object.keys(child).length === 0;
      if (!empty || keep(p.slice(0, i + 1))) break;
    }
    if (Array.isArray(container)) container.splice(at as number, 1);
    else dropKey(container, at as string);
  }
}

/**
 * Apply-style merge: maps merge recursively; keyed lists merge element by element; sets take the
 * union; scalars and atomic lists replace; `null` leaves the field alone.
 */
export function applyMerge(base: JsonObject, applied: JsonObject, schema?: Schema): JsonObject {
  const out = clone(base);
  for (const [k, v] of Object.entries(applied)) {
    if (v === null) continue;
    const cur = out[k];
    const s = childSchema(schema, k);
    if (isObject(v) && isObject(cur)) out[k] = applyMerge(cur, v, s);
    else if (Array.isArray(v) && Array.isArray(cur)) out[k] = mergeList(cur, v, s);
    else out[k] = clone(v);
  }
  return out;
}

function mergeList(base: Json[], applied: Json[], s: Schema | undefined): Json[] {
  const sem = listSemantics(s);
  if (sem.type === "atomic") return clone(applied);
  const out = clone(base);
  for (const el of applied) {
    if (sem.type === "set") {
      if (!out.some((x) => deepEqual(x, el))) out.push(clone(el));
      continue;
    }
    const key = elementKey(el, sem.keys, s?.items);
    const i = key === undefined ? -1 : out.findIndex((x) => deepEqual(elementKey(x, sem.keys, s?.items), key));
    const cur = i >= 0 ? out[i] : undefined;
    if (i >= 0 && isObject(cur) && isObject(el)) out[i] = applyMerge(cur, el, s?.items);
    else out.push(clone(el));
  }
  return out;
}

export function toFieldsV1(paths: Iterable<FieldPath>): JsonObject {
  const root: JsonObject = {};
  for (const p of paths) {
    let cur = root;
    for (const k of p) {
      if (k === SELF) {
        cur["."] = {};
        break;
      }
      const element = k.startsWith(ELEMENT);
      const key = element ? k.slice(1) : `f:${k}`;
      const next = cur[key];
      if (isObject(next)) cur = next;
      else {
        const created: JsonObject = element ? { ".": {} } : {};
        cur[key] = created;
        cur = created;
      }
    }
  }
  return selfFirst(root);
}

/** The real encoding lists a node's own `.` entry before its children. */
function selfFirst(node: JsonObject): JsonObject {
  const keys = Object.keys(node).sort((a, b) => Number(b === ".") - Number(a === "."));
  return Object.fromEntries(keys.map((k) => [k, isObject(node[k]) ? selfFirst(node[k]) : node[k]!]));
}

/** Reads a fieldsV1 set (`f:` fields, `k:`/`v:` list elements; `i:` index entries collapse onto their list). */
export function fromFieldsV1(f: Json | undefined): Map<string, FieldPath> {
  const out = new Map<string, FieldPath>();
  const walk = (node: Json | undefined, path: string[]): void => {
    const keys = isObject(node) ? Object.keys(node).filter((k) => k !== ".") : [];
    // A map's own entry beside its children: the manager created the map (an Update's `.`).
    if (keys.length > 0 && isObject(node) && Object.hasOwn(node, ".") && path.length > 0 && !path[path.length - 1]!.startsWith(ELEMENT)) {
      out.set(pathKey([...path, SELF]), [...path, SELF]);
    }
    if (keys.some((k) => k.startsWith("i:"))) {
      out.set(pathKey(path), path);
      return;
    }
    if (keys.length === 0 && path.length > 0) {
      out.set(pathKey(path), path);
      return;
    }
    for (const k of keys) {
      const child = (node as JsonObject)[k];
      if (k.startsWith("f:")) walk(child, [...path, k.slice(2)]);
      else if (k.startsWith("k:") || k.startsWith("v:")) walk(child, [...path, `${ELEMENT}${k}`]);
    }
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
    ...(typeof e.subresource === "string" && e.subresource !== "" ? { subresource: e.subresource } : {}),
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
      ...(e.subresource === undefined ? {} : { subresource: e.subresource }),
    }));
}

export interface FieldConflict {
  readonly manager: string;
  readonly operation: "Apply" | "Update";
  readonly apiVersion: string;
  readonly subresource?: string;
  readonly path: FieldPath;
}

export interface ApplyResult {
  readonly object: JsonObject;
  readonly conflicts: readonly FieldConflict[];
}

/** Whether `p` names a key field of a list element (`…, k:{"name":"x"}, name`): identity, not content. */
function isKeyField(p: FieldPath): boolean {
  const parent = p[p.length - 2];
  const e = parent === undefined ? undefined : parseElement(parent);
  return e?.kind === "k" && Object.hasOwn(e.value as JsonObject, p[p.length - 1]!);
}

/**
 * Server-side apply of `applied` by `manager` onto `live` (undefined when creating). Returns the new
 * object with its managedFields rewritten, or the conflicts (then the object must not be stored).
 * `subresource` scopes the manager's entry (`status` for applies to /status).
 */
export function serverSideApply(opts: {
  live: JsonObject | undefined;
  applied: JsonObject;
  manager: string;
  force: boolean;
  apiVersion: string;
  now: string;
  schema?: Schema;
  subresource?: string;
}): ApplyResult {
  const { live, applied, manager, force, apiVersion, now, schema, subresource } = opts;
  const liveMeta = live !== undefined && isObject(live.metadata) ? live.metadata : {};
  const entries = readManaged(liveMeta);
  const appliedPaths = leafPaths(applied, schema);
  const conflicts: FieldConflict[] = [];
  const isMine = (e: ManagedEntry): boolean => e.manager === manager && e.operation === "Apply" && e.subresource === subresource;
  for (const e of entries) {
    if (isMine(e)) continue;
    for (const [qk, q] of [...e.paths]) {
      if (q[q.length - 1] === SELF) continue; // a map's own entry conflicts with no applied field
      for (const p of appliedPaths.values()) {
        if (!related(p, q)) continue;
        const longer = p.length >= q.length ? p : q;
        if (deepEqual(getPath(live, longer, schema), getPath(applied, longer, schema))) continue; // same value: shared ownership
        if (force) e.paths.delete(qk);
        else conflicts.push({ manager: e.manager, operation: e.operation, apiVersion: e.apiVersion, ...(e.subresource === undefined ? {} : { subresource: e.subresource }), path: q });
        break;
      }
    }
  }
  if (conflicts.length > 0) return { object: live ?? applied, conflicts };

  let mine = entries.find(isMine);
  const previously = mine?.paths ?? new Map<string, FieldPath>();
  const base: JsonObject = live === undefined ? {} : clone(live);
  const ownedByOthers = (p: FieldPath): boolean => entries.some((e) => e !== mine && [...e.paths.values()].some((q) => related(p, q)));
  const dropped = [...previously].filter(([k, p]) => !appliedPaths.has(k) && !ownedByOthers(p)).map(([, p]) => p);
  // Key fields last, deepest first: an element is found by its key until its other fields are gone.
  dropped.sort((a, b) => Number(isKeyField(a)) - Number(isKeyField(b)) || (isKeyField(a) ? b.length - a.length : 0));
  for (const p of dropped) {
    removePath(base, p, (pp) => ownedByOthers(pp) || [...appliedPaths.values()].some((q) => related(pp, q)), schema);
  }
  const merged = applyMerge(base, applied, schema);
  if (mine === undefined) {
    mine = { manager, operation: "Apply", apiVersion, time: now, ...(subresource === undefined ? {} : { subresource }), paths: appliedPaths };
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
  schema?: Schema;
  subresource?: string;
  /** A built-in kind: only its string maps count as created maps (see createdMaps). */
  builtIn?: boolean;
}): void {
  const { old, next, manager, apiVersion, now, schema, subresource, builtIn } = opts;
  const entries = old !== undefined && isObject(old.metadata) ? readManaged(old.metadata) : [];
  const nextPaths = leafPaths(next, schema);
  const leaves = [...nextPaths.values()].filter((p) => !deepEqual(getPath(old, p, schema), getPath(next, p, schema)));
  const changed = [...leaves, ...createdMaps(old, next, leaves, builtIn === true, schema)];
  const isMine = (e: ManagedEntry): boolean => e.manager === manager && e.operation === "Update" && e.subresource === subresource;
  for (const e of entries) {
    for (const [k, q] of [...e.paths]) {
      const v = getPath(next, q, schema);
      // Vanished, or no longer a leaf (a map's own entry stays while the map does).
      const gone = v === undefined || (q[q.length - 1] !== SELF && isObject(v) && Object.keys(v).length > 0 && !nextPaths.has(k));
      if (gone || (!isMine(e) && changed.some((p) => related(p, q)))) e.paths.delete(k);
    }
  }
  if (changed.length > 0) {
    let mine = entries.find(isMine);
    if (mine === undefined) {
      mine = { manager, operation: "Update", apiVersion, time: now, ...(subresource === undefined ? {} : { subresource }), paths: new Map() };
      entries.push(mine);
    }
    for (const p of changed) mine.paths.set(pathKey(p), p);
    mine.time = now;
  }
  const meta = isObject(next.metadata) ? next.metadata : {};
  setManaged(meta, entries);
  next.metadata = meta;
}

/** The map-typed fields of built-in kinds (Go `map[string]…`, nil until written). */
const BUILTIN_MAPS = new Set(["labels", "annotations", "data", "binaryData", "nodeSelector", "matchLabels", "limits", "requests", "capacity", "allocatable"]);

/**
 * The maps the changed leaves sit in that did not exist before: their own entries (`.`). The real
 * server compares typed objects: in a custom resource every map but `metadata` (server-owned) is
 * absent until written; in a built-in kind the non-pointer structs (spec, template, …) always exist
 * in Go, so only its string maps (labels, data, …) count — pointer structs (securityContext, …) are
 * not modelled (see the README's differences).
 */
function createdMaps(old: JsonObject | undefined, next: JsonObject, leaves: readonly FieldPath[], builtIn: boolean, schema?: Schema): FieldPath[] {
  const out = new Map<string, FieldPath>();
  for (const p of leaves) {
    for (let i = 1; i < p.length; i++) {
      const prefix = p.slice(0, i);
      const last = prefix[prefix.length - 1]!;
      if (last.startsWith(ELEMENT) || (i === 1 && last === "metadata")) continue;
      if (builtIn && !BUILTIN_MAPS.has(last)) continue;
      if (getPath(old, prefix, schema) !== undefined || !isObject(getPath(next, prefix, schema))) continue;
      const self = [...prefix, SELF];
      out.set(pathKey(self), self);
    }
  }
  return [...out.values()];
}

/** Writes managedFields, omitting the key when nobody owns anything (as the real server does). */
function setManaged(meta: JsonObject, entries: readonly ManagedEntry[]): void {
  const written = writeManaged(entries);
  if (written.length > 0) meta.managedFields = written;
  else delete meta.managedFields;
}
