/**
 * The snapshot store: desired state per commit, discovery per cluster, workspace fragments, output
 * snapshots with versions, workspace status, convergence per commit (what grows with commits is
 * bounded by count and age: retention.ts). One interface, two implementations: Redis (shared by
 * replicas, survives restarts) and memory (standalone mode and the outage mirror). See README.md
 * of src/queue for how the pipeline uses it.
 */
export type {
  ClusterConvergence,
  ConvergenceRecord,
  DesiredPointer,
  DesiredRecord,
  DiscoveryRecord,
  FragmentRecord,
  HeldObjects,
  IgnoreDifference,
  OutputOptions,
  OutputRecord,
  SnapshotStore,
  StoreVersions,
  UnitFailure,
  WorkspaceStatus,
} from "./types.js";
export { createMemoryStore, type MemoryStore, type MemoryStoreCounts, type MemoryStoreOptions } from "./memory.js";
export { createRedisStore, DEFAULT_PREFIX, type RedisStore, type RedisStoreOptions } from "./redis.js";
export { DEFAULT_RETENTION, resolveRetention, type Retention, type RetentionOptions } from "./retention.js";
export { COMPRESS_THRESHOLD, decodeValue, encodeValue } from "./codec.js";
