import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { validateDiscoverySnapshot } from "../../src/model/index.js";
import {
  DiscoveryCode,
  snapshotChecksum,
  snapshotFromKubernetesObjects,
  type DiscoverySnapshot,
} from "../../src/discovery/index.js";

const FILES = ["namespaces-and-nodes.yaml", "istio-system.yaml", "istio-gateways.yaml", "bookinfo.yaml", "gloo-mesh.yaml"];

async function exampleObjects(cluster: string): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const f of FILES) {
    const text = await readFile(new URL(`../../examples/discovery/${cluster}/${f}`, import.meta.url), "utf8");
    for (const doc of parseAllDocuments(text)) out.push(doc.toJS());
  }
  return out;
}

function workload(s: DiscoverySnapshot, ns: string, name: string) {
  const w = s.workloads.find((x) => x.namespace === ns && x.name === name);
  if (!w) throw new Error(`no workload ${ns}/${name}`);
  return w;
}

function gateway(s: DiscoverySnapshot, name: string) {
  const g = s.gateways.find((x) => x.name === name);
  if (!g) throw new Error(`no gateway ${name}`);
  return g;
}

describe("snapshotFromKubernetesObjects on examples/discovery", () => {
  it("cluster1: localities, control plane, gateways and service accounts", async () => {
    const { snapshot: s, diagnostics } = snapshotFromKubernetesObjects("cluster1", await exampleObjects("cluster1"));
    expect(diagnostics).toEqual([]);
    expect(validateDiscoverySnapshot(s)).toEqual([]);
    expect(s.cluster).toBe("cluster1");
    expect(s.localities).toEqual([
      { region: "us-east-1", zone: "us-east-1a" },
      { region: "us-east-1", zone: "us-east-1b" },
      { region: "us-east-1", zone: "us-east-1c" },
    ]);
    expect(s.meshes).toEqual([
      { revision: "1-29", namespace: "istio-system", trustDomain: "cluster1", istiodServiceAccount: "istiod-1-29", version: "1.29.0", network: "cluster1" },
    ]);
    const ew = gateway(s, "istio-eastwestgateway");
    expect(ew.kind).toBe("east-west");
    expect(ew.addresses).toEqual(["203.0.113.11"]);
    expect(ew.network).toBe("cluster1");
    expect(ew.revision).toBe("1-29");
    expect(ew.locality).toEqual({ region: "us-east-1", zone: "us-east-1b" });
    expect(ew.ports.find((p) => p.name === "tls")).toMatchObject({ port: 15443, targetPort: 15443, protocol: "TCP" });
    const ingress = gateway(s, "istio-ingressgateway");
    expect(ingress.kind).toBe("ingress");
    expect(ingress.addresses).toEqual(["203.0.113.10"]);
    expect(ingress.podLabels).toEqual({ app: "istio-ingressgateway", istio: "ingressgateway" });
    expect(ingress.ports.map((p) => [p.name, p.port, p.targetPort])).toEqual([
      ["http2", 80, 8080],
      ["https", 443, 8443],
      ["status-port", 15021, 15021],
    ]);
    // pods of the ingress gateway run in 1a and 1b: the first sorted locality wins
    expect(ingress.locality).toEqual({ region: "us-east-1", zone: "us-east-1a" });

    expect(workload(s, "bookinfo-backends", "reviews-v1")).toMatchObject({
      kind: "Deployment",
      serviceAccount: "bookinfo-reviews",
      podLabels: { app: "reviews", version: "v1" },
      localities: [{ region: "us-east-1", zone: "us-east-1a" }],
      replicas: 1,
    });
    expect(workload(s, "bookinfo-backends", "reviews-v2").localities).toEqual([{ region: "us-east-1", zone: "us-east-1b" }]);
    expect(workload(s, "bookinfo-frontends", "productpage-v1").serviceAccount).toBe("bookinfo-productpage");
    expect(workload(s, "bookinfo-backends", "details-v1").serviceAccount).toBe("bookinfo-details");
    expect(workload(s, "bookinfo-backends", "ratings-v1").serviceAccount).toBe("bookinfo-ratings");
    expect(s.workloads.some((w) => w.name === "reviews-v3")).toBe(false);

    const reviews = s.services.find((x) => x.name === "reviews");
    expect(reviews).toMatchObject({ namespace: "bookinfo-backends", selector: { app: "reviews" }, type: "ClusterIP" });
    expect(reviews?.ports).toEqual([{ name: "http", port: 9080, targetPort: 9080, protocol: "TCP" }]);
    expect(s.istioObjects).toEqual([
      {
        apiVersion: "networking.istio.io/v1",
        kind: "DestinationRule",
        namespace: "bookinfo-backends",
        name: "details",
        labels: {},
        managed: false,
        hosts: ["details.bookinfo-backends.svc.cluster.local"],
      },
    ]);
    expect(s.namespaces.map((n) => n.name)).toEqual([
      "bookinfo-backends",
      "bookinfo-frontends",
      "default",
      "gloo-mesh",
      "istio-gateways",
      "istio-system",
      "kube-system",
    ]);
  });

  it("cluster2: us-west-2, trust domain cluster2, reviews-v3 only, hostname load balancer", async () => {
    const { snapshot: s, diagnostics } = snapshotFromKubernetesObjects("cluster2", await exampleObjects("cluster2"));
    expect(diagnostics).toEqual([]);
    expect(validateDiscoverySnapshot(s)).toEqual([]);
    expect(s.localities.map((l) => `${l.region}/${l.zone ?? ""}`)).toEqual(["us-west-2/us-west-2a", "us-west-2/us-west-2b"]);
    expect(s.meshes[0]?.trustDomain).toBe("cluster2");
    expect(s.workloads.filter((w) => w.podLabels.app === "reviews").map((w) => w.name)).toEqual(["reviews-v3"]);
    expect(gateway(s, "istio-ingressgateway").addresses).toEqual([
      "a4f1c2d3e5b6a7c8d9e0f1a2b3c4d5e6-1234567890.us-west-2.elb.amazonaws.com",
    ]);
    expect(gateway(s, "istio-eastwestgateway").addresses).toEqual(["198.51.100.21"]);
    expect(s.istioObjects).toEqual([]);
  });

  it("is deterministic: shuffled input gives the same snapshot and checksum", async () => {
    const objects = await exampleObjects("cluster1");
    const a = snapshotFromKubernetesObjects("cluster1", objects).snapshot;
    const shuffled = [...objects].reverse();
    const b = snapshotFromKubernetesObjects("cluster1", shuffled).snapshot;
    expect(JSON.stringify(b)).toBe(JSON.stringify(a));
    expect(snapshotChecksum(b)).toBe(snapshotChecksum(a));
  });
});

