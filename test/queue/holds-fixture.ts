/**
 * A small mesh for the completeness tests: registered clusters, workspaces with east-west route
 * tables (one VirtualService each per cluster), and the discovery each cluster reports.
 *
 *   apps    cluster1 + cluster2, namespace apps   (Service web)
 *   team    cluster1 + cluster2, namespace team   (Service tsvc)
 *   shared  every cluster ("*"), namespace shared (Service api)
 */
import { loadDesiredState, type DesiredState } from "../../src/config/index.js";
import { normalizeSnapshot, type DiscoverySnapshot } from "../../src/discovery/index.js";

export interface MeshSpec {
  readonly clusters: readonly string[];
  /** workspace → route table names (each in the workspace's namespace). */
  readonly tables: Readonly<Record<string, readonly string[]>>;
  /** Route tables with failureMode FREEZE_CONFIG. */
  readonly freeze?: readonly string[];
  /** Route tables with a second route to a Service that does not exist. */
  readonly broken?: readonly string[];
  /** gitmesh.yaml content. */
  readonly settings?: string;
}

export const WORKSPACES: Readonly<Record<string, { namespace: string; service: string; clusters: string }>> = {
  apps: { namespace: "apps", service: "web", clusters: "pair" },
  team: { namespace: "team", service: "tsvc", clusters: "pair" },
  shared: { namespace: "shared", service: "api", clusters: "*" },
};

export function meshFiles(spec: MeshSpec): Record<string, string> {
  const files: Record<string, string> = {};
  for (const c of spec.clusters) {
    files[`clusters/${c}.yaml`] = `apiVersion: admin.gloo.solo.io/v2\nkind: KubernetesCluster\nmetadata: {name: ${c}, namespace: gloo-mesh}\nspec: {clusterDomain: cluster.local}\n`;
  }
  for (const [ws, w] of Object.entries(WORKSPACES)) {
    const entries = w.clusters === "*" ? [`  - name: "*"\n    namespaces: [{name: ${w.namespace}}]`] : ["cluster1", "cluster2"].map((c) => `  - name: ${c}\n    namespaces: [{name: ${w.namespace}}]`);
    files[`workspaces/${ws}/workspace.yaml`] = `apiVersion: admin.gloo.solo.io/v2\nkind: Workspace\nmetadata: {name: ${ws}, namespace: gloo-mesh}\nspec:\n  workloadClusters:\n${entries.join("\n")}\n`;
    for (const t of spec.tables[ws] ?? []) {
      const freeze = spec.freeze?.includes(t) === true ? "  failureMode: FREEZE_CONFIG\n" : "";
      const broken = spec.broken?.includes(t) === true ? `  - name: broken\n    matchers: [{uri: {prefix: /broken}}]\n    forwardTo: {destinations: [{ref: {name: not-there}, port: {number: 8080}}]}\n` : "";
      files[`workspaces/${ws}/${t}.yaml`] =
        `apiVersion: networking.gloo.solo.io/v2\nkind: RouteTable\nmetadata: {name: ${t}, namespace: ${w.namespace}}\nspec:\n  hosts: [${t}.${w.namespace}.svc.cluster.local]\n${freeze}  http:\n${broken}  - name: main\n    forwardTo: {destinations: [{ref: {name: ${w.service}}, port: {number: 8080}}]}\n`;
    }
  }
  if (spec.settings !== undefined) files["gitmesh.yaml"] = spec.settings;
  return files;
}

export function meshState(spec: MeshSpec): DesiredState {
  const files = Object.entries(meshFiles(spec)).map(([path, content]) => ({ path, content }));
  const { state, diagnostics } = loadDesiredState(files);
  const errors = diagnostics.filter((d) => d.severity === "error");
  if (errors.length > 0) throw new Error(`fixture does not load: ${errors.map((d) => d.message).join("; ")}`);
  return state;
}

/** Kubernetes objects an emulated cluster starts with (namespaces and the Services of every workspace). */
export function clusterSeed(): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const w of Object.values(WORKSPACES)) {
    out.push({ apiVersion: "v1", kind: "Namespace", metadata: { name: w.namespace } });
    out.push({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: w.service, namespace: w.namespace, labels: { app: w.service } },
      spec: { selector: { app: w.service }, type: "ClusterIP", ports: [{ name: "http", port: 8080, targetPort: 8080, protocol: "TCP" }] },
    });
  }
  return out;
}

/** The discovery snapshot such a cluster reports (plus gitmesh-managed Istio objects it holds). */
export function snapshotOf(cluster: string, istioObjects: DiscoverySnapshot["istioObjects"] = []): DiscoverySnapshot {
  return normalizeSnapshot({
    cluster,
    namespaces: Object.values(WORKSPACES).map((w) => ({ name: w.namespace, labels: {} })),
    services: Object.values(WORKSPACES).map((w) => ({
      name: w.service,
      namespace: w.namespace,
      labels: { app: w.service },
      selector: { app: w.service },
      type: "ClusterIP",
      ports: [{ name: "http", port: 8080, targetPort: 8080, protocol: "TCP" }],
    })),
    workloads: [],
    localities: [],
    meshes: [],
    gateways: [],
    istioObjects,
  } as unknown as DiscoverySnapshot);
}

/** The VirtualService a route table renders in a cluster (its key in outputs: kind/namespace/name). */
export function vsKey(ws: string, table: string, cluster: string): string {
  const ns = WORKSPACES[ws]!.namespace;
  return `VirtualService/${ns}/routetable-${table}-${ns}-${cluster}-${ws}`;
}
