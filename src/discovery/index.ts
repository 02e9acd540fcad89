/**
 * Discovery snapshots: the contract between the agent (which builds them from its informers), the
 * relay (which carries a full snapshot, then deltas) and translation (which reads them).
 *
 * - snapshotFromKubernetesObjects: pure conversion from plain Kubernetes objects (the reference; `render --discovery`).
 * - createIncrementalSnapshot: the same snapshot maintained object by object, with deltas (the agent).
 * - snapshotEntries / snapshotChecksum / diffSnapshots / applySnapshotDelta: keyed entries, checksums, deltas.
 * - readDiscoveryDirectory / discoveryFromFiles: one directory per cluster, snapshot documents or manifests.
 */
export type {
  DiscoverySnapshot,
  DiscoveredGateway,
  DiscoveredGatewayPort,
  DiscoveredIstioObject,
  DiscoveredLocality,
  DiscoveredMesh,
  DiscoveredNamespace,
  DiscoveredService,
  DiscoveredServicePort,
  DiscoveredWorkload,
} from "../model/index.js";
export {
  DiscoveryCode,
  snapshotFromKubernetesObjects,
  type SnapshotOptions,
  type SnapshotResult,
  type SourceLocation,
} from "./convert.js";
export {
  applySnapshotDelta,
  diffSnapshots,
  HEADER_KEY,
  isEmptyDelta,
  snapshotChecksum,
  snapshotEntries,
  snapshotFromEntries,
  SnapshotDeltaError,
  type SnapshotDelta,
  type SnapshotEntry,
  type SnapshotHeader,
} from "./delta.js";
export { createIncrementalSnapshot, type IncrementalSnapshot, type IncrementalSnapshotOptions } from "./incremental.js";
export { matchesLabels, matchesSelector, type LabelSelector, type LabelSelectorRequirement, type Labels } from "../core/index.js";
export {
  discoveryFromFiles,
  readDiscoveryDirectory,
  type DiscoveryFile,
  type DiscoveryReadOptions,
  type DiscoveryReadResult,
} from "./read-directory.js";
export {
  apiGroup,
  DISCOVERY_API_VERSION,
  DISCOVERY_KIND,
  emptySnapshot,
  normalizeSnapshot,
  type NormalizeOptions,
} from "./snapshot.js";
