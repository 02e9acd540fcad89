/**
 * A small fleet for the insight tests: configuration files as a repository would hold them (loaded by
 * the real loader, so file:line are real), discovery snapshots built from the model's types, and the
 * real translation of the one against the other.
 */
import { loadDesiredState } from "../../src/config/index.js";
import { emptySnapshot, type DiscoveredNamespace, type DiscoveredWorkload, type DiscoverySnapshot } from "../../src/discovery/index.js";
import { analyze, type AnalyzeOptions, type CertificateExpiry, type Insight, type TrafficEdge } from "../../src/insights/index.js";
import { translateAll } from "../../src/translate/index.js";

export const CLUSTERS = `apiVersion: admin.gloo.solo.io/v2
kind: KubernetesCluster
metadata:
  name: cluster1
  namespace: gloo-mesh
spec:
  clusterDomain: cluster.local
---
apiVersion: admin.gloo.solo.io/v2
kind: KubernetesCluster
metadata:
  name: cluster2
  namespace: gloo-mesh
spec:
  clusterDomain: cluster.local
`;

/** A Workspace owning namespace `ns` in every cluster, and its WorkspaceSettings (spec given as YAML lines, indented 2). */
export function workspace(name: string, ns: string, settingsSpec = "  {}"): string {
  return `apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata:
  name: ${name}
  namespace: gloo-mesh
spec:
  workloadClusters:
  - name: '*'
    namespaces:
    - name: ${ns}
---
apiVersion: admin.gloo.solo.io/v2
kind: WorkspaceSettings
metadata:
  name: ${name}
  namespace: ${ns}
spec:
${settingsSpec}
`;
}

export interface ClusterSpec {
  readonly name: string;
  /** Namespaces with their labels. */
  readonly namespaces?: Readonly<Record<string, Record<string, string>>>;
  /** Services `ns/name`, each backed by a Deployment of the same name with pod label app=<name>. */
  readonly services?: readonly string[];
  readonly workloads?: readonly DiscoveredWorkload[];
  /** istiod versions (one mesh revision each). */
  readonly istio?: readonly string[];
}

export function snapshot(spec: ClusterSpec): DiscoverySnapshot {
  const s = emptySnapshot(spec.name);
  const namespaces: DiscoveredNamespace[] = Object.entries(spec.namespaces ?? { shop: {} }).map(([name, labels]) => ({ name, labels }));
  const services = (spec.services ?? []).map((ref) => {
    const [namespace, name] = ref.split("/") as [string, string];
    return { name, namespace, labels: { app: name }, selector: { app: name }, ports: [{ name: "http", port: 8080, targetPort: 8080, protocol: "TCP" as const }], type: "ClusterIP" as const };
  });
  const workloads: DiscoveredWorkload[] = [
    ...services.map((svc) => ({ kind: "Deployment" as const, name: svc.name, namespace: svc.namespace, podLabels: { app: svc.name }, serviceAccount: svc.name, localities: [] })),
    ...(spec.workloads ?? []),
  ];
  const meshes = (spec.istio ?? []).map((version, i) => ({
    revision: i === 0 ? "default" : `r${i}`,
    namespace: "istio-system",
    trustDomain: "cluster.local",
    istiodServiceAccount: "istiod",
    version,
  }));
  return { ...s, namespaces, services, workloads, meshes };
}

export interface FleetInput {
  /** Repository files: path → YAML. */
  readonly files?: Readonly<Record<string, string>>;
  readonly clusters?: readonly ClusterSpec[];
  readonly certificates?: readonly CertificateExpiry[];
  readonly traffic?: readonly TrafficEdge[];
  readonly today?: string;
  readonly options?: AnalyzeOptions;
}

/** Loads, translates and analyses a fleet; the findings. */
export function insightsOf(input: FleetInput): Insight[] {
  const discovery = new Map((input.clusters ?? []).map((c) => [c.name, snapshot(c)]));
  const files = input.files === undefined ? undefined : Object.entries(input.files).map(([path, content]) => ({ path, content }));
  const loaded = files === undefined ? undefined : loadDesiredState(files);
  const translation = loaded === undefined ? undefined : translateAll(loaded.state, discovery);
  return analyze(
    {
      ...(loaded === undefined ? {} : { desired: loaded.state }),
      discovery,
      ...(translation === undefined ? {} : { translation }),
      ...(input.certificates === undefined ? {} : { certificates: input.certificates }),
      ...(input.traffic === undefined ? {} : { traffic: input.traffic }),
      today: input.today ?? "2026-11-29",
    },
    input.options,
  );
}

/** The findings of one code. */
export function only(list: readonly Insight[], code: string): Insight[] {
  return list.filter((i) => i.code === code);
}

/** 1-based line of the first occurrence of `text` in `yaml`. */
export function lineOf(yaml: string, text: string): number {
  const at = yaml.indexOf(text);
  if (at < 0) throw new Error(`${text} not in the YAML`);
  return yaml.slice(0, at).split("\n").length;
}
