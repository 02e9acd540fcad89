// The incremental builder must give exactly the entries of the pure conversion over the same
// objects, after any sequence of informer events (seeded random sequences over a cluster with
// nodes, namespaces with labels, a control plane with discovery selectors, gateways, workloads,
// pods moving between nodes and labels, Istio objects).
import { describe, expect, it } from "vitest";
import { applySnapshotDelta, createIncrementalSnapshot, snapshotEntries, snapshotFromKubernetesObjects, type DiscoverySnapshot } from "../../src/discovery/index.js";
import { createRandom } from "../helpers/random.js";

type Obj = Record<string, unknown>;

function generator(seed: number) {
  const r = createRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const apps = ["a", "b", "c", "d"];
  const nss = ["ns-0", "ns-1", "ns-2", "istio-system", "gw"];
  const nodes = ["n0", "n1", "n2", "n3"];
  const make: (() => Obj)[] = [
    () => ({ apiVersion: "v1", kind: "Node", metadata: { name: pick(nodes), labels: r() < 0.8 ? { "topology.kubernetes.io/region": pick(["r1", "r2"]), "topology.kubernetes.io/zone": pick(["z1", "z2", "z3"]) } : {} } }),
    () => ({ apiVersion: "v1", kind: "Namespace", metadata: { name: pick(nss), labels: r() < 0.5 ? { mesh: "yes" } : { "topology.istio.io/network": pick(["net1", "net2"]) } } }),
    () => {
      const app = pick(apps);
      const gw = r() < 0.3;
      return { apiVersion: "v1", kind: "Service", metadata: { name: `${gw ? "gw-" : ""}${app}${pick(["", "-x"])}`, namespace: pick(nss), labels: gw ? { istio: pick(["eastwestgateway", "ingressgateway"]) } : { app } }, spec: { selector: r() < 0.9 ? { app } : {}, type: gw ? "LoadBalancer" : pick(["ClusterIP", "Bogus"]), ports: [{ name: "http", port: pick([80, 8080, 0]), targetPort: pick([8080, "http"]) }, { name: "tcp", port: 9000 }] }, status: gw ? { loadBalancer: { ingress: [{ ip: pick(["1.1.1.1", "2.2.2.2"]) }] } } : {} };
    },
    () => {
      const app = pick(apps);
      return { apiVersion: "apps/v1", kind: pick(["Deployment", "StatefulSet", "DaemonSet"]), metadata: { name: app, namespace: pick(nss) }, spec: { replicas: pick([1, 3, -1]), selector: r() < 0.8 ? { matchLabels: { app } } : { matchExpressions: [{ key: "app", operator: "In", values: [app, pick(apps)] }] }, template: { metadata: { labels: { app, "istio.io/rev": pick(["", "1-29"]) } }, spec: r() < 0.5 ? { serviceAccountName: `sa-${app}` } : {} } } };
    },
    () => ({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: pick(["istiod", "istiod-1-29"]), namespace: pick(["istio-system", "ns-2"]), labels: r() < 0.5 ? { "istio.io/rev": pick(["1-29", "canary"]) } : {} }, spec: { selector: { matchLabels: { app: "istiod" } }, template: { metadata: { labels: { app: "istiod" } }, spec: { containers: [{ name: "discovery", image: pick(["istio/pilot:1.29.0", "istio/pilot:1.28.1-distroless"]) }] } } } }),
    () => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: pick(["istio", "istio-1-29"]), namespace: "istio-system" }, data: { mesh: pick(["trustDomain: td1\n", "discoverySelectors:\n- matchLabels: {mesh: \"yes\"}\n", "discoverySelectors: []\n", ": bad: yaml: ["]) } }),
    () => {
      const app = pick(apps);
      return { apiVersion: "v1", kind: "Pod", metadata: { name: `${app}-${Math.floor(r() * 4)}`, namespace: pick(nss), labels: { app, ...(r() < 0.3 ? { "istio.io/rev": "1-29" } : {}), ...(r() < 0.2 ? { istio: "eastwestgateway" } : {}) }, ...(r() < 0.1 ? { deletionTimestamp: "2024-01-01T00:00:00Z" } : {}) }, spec: { nodeName: pick([...nodes, "ghost"]), ...(r() < 0.7 ? { serviceAccountName: pick(["sa1", "sa2"]) } : {}) }, status: { phase: pick(["Running", "Running", "Pending", "Succeeded"]) } };
    },
    () => ({ apiVersion: pick(["networking.istio.io/v1", "security.istio.io/v1"]), kind: pick(["VirtualService", "DestinationRule", "AuthorizationPolicy"]), metadata: { name: pick(["x", "y"]), namespace: pick(nss), labels: r() < 0.4 ? { "gitmesh.io/managed": "true" } : {} }, spec: { hosts: ["b.example", "a.example"], host: "h" } }),
    () => ({ apiVersion: "v1", kind: "Secret", metadata: { name: "s", namespace: pick(["only-secrets", "ns-1"]) } }),
  ];
  return { r, next: () => pick(make)() };
}