// ---- small hand-written objects ----------------------------------------------------------------

const ns = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: "v1", kind: "Namespace", metadata: { name, labels } });
const node = (name: string, labels: Record<string, string>) => ({ apiVersion: "v1", kind: "Node", metadata: { name, labels } });
const service = (namespace: string, name: string, spec: Record<string, unknown>, labels: Record<string, string> = {}, status?: unknown) => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name, namespace, labels },
  spec,
  ...(status ? { status } : {}),
});
const deployment = (namespace: string, name: string, podLabels: Record<string, string>, extra: Record<string, unknown> = {}, labels: Record<string, string> = {}) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name, namespace, labels },
  spec: { selector: { matchLabels: podLabels }, template: { metadata: { labels: podLabels }, spec: { containers: [{ name: "app", image: "app:1" }], ...extra } } },
});
const pod = (namespace: string, name: string, labels: Record<string, string>, nodeName: string, phase = "Running") => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace, labels },
  spec: { nodeName, serviceAccountName: "from-pod" },
  status: { phase },
});

describe("snapshotFromKubernetesObjects details", () => {
  it("reads subzones, legacy zone labels, and skips finished pods", () => {
    const { snapshot: s } = snapshotFromKubernetesObjects("c", [
      node("n1", { "topology.kubernetes.io/region": "eu-west-1", "topology.kubernetes.io/zone": "eu-west-1a", "topology.istio.io/subzone": "rack7" }),
      node("n2", { "failure-domain.beta.kubernetes.io/region": "eu-west-1", "failure-domain.beta.kubernetes.io/zone": "eu-west-1b" }),
      node("n3", {}),
      deployment("apps", "web", { app: "web" }),
      pod("apps", "web-1", { app: "web" }, "n1"),
      pod("apps", "web-2", { app: "web" }, "n2", "Succeeded"),
      pod("apps", "web-3", { app: "web" }, "n3"),
    ]);
    expect(s.localities).toEqual([
      { region: "eu-west-1", zone: "eu-west-1a", subZone: "rack7" },
      { region: "eu-west-1", zone: "eu-west-1b" },
    ]);
    const w = s.workloads[0]!;
    expect(w.localities).toEqual([{ region: "eu-west-1", zone: "eu-west-1a", subZone: "rack7" }]);
    // no serviceAccountName in the template: taken from a running pod
    expect(w.serviceAccount).toBe("from-pod");
    // implicit namespace (no Namespace object given)
    expect(s.namespaces).toEqual([{ name: "apps", labels: {} }]);
  });

  it("defaults: service account `default`, TCP, targetPort = port, ClusterIP, replicas 1, DaemonSet without replicas", () => {
    const { snapshot: s, diagnostics } = snapshotFromKubernetesObjects("c", [
      deployment("a", "d", { app: "d" }),
      { apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "ds", namespace: "a" }, spec: { template: { metadata: { labels: { app: "ds" } }, spec: {} } } },
      { apiVersion: "apps/v1", kind: "StatefulSet", metadata: { name: "db", namespace: "a" }, spec: { replicas: 3, selector: { matchLabels: { app: "db" } }, template: { metadata: { labels: { app: "db" } }, spec: { serviceAccountName: "db" } } } },
      service("a", "s", { selector: { app: "d" }, ports: [{ port: 8080 }, { name: "grpc-x", port: 9090, targetPort: "grpc", appProtocol: "grpc" }] }),
    ]);
    expect(diagnostics).toEqual([]);
    expect(s.workloads.map((w) => [w.kind, w.name, w.serviceAccount, w.replicas])).toEqual([
      ["DaemonSet", "ds", "default", undefined],
      ["Deployment", "d", "default", 1],
      ["StatefulSet", "db", "db", 3],
    ]);
    expect(s.services[0]).toEqual({
      name: "s",
      namespace: "a",
      labels: {},
      selector: { app: "d" },
      type: "ClusterIP",
      ports: [
        { name: "", port: 8080, targetPort: 8080, protocol: "TCP" },
        { name: "grpc-x", port: 9090, targetPort: "grpc", protocol: "TCP", appProtocol: "grpc" },
      ],
    });
    expect(validateDiscoverySnapshot(s)).toEqual([]);
  });

  it("control plane: unrevisioned istiod, `istio` ConfigMap, default trust domain", () => {
    const istiod = deployment("istio-system", "istiod", { app: "istiod" }, { serviceAccountName: "istiod", containers: [{ name: "discovery", image: "gcr.io/istio-release/pilot:1.28.2-distroless" }] });
    const withCm = snapshotFromKubernetesObjects("c", [
      istiod,
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "istio", namespace: "istio-system" }, data: { mesh: "trustDomain: corp.example\nrootNamespace: istio-config\n" } },
    ]).snapshot;
    expect(withCm.meshes).toEqual([
      { revision: "default", namespace: "istio-system", trustDomain: "corp.example", istiodServiceAccount: "istiod", version: "1.28.2", rootNamespace: "istio-config" },
    ]);
    const noCm = snapshotFromKubernetesObjects("c", [istiod]).snapshot;
    expect(noCm.meshes[0]?.trustDomain).toBe("cluster.local");
  });

  it("control plane: two revisions side by side each read their own ConfigMap", () => {
    const mk = (rev: string, td: string) => [
      deployment("istio-system", `istiod-${rev}`, { app: "istiod", "istio.io/rev": rev }, { serviceAccountName: `istiod-${rev}` }, { "istio.io/rev": rev }),
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: `istio-${rev}`, namespace: "istio-system" }, data: { mesh: `trustDomain: ${td}\n` } },
    ];
    const { snapshot: s } = snapshotFromKubernetesObjects("c", [...mk("1-28", "old.td"), ...mk("1-29", "new.td")]);
    expect(s.meshes.map((m) => [m.revision, m.trustDomain, m.istiodServiceAccount])).toEqual([
      ["1-28", "old.td", "istiod-1-28"],
      ["1-29", "new.td", "istiod-1-29"],
    ]);
  });

  it("gateways: network-labelled Service is east-west; externalIPs when no load balancer status; pending LB has no address", () => {
    const { snapshot: s } = snapshotFromKubernetesObjects("c", [
      service("gw", "cross-network", { type: "LoadBalancer", selector: { app: "x" }, ports: [{ name: "tls", port: 15443 }] }, { "topology.istio.io/network": "net-a" }),
      service("gw", "ingress", { type: "NodePort", selector: { istio: "ingressgateway" }, externalIPs: ["192.0.2.7"], ports: [{ name: "http2", port: 80, targetPort: 8080, nodePort: 31080 }] }),
      service("gw", "plain", { selector: { app: "plain" }, ports: [{ port: 80 }] }),
    ]);
    expect(s.gateways.map((g) => [g.name, g.kind, g.addresses, g.network])).toEqual([
      ["cross-network", "east-west", [], "net-a"],
      ["ingress", "ingress", ["192.0.2.7"], undefined],
    ]);
    expect(s.gateways[1]?.ports).toEqual([{ name: "http2", port: 80, targetPort: 8080, protocol: "TCP", nodePort: 31080 }]);
    expect(validateDiscoverySnapshot(s)).toEqual([]);
  });

  it("Istio objects: managed flag, hosts, other groups ignored", () => {
    const { snapshot: s } = snapshotFromKubernetesObjects("c", [
      { apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: "vs", namespace: "a", labels: { "gitmesh.io/managed": "true" } }, spec: { hosts: ["b.example", "a.example"] } },
      { apiVersion: "security.istio.io/v1", kind: "AuthorizationPolicy", metadata: { name: "ap", namespace: "a" }, spec: {} },
      { apiVersion: "install.istio.io/v1alpha1", kind: "IstioOperator", metadata: { name: "op", namespace: "istio-system" } },
      { apiVersion: "apps/v1", kind: "ReplicaSet", metadata: { name: "rs", namespace: "a" } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: "s", namespace: "a" }, data: { token: "c2VjcmV0" } },
    ]);
    expect(s.istioObjects).toEqual([
      { apiVersion: "networking.istio.io/v1", kind: "VirtualService", namespace: "a", name: "vs", labels: { "gitmesh.io/managed": "true" }, managed: true, hosts: ["a.example", "b.example"] },
      { apiVersion: "security.istio.io/v1", kind: "AuthorizationPolicy", namespace: "a", name: "ap", labels: {}, managed: false },
    ]);
    expect(JSON.stringify(s)).not.toContain("c2VjcmV0");
  });
});

