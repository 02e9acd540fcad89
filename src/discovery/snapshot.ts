/**
 * The canonical form of a discovery snapshot: every array sorted by its items' identity, no
 * duplicates, inner lists (ports, localities, addresses, hosts) sorted, object keys in canonical
 * order. Two snapshots of equal clusters are byte-identical in canonical JSON, so checksums and
 * deltas are meaningful.
 */
import { compareCodeUnits, sortKeysDeep } from "../core/index.js";
import type {
  DiscoveredGateway,
  DiscoveredGatewayPort,
  DiscoveredIstioObject,
  DiscoveredLocality,
  DiscoveredMesh,
  DiscoveredNamespace,
  DiscoveredService,
  DiscoveredServicePort,
  DiscoveredWorkload,
  DiscoverySnapshot,
} from "../model/index.js";

/** `apiVersion` of snapshot documents (files, relay messages). */
export const DISCOVERY_API_VERSION = "gitmesh.io/v1alpha1";
/** `kind` of snapshot documents. */
export const DISCOVERY_KIND = "DiscoverySnapshot";

/** A snapshot with nothing discovered yet. */
export function emptySnapshot(cluster: string): DiscoverySnapshot {
  return {
    apiVersion: DISCOVERY_API_VERSION,
    kind: DISCOVERY_KIND,
    cluster,
    namespaces: [],
    services: [],
    workloads: [],
    localities: [],
    meshes: [],
    gateways: [],
    istioObjects: [],
  };
}

/** Code-unit string order (locale independent, like Go's and the canonical JSON's): src/core's. */
export const compareStrings = compareCodeUnits;

function compareTuples(a: readonly (string | number)[], b: readonly (string | number)[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? "";
    const y = b[i] ?? "";
    if (typeof x === "number" && typeof y === "number") {
      if (x !== y) return x - y;
    } else {
      const c = compareStrings(String(x), String(y));
      if (c !== 0) return c;
    }
  }
  return 0;
}

/** API group of an apiVersion: `networking.istio.io/v1` → `networking.istio.io`, `v1` → ``. */
export function apiGroup(apiVersion: string): string {
  const slash = apiVersion.indexOf("/");
  return slash === -1 ? "" : apiVersion.slice(0, slash);
}

// ---- identities: the sort tuple of each item, and its entry key ----------------------------

export const localityTuple = (l: DiscoveredLocality): string[] => [l.region, l.zone ?? "", l.subZone ?? ""];
const namespaceTuple = (n: DiscoveredNamespace): string[] => [n.name];
const serviceTuple = (s: DiscoveredService): string[] => [s.namespace, s.name];
const workloadTuple = (w: DiscoveredWorkload): string[] => [w.namespace, w.kind, w.name];
const meshTuple = (m: DiscoveredMesh): string[] => [m.namespace, m.revision];
const gatewayTuple = (g: DiscoveredGateway): string[] => [g.namespace, g.name];
const istioTuple = (o: DiscoveredIstioObject): string[] => [apiGroup(o.apiVersion), o.kind, o.namespace, o.name];
const portTuple = (p: DiscoveredServicePort | DiscoveredGatewayPort): (string | number)[] => [p.port, p.protocol, p.name];

/**
 * The sections of a snapshot, each with its entry-key prefix and the identity of its items.
 * Entry keys: `namespace/<name>`, `service/<ns>/<name>`, `workload/<ns>/<kind>/<name>`,
 * `locality/<region>/<zone>/<subZone>`, `mesh/<ns>/<revision>`, `gateway/<ns>/<name>`,
 * `istio/<group>/<kind>/<ns>/<name>`; the cluster name and document markers are the entry `snapshot`.
 */
export const SECTIONS = {
  namespaces: { prefix: "namespace", tuple: namespaceTuple },
  services: { prefix: "service", tuple: serviceTuple },
  workloads: { prefix: "workload", tuple: workloadTuple },
  localities: { prefix: "locality", tuple: localityTuple },
  meshes: { prefix: "mesh", tuple: meshTuple },
  gateways: { prefix: "gateway", tuple: gatewayTuple },
  istioObjects: { prefix: "istio", tuple: istioTuple },
} as const;

