import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/core/index.js";
import { validateDiscoverySnapshot } from "../../src/model/index.js";
import {
  applySnapshotDelta,
  diffSnapshots,
  emptySnapshot,
  isEmptyDelta,
  normalizeSnapshot,
  snapshotChecksum,
  snapshotEntries,
  snapshotFromEntries,
  SnapshotDeltaError,
  type DiscoveredLocality,
  type DiscoverySnapshot,
} from "../../src/discovery/index.js";
import { createRandom } from "../helpers/random.js";

function randomSnapshot(rnd: () => number, cluster = "c1"): DiscoverySnapshot {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const n = (max: number) => Math.floor(rnd() * max);
  const names = ["a", "b", "c", "d", "a-b", "e.f", "g"];
  const nss = ["ns1", "ns2", "ns-1", "istio-system"];
  const loc = (): DiscoveredLocality => {
    const l: DiscoveredLocality = { region: pick(["r1", "r2"]) };
    if (rnd() < 0.7) l.zone = pick(["z1", "z2", "z3"]);
    if (l.zone !== undefined && rnd() < 0.3) l.subZone = pick(["s1", "s2"]);
    return l;
  };
  const labels = () => Object.fromEntries(Array.from({ length: n(3) }, () => [pick(["app", "version", "tier"]), pick(["x", "y", "v1"])]));
  const s: DiscoverySnapshot = {
    cluster,
    namespaces: Array.from({ length: n(5) }, () => ({ name: pick(nss), labels: labels() })),
    services: Array.from({ length: n(6) }, () => ({
      name: pick(names),
      namespace: pick(nss),
      labels: labels(),
      selector: labels(),
      type: pick(["ClusterIP", "LoadBalancer"] as const),
      ports: Array.from({ length: n(3) }, () => ({ name: pick(["http", "grpc", ""]), port: pick([80, 9080, 443]), targetPort: pick([8080, "http"]), protocol: "TCP" as const })),
      ...(rnd() < 0.5 ? { clusterIP: `10.0.0.${n(255)}` } : {}),
    })),
    workloads: Array.from({ length: n(6) }, () => ({
      kind: pick(["Deployment", "StatefulSet", "DaemonSet"] as const),
      name: pick(names),
      namespace: pick(nss),
      podLabels: labels(),
      serviceAccount: pick(["default", "sa1"]),
      localities: Array.from({ length: n(3) }, loc),
    })),
    localities: Array.from({ length: n(4) }, loc),
    meshes: Array.from({ length: n(2) }, () => ({ revision: pick(["default", "1-29"]), namespace: "istio-system", trustDomain: pick(["cluster.local", cluster]), istiodServiceAccount: "istiod" })),
    gateways: Array.from({ length: n(3) }, () => ({
      kind: pick(["east-west", "ingress"] as const),
      name: pick(names),
      namespace: "gw",
      podLabels: labels(),
      ports: [{ name: "tls", port: 15443, targetPort: 15443, protocol: "TCP" as const }],
      addresses: Array.from({ length: n(3) }, () => `192.0.2.${n(9)}`),
      ...(rnd() < 0.5 ? { locality: loc() } : {}),
    })),
    istioObjects: Array.from({ length: n(5) }, () => ({
      apiVersion: pick(["networking.istio.io/v1", "security.istio.io/v1"]),
      kind: pick(["VirtualService", "DestinationRule", "AuthorizationPolicy"]),
      namespace: pick(nss),
      name: pick(names),
      labels: labels(),
      managed: rnd() < 0.5,
      ...(rnd() < 0.5 ? { hosts: [pick(names), pick(names)] } : {}),
    })),
  };
  if (rnd() < 0.5) {
    s.apiVersion = "gitmesh.io/v1alpha1";
    s.kind = "DiscoverySnapshot";
  }
  return s;
}

