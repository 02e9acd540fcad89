/**
 * The Kubernetes side of one cluster for pilot's simulation: the objects istiod's Kubernetes
 * registry would read, made from the cluster's discovery snapshot. One Pod per workload and per
 * gateway (labels, service account, a Running/Ready status with a pod IP, a Node carrying its
 * locality), a Service per discovered Service (and per gateway whose Service the snapshot lists only
 * under `gateways`), and an EndpointSlice per Service with a selector listing the Pods it selects —
 * the fake Kubernetes client runs no endpoint controller, so istiod would see no endpoints without it.
 * Addresses are assigned in order from fixed ranges: Services 10.96.0.0/16, Pods 10.244.0.0/16.
 */
import type { DiscoverySnapshot } from "../../src/discovery/index.js";

type Obj = Record<string, unknown>;

/** A proxy the Go tests can build: a Pod of the cluster (a sidecar of a workload, or a gateway). */
export interface SimProxy {
  readonly name: string;
  readonly namespace: string;
  readonly type: "sidecar" | "router";
  readonly ip: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly serviceAccount: string;
  readonly locality?: string;
}

export interface SimCluster {
  /** Kubernetes objects (Namespaces, Nodes, Services, Pods, EndpointSlices). */
  readonly objects: readonly Obj[];
  readonly proxies: readonly SimProxy[];
  /** The mesh's trust domain and root namespace (mesh config of the cluster's istiod). */
  readonly trustDomain: string;
  readonly rootNamespace: string;
}

interface PodSpec {
  readonly name: string;
  readonly namespace: string;
  readonly type: "sidecar" | "router";
  readonly labels: Readonly<Record<string, string>>;
  readonly serviceAccount: string;
  readonly locality: { region: string; zone?: string; subZone?: string } | undefined;
}

interface SimService {
  readonly name: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly selector: Readonly<Record<string, string>>;
  readonly ports: readonly { name: string; port: number; targetPort: number | string; protocol: string; appProtocol?: string }[];
  readonly type: string;
  readonly clusterIP?: string;
  readonly externalName?: string;
  /** Load balancer addresses (gateway Services). */
  readonly loadBalancer: readonly string[];
}

function address(base: string, i: number): string {
  return `${base}.${Math.floor(i / 250)}.${(i % 250) + 2}`;
}

function selects(selector: Readonly<Record<string, string>>, labels: Readonly<Record<string, string>>): boolean {
  const entries = Object.entries(selector);
  return entries.length > 0 && entries.every(([k, v]) => labels[k] === v);
}

function localityString(l: PodSpec["locality"]): string | undefined {
  if (l === undefined) return undefined;
  return [l.region, l.zone ?? "", l.subZone ?? ""].join("/").replace(/\/+$/, "");
}

export function kubeObjects(snapshot: DiscoverySnapshot): SimCluster {
  const objects: Obj[] = [];
  const mesh = snapshot.meshes[0];
  const network = mesh?.network;
  for (const ns of snapshot.namespaces) {
    const labels = { ...ns.labels, ...(network !== undefined && ns.name === mesh?.namespace ? { "topology.istio.io/network": network } : {}) };
    objects.push({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns.name, labels } });
  }

  const pods: PodSpec[] = [
    ...snapshot.workloads.map((w) => ({ name: w.name, namespace: w.namespace, type: "sidecar" as const, labels: w.podLabels, serviceAccount: w.serviceAccount, locality: w.localities[0] })),
    ...snapshot.gateways.map((g) => ({ name: g.name, namespace: g.namespace, type: "router" as const, labels: g.podLabels, serviceAccount: g.name, locality: g.locality })),
  ];
  const nodes = new Map<string, PodSpec["locality"]>();
  const proxies: SimProxy[] = [];
  pods.forEach((p, i) => {
    const ip = address("10.244", i);
    const locality = localityString(p.locality);
    const node = locality === undefined ? "node-default" : `node-${locality.replaceAll("/", "-")}`;
    nodes.set(node, p.locality);
    objects.push({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: `${p.name}-0`, namespace: p.namespace, labels: p.labels },
      spec: { serviceAccountName: p.serviceAccount, nodeName: node, containers: [{ name: "app", image: "app" }] },
      status: { phase: "Running", podIP: ip, podIPs: [{ ip }], conditions: [{ type: "Ready", status: "True" }] },
    });
    proxies.push({ name: `${p.name}-0`, namespace: p.namespace, type: p.type, ip, labels: p.labels, serviceAccount: p.serviceAccount, ...(locality === undefined ? {} : { locality }) });
  });
  for (const [name, l] of nodes) {
    const labels: Record<string, string> = {};
    if (l !== undefined) {
      labels["topology.kubernetes.io/region"] = l.region;
      if (l.zone !== undefined) labels["topology.kubernetes.io/zone"] = l.zone;
      if (l.subZone !== undefined) labels["topology.istio.io/subzone"] = l.subZone;
    }
    objects.push({ apiVersion: "v1", kind: "Node", metadata: { name, labels } });
  }

  const services: SimService[] = [
    ...snapshot.services.map((s) => ({ ...s, loadBalancer: [] })),
    ...snapshot.gateways
      .filter((g) => !snapshot.services.some((s) => s.name === g.name && s.namespace === g.namespace))
      .map((g) => ({
        name: g.name,
        namespace: g.namespace,
        labels: { ...g.podLabels, ...(g.network === undefined ? {} : { "topology.istio.io/network": g.network }) },
        selector: g.podLabels,
        ports: g.ports,
        type: g.serviceType ?? "LoadBalancer",
        loadBalancer: g.addresses,
      })),
  ];
  services.forEach((s, i) => {
    const ports = s.ports.map((p) => ({ name: p.name || undefined, port: p.port, targetPort: p.targetPort, protocol: p.protocol, appProtocol: p.appProtocol }));
    const spec: Obj = s.type === "ExternalName" ? { type: "ExternalName", externalName: s.externalName, ports } : { type: s.type, clusterIP: s.clusterIP ?? address("10.96", i), selector: s.selector, ports };
    const status = s.loadBalancer.length > 0 ? { loadBalancer: { ingress: s.loadBalancer.map((a) => (/^[\d.]+$/.test(a) ? { ip: a } : { hostname: a })) } } : {};
    objects.push({ apiVersion: "v1", kind: "Service", metadata: { name: s.name, namespace: s.namespace, labels: s.labels }, spec, status });
    if (s.type === "ExternalName" || Object.keys(s.selector).length === 0) return;
    const selected = proxies.filter((p) => p.namespace === s.namespace && selects(s.selector, p.labels));
    objects.push({
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { name: `${s.name}-sim`, namespace: s.namespace, labels: { "kubernetes.io/service-name": s.name } },
      addressType: "IPv4",
      endpoints: selected.map((p) => ({ addresses: [p.ip], conditions: { ready: true }, targetRef: { kind: "Pod", name: p.name, namespace: p.namespace } })),
      // A named targetPort would need the Pod's container ports; the simulation sends to the number.
      ports: s.ports.map((p) => ({ name: p.name, port: typeof p.targetPort === "number" ? p.targetPort : p.port, protocol: p.protocol })),
    });
  });
  return { objects, proxies, trustDomain: mesh?.trustDomain ?? "cluster.local", rootNamespace: mesh?.rootNamespace ?? mesh?.namespace ?? "istio-system" };
}
