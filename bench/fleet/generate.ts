/**
 * The fleet generator moved to src/devtools/fleet.ts, where `gitmesh simulate` uses it too (src/ must
 * not import bench/). Benchmarks and tests keep importing it from here.
 */
export {
  ADMIN_NAMESPACE,
  clusterName,
  generateFleet,
  namespaceName,
  serviceName,
  workspaceName,
  type Fleet,
  type FleetFile,
  type FleetOptions,
  type FleetSnapshot,
} from "../../src/devtools/index.js";
