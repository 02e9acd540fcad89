/**
 * Deterministic fleet generator: Gloo v2 configuration files (as the loader's SourceFile list) and
 * one discovery snapshot per cluster. Same options (incl. seed) ⇒ the same bytes, so figures from two
 * runs compare like with like. Used by the translation benchmarks (presets in bench/fleet/presets.ts)
 * and by `gitmesh simulate` (src/cli/simulate.ts), which is why it lives here and not under bench/.
 *
 * What a fleet holds:
 * - clusters `cluster-000…`, each with a locality, an Istio mesh (trust domain = cluster name),
 *   an east-west gateway (port "tls" 15443) and an ingress gateway, and a KubernetesCluster object;
 * - workspaces `ws-000…` owning namespaces `ws-000-ns-0…` in every cluster of their block, each
 *   namespace with `servicesPerNamespace` services (Service + Deployment + service account);
 * - per workspace: WorkspaceSettings (ring import/export; isolation / federation on some),
 *   one east-west RouteTable per namespace, VirtualDestinations, an ExternalService, and one
 *   policy of each destination/route kind (Failover, OutlierDetection, Connection, LoadBalancer,
 *   Access, RetryTimeout, FaultInjection);
 * - one global RootTrustPolicy in the admin namespace.
 *
 * Layout: clusters are cut into consecutive blocks of `clustersPerWorkspace`; every block hosts
 * `servicesPerCluster / (namespacesPerWorkspace × servicesPerNamespace)` workspaces, each present in
 * every cluster of its block. Workspaces form a ring of import/export (workspace i exports its virtual
 * destinations to i-1 and imports from i+1), so that sharing crosses block boundaries.
 */
import { stringify } from "yaml";

export interface FleetOptions {
  /** Name used in file paths and reports. */
  readonly name: string;
  /** Seed of the pseudo-random choices (ports, versions, zones). Same seed ⇒ same fleet. */
  readonly seed: number;
  readonly clusters: number;
  readonly servicesPerCluster: number;
  readonly servicesPerNamespace: number;
  readonly namespacesPerWorkspace: number;
  /** Consecutive clusters that share a set of workspaces; must divide `clusters` for even blocks. */
  readonly clustersPerWorkspace: number;
  /** HTTP routes per RouteTable (one east-west RouteTable per namespace). */
  readonly routesPerTable: number;
  /** VirtualDestinations per workspace, each backed by one service in every cluster of the block. */
  readonly virtualDestinationsPerWorkspace: number;
  /** Every n-th workspace turns on serviceIsolation (+ trimProxyConfig); 0 = never. */
  readonly isolationEvery: number;
  /** Every n-th workspace turns on federation for services labelled `federate: "true"`; 0 = never. */
  readonly federationEvery: number;
  /** ExternalServices per workspace. */
  readonly externalServicesPerWorkspace: number;
}

/**
 * A small seeded PRNG (mulberry32) for generated fleets and randomized tests (test/helpers/random.ts
 * re-exports it), so that a fleet or a failing sequence can be reproduced from its seed. Not for
 * anything secret.
 */
export function createRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Same shape as src/config's SourceFile (repo-relative POSIX path + content). */
export interface FleetFile {
  readonly path: string;
  readonly content: string;
}

type Labels = Record<string, string>;

/** Same shape as the discovery snapshot contract (schemas/discovery-snapshot.schema.json). */
export interface FleetSnapshot {
  cluster: string;
  namespaces: { name: string; labels: Labels }[];
  services: {
    name: string;
    namespace: string;
    labels: Labels;
    selector: Labels;
    ports: { name: string; port: number; targetPort: number | string; protocol: string; appProtocol?: string }[];
    type: string;
    clusterIP?: string;
  }[];
  workloads: {
    kind: "Deployment" | "StatefulSet" | "DaemonSet";
    name: string;
    namespace: string;
    podLabels: Labels;
    serviceAccount: string;
    localities: Locality[];
    replicas?: number;
  }[];
  localities: Locality[];
  meshes: {
    revision: string;
    namespace: string;
    trustDomain: string;
    istiodServiceAccount: string;
    version?: string;
    network?: string;
  }[];
  gateways: {
    kind: "east-west" | "ingress";
    name: string;
    namespace: string;
    podLabels: Labels;
    ports: { name: string; port: number; targetPort: number | string; protocol: string }[];
    addresses: string[];
    locality?: Locality;
    network?: string;
  }[];
  istioObjects: { apiVersion: string; kind: string; namespace: string; name: string; labels: Labels; managed: boolean; hosts?: string[] }[];
}

interface Locality {
  region: string;
  zone?: string;
  subZone?: string;
}