describe("discovery selectors", () => {
  const objects = [
    ns("istio-system"),
    ns("apps", { "mesh": "on" }),
    ns("legacy", { "mesh": "off" }),
    ns("tools", { team: "platform" }),
    deployment("istio-system", "istiod", { app: "istiod" }),
    deployment("apps", "a", { app: "a" }),
    deployment("legacy", "l", { app: "l" }),
    deployment("tools", "t", { app: "t" }),
    service("legacy", "l", { selector: { app: "l" }, ports: [{ port: 80 }] }),
    { apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: "owned", namespace: "legacy", labels: { "gitmesh.io/managed": "true" } }, spec: { hosts: ["x"] } },
    { apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: "users", namespace: "legacy" }, spec: { hosts: ["y"] } },
  ];

  it("matchLabels and matchExpressions (any selector matches); the control plane namespace is always discovered", () => {
    const { snapshot: s } = snapshotFromKubernetesObjects("c", objects, {
      discoverySelectors: [{ matchLabels: { mesh: "on" } }, { matchExpressions: [{ key: "team", operator: "In", values: ["platform"] }] }],
    });
    expect(s.namespaces.map((n) => n.name)).toEqual(["apps", "istio-system", "tools"]);
    expect(s.workloads.map((w) => w.name)).toEqual(["a", "istiod", "t"]);
    expect(s.services).toEqual([]);
    // a gitmesh-owned object stays visible (so it can be pruned); a user's object is filtered
    expect(s.istioObjects.map((o) => o.name)).toEqual(["owned"]);
  });

  it("NotIn / DoesNotExist / Exists", () => {
    const names = (sel: Parameters<typeof snapshotFromKubernetesObjects>[2]) =>
      snapshotFromKubernetesObjects("c", objects, sel).snapshot.namespaces.map((n) => n.name);
    expect(names({ discoverySelectors: [{ matchExpressions: [{ key: "mesh", operator: "NotIn", values: ["off"] }] }] })).toEqual(["apps", "istio-system", "tools"]);
    expect(names({ discoverySelectors: [{ matchExpressions: [{ key: "mesh", operator: "DoesNotExist" }] }] })).toEqual(["istio-system", "tools"]);
    expect(names({ discoverySelectors: [{ matchExpressions: [{ key: "mesh", operator: "Exists" }] }] })).toEqual(["apps", "istio-system", "legacy"]);
    expect(names({ discoverySelectors: [{}] })).toEqual(["apps", "istio-system", "legacy", "tools"]);
    // an empty list selects everything, as in Istio's meshConfig.discoverySelectors
    expect(names({ discoverySelectors: [] })).toEqual(["apps", "istio-system", "legacy", "tools"]);
    expect(names({ discoverySelectors: [{ matchLabels: { nothing: "matches" } }] })).toEqual(["istio-system"]);
  });

  it("uses the mesh config's discoverySelectors unless told otherwise", () => {
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "istio", namespace: "istio-system" }, data: { mesh: "discoverySelectors:\n- matchLabels:\n    mesh: \"on\"\n" } };
    const fromMesh = snapshotFromKubernetesObjects("c", [...objects, cm]).snapshot;
    expect(fromMesh.namespaces.map((n) => n.name)).toEqual(["apps", "istio-system"]);
    const ignored = snapshotFromKubernetesObjects("c", [...objects, cm], { honorMeshDiscoverySelectors: false }).snapshot;
    expect(ignored.namespaces).toHaveLength(4);
    const explicit = snapshotFromKubernetesObjects("c", [...objects, cm], { discoverySelectors: [{ matchLabels: { team: "platform" } }] }).snapshot;
    expect(explicit.namespaces.map((n) => n.name)).toEqual(["istio-system", "tools"]);
  });
});

