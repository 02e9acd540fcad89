/**
 * Names shared with the rest of the system: Kubernetes secret names and keys (the same as Gloo Mesh's
 * relay, see DESIGN.md "Relay protocol"), metric names, rejection reasons and defaults.
 */

/** Kubernetes secrets that hold relay material, with their data keys. */
export const RELAY_SECRETS = {
  /** mgmt + copied to each workload cluster: the root CA that signs the server certificate. */
  rootTls: { name: "relay-root-tls-secret", keys: { caCrt: "ca.crt", tlsKey: "tls.key" } },
  /**
   * workload cluster (and, for the fleet-token opt-in, mgmt): the bootstrap credential the agent registers
   * with — by default a single-use credential bound to this cluster (gitmesh cluster register / reissue),
   * deleted once the agent holds its certificate; with `--bootstrap fleet-token`, the shared token.
   */
  identityToken: { name: "relay-identity-token-secret", keys: { token: "token" } },
  /** workload cluster, written by the agent: the client certificate issued by the server. */
  clientTls: { name: "relay-client-tls-secret", keys: { tlsCrt: "tls.crt", tlsKey: "tls.key", caCrt: "ca.crt" } },
  /** mgmt: the server certificate for the relay port (its name must match the agents' authority). */
  serverTls: { name: "relay-server-tls-secret", keys: { tlsCrt: "tls.crt", tlsKey: "tls.key", caCrt: "ca.crt" } },
  /** mgmt: the CA that signs agent CSRs. */
  tlsSigning: { name: "relay-tls-signing-secret", keys: { tlsCrt: "tls.crt", tlsKey: "tls.key" } },
} as const;

export const RELAY_DEFAULTS = {
  /** gRPC port of the management server. */
  port: 9900,
  /** Name in the server certificate; agents set `:authority`/TLS server name to it. */
  authority: "gitmesh-server.gitmesh",
  /** Lifetime of a client certificate issued at registration or renewal (30 days). */
  certificateLifetimeMs: 30 * 24 * 3600_000,
  /** Validity of a generated CA / server certificate (10 years). */
  caLifetimeMs: 10 * 365 * 24 * 3600_000,
  /** Hard limit of one gRPC message, both directions (4 MiB). */
  maxMessageBytes: 4 * 1024 * 1024,
  /** Raw bytes per chunk before gzip (1 MiB); must stay below maxMessageBytes. */
  chunkBytes: 1024 * 1024,
  /** Limit of one assembled (decompressed) update (256 MiB). */
  maxStateBytes: 256 * 1024 * 1024,
  keepaliveTimeMs: 30_000,
  keepaliveTimeoutMs: 10_000,
  /** Client reconnect backoff: first delay, cap, factor, and ± jitter fraction. */
  backoff: { initialMs: 500, maxMs: 30_000, factor: 2, jitter: 0.2 },
  /** Client: how long the server may take to acknowledge a discovery update before the session starts over (120 s). */
  ackTimeoutMs: 120_000,
  /**
   * Server: (re)connecting agents admitted per second (registrations and discovery streams), with a
   * burst; the excess is told to come back later (RESOURCE_EXHAUSTED, reason admission_limited).
   */
  admission: { ratePerSecond: 50, burst: 100 },
  /** Renew when this fraction of the certificate lifetime has passed. */
  renewAtFraction: 2 / 3,
  /** Largest discovery state one cluster may hold on the server, decompressed (64 MiB). */
  maxDiscoveryBytes: 64 * 1024 * 1024,
  /** Largest decompressed/compressed ratio of one update, checked once it exceeds `ratioFloorBytes`. */
  maxCompressionRatio: 200,
  ratioFloorBytes: 1024 * 1024,
  /** How often open streams are checked against the shared store's revocations (15 s). */
  revalidateIntervalMs: 15_000,
} as const;

/** URI SAN prefix carrying the cluster identity: spiffe://gitmesh/cluster/<name>. */
export const CLUSTER_URI_PREFIX = "spiffe://gitmesh/cluster/";