/** A random mutation of a snapshot: add, change or remove items in random sections. */
function mutate(rnd: () => number, base: DiscoverySnapshot): DiscoverySnapshot {
  const other = randomSnapshot(rnd, base.cluster);
  const out = structuredClone(base);
  const sections = ["namespaces", "services", "workloads", "localities", "meshes", "gateways", "istioObjects"] as const;
  for (const section of sections) {
    const r = rnd();
    const list = out[section] as unknown[];
    if (r < 0.25 && list.length > 0) list.splice(Math.floor(rnd() * list.length), 1); // remove
    else if (r < 0.5) list.push(...(other[section] as unknown[])); // add / replace same identity
    else if (r < 0.6) (out[section] as unknown[]) = []; // clear
  }
  if (rnd() < 0.1) out.cluster = "c2";
  if (rnd() < 0.1) {
    delete out.apiVersion;
    delete out.kind;
  }
  return out;
}

describe("entries, checksum and deltas", () => {
  it("snapshotEntries has stable keys and round-trips through snapshotFromEntries", () => {
    const s: DiscoverySnapshot = {
      ...emptySnapshot("c1"),
      namespaces: [{ name: "b", labels: {} }, { name: "a", labels: { x: "1" } }],
      services: [{ name: "s", namespace: "a", labels: {}, selector: {}, ports: [], type: "ClusterIP" }],
      workloads: [{ kind: "Deployment", name: "w", namespace: "a", podLabels: {}, serviceAccount: "default", localities: [] }],
      localities: [{ region: "r", zone: "z" }],
      meshes: [{ revision: "1-29", namespace: "istio-system", trustDomain: "td", istiodServiceAccount: "istiod" }],
      gateways: [{ kind: "ingress", name: "g", namespace: "gw", podLabels: {}, ports: [], addresses: [] }],
      istioObjects: [{ apiVersion: "networking.istio.io/v1", kind: "VirtualService", namespace: "a", name: "v", labels: {}, managed: true }],
    };
    const entries = snapshotEntries(s);
    expect([...entries.keys()]).toEqual([
      "gateway/gw/g",
      "istio/networking.istio.io/VirtualService/a/v",
      "locality/r/z/",
      "mesh/istio-system/1-29",
      "namespace/a",
      "namespace/b",
      "service/a/s",
      "snapshot",
      "workload/a/Deployment/w",
    ]);
    expect(entries.get("snapshot")).toEqual({ apiVersion: "gitmesh.io/v1alpha1", kind: "DiscoverySnapshot", cluster: "c1" });
    expect(snapshotFromEntries(entries)).toEqual(normalizeSnapshot(s));
  });

  it("checksum is sha256 of the canonical JSON and ignores input order", () => {
    const rnd = createRandom(1);
    const s = randomSnapshot(rnd);
    const shuffled = { ...s, services: [...s.services].reverse(), namespaces: [...s.namespaces].reverse() };
    expect(snapshotChecksum(shuffled)).toBe(snapshotChecksum(s));
    expect(snapshotChecksum(s)).toBe(createHash("sha256").update(canonicalJson(normalizeSnapshot(s))).digest("hex"));
    const changed = normalizeSnapshot(s);
    changed.localities = [...changed.localities, { region: "new" }];
    expect(snapshotChecksum(changed)).not.toBe(snapshotChecksum(s));
  });

  it("diff of equal snapshots is empty; of different ones is not", () => {
    const s = randomSnapshot(createRandom(2));
    expect(isEmptyDelta(diffSnapshots(s, structuredClone(s)))).toBe(true);
    const t = normalizeSnapshot(s);
    t.namespaces = [...t.namespaces, { name: "brand-new", labels: {} }];
    const d = diffSnapshots(s, t);
    expect(d).toEqual({ added: [{ key: "namespace/brand-new", value: { name: "brand-new", labels: {} } }], changed: [], removed: [] });
  });

  for (const seed of [11, 12, 13, 14, 15, 16, 17, 18]) {
    it(`property: applySnapshotDelta(a, diffSnapshots(a, b)) equals b exactly (seed ${seed}, 100 random pairs)`, () => {
      const rnd = createRandom(seed);
      for (let i = 0; i < 100; i++) {
        const a = randomSnapshot(rnd);
        const b = mutate(rnd, a);
        const delta = diffSnapshots(a, b);
        // deltas are plain JSON: they survive serialisation (the relay sends them as bytes)
        const wire = JSON.parse(JSON.stringify(delta)) as typeof delta;
        const applied = applySnapshotDelta(a, wire);
        expect(canonicalJson(applied)).toBe(canonicalJson(normalizeSnapshot(b)));
        expect(snapshotChecksum(applied)).toBe(snapshotChecksum(b));
        expect(validateDiscoverySnapshot(applied)).toEqual([]);
        // a chain of deltas: b → c on top of the applied result
        const c = mutate(rnd, b);
        expect(snapshotChecksum(applySnapshotDelta(applied, diffSnapshots(b, c)))).toBe(snapshotChecksum(c));
        // the reverse delta takes us back
        expect(snapshotChecksum(applySnapshotDelta(applied, diffSnapshots(b, a)))).toBe(snapshotChecksum(a));
      }
    });
  }

  it("a delta only carries what changed", () => {
    const a = randomSnapshot(createRandom(3));
    const b = normalizeSnapshot(a);
    b.services = [...b.services, { name: "zz", namespace: "ns9", labels: {}, selector: {}, ports: [], type: "ClusterIP" }];
    const d = diffSnapshots(a, b);
    expect(d.added.map((e) => e.key)).toEqual(["service/ns9/zz"]);
    expect(d.changed).toEqual([]);
    expect(d.removed).toEqual([]);
  });

  it("rejects corrupt deltas with SnapshotDeltaError (caller resyncs)", () => {
    const a = emptySnapshot("c1");
    const bad = [
      { added: [{ key: "bogus/x", value: {} }], changed: [], removed: [] },
      { added: [{ key: "namespace/a", value: { name: "b", labels: {} } }], changed: [], removed: [] },
      { added: [{ key: "namespace/a", value: "a string" }], changed: [], removed: [] },
      { added: [], changed: [], removed: ["snapshot"] },
      { added: [], changed: [{ key: "snapshot", value: { nope: 1 } }], removed: [] },
    ];
    for (const d of bad) {
      expect(() => applySnapshotDelta(a, d)).toThrow(SnapshotDeltaError);
    }
    try {
      applySnapshotDelta(a, bad[0]!);
    } catch (err) {
      expect((err as SnapshotDeltaError).code).toBe("SnapshotDeltaError");
      expect((err as SnapshotDeltaError).reaction).toBe("transient");
    }
    // removing a key that is not there is harmless
    expect(applySnapshotDelta(a, { added: [], changed: [], removed: ["namespace/ghost"] })).toEqual(normalizeSnapshot(a));
  });

  it("normalizeSnapshot removes duplicates (last wins) and sorts inner lists", () => {
    const s: DiscoverySnapshot = {
      ...emptySnapshot("c1"),
      namespaces: [{ name: "a", labels: { v: "1" } }, { name: "a", labels: { v: "2" } }],
      gateways: [{ kind: "ingress", name: "g", namespace: "gw", podLabels: {}, addresses: ["b", "a", "b"], ports: [
        { name: "https", port: 443, targetPort: 8443, protocol: "TCP" },
        { name: "http", port: 80, targetPort: 8080, protocol: "TCP" },
      ] }],
    };
    const n = normalizeSnapshot(s);
    expect(n.namespaces).toEqual([{ name: "a", labels: { v: "2" } }]);
    expect(n.gateways[0]?.addresses).toEqual(["a", "b"]);
    expect(n.gateways[0]?.ports.map((p) => p.port)).toEqual([80, 443]);
    expect(Object.keys(n).slice(0, 3)).toEqual(["apiVersion", "kind", "cluster"]);
  });
});