describe("malformed input gives diagnostics, never exceptions", () => {
  it("skips non-objects and objects without identity, keeps the rest", () => {
    const { snapshot: s, diagnostics } = snapshotFromKubernetesObjects("c", [
      "just a string",
      42,
      null,
      [1, 2],
      { kind: "Service", metadata: { name: "no-api-version" } },
      { apiVersion: "v1", kind: "Service", metadata: {} },
      { apiVersion: "v1", kind: "List", items: [{ apiVersion: "v1", kind: "Namespace" }, ns("ok")] },
      ns("fine"),
    ]);
    expect(s.namespaces.map((n) => n.name)).toEqual(["fine", "ok"]);
    const malformed = diagnostics.filter((d) => d.code === DiscoveryCode.MalformedObject);
    expect(malformed.map((d) => d.path)).toEqual(["/", "/", "/", "/", "/", "/items/0"]);
    expect(malformed.every((d) => d.severity === "error")).toBe(true);
    expect(malformed[4]?.message).toContain("metadata.name");
    expect(malformed[3]?.message).toContain("apiVersion");
  });

  it("bad fields are skipped or defaulted with a warning at their path", () => {
    const { snapshot: s, diagnostics } = snapshotFromKubernetesObjects("c", [
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "s", namespace: "a", labels: { version: 2, ok: "yes", nested: { x: 1 } } },
        spec: { type: "Weird", selector: "app=x", ports: [{ port: "eighty" }, { port: 70000 }, { port: 80, protocol: "HTTP", targetPort: -1 }, "x"] },
      },
      { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "d", namespace: "a" }, spec: { replicas: -2, selector: { matchExpressions: [{ nope: true }] }, template: "no" } },
      { apiVersion: "v1", kind: "Service", metadata: { name: "gw", namespace: "a", labels: { istio: "ingressgateway" } }, spec: { ports: [] }, status: { loadBalancer: { ingress: [{}] } } },
    ]);
    const byPath = Object.fromEntries(diagnostics.map((d) => [d.path, d]));
    expect(Object.keys(byPath).sort()).toEqual([
      "/metadata/labels/nested",
      "/metadata/labels/version",
      "/spec/selector/matchExpressions/0",
      "/spec/ports/0/port",
      "/spec/ports/1/port",
      "/spec/ports/2/protocol",
      "/spec/ports/2/targetPort",
      "/spec/ports/3",
      "/spec/replicas",
      "/spec/selector",
      "/spec/type",
      "/status/loadBalancer/ingress/0",
    ].sort());
    expect(diagnostics.every((d) => d.code === DiscoveryCode.MalformedField && d.severity === "warning")).toBe(true);
    expect(byPath["/metadata/labels/version"]?.message).toContain('quote it ("2")');
    expect(byPath["/spec/type"]?.object).toEqual({ apiVersion: "v1", kind: "Service", name: "s", namespace: "a" });
    const svc = s.services.find((x) => x.name === "s")!;
    expect(svc.labels).toEqual({ ok: "yes", version: "2" });
    expect(svc.type).toBe("ClusterIP");
    expect(svc.ports).toEqual([{ name: "", port: 80, targetPort: 80, protocol: "TCP" }]);
    expect(s.workloads[0]).toMatchObject({ name: "d", localities: [], serviceAccount: "default" });
    expect(s.workloads[0]?.replicas).toBeUndefined();
    expect(validateDiscoverySnapshot(s)).toEqual([]);
  });

  it("duplicates: the last one wins, with a warning; bad mesh config falls back to the default trust domain", () => {
    const { snapshot: s, diagnostics } = snapshotFromKubernetesObjects("c", [
      ns("a", { v: "1" }),
      ns("a", { v: "2" }),
      deployment("istio-system", "istiod", { app: "istiod" }),
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "istio", namespace: "istio-system" }, data: { mesh: "trustDomain: [unclosed" } },
    ]);
    expect(s.namespaces.find((n) => n.name === "a")?.labels).toEqual({ v: "2" });
    expect(s.meshes[0]?.trustDomain).toBe("cluster.local");
    expect(diagnostics.map((d) => d.code).sort()).toEqual([DiscoveryCode.BadMeshConfig, DiscoveryCode.DuplicateObject]);
  });

  it("an invalid cluster name is an error diagnostic", () => {
    const { diagnostics } = snapshotFromKubernetesObjects("Cluster_1", []);
    expect(diagnostics).toEqual([expect.objectContaining({ code: DiscoveryCode.InvalidClusterName, severity: "error" })]);
  });

  it("survives random garbage", () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    const atoms: unknown[] = [null, 0, -1, 1.5, "", "x", true, [], {}, { a: 1 }, ["v1"], 70000];
    const keys = ["apiVersion", "kind", "metadata", "name", "namespace", "labels", "spec", "ports", "port", "selector", "template", "status", "items", "data", "mesh"];
    const gen = (depth: number): unknown => {
      if (depth > 4 || rnd() < 0.3) return atoms[Math.floor(rnd() * atoms.length)];
      if (rnd() < 0.2) return Array.from({ length: Math.floor(rnd() * 3) }, () => gen(depth + 1));
      const o: Record<string, unknown> = {};
      for (let i = 0; i < 4; i++) o[keys[Math.floor(rnd() * keys.length)]!] = gen(depth + 1);
      if (rnd() < 0.7) {
        o.apiVersion = ["v1", "apps/v1", "networking.istio.io/v1"][Math.floor(rnd() * 3)];
        o.kind = ["Service", "Deployment", "Pod", "Node", "Namespace", "ConfigMap", "VirtualService", "List"][Math.floor(rnd() * 8)];
        o.metadata = { name: `n${Math.floor(rnd() * 5)}`, namespace: rnd() < 0.5 ? "istio-system" : gen(depth + 1), labels: gen(depth + 1) };
      }
      if (o.kind === "Deployment" && rnd() < 0.5) o.metadata = { name: "istiod", namespace: "istio-system" };
      return o;
    };
    for (let i = 0; i < 300; i++) {
      const objects = Array.from({ length: 6 }, () => gen(0));
      const { snapshot } = snapshotFromKubernetesObjects("c", objects);
      expect(validateDiscoverySnapshot(snapshot)).toEqual([]);
    }
  });
});