export type SectionName = keyof typeof SECTIONS;
export const SECTION_NAMES = Object.keys(SECTIONS) as SectionName[];
export type SectionItem<S extends SectionName> = DiscoverySnapshot[S][number];

/** Entry key of one item of a section. */
export function itemKey<S extends SectionName>(section: S, item: SectionItem<S>): string {
  const tuple = (SECTIONS[section].tuple as (i: SectionItem<S>) => string[])(item);
  return `${SECTIONS[section].prefix}/${tuple.join("/")}`;
}

// ---- normalisation ----------------------------------------------------------------------
//
// Reference semantics (what the result must equal, item for item): each list is deduplicated by the
// JSON of its items' identity tuples (the last item wins) and sorted by compareTuples, inner string
// lists by code units without duplicates, then every object gets its keys in canonical order.
// Snapshots mostly arrive in that order already (files written by gitmesh, the agent's entries), so
// each list is first checked in one linear pass, and one that is strictly ascending is kept as it is:
// the reference would return its items in the same order. Only lists that fail the check are
// deduplicated and sorted (identity tuples computed once per item, decorate-sort-undecorate).

/**
 * True when the reference would keep `items` as they are: every identity tuple strictly below the
 * next. With strings and finite numbers of one type per position the order is a consistent
 * lexicographic one, so no two items compare equal, no two have the same JSON key (no duplicates),
 * and a stable sort keeps them where they are. Anything else (a non-finite number would have the
 * key `null` like a missing field) fails the check and takes the reference path.
 */
function strictlyAscending<T>(items: readonly T[], tuple: (t: T) => readonly (string | number)[]): boolean {
  let prev: readonly (string | number)[] | undefined;
  for (const item of items) {
    const t = tuple(item);
    for (let i = 0; i < t.length; i++) {
      // compareTuples reads a missing field as ""; anything but strings and finite numbers, or a
      // position whose type changes from one item to the next (no consistent order), takes the reference path
      const x = t[i] ?? "";
      if (typeof x === "number" ? !Number.isFinite(x) : typeof x !== "string") return false;
      if (prev !== undefined && typeof (prev[i] ?? "") !== typeof x) return false;
    }
    if (prev !== undefined && compareTuples(prev, t) >= 0) return false;
    prev = t;
  }
  return true;
}

/** Sorted by identity, duplicates removed (last wins); the same array when it already is. */
function sortUnique<T>(items: readonly T[], tuple: (t: T) => readonly (string | number)[]): readonly T[] {
  if (strictlyAscending(items, tuple)) return items;
  const byKey = new Map<string, { item: T; tuple: readonly (string | number)[] }>();
  for (const item of items) {
    const t = tuple(item);
    byKey.set(JSON.stringify(t), { item, tuple: t }); // last one wins
  }
  return [...byKey.values()].sort((a, b) => compareTuples(a.tuple, b.tuple)).map((x) => x.item);
}

/** Sorted by code units, duplicates removed; the same array when it already is. */
function sortedStrings(list: readonly string[]): readonly string[] {
  let ascending = list.every((x) => typeof x === "string");
  for (let i = 1; i < list.length && ascending; i++) ascending = compareStrings(list[i - 1]!, list[i]!) < 0;
  return ascending ? list : [...new Set(list)].sort(compareStrings);
}

/** `items` with `f` applied; the same array when `f` returned every item as it was. */
function mapShared<T>(items: readonly T[], f: (item: T) => T): readonly T[] {
  let out: T[] | undefined;
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const next = f(item);
    if (out === undefined && next !== item) out = items.slice(0, i);
    if (out !== undefined) out.push(next);
  }
  return out ?? items;
}

function normalizeLocalities(list: readonly DiscoveredLocality[]): readonly DiscoveredLocality[] {
  return sortUnique(list, localityTuple);
}

