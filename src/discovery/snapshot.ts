/**
 * The canonical form of a discovery snapshot: every array sorted by its items' identity, no
 * duplicates, inner lists (ports, localities, addresses, hosts) sorted, object keys in canonical
 * order. Two snapshots of equal clusters are byte-identical in canonical JSON, so checksums and
 * deltas are meaningful.
 */
import { canonicalize, compareCodeUnits, sortKeysDeep } from "../core/index.js";
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

function sortUnique<T>(items: readonly T[], tuple: (t: T) => readonly (string | number)[]): T[] {
  const byKey = new Map<string, { item: T; tuple: readonly (string | number)[] }>();
  for (const item of items) {
    const t = tuple(item);
    byKey.set(JSON.stringify(t), { item, tuple: t }); // last one wins
  }
  return [...byKey.values()].sort((a, b) => compareTuples(a.tuple, b.tuple)).map((x) => x.item);
}

function sortedStrings(list: readonly string[]): string[] {
  return [...new Set(list)].sort(compareStrings);
}

function normalizeLocalities(list: readonly DiscoveredLocality[]): DiscoveredLocality[] {
  return sortUnique(list, localityTuple);
}

const ITEM_NORMALIZERS: { readonly [S in SectionName]: (item: SectionItem<S>) => SectionItem<S> } = {
  namespaces: (n) => n,
  services: (s) => ({ ...s, ports: sortUnique(s.ports, portTuple) }),
  workloads: (w) => ({ ...w, localities: normalizeLocalities(w.localities) }),
  localities: (l) => l,
  meshes: (m) => m,
  gateways: (g) => ({ ...g, ports: sortUnique(g.ports, portTuple), addresses: sortedStrings(g.addresses) }),
  istioObjects: (o) => (o.hosts === undefined ? o : { ...o, hosts: sortedStrings(o.hosts) }),
};

/** One item in the canonical form it has inside a normalised snapshot (inner lists sorted, keys in canonical order). */
export function normalizeItem<S extends SectionName>(section: S, item: SectionItem<S>): SectionItem<S> {
  return sortKeysDeep((ITEM_NORMALIZERS[section] as (i: SectionItem<S>) => SectionItem<S>)(item));
}

/**
 * The canonical form of a snapshot (a new object; the input is not modified): sorted, duplicates
 * removed (the last item with a given identity wins), keys in canonical order.
 */
export function normalizeSnapshot(snapshot: DiscoverySnapshot): DiscoverySnapshot {
  const out: DiscoverySnapshot = {
    ...(snapshot.apiVersion !== undefined ? { apiVersion: snapshot.apiVersion } : {}),
    ...(snapshot.kind !== undefined ? { kind: snapshot.kind } : {}),
    cluster: snapshot.cluster,
    namespaces: sortUnique(snapshot.namespaces, namespaceTuple),
    services: sortUnique(snapshot.services, serviceTuple).map((s) => ({ ...s, ports: sortUnique(s.ports, portTuple) })),
    workloads: sortUnique(snapshot.workloads, workloadTuple).map((w) => ({
      ...w,
      localities: normalizeLocalities(w.localities),
    })),
    localities: normalizeLocalities(snapshot.localities),
    meshes: sortUnique(snapshot.meshes, meshTuple),
    gateways: sortUnique(snapshot.gateways, gatewayTuple).map((g) => ({
      ...g,
      ports: sortUnique(g.ports, portTuple),
      addresses: sortedStrings(g.addresses),
    })),
    istioObjects: sortUnique(snapshot.istioObjects, istioTuple).map((o) =>
      o.hosts === undefined ? o : { ...o, hosts: sortedStrings(o.hosts) },
    ),
  };
  return canonicalize(out);
}
