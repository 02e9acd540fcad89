/**
 * The translation pipeline and the Redis-side plumbing of the management server. The ONLY module
 * that imports bullmq. See README.md.
 *
 * - createPipeline: desired state + discovery in → versioned output snapshots per cluster out
 *   (workspace jobs → cluster jobs), on BullMQ/Redis, standalone in-process, or degraded during a
 *   Redis outage; pub/sub fan-out of outputs to replicas.
 * - createLeaderLock: a Redis lock for singleton work across replicas (Git polling, audit commits).
 * - parseRedisUrl / createRedisClient: the configured Redis address (single server, Sentinel,
 *   Cluster) → validated config → ioredis clients; redisKeyPrefix: the key prefix for a topology.
 */
export {
  createPipeline,
  outputOptions,
  type DesiredStateInput,
  type OutputEvent,
  type Pipeline,
  type PipelineMode,
  type PipelineRole,
  type PipelineOptions,
  type PipelineTranslators,
} from "./pipeline.js";
export { computeHolds, workspaceDependencies, type HoldInputs, type HoldResult } from "./holds.js";
export type { JobEvent, JobResult, JobType } from "./runner.js";
export { createLeaderLock, LEASE_DEFAULTS, leaseTimings, type LeaderLock, type LeaderLockOptions } from "./lock.js";
export {
  createRedisClient,
  parseRedisUrl,
  redisKeyPrefix,
  RedisUrlError,
  redisUrlProblem,
  scanRedisKeys,
  type ClusterRedisConfig,
  type RedisClient,
  type RedisClientOptions,
  type RedisConnectionConfig,
  type RedisNode,
  type RedisTopology,
  type SentinelRedisConfig,
  type StandaloneRedisConfig,
} from "./redis-connection.js";
export { PIPELINE_METRICS } from "./metrics.js";
