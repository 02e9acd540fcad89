/**
 * normalizeSnapshot against the implementation it replaced (kept here verbatim as the reference: a
 * Map keyed by the JSON of each item's identity tuple, the last item wins, a sort, then a deep
 * canonical copy). Seeded random snapshots — shuffled, already canonical, canonical with adjacent
 * duplicates, keys in random order, `undefined` members, ports without names, odd numbers — must give
 * exactly the reference's result (values, list order, key order), in both modes, without modifying
 * the input; the copying mode must share nothing with the input, and canonical input must take the
 * fast path (its lists come back as they are in the owned mode).
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { canonicalize, compareCodeUnits } from "../../src/core/index.js";
import {
  apiGroup,
  discoveryFromFiles,
  normalizeSnapshot,
  snapshotChecksum,
  type DiscoveredGateway,
  type DiscoveredGatewayPort,
  type DiscoveredIstioObject,
  type DiscoveredLocality,
  type DiscoveredMesh,
  type DiscoveredNamespace,
  type DiscoveredService,
  type DiscoveredServicePort,
  type DiscoveredWorkload,
  type DiscoverySnapshot,
} from "../../src/discovery/index.js";
import { createRandom, GENERATIVE_TEST_TIMEOUT_MS } from "../helpers/random.js";

// ---- the reference: normalizeSnapshot as it was before the fast path (src/discovery/snapshot.ts at e4d7e0b) ----

function compareTuples(a: readonly (string | number)[], b: readonly (string | number)[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? "";
    const y = b[i] ?? "";
    if (typeof x === "number" && typeof y === "number") {
      if (x !== y) return x - y;
    } else {
      const c = compareCodeUnits(String(x), String(y));
      if (c !== 0) return c;
    }
  }
  return 0;
}
const localityTuple = (l: DiscoveredLocality): string[] => [l.region, l.zone ?? "", l.subZone ?? ""];
const namespaceTuple = (n: DiscoveredNamespace): string[] => [n.name];
const serviceTuple = (s: DiscoveredService): string[] => [s.namespace, s.name];
const workloadTuple = (w: DiscoveredWorkload): string[] => [w.namespace, w.kind, w.name];
const meshTuple = (m: DiscoveredMesh): string[] => [m.namespace, m.revision];
const gatewayTuple = (g: DiscoveredGateway): string[] => [g.namespace, g.name];
const istioTuple = (o: DiscoveredIstioObject): string[] => [apiGroup(o.apiVersion), o.kind, o.namespace, o.name];
const portTuple = (p: DiscoveredServicePort | DiscoveredGatewayPort): (string | number)[] => [p.port, p.protocol, p.name];

function sortUnique<T>(items: readonly T[], tuple: (t: T) => readonly (string | number)[]): T[] {
  const byKey = new Map<string, { item: T; tuple: readonly (string | number)[] }>();
  for (const item of items) {
    const t = tuple(item);
    byKey.set(JSON.stringify(t), { item, tuple: t }); // last one wins
  }
  return [...byKey.values()].sort((a, b) => compareTuples(a.tuple, b.tuple)).map((x) => x.item);
}
const sortedStrings = (list: readonly string[]): string[] => [...new Set(list)].sort(compareCodeUnits);

function referenceNormalize(snapshot: DiscoverySnapshot): DiscoverySnapshot {
  const out: DiscoverySnapshot = {
    ...(snapshot.apiVersion !== undefined ? { apiVersion: snapshot.apiVersion } : {}),
    ...(snapshot.kind !== undefined ? { kind: snapshot.kind } : {}),
    cluster: snapshot.cluster,
    namespaces: sortUnique(snapshot.namespaces, namespaceTuple),
    services: sortUnique(snapshot.services, serviceTuple).map((s) => ({ ...s, ports: sortUnique(s.ports, portTuple) })),
    workloads: sortUnique(snapshot.workloads, workloadTuple).map((w) => ({ ...w, localities: sortUnique(w.localities, localityTuple) })),
    localities: sortUnique(snapshot.localities, localityTuple),
    meshes: sortUnique(snapshot.meshes, meshTuple),
    gateways: sortUnique(snapshot.gateways, gatewayTuple).map((g) => ({ ...g, ports: sortUnique(g.ports, portTuple), addresses: sortedStrings(g.addresses) })),
    istioObjects: sortUnique(snapshot.istioObjects, istioTuple).map((o) => (o.hosts === undefined ? o : { ...o, hosts: sortedStrings(o.hosts) })),
  };
  return canonicalize(out);
}

// ---- random snapshots ----------------------------------------------------------------------

type Rnd = () => number;

/** `plain`: only what the schema allows (every port named, port numbers finite numbers). */
function randomSnapshot(rnd: Rnd, plain = false): DiscoverySnapshot {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const n = (max: number) => Math.floor(rnd() * max);
  /** An object whose keys come in a random order, sometimes with an `undefined` member. */
  const obj = <T extends object>(fields: T): T => {
    const entries = Object.entries(fields);
    for (let i = entries.length - 1; i > 0; i--) {
      const j = n(i + 1);
      [entries[i], entries[j]] = [entries[j]!, entries[i]!];
    }
    if (rnd() < 0.05) entries.splice(n(entries.length + 1), 0, ["extra", undefined]);
    return Object.fromEntries(entries) as T;
  };
  const names = ["a", "b", "c", "a-b", "a.b", "B", "é"];
  const nss = ["ns1", "ns2", "ns-1", "istio-system"];
  const labels = () => obj(Object.fromEntries(Array.from({ length: n(4) }, () => [pick(["app", "version", "tier", "z"]), pick(["x", "y", "v1"])])));
  const loc = (): DiscoveredLocality => {
    const zone = pick([undefined, undefined, "", "z1", "z2"]);
    return obj({ region: pick(["r1", "r2"]), ...(zone !== undefined ? { zone } : {}), ...(zone !== undefined && rnd() < 0.4 ? { subZone: pick(["s1", "", "s2"]) } : {}) });
  };
  // numbers a JSON file cannot hold, and a number as a string, are rare but allowed by the types
  const portNumber = (): number => (!plain && rnd() < 0.03 ? pick([Number.NaN, Number.POSITIVE_INFINITY, -0, "80" as unknown as number]) : pick([80, 443, 9080, 15021]));
  const port = (): DiscoveredServicePort =>
    obj({ port: portNumber(), targetPort: pick([8080, "http"]), protocol: pick(["TCP", "UDP"] as const), ...(plain || rnd() < 0.8 ? { name: pick(["http", "grpc", ""]) } : {}) }) as DiscoveredServicePort;
  const list = <T>(max: number, make: () => T): T[] => Array.from({ length: n(max) }, make);
  const s: DiscoverySnapshot = {
    ...(rnd() < 0.7 ? { apiVersion: "gitmesh.io/v1alpha1" as const, kind: "DiscoverySnapshot" as const } : {}),
    cluster: pick(["c1", "cluster-2"]),
    namespaces: list(8, () => obj({ name: pick(nss), labels: labels() })),
    services: list(10, () =>
      obj({
        name: pick(names),
        namespace: pick(nss),
        labels: labels(),
        selector: labels(),
        type: pick(["ClusterIP", "LoadBalancer"] as const),
        ports: list(4, port),
        ...(rnd() < 0.5 ? { clusterIP: `10.0.0.${n(9)}` } : {}),
      }),
    ),
    workloads: list(10, () =>
      obj({
        kind: pick(["Deployment", "StatefulSet", "DaemonSet"] as const),
        name: pick(names),
        namespace: pick(nss),
        podLabels: labels(),
        serviceAccount: pick(["default", "sa1"]),
        localities: list(4, loc),
        ...(rnd() < 0.5 ? { replicas: n(3) } : {}),
      }),
    ),
    localities: list(5, loc),
    meshes: list(3, () => obj({ revision: pick(["default", "1-29"]), namespace: pick(["istio-system", "istio-1"]), trustDomain: "cluster.local", istiodServiceAccount: "istiod" })),
    gateways: list(4, () =>
      obj({
        kind: pick(["east-west", "ingress"] as const),
        name: pick(names),
        namespace: pick(["gw", "istio-gateways"]),
        podLabels: labels(),
        ports: list(3, port),
        addresses: list(4, () => pick(["192.0.2.1", "192.0.2.10", "192.0.2.9", "gw.example.com"])),
        ...(rnd() < 0.5 ? { locality: loc() } : {}),
      }),
    ),
    istioObjects: list(6, () =>
      obj({
        apiVersion: pick(["networking.istio.io/v1", "networking.istio.io/v1beta1", "security.istio.io/v1", "v1"]),
        kind: pick(["VirtualService", "DestinationRule", "AuthorizationPolicy"]),
        namespace: pick(nss),
        name: pick(names),
        labels: labels(),
        managed: rnd() < 0.5,
        ...(rnd() < 0.6 ? { hosts: list(4, () => pick(names)) } : {}),
      }),
    ),
  };
  return s;
}

