/**
 * The management server (DESIGN.md "Management server"): composition of git-sync, the translation
 * pipeline (src/queue), the relay server, the audit writer, warming, convergence tracking and the
 * HTTP edge (health, readiness, metrics, webhooks, JSON API). `gitmesh server` is its composition root.
 */
export { parseServerConfig, SERVER_ENV, SERVER_ENV_HELP, type GitSourceConfig, type ServerConfig, type ServerConfigInput } from "./config.js";
export { createManagementServer, type ManagementServer, type ManagementServerOptions, type SingletonGuard } from "./server.js";
export { createDiffService, type DiffService, type DiffServiceOptions } from "./diff-service.js";
export { provenanceView, type ProvenanceInputs } from "./provenance-view.js";
export { createEventStream, createWebRoutes, DEFAULT_WEB_ROOT, type EventStream, type EventStreamOptions } from "./web.js";
export { createServerHttp, HttpError, API_ENDPOINTS, type Route, type RouteHandler, type ServerApi, type ServerHttp, type ServerHttpOptions } from "./http.js";
export {
  allows,
  API_ROLES,
  API_TOKEN_COOKIE,
  API_TOKEN_MIN_LENGTH,
  API_TOKEN_SECRET,
  createApiAuth,
  generateApiToken,
  HttpAccessError,
  prepareHttpAccess,
  resolveApiTokens,
  type ApiAuth,
  type ApiRole,
  type ApiTokenFiles,
  type ApiTokens,
  type AuthOutcome,
  type HttpAccess,
  type RouteAccess,
} from "./api-auth.js";
export { createDirectoryApiTokenStore, createKubernetesApiTokenStore, createMemoryApiTokenStore, createRedisApiTokenStore, type ApiTokenStore } from "./api-token-store.js";
export { createConvergenceTracker, type ClusterProgress, type CommitProgress, type ConvergenceTracker } from "./convergence.js";
export { frozenTables, OUTPUT_OPTIONS_KEY, pruneHeldView, relayResources, type PruneHeldView } from "./completeness.js";
export { createWarmingGate, type RegisteredCluster, type WarmingGate, type WarmingStatus } from "./warming.js";
export { clusterSyncSamples, createServerMetrics, registerClusterSyncMetric, type ClusterSyncSample, type ServerMetrics } from "./metrics.js";
export { createTranslationWorker, parseWorkerConfig, WORKER_ENV, type TranslationWorker, type TranslationWorkerOptions, type WorkerConfig, type WorkerConfigInput } from "./worker.js";
export { createQueuePipeline, type DesiredInput, type PipelineOutput, type PipelinePort, type PipelineStatus, type QueuePipelineOptions } from "./pipeline-port.js";
export { createRedisPresence, type PresenceRegistry, type RedisPresenceOptions } from "./presence.js";
export { createLeadership, type Leadership, type LeadershipOptions, type LeaseLock } from "./leadership.js";
export {
  createDirectoryRecordStore,
  createDirectorySecretStore,
  createKubernetesRecordStore,
  SUSPENSION_SECRETS,
  createKubernetesSecretStore,
  createRedisRecordStore,
  identitySecretName,
  IDENTITY_SECRET_LABEL,
  createMemorySecretStore,
  createRedisSecretStore,
  generateToken,
  type RelaySecretStore,
} from "./pki-storage.js";
export { withDurableRevocations } from "./durable-revocations.js";
export { withDurableSuspensions } from "./durable-suspensions.js";
export { createDirectoryCaSecretReader, createKubernetesCaSecretReader, createKubernetesMeshRootStorage, createRedisMeshRootStorage, MESH_ROOT_SECRET } from "./mesh-root-storage.js";
export { createMemorySuspensionStore, createRedisSuspensionStore, describeSuspension, FLEET_SCOPE, type Suspension, type SuspensionStore } from "./suspensions.js";
export { AGENT_SUSPENDED_KEY, clusterSync, isTransientNack, nackTransient, pastCommitState, SYNC_STATES, type ClusterSync, type ClusterSyncFacts, type CommitProgressFacts, type NotAppliedWhy, type PastCommitState, type SyncState } from "./cluster-sync.js";
export { createCommitLog, type CommitInfo, type CommitLog, type RejectedCommit } from "./commit-log.js";
export type { AuditHold } from "./audit-scheduling.js";
