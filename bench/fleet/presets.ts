/**
 * Fleet presets for the translation benchmark. The issue names them by "clusters × services per
 * cluster": small 3×50, medium 20×500, large 100×1,000. The other knobs shape how those services
 * are grouped into namespaces and workspaces, and how much configuration sits on top of them.
 *
 * Layout (see src/devtools/fleet.ts): clusters are cut into consecutive blocks of `clustersPerWorkspace`;
 * every block hosts `servicesPerCluster / (namespacesPerWorkspace × servicesPerNamespace)`
 * workspaces, each present in every cluster of its block. Workspaces form a ring of
 * import/export (workspace i exports its virtual destinations to i-1 and imports from i+1), so
 * that sharing crosses block boundaries.
 */

import type { FleetOptions } from "../../src/devtools/index.js";

export type { FleetOptions };

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
