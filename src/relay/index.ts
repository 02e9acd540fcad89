/**
 * The relay: the channel between the management server and the agents (DESIGN.md "Relay protocol";
 * wire format in proto/gitmesh/relay/v1/relay.proto).
 */
export { CLUSTER_URI_PREFIX, REJECTION_REASONS, RELAY_DEFAULTS, RELAY_METRICS, RELAY_SECRETS, type RejectionReason } from "./constants.js";
export { RelayRejectedError, toServiceError, isPermanentStatus, reasonOf, REASON_METADATA_KEY } from "./errors.js";
export {
  createClusterIdentities,
  createMemoryRecordStore,
  credentialMatches,
  holdsLiveIdentity,
  parseIdentityRecord,
  secretMatchesHash,
  CREDENTIAL_TTL_MS,
  IdentityConflictError,
  LiveIdentityError,
  type ClusterIdentities,
  type ClusterIdentityRecord,
  type ClusterRecordStore,
  type RegistrationDecision,
  type StoredRecord,
} from "./identity.js";
export {
  certificateNotAfterMs,
  checkClientCsr,
  createCsr,
  createSelfSignedCa,
  generateKeyPem,
  generateRelayPki,
  isValidClusterName,
  issueServerCertificate,
  loadOrCreateRelayPki,
  MIN_RSA_BITS,
  relayPkiFromSecrets,
  relayPkiToSecrets,
  signClientCertificate,
  type KeyPairPem,
  type RelayPki,
  type RelayPkiStorage,
} from "./pki.js";
export { applyStateDelta, diffStates, encodeChunks, stateChecksum, type RelayState, type StateDelta } from "./wire.js";
export { relayStateFromSnapshot, snapshotFromRelayState } from "./discovery-state.js";
export {
  createRelayServer,
  type AppliedVersion,
  type DiscoveryEvent,
  type OutputAckEvent,
  type OutputNackEvent,
  type DriftRepairEvent,
  DRIFT_LIMITS,
  type OutputHold,
  type OutputSnapshot,
  type RelayServer,
  type RelayServerOptions,
  type StreamKind,
} from "./server.js";
export {
  createRelayClient,
  reconnectDelay,
  type OutputError,
  type OutputEvent,
  type OutputResult,
  type RelayClient,
  type RelayClientCredentials,
  type RelayClientOptions,
  type RelayClientStatus,
} from "./client.js";
export {
  createRelayIntermediateSigner,
  IntermediateSigningError,
  type RelayIntermediateSignerOptions,
} from "./intermediate-signer.js";