export interface Fleet {
  readonly options: FleetOptions;
  readonly files: FleetFile[];
  readonly discovery: Map<string, FleetSnapshot>;
  readonly counts: {
    clusters: number;
    workspaces: number;
    namespaces: number;
    services: number;
    configObjects: number;
  };
  /** A file holding one OutlierDetectionPolicy, and the same file after a one-field edit. */
  readonly onePolicyChange: { before: FleetFile; after: FleetFile };
}

export const ADMIN_NAMESPACE = "gloo-mesh";

const pad = (n: number, width = 3): string => String(n).padStart(width, "0");
export const clusterName = (i: number): string => `cluster-${pad(i)}`;
export const workspaceName = (i: number): string => `ws-${pad(i)}`;
export const namespaceName = (ws: number, k: number): string => `${workspaceName(ws)}-ns-${k}`;
export const serviceName = (k: number): string => `svc-${pad(k, 2)}`;

function doc(apiVersion: string, kind: string, name: string, namespace: string, spec: unknown, labels?: Labels): unknown {
  return { apiVersion, kind, metadata: { name, namespace, ...(labels ? { labels } : {}) }, spec };
}

function yamlStream(docs: readonly unknown[]): string {
  return docs.map((d) => stringify(d, { lineWidth: 0 })).join("---\n");
}