// Each returns the item itself when its inner lists are already canonical (keys are ordered later).
function normalizeService(s: DiscoveredService): DiscoveredService {
  const ports = sortUnique(s.ports, portTuple);
  return ports === s.ports ? s : { ...s, ports: ports as DiscoveredServicePort[] };
}

function normalizeWorkload(w: DiscoveredWorkload): DiscoveredWorkload {
  const localities = normalizeLocalities(w.localities);
  return localities === w.localities ? w : { ...w, localities: localities as DiscoveredLocality[] };
}

function normalizeGateway(g: DiscoveredGateway): DiscoveredGateway {
  const ports = sortUnique(g.ports, portTuple);
  const addresses = sortedStrings(g.addresses);
  return ports === g.ports && addresses === g.addresses ? g : { ...g, ports: ports as DiscoveredGatewayPort[], addresses: addresses as string[] };
}

function normalizeIstioObject(o: DiscoveredIstioObject): DiscoveredIstioObject {
  if (o.hosts === undefined) return o;
  const hosts = sortedStrings(o.hosts);
  return hosts === o.hosts ? o : { ...o, hosts: hosts as string[] };
}

const ITEM_NORMALIZERS: { readonly [S in SectionName]: (item: SectionItem<S>) => SectionItem<S> } = {
  namespaces: (n) => n,
  services: normalizeService,
  workloads: normalizeWorkload,
  localities: (l) => l,
  meshes: (m) => m,
  gateways: normalizeGateway,
  istioObjects: normalizeIstioObject,
};

/** One item in the canonical form it has inside a normalised snapshot (inner lists sorted, keys in canonical order; a new object). */
export function normalizeItem<S extends SectionName>(section: S, item: SectionItem<S>): SectionItem<S> {
  return sortKeysDeep((ITEM_NORMALIZERS[section] as (i: SectionItem<S>) => SectionItem<S>)(item));
}

// The last few key lists seen out of order, with their sorted order: the items of a section mostly
// share a handful of shapes (JSON.parse gives every object the key order of its text), so most
// objects find theirs here and are not sorted again. A memo: it never changes a result.
const SHAPES_KEPT = 32;
const shapeKeys: string[][] = [];
const shapeOrder: string[][] = [];

/** Keys in code-unit order; `keys` itself when they already are. The result is not to be modified. */
function orderedKeys(keys: string[]): string[] {
  let sorted = true;
  for (let i = 1; i < keys.length && sorted; i++) sorted = keys[i - 1]! < keys[i]!;
  if (sorted) return keys;
  search: for (let s = 0; s < shapeKeys.length; s++) {
    const known = shapeKeys[s]!;
    if (known.length !== keys.length) continue;
    for (let i = 0; i < keys.length; i++) if (known[i] !== keys[i]) continue search;
    return shapeOrder[s]!;
  }
  // the default sort of strings is code-unit order, without a comparator call per comparison
  const order = keys.slice().sort();
  if (shapeKeys.length === SHAPES_KEPT) {
    shapeKeys.shift();
    shapeOrder.shift();
  }
  shapeKeys.push(keys);
  shapeOrder.push(order);
  return order;
}

/**
 * Canonical form of an item (keys in code-unit order at every depth, `undefined` members dropped)
 * sharing structure with it: an array or object already canonical is returned as it is, others are
 * copied, their canonical parts shared. Same result as src/core's canonicalObject below the top
 * level, specialised for the hot path of reading discovery (one Object.keys per object, no map).
 */
