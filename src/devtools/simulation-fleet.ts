/**
 * The configuration repository and discovery of `gitmesh simulate`: a generated fleet (fleet.ts) of
 * exactly `clusters` × `servicesPerCluster` services, plus a fleet-wide "gateways" workspace whose
 * RetryTimeoutPolicy the simulator edits on every push. That policy applies to a route of the ingress
 * gateway of EVERY cluster, so each push changes every cluster's output: the simulator measures the
 * widest fan-out one commit can cause (a change to a team's workspace reaches fewer clusters).
 *
 *   const fleet = simulationFleet({ clusters: 100, servicesPerCluster: 10 });
 *   fleet.files            // write them, commit, push
 *   fleet.policyChange(3)  // the policy file of push 3 (same path, another requestTimeout)
 */
import { generateFleet, type FleetFile, type FleetOptions, type FleetSnapshot } from "./fleet.js";

export interface SimulationFleetOptions {
  readonly clusters: number;
  readonly servicesPerCluster: number;
  /** Seed of the generator's pseudo-random choices (default 42, the benchmarks' seed). */
  readonly seed?: number;
}

export interface SimulationFleet {
  /** What the generator was asked for (namespaces and workspaces chosen to hold exactly `servicesPerCluster`). */
  readonly options: FleetOptions;
  /** Repository-relative files of the configuration repository, sorted by path. */
  readonly files: readonly FleetFile[];
  /** Discovery snapshot per cluster name, in the shape of the relay's DiscoverySnapshot. */
  readonly discovery: ReadonlyMap<string, FleetSnapshot>;
  readonly counts: { readonly clusters: number; readonly services: number; readonly workspaces: number; readonly configObjects: number };
  /** The changing policy's file for push `n` (0, 1, …): a different requestTimeout each time. */
  policyChange(n: number): FleetFile;
}

/** The file the simulator edits (one RetryTimeoutPolicy, on the gateway route of every cluster). */
export const SIMULATION_POLICY_PATH = "workspaces/gateways/retry-timeout.yaml";

/** Largest divisor of `n` that is at most `max`. */
function divisorAtMost(n: number, max: number): number {
  for (let d = Math.min(n, max); d > 1; d--) if (n % d === 0) return d;
  return 1;
}

/**
 * Generator options holding exactly `servicesPerCluster` services per cluster: up to 5 services per
 * namespace and up to 5 namespaces per workspace (the benchmark presets' shape), workspaces spanning
 * blocks of up to 10 clusters (the `large` preset's).
 */
export function simulationFleetOptions(options: SimulationFleetOptions): FleetOptions {
  const perNamespace = divisorAtMost(options.servicesPerCluster, 5);
  const namespaces = options.servicesPerCluster / perNamespace;
  return {
    name: `simulate-${String(options.clusters)}x${String(options.servicesPerCluster)}`,
    seed: options.seed ?? 42,
    clusters: options.clusters,
    servicesPerCluster: options.servicesPerCluster,
    servicesPerNamespace: perNamespace,
    namespacesPerWorkspace: divisorAtMost(namespaces, 5),
    clustersPerWorkspace: Math.min(options.clusters, 10),
    routesPerTable: 5,
    virtualDestinationsPerWorkspace: Math.min(5, perNamespace),
    isolationEvery: 4,
    federationEvery: 5,
    externalServicesPerWorkspace: 1,
  };
}

export function simulationFleet(options: SimulationFleetOptions): SimulationFleet {
  if (!Number.isInteger(options.clusters) || options.clusters < 1) throw new RangeError(`clusters must be an integer >= 1, got ${String(options.clusters)}`);
  if (!Number.isInteger(options.servicesPerCluster) || options.servicesPerCluster < 1) throw new RangeError(`servicesPerCluster must be an integer >= 1, got ${String(options.servicesPerCluster)}`);
  const fleetOptions = simulationFleetOptions(options);
  const fleet = generateFleet(fleetOptions);
  // The RootTrustPolicy is left out: its output (an IssuedCertificate per cluster) is a one-time
  // exchange at a cluster's first connection (the agent asks the server to sign istiod's
  // intermediate), not part of delivering a commit, and simulated agents do not run istiod.
  const files = [...fleet.files.filter((f) => f.path !== "admin/root-trust.yaml"), ...gatewaysWorkspace(), policyFile(0)].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return {
    options: fleetOptions,
    files,
    discovery: fleet.discovery,
    counts: { clusters: fleet.counts.clusters, services: fleet.counts.services, workspaces: fleet.counts.workspaces + 1, configObjects: fleet.counts.configObjects - 1 + 6 },
    policyChange: (n) => policyFile(n + 1),
  };
}

/**
 * The platform team's ingress, in every cluster (cluster glob "*"): the generated discovery has an
 * ingress gateway (`istio: ingressgateway`, port 80) in namespace istio-gateways of each cluster.
 * Five objects here, plus the policy file.
 */
function gatewaysWorkspace(): FleetFile[] {
  return [
    {
      path: "workspaces/gateways/workspace.yaml",
      content: `apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata:
  name: gateways
  namespace: gloo-mesh
spec:
  workloadClusters:
    - name: "*"
      namespaces:
        - name: istio-gateways
---
apiVersion: admin.gloo.solo.io/v2
kind: WorkspaceSettings
metadata:
  name: gateways
  namespace: istio-gateways
spec: {}
`,
    },
    {
      path: "workspaces/gateways/ingress.yaml",
      content: `apiVersion: networking.gloo.solo.io/v2
kind: VirtualGateway
metadata:
  name: north-south-gw
  namespace: istio-gateways
spec:
  workloads:
    - selector:
        labels:
          istio: ingressgateway
  listeners:
    - port:
        number: 80
      http: {}
      allowedRouteTables:
        - host: "*"
---
apiVersion: networking.gloo.solo.io/v2
kind: ExternalService
metadata:
  name: partner-api
  namespace: istio-gateways
spec:
  hosts:
    - api.partner.example.com
  ports:
    - name: https
      number: 443
      protocol: HTTPS
      clientsideTls: {}
---
apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata:
  name: ingress
  namespace: istio-gateways
spec:
  hosts:
    - www.example.com
  virtualGateways:
    - name: north-south-gw
      namespace: istio-gateways
  http:
    - name: partner
      labels:
        route: partner
      matchers:
        - uri:
            prefix: /partner/
      forwardTo:
        hostRewrite: api.partner.example.com
        destinations:
          - kind: EXTERNAL_SERVICE
            ref:
              name: partner-api
              namespace: istio-gateways
            port:
              number: 443
`,
    },
  ];
}

/** Version `n` of the changing policy: requestTimeout 10 s + n. */
function policyFile(n: number): FleetFile {
  return {
    path: SIMULATION_POLICY_PATH,
    content: `# Edited by \`gitmesh simulate\` on every push: one field of one policy, applied in every cluster.
apiVersion: resilience.policy.gloo.solo.io/v2
kind: RetryTimeoutPolicy
metadata:
  name: partner-timeout
  namespace: istio-gateways
spec:
  applyToRoutes:
    - route:
        labels:
          route: partner
  config:
    requestTimeout: ${String(10 + n)}s
    retries:
      attempts: 2
      perTryTimeout: 2s
`,
  };
}