export function generateFleet(options: FleetOptions): Fleet {
  const random = createRandom(options.seed);
  const servicesPerWorkspacePerCluster = options.servicesPerNamespace * options.namespacesPerWorkspace;
  const workspacesPerCluster = Math.max(1, Math.floor(options.servicesPerCluster / servicesPerWorkspacePerCluster));
  const blocks = Math.ceil(options.clusters / options.clustersPerWorkspace);
  const workspaceCount = blocks * workspacesPerCluster;
  const regions = ["us-east-1", "us-west-2", "eu-west-1", "ap-south-1"];

  const files: FleetFile[] = [];
  const discovery = new Map<string, FleetSnapshot>();
  let configObjects = 0;
  let services = 0;
  let namespaces = 0;

  // --- clusters and their discovery skeleton --------------------------------------------
  const clusterDocs: unknown[] = [];
  for (let c = 0; c < options.clusters; c++) {
    const name = clusterName(c);
    const region = regions[c % regions.length]!;
    const locality: Locality = { region, zone: `${region}${"abc"[c % 3]!}` };
    clusterDocs.push(doc("admin.gloo.solo.io/v2", "KubernetesCluster", name, ADMIN_NAMESPACE, { clusterDomain: "cluster.local" }, { region }));
    discovery.set(name, {
      cluster: name,
      namespaces: [
        { name: "istio-system", labels: {} },
        { name: "istio-gateways", labels: {} },
      ],
      services: [],
      workloads: [],
      localities: [locality],
      meshes: [
        {
          revision: "1-29",
          namespace: "istio-system",
          trustDomain: name,
          istiodServiceAccount: "istiod-1-29",
          version: "1.29.2",
          network: `network-${name}`,
        },
      ],
      gateways: [
        {
          kind: "east-west",
          name: "istio-eastwestgateway",
          namespace: "istio-gateways",
          podLabels: { app: "istio-eastwestgateway", istio: "eastwestgateway" },
          ports: [
            { name: "status-port", port: 15021, targetPort: 15021, protocol: "TCP" },
            { name: "tls", port: 15443, targetPort: 15443, protocol: "TCP" },
          ],
          addresses: [`172.${16 + Math.floor(c / 250)}.${c % 250}.10`],
          locality,
          network: `network-${name}`,
        },
        {
          kind: "ingress",
          name: "istio-ingressgateway",
          namespace: "istio-gateways",
          podLabels: { app: "istio-ingressgateway", istio: "ingressgateway" },
          ports: [{ name: "http2", port: 80, targetPort: 8080, protocol: "TCP" }],
          addresses: [`198.51.${Math.floor(c / 250)}.${c % 250}`],
          locality,
        },
      ],
      istioObjects: [],
    });
  }
  files.push({ path: "clusters/clusters.yaml", content: yamlStream(clusterDocs) });
  configObjects += clusterDocs.length;

  files.push({
    path: "admin/root-trust.yaml",
    content: yamlStream([
      doc("admin.gloo.solo.io/v2", "RootTrustPolicy", "root-trust", ADMIN_NAMESPACE, {
        config: { mgmtServerCa: { generated: {} }, intermediateCertOptions: { ttlDays: 365, rsaKeySizeBytes: 4096, orgName: "gloo-mesh" } },
      }),
    ]),
  });
  configObjects += 1;

  // --- workspaces -------------------------------------------------------------------------
  let onePolicyChange: Fleet["onePolicyChange"] | undefined;
  for (let w = 0; w < workspaceCount; w++) {
    const ws = workspaceName(w);
    const block = Math.floor(w / workspacesPerCluster);
    const firstCluster = block * options.clustersPerWorkspace;
    const wsClusters: string[] = [];
    for (let c = firstCluster; c < Math.min(options.clusters, firstCluster + options.clustersPerWorkspace); c++) wsClusters.push(clusterName(c));
    const nsNames = Array.from({ length: options.namespacesPerWorkspace }, (_, k) => namespaceName(w, k));
    const configNs = nsNames[0]!;
    const isolated = options.isolationEvery > 0 && w % options.isolationEvery === 0;
    const federated = options.federationEvery > 0 && w % options.federationEvery === 1;

    // discovery: namespaces, services, workloads in every cluster of the block
    for (const cluster of wsClusters) {
      const snap = discovery.get(cluster)!;
      const locality = snap.localities[0]!;
      for (const ns of nsNames) {
        snap.namespaces.push({ name: ns, labels: { workspace: ws } });
        namespaces++;
        for (let s = 0; s < options.servicesPerNamespace; s++) {
          const svc = serviceName(s);
          const grpc = random() < 0.2;
          const labels: Labels = { app: svc, tier: s % 2 === 0 ? "backend" : "frontend", ...(s % 10 === 0 ? { federate: "true" } : {}) };
          snap.services.push({
            name: svc,
            namespace: ns,
            labels,
            selector: { app: svc },
            ports: [
              { name: "http", port: 8080, targetPort: 8080, protocol: "TCP", appProtocol: "http" },
              ...(grpc ? [{ name: "grpc", port: 9090, targetPort: "grpc", protocol: "TCP", appProtocol: "grpc" }] : []),
            ],
            type: "ClusterIP",
            clusterIP: `10.${(services >> 16) & 255}.${(services >> 8) & 255}.${services & 255}`,
          });
          snap.workloads.push({
            kind: "Deployment",
            name: svc,
            namespace: ns,
            podLabels: { app: svc, tier: labels.tier!, version: random() < 0.7 ? "v1" : "v2" },
            serviceAccount: svc,
            localities: [locality],
            replicas: 2,
          });
          services++;
        }
      }
    }

    const wsDocs: unknown[] = [];
    wsDocs.push(
      doc("admin.gloo.solo.io/v2", "Workspace", ws, ADMIN_NAMESPACE, {
        workloadClusters: wsClusters.map((name) => ({ name, namespaces: [{ name: `${ws}-ns-*` }] })),
      }, { team: `team-${w % 7}` }),
    );
    files.push({ path: `workspaces/${ws}/workspace.yaml`, content: yamlStream(wsDocs) });

    const next = workspaceName((w + 1) % workspaceCount);
    const prev = workspaceName((w - 1 + workspaceCount) % workspaceCount);
    const settings = doc("admin.gloo.solo.io/v2", "WorkspaceSettings", ws, configNs, {
      importFrom: workspaceCount > 1 ? [{ workspaces: [{ name: next }], resources: [{ kind: "VIRTUAL_DESTINATION" }] }] : [],
      exportTo: workspaceCount > 1 ? [{ workspaces: [{ name: prev }], resources: [{ kind: "VIRTUAL_DESTINATION" }] }] : [],
      options: {
        ...(isolated ? { serviceIsolation: { enabled: true, trimProxyConfig: true } } : {}),
        ...(federated ? { federation: { enabled: true, serviceSelector: [{ labels: { federate: "true" } }] } } : {}),
      },
    });

    const routeDocs: unknown[] = [];
    for (const ns of nsNames) {
      routeDocs.push(
        doc("networking.gloo.solo.io/v2", "RouteTable", `routes-${ns}`, ns, {
          hosts: [`api.${ns}.svc.cluster.local`],
          workloadSelectors: [{ selector: { labels: { tier: "frontend" } } }],
          http: Array.from({ length: options.routesPerTable }, (_, r) => {
            const svc = serviceName((r * 3) % options.servicesPerNamespace);
            return {
              name: `route-${r}`,
              labels: { route: r === 0 ? "critical" : "normal" },
              matchers: [{ uri: { prefix: `/r${r}` } }],
              forwardTo: { destinations: [{ ref: { name: svc, namespace: ns }, port: { number: 8080 } }] },
            };
          }),
        }),
      );
    }

    const vdDocs: unknown[] = [];
    for (let v = 0; v < options.virtualDestinationsPerWorkspace; v++) {
      const svc = serviceName(v % options.servicesPerNamespace);
      vdDocs.push(
        doc("networking.gloo.solo.io/v2", "VirtualDestination", `vd-${svc}`, configNs, {
          hosts: [`${svc}.${ws}.global`],
          services: [{ labels: { app: svc }, namespace: configNs }],
          ports: [{ number: 80, protocol: "HTTP", targetPort: { name: "http" } }],
        }, { failover: "true" }),
      );
    }
    for (let e = 0; e < options.externalServicesPerWorkspace; e++) {
      vdDocs.push(
        doc("networking.gloo.solo.io/v2", "ExternalService", `ext-${e}`, configNs, {
          hosts: [`api${e}.partner-${w}.example.com`],
          ports: [{ name: "https", number: 443, protocol: "HTTPS", clientsideTls: {} }],
        }),
      );
    }

    const policyDocs: unknown[] = [
      doc("resilience.policy.gloo.solo.io/v2", "FailoverPolicy", "failover", configNs, {
        applyToDestinations: [{ kind: "VIRTUAL_DESTINATION", selector: { labels: { failover: "true" } } }],
        config: { localityMappings: [] },
      }),
      doc("resilience.policy.gloo.solo.io/v2", "OutlierDetectionPolicy", "outlier", configNs, {
        applyToDestinations: [{ kind: "VIRTUAL_DESTINATION", selector: { labels: { failover: "true" } } }],
        config: { consecutiveErrors: 5, interval: "10s", baseEjectionTime: "30s", maxEjectionPercent: 100 },
      }),
      doc("resilience.policy.gloo.solo.io/v2", "ConnectionPolicy", "connections", configNs, {
        applyToDestinations: [{ selector: { namespace: configNs, labels: { tier: "backend" } } }],
        config: { tcp: { maxConnections: 100, connectTimeout: "2s" }, http: { maxRequestsPerConnection: 10, idleTimeout: "60s" } },
      }),
      doc("trafficcontrol.policy.gloo.solo.io/v2", "LoadBalancerPolicy", "load-balancing", configNs, {
        applyToDestinations: [{ selector: { namespace: configNs, labels: { tier: "frontend" } } }],
        config: { simple: "LEAST_REQUEST", warmupDurationSecs: "30s" },
      }),
      doc("security.policy.gloo.solo.io/v2", "AccessPolicy", "backend-access", configNs, {
        applyToDestinations: [{ selector: { namespace: configNs, labels: { tier: "backend" } } }],
        config: {
          authn: { tlsMode: "STRICT" },
          authzList: [
            { allowedClients: [{ serviceAccountSelector: { namespace: configNs, labels: { tier: "frontend" } } }], allowedMethods: ["GET", "POST"], allowedPaths: ["/api*"] },
          ],
        },
      }),
      doc("resilience.policy.gloo.solo.io/v2", "RetryTimeoutPolicy", "retries", configNs, {
        applyToRoutes: [{ route: { labels: { route: "critical" } } }],
        config: { requestTimeout: "5s", retries: { attempts: 3, perTryTimeout: "1s", retryOn: "5xx" } },
      }),
      doc("resilience.policy.gloo.solo.io/v2", "FaultInjectionPolicy", "chaos", configNs, {
        applyToRoutes: [{ route: { labels: { route: "normal" } } }],
        config: { delay: { fixedDelay: "100ms", percentage: 1 } },
      }),
    ];

    const wsFiles: FleetFile[] = [
      { path: `workspaces/${ws}/settings.yaml`, content: yamlStream([settings]) },
      { path: `workspaces/${ws}/routes.yaml`, content: yamlStream(routeDocs) },
      { path: `workspaces/${ws}/destinations.yaml`, content: yamlStream(vdDocs) },
      { path: `workspaces/${ws}/policies.yaml`, content: yamlStream(policyDocs) },
    ];
    files.push(...wsFiles);
    configObjects += 2 + routeDocs.length + vdDocs.length + policyDocs.length;

    if (w === Math.floor(workspaceCount / 2)) {
      const before = wsFiles[3]!;
      const after = { path: before.path, content: before.content.replace("interval: 10s", "interval: 15s") };
      if (after.content === before.content) throw new Error("fleet generator: the one-policy edit did not apply");
      onePolicyChange = { before, after };
    }
  }

  for (const snap of discovery.values()) {
    snap.namespaces.sort((a, b) => cmp(a.name, b.name));
    snap.services.sort((a, b) => cmp(a.namespace, b.namespace) || cmp(a.name, b.name));
    snap.workloads.sort((a, b) => cmp(a.namespace, b.namespace) || cmp(a.name, b.name));
  }
  files.sort((a, b) => cmp(a.path, b.path));

  return {
    options,
    files,
    discovery,
    counts: { clusters: options.clusters, workspaces: workspaceCount, namespaces, services, configObjects },
    onePolicyChange: onePolicyChange!,
  };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