const SECTIONS = ["namespaces", "services", "workloads", "localities", "meshes", "gateways", "istioObjects"] as const;

/** The canonical form with some items repeated in place (a changed copy right after the original: the copy must win). */
function withAdjacentDuplicates(rnd: Rnd, canonical: DiscoverySnapshot): DiscoverySnapshot {
  const s = structuredClone(canonical) as unknown as Record<string, unknown[]>;
  for (const section of SECTIONS) {
    const items = s[section]!;
    for (let i = items.length - 1; i >= 0; i--) {
      if (rnd() < 0.3) items.splice(i + 1, 0, { ...(items[i] as object), marker: `dup-${i}` });
    }
  }
  return s as unknown as DiscoverySnapshot;
}

/** The canonical form with every object's keys in reverse order (lists stay sorted). */
function keysReversed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(keysReversed);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, keysReversed(v)]));
}

function objectsOf(value: unknown, into = new Set<object>()): Set<object> {
  if (typeof value === "object" && value !== null) {
    into.add(value);
    for (const v of Object.values(value)) objectsOf(v, into);
  }
  return into;
}

function expectSameAsReference(input: DiscoverySnapshot): void {
  const before = structuredClone(input);
  const beforeJson = JSON.stringify(input);
  const expected = referenceNormalize(input);
  const copied = normalizeSnapshot(input);
  const owned = normalizeSnapshot(input, { owned: true });
  for (const actual of [copied, owned]) {
    expect(actual).toStrictEqual(expected);
    expect(JSON.stringify(actual)).toBe(JSON.stringify(expected)); // key order too
  }
  // the input is not modified, in either mode
  expect(input).toStrictEqual(before);
  expect(JSON.stringify(input)).toBe(beforeJson);
  // the copying mode shares no object with the input
  const inputObjects = objectsOf(input);
  for (const o of objectsOf(copied)) expect(inputObjects.has(o)).toBe(false);
  expect(snapshotChecksum(input)).toBe(createHash("sha256").update(JSON.stringify(expected)).digest("hex"));
}