function shareCanonical(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      const c = shareCanonical(v);
      if (out === undefined && c !== v) out = value.slice(0, i) as unknown[];
      if (out !== undefined) out.push(c);
    }
    return out ?? value;
  }
  const obj = value as Record<string, unknown>;
  // Keys in order and no `undefined` (the usual case for files gitmesh wrote): checked without
  // allocating anything; the object is kept unless a child changes, then copied as it is (its keys
  // are in order) with the new children.
  let prev: string | undefined;
  let ordered = true;
  for (const k in obj) {
    if (obj[k] === undefined || (prev !== undefined && !(prev < k))) {
      ordered = false;
      break;
    }
    prev = k;
  }
  if (ordered) {
    let copy: Record<string, unknown> | undefined;
    for (const k in obj) {
      const v = obj[k];
      const c = shareCanonical(v);
      if (c !== v) (copy ??= { ...obj })[k] = c;
    }
    return copy ?? obj;
  }
  const keys = Object.keys(obj);
  const order = orderedKeys(keys);
  const changed = order !== keys;
  let children: unknown[] | undefined;
  for (let i = 0; i < order.length; i++) {
    const v = obj[order[i]!];
    const c = shareCanonical(v);
    if (children === undefined && (c !== v || v === undefined)) {
      children = [];
      for (let j = 0; j < i; j++) children.push(obj[order[j]!]);
    }
    if (children !== undefined) children.push(c);
  }
  if (!changed && children === undefined) return obj;
  const out: Record<string, unknown> = {};
  for (let i = 0; i < order.length; i++) {
    const c = children === undefined ? obj[order[i]!] : children[i];
    if (c !== undefined) out[order[i]!] = c;
  }
  return out;
}

/** A deep copy of plain JSON data whose keys are already in canonical order (no `undefined` members). */
function copyTree(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copyTree(value[i]);
    return out;
  }
  const obj = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k in obj) out[k] = copyTree(obj[k]);
  return out;
}

export interface NormalizeOptions {
  /**
   * The caller hands `snapshot` over: nobody will modify it or its parts afterwards (JSON just parsed,
   * a document read once, a result about to be serialised). The result may then share the parts
   * that are already canonical with the input instead of copying them. Default false: the result is
   * a tree of its own that shares nothing with the input. The input is never modified either way.
   */
  readonly owned?: boolean;
}

/**
 * The canonical form of a snapshot: sorted, duplicates removed (the last item with a given identity
 * wins), keys in canonical order. A new object that shares nothing with the input, unless
 * `options.owned` allows it to (see NormalizeOptions); the input is not modified.
 */
export function normalizeSnapshot(snapshot: DiscoverySnapshot, options: NormalizeOptions = {}): DiscoverySnapshot {
  // Built in canonical key order (apiVersion, kind, then code-unit order). shareCanonical copies only
  // the parts whose keys are out of order (or hold `undefined`); without ownership the rest is
  // copied too, by a plain walk (the keys are in order by then).
  const section = <T>(items: readonly T[]): T[] => shareCanonical(items) as T[];
  // Built member by member, not as a literal that starts with a spread: V8 (Node 20) gives every object
  // made by `{ ...a, b }` a hidden class of its own, and every snapshot its own class makes each
  // translator's `snapshot.services` megamorphic (test/discovery/snapshot-shape.test.ts).
  const out: Partial<Record<keyof DiscoverySnapshot, unknown>> = {};
  if (snapshot.apiVersion !== undefined) out.apiVersion = snapshot.apiVersion;
  if (snapshot.kind !== undefined) out.kind = snapshot.kind;
  if ((snapshot.cluster as string | undefined) !== undefined) out.cluster = snapshot.cluster;
  out.gateways = section(mapShared(sortUnique(snapshot.gateways, gatewayTuple), normalizeGateway));
  out.istioObjects = section(mapShared(sortUnique(snapshot.istioObjects, istioTuple), normalizeIstioObject));
  out.localities = section(normalizeLocalities(snapshot.localities));
  out.meshes = section(sortUnique(snapshot.meshes, meshTuple));
  out.namespaces = section(sortUnique(snapshot.namespaces, namespaceTuple));
  out.services = section(mapShared(sortUnique(snapshot.services, serviceTuple), normalizeService));
  out.workloads = section(mapShared(sortUnique(snapshot.workloads, workloadTuple), normalizeWorkload));
  const normalized = out as DiscoverySnapshot;
  return options.owned === true ? normalized : (copyTree(normalized) as DiscoverySnapshot);
}