/**
 * Metric names (all registered in the registry passed to createRelayServer):
 * - gitmesh_relay_push_clients_connected{cluster}   gauge: open discovery push streams (0/1 per cluster)
 * - gitmesh_relay_pull_clients_connected{cluster}   gauge: open output pull streams (0/1 per cluster)
 * - gitmesh_relay_push_clients_warmed{cluster}      gauge: 1 once the current push stream delivered a full snapshot
 * - gitmesh_relay_rejections_total{reason}          counter: rejected registrations, streams and messages (reasons below)
 * - gitmesh_relay_certificates_issued_total{kind}   counter: kind = register | renew | intermediate (Istio intermediate CA, SignIntermediate)
 * - gitmesh_relay_discovery_updates_total{kind}     counter: accepted discovery updates, kind = full | delta
 * - gitmesh_relay_resyncs_total{direction}          counter: full resyncs requested, direction = push (server asked) | pull (agent asked)
 * - gitmesh_relay_output_acks_total{result}         counter: result = ack | nack
 * - gitmesh_relay_stream_bytes_total{direction}     counter: payload bytes on the wire (compressed chunks), direction = received | sent
 * - gitmesh_relay_output_buffered_bytes{cluster}    gauge: compressed output bytes handed to gRPC and not yet flushed (bounded per stream)
 * - gitmesh_relay_output_coalesced_total            counter: output versions replaced by a newer one before being sent (slow agent)
 */
export const RELAY_METRICS = {
  pushClientsConnected: "gitmesh_relay_push_clients_connected",
  pullClientsConnected: "gitmesh_relay_pull_clients_connected",
  pushClientsWarmed: "gitmesh_relay_push_clients_warmed",
  rejections: "gitmesh_relay_rejections_total",
  certificatesIssued: "gitmesh_relay_certificates_issued_total",
  discoveryUpdates: "gitmesh_relay_discovery_updates_total",
  resyncs: "gitmesh_relay_resyncs_total",
  outputAcks: "gitmesh_relay_output_acks_total",
  streamBytes: "gitmesh_relay_stream_bytes_total",
  outputBufferedBytes: "gitmesh_relay_output_buffered_bytes",
  outputCoalesced: "gitmesh_relay_output_coalesced_total",
} as const;

/** Values of the `reason` label of gitmesh_relay_rejections_total (and of RelayRejectedError.reason). */
export const REJECTION_REASONS = {
  invalidRequest: "invalid_request",
  /** Register with a bootstrap credential that is unknown, used, expired, or bound to another cluster (UNAUTHENTICATED). */
  badToken: "bad_token",
  /** Register for a cluster that holds a valid, unrevoked certificate: one live identity per cluster (PERMISSION_DENIED). */
  identityInUse: "identity_in_use",
  clusterNotRegistered: "cluster_not_registered",
  /** A certificate issued before the cluster's last revocation (re-issue, or an operator's revoke) (PERMISSION_DENIED). */
  certificateRevoked: "certificate_revoked",
  clientCertificateInvalid: "client_certificate_invalid",
  /** An open stream reached its client certificate's notAfter and was closed. */
  certificateExpired: "certificate_expired",
  clusterMismatch: "cluster_mismatch",
  messageTooLarge: "message_too_large",
  malformedMessage: "malformed_message",
  checksumMismatch: "checksum_mismatch",
  /** SignIntermediate: the server has no mesh CA configured (UNIMPLEMENTED). */
  meshCaNotConfigured: "mesh_ca_not_configured",
  /** SignIntermediate: the caller's output holds no matching IssuedCertificate (PERMISSION_DENIED). */
  intermediateNotIssued: "intermediate_not_issued",
  /** SignIntermediate: the CSR cannot be parsed, its signature does not verify, or it is not a CA request (INVALID_ARGUMENT). */
  invalidCsr: "invalid_csr",
  /** SignIntermediate: the CSR's URI SANs differ from the IssuedCertificate's hosts (INVALID_ARGUMENT). */
  sanMismatch: "san_mismatch",
  /** Register or a discovery stream beyond the admission rate (RESOURCE_EXHAUSTED, with a retry hint; not the agent's fault). */
  admissionLimited: "admission_limited",
} as const;
export type RejectionReason = (typeof REJECTION_REASONS)[keyof typeof REJECTION_REASONS];
