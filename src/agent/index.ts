/**
 * The cluster agent (DESIGN.md "Agent"): discovery with supervised informers, server-side apply
 * of output with safe prune, drift repair, leader election, Istio cacerts, HTTP health/metrics,
 * and the relay link. `createAgent` wires them; the CLI (`gitmesh agent`) is its composition root.
 */
export {
  collectionPath,
  createKubeClient,
  FIELD_MANAGER,
  INSTALL_KINDS,
  isInstallObject,
  ISTIO_KINDS,
  KINDS,
  messageOf,
  objectKey,
  statusOf,
  withFieldOwner,
  type FieldOwnerWriter,
  type KindRef,
  type KubeObject,
  type KubeReader,
  type KubeWriter,
  type DeleteOptions,
  type KubeClientOptions,
} from "./kube.js";
export { APPLY_PATCH_CONTENT_TYPE, type ApplyRequestOptions } from "./kube-apply.js";
export { createConnectionPool, DEFAULT_MAX_SOCKETS, type ConnectionPool, type ConnectionPoolOptions } from "./kube-connections.js";
export { backoffDelay, createRunnableManager, type BackoffOptions, type Runnable, type RunnableManager } from "./runnable.js";
export { createSupervisedInformer, type InformerEvent, type SupervisedInformer, type SupervisedInformerOptions } from "./informer.js";
export { createAgentMetrics, type AgentMetrics } from "./metrics.js";
export { createDiscovery, type Discovery, type DiscoveryOptions, type DiscoveryResult } from "./discovery.js";
export {
  ANNOTATION_ADOPT,
  createApplier,
  ISSUED_CERTIFICATE,
  NotLeaderError,
  notOwnedMessage,
  LABEL_CLUSTER,
  LABEL_MANAGED,
  OUTPUT_OPTIONS_KEY,
  type Applier,
  type ApplierOptions,
  type ApplyOutcome,
  type IgnoreDifference,
  type RepairResult,
  type OutputVersion,
  type ResourceError,
} from "./applier.js";
export { createInventory, entryKey, INVENTORY_DATA_KEY, INVENTORY_FORMAT, type Inventory, type InventoryEntry, type InventoryOptions } from "./inventory.js";
export { foreignManagers, withIgnoredPaths } from "./sync.js";
export { containsFields, createDriftWatcher, inSync, type DriftWatcher, type DriftWatcherOptions } from "./drift.js";
export { createLeaderElector, LEASE_KIND, microTime, type LeaderElector, type LeaderElectorOptions } from "./leader.js";
export { createAgentHttp, type AgentHttp, type AgentHttpOptions } from "./http.js";
export {
  createRelayLinkFactory,
  loadClientCredentials,
  currentClientCredentials,
  createRelaySigner,
  storeClientCredentials,
  type RelaySecretNames,
  type RelayHandlers,
  type RelayLink,
  type RelayLinkFactory,
  type RelayLinkOptions,
} from "./relay-link.js";
export {
  createCacerts,
  createIntermediateCsr,
  type Cacerts,
  type CacertsOptions,
  type IntermediateSigner,
  type IntermediateSigningRequest,
  type SignedIntermediate,
} from "./cacerts.js";
export { AGENT_ENV, AGENT_SUSPENDED_KEY, agentSuspendedMessage, parseAgentConfig, type AgentConfig, type AgentConfigInput } from "./config.js";
export { createAgent, type Agent, type AgentOptions } from "./agent.js";
export { createRelayAgent, type RelayAgentOptions } from "./compose.js";