const idOf = (o: Obj) => {
  const m = o.metadata as { name: string; namespace?: string };
  return `${String(o.apiVersion)}/${String(o.kind)}/${m.namespace ?? ""}/${m.name}`;
};

const asJson = (m: ReadonlyMap<string, unknown>) => [...m].map(([k, v]) => [k, JSON.stringify(v)] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

describe("incremental discovery snapshot", () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    it(`equals the pure conversion after every flush of a random event sequence (seed ${seed})`, () => {
      const { r, next } = generator(seed);
      const objects = new Map<string, Obj>();
      const options = seed % 2 === 0 ? { discoverySelectors: [{ matchLabels: { mesh: "yes" } }] } : {};
      const inc = createIncrementalSnapshot("cluster1", options);
      let replica: DiscoverySnapshot | undefined;
      let checks = 0;
      for (let step = 0; step < 400; step++) {
        const roll = r();
        if (roll < 0.2 && objects.size > 0) {
          const ids = [...objects.keys()];
          const id = ids[Math.floor(r() * ids.length)]!;
          inc.remove(objects.get(id));
          objects.delete(id);
        } else if (roll < 0.25) {
          // a relist of every pod
          const pods = [...objects.values()].filter((o) => o.kind === "Pod" && r() < 0.8);
          for (const [id, o] of objects) if (o.kind === "Pod" && !pods.includes(o)) objects.delete(id);
          inc.replaceKind("v1", "Pod", pods.map((p) => ({ ...p })));
        } else {
          const o = next();
          objects.set(idOf(o), o);
          inc.upsert(o);
        }
        if (r() < 0.3 || step === 399) {
          const delta = inc.flush();
          const want = snapshotFromKubernetesObjects("cluster1", [...objects.values()], options).snapshot;
          expect(asJson(inc.entries())).toEqual(asJson(snapshotEntries(want)));
          expect(JSON.stringify(inc.snapshot())).toBe(JSON.stringify(want));
          // the deltas, applied one after the other, rebuild the same snapshot
          replica = replica === undefined ? inc.snapshot() : applySnapshotDelta(replica, delta);
          expect(JSON.stringify(replica)).toBe(JSON.stringify(want));
          checks++;
        }
      }
      expect(checks).toBeGreaterThan(50);
      expect(inc.entries().size).toBeGreaterThan(5);
    });
  }

  it("reports nothing when an update changes nothing discovery keeps, and only the touched entry otherwise", () => {
    const inc = createIncrementalSnapshot("c1");
    const pod = { apiVersion: "v1", kind: "Pod", metadata: { name: "p", namespace: "a", labels: { app: "x" } }, spec: { nodeName: "n" }, status: { phase: "Running" } };
    inc.upsert(pod);
    inc.upsert({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "x", namespace: "a" }, spec: { selector: { matchLabels: { app: "x" } }, template: { metadata: { labels: { app: "x" } } } } });
    inc.upsert({ apiVersion: "v1", kind: "Node", metadata: { name: "n", labels: { "topology.kubernetes.io/region": "r" } } });
    inc.flush();
    inc.upsert({ ...pod, metadata: { ...pod.metadata, annotations: { a: "b" } } });
    expect(inc.flush()).toEqual({ added: [], changed: [], removed: [] });
    inc.upsert({ apiVersion: "v1", kind: "Node", metadata: { name: "n", labels: { "topology.kubernetes.io/region": "r2" } } });
    const d = inc.flush();
    expect(d.added.map((e) => e.key)).toEqual(["locality/r2//"]);
    expect(d.changed.map((e) => e.key)).toEqual(["workload/a/Deployment/x"]);
    expect(d.removed).toEqual(["locality/r//"]);
  });
});
