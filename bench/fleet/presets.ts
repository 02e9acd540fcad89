/**
 * Fleet presets for the translation benchmark. The issue names them by "clusters × services per
 * cluster": small 3×50, medium 20×500, large 100×1,000. The other knobs shape how those services
 * are grouped into namespaces and workspaces, and how much configuration sits on top of them.
 *
 * Layout (see generate.ts): clusters are cut into consecutive blocks of `clustersPerWorkspace`;
 * every block hosts `servicesPerCluster / (namespacesPerWorkspace × servicesPerNamespace)`
 * workspaces, each present in every cluster of its block. Workspaces form a ring of
 * import/export (workspace i exports its virtual destinations to i-1 and imports from i+1), so
 * that sharing crosses block boundaries.
 */

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

const common = {
  seed: 42,
  routesPerTable: 5,
  virtualDestinationsPerWorkspace: 5,
  isolationEvery: 4,
  federationEvery: 5,
  externalServicesPerWorkspace: 1,
} as const;

export const FLEET_PRESETS = {
  small: {
    ...common,
    name: "small",
    clusters: 3,
    servicesPerCluster: 50,
    servicesPerNamespace: 5,
    namespacesPerWorkspace: 5,
    clustersPerWorkspace: 3,
  },
  medium: {
    ...common,
    name: "medium",
    clusters: 20,
    servicesPerCluster: 500,
    servicesPerNamespace: 20,
    namespacesPerWorkspace: 5,
    clustersPerWorkspace: 5,
  },
  large: {
    ...common,
    name: "large",
    clusters: 100,
    servicesPerCluster: 1000,
    servicesPerNamespace: 20,
    namespacesPerWorkspace: 5,
    clustersPerWorkspace: 10,
  },
} as const satisfies Record<string, FleetOptions>;

export type FleetPresetName = keyof typeof FLEET_PRESETS;

export function isFleetPreset(name: string): name is FleetPresetName {
  return Object.hasOwn(FLEET_PRESETS, name);
}