describe("normalizeSnapshot equals the reference implementation", () => {
  it("on seeded random snapshots: shuffled, canonical, canonical with adjacent duplicates, keys out of order", { timeout: GENERATIVE_TEST_TIMEOUT_MS }, () => {
    const rnd = createRandom(20_26_11_26);
    for (let i = 0; i < 300; i++) {
      const raw = randomSnapshot(rnd);
      const canonical = referenceNormalize(raw);
      expectSameAsReference(raw);
      expectSameAsReference(canonical);
      expectSameAsReference(withAdjacentDuplicates(rnd, canonical));
      expectSameAsReference(keysReversed(canonical) as DiscoverySnapshot);
      expectSameAsReference({ ...canonical, services: [...canonical.services].reverse(), istioObjects: [...canonical.istioObjects].reverse() });
    }
  });

  it("on odd values the types let through: non-finite port numbers, a port as a string, a missing port name", () => {
    const port = (p: unknown, name?: string): DiscoveredServicePort =>
      ({ port: p as number, protocol: "TCP", targetPort: 8080, ...(name !== undefined ? { name } : {}) }) as DiscoveredServicePort;
    const lists: DiscoveredServicePort[][] = [
      [port(Number.NaN, "a"), port(Number.POSITIVE_INFINITY, "a")], // the same JSON key (null): one survives
      [port(Number.POSITIVE_INFINITY, "a"), port(Number.NaN, "a")],
      [port(Number.NEGATIVE_INFINITY, "a"), port(Number.POSITIVE_INFINITY, "a")],
      [port(0, "a"), port(-0, "a")],
      [port("80", "a"), port(81, "a"), port("9", "a")], // no consistent order across types
      [port(80), port(80, "")], // equal in order, different keys: both kept, in input order
      [port(80, ""), port(80)],
    ];
    for (const ports of lists) {
      const s: DiscoverySnapshot = {
        cluster: "c1",
        namespaces: [],
        services: [{ name: "s", namespace: "n", labels: {}, selector: {}, type: "ClusterIP", ports }],
        workloads: [],
        localities: [],
        meshes: [],
        gateways: [],
        istioObjects: [],
      };
      expectSameAsReference(s);
    }
  });

  it("takes canonical input as it is when the caller owns it (fast path), and copies it otherwise", () => {
    const rnd = createRandom(7);
    for (let i = 0; i < 50; i++) {
      const canonical = referenceNormalize(randomSnapshot(rnd, true));
      const owned = normalizeSnapshot(canonical, { owned: true });
      const copied = normalizeSnapshot(canonical);
      expect(owned).not.toBe(canonical);
      for (const section of SECTIONS) {
        expect(owned[section]).toBe(canonical[section]);
        expect(copied[section]).not.toBe(canonical[section]);
        expect(copied[section]).toStrictEqual(canonical[section]);
      }
    }
  });

  it("discoveryFromFiles gives the reference's snapshot for a JSON file of a shuffled snapshot", () => {
    const rnd = createRandom(99);
    for (let i = 0; i < 30; i++) {
      const raw = randomSnapshot(rnd);
      // what a JSON file can hold: no undefined members, no NaN; a valid snapshot (names the cluster of its directory)
      const doc = JSON.parse(JSON.stringify({ ...raw, apiVersion: "gitmesh.io/v1alpha1", kind: "DiscoverySnapshot", cluster: "c1" }, (_k, v: unknown) => (typeof v === "number" && !Number.isFinite(v) ? 80 : v))) as DiscoverySnapshot;
      const { snapshots, diagnostics } = discoveryFromFiles([{ path: "c1/snapshot.json", content: JSON.stringify(doc) }]);
      // the random generator makes a few values the schema refuses (a port as a string): then both say so
      if (diagnostics.length > 0) {
        expect(snapshots.size).toBe(0);
        continue;
      }
      expect(JSON.stringify(snapshots.get("c1"))).toBe(JSON.stringify(referenceNormalize(doc)));
    }
  });
});
