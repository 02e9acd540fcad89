/**
 * The relay server (management side, port 9900).
 *
 * One TLS port serves both registration (simple TLS: the agent has no certificate yet) and the mTLS
 * streams. grpc-js's createSsl cannot express "ask for a client certificate but let the handshake
 * through without one", so the credentials come from grpc.experimental.createCertificateProviderServerCredentials
 * with requireClientCertificate=false: TLS requests a client certificate and verifies it against the
 * signing CA, and every stream handler then requires `call.getAuthContext().sslPeerCertificate`, which
 * grpc-js 1.14 fills only when the TLS socket is `authorized` (chain to the signing CA, within its
 * validity). The cluster identity comes from that certificate only (subject CN = URI SAN
 * spiffe://gitmesh/cluster/<name>), never from metadata or message fields. Because the handshake is
 * let through, every refusal (missing, expired, foreign certificate) reaches a handler and is logged,
 * counted and answered with a gRPC status that says what to fix.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import type { Registry } from "prom-client";
import { describeError, TransientError, type Logger } from "../core/index.js";
import type { SignIntermediateFn } from "../pki/index.js";
import { REJECTION_REASONS, RELAY_DEFAULTS, type RejectionReason } from "./constants.js";
import { RelayRejectedError, toServiceError } from "./errors.js";
import { createClusterIdentities, createMemoryRecordStore, credentialMatches, type ClusterIdentities, type ClusterIdentityRecord } from "./identity.js";
import {
  DiscoveryUpdate,
  OutputAck,
  RegisterRequest,
  RegistrationService,
  RelayService,
  RenewRequest,
  SignIntermediateRequest,
  type CertificateResponse,
  type SignIntermediateResponse,
  type DiscoveryAck,
  type OutputUpdate,
} from "./gen/gitmesh/relay/v1/relay.js";
import { createRelayMetrics } from "./metrics.js";
import { checkClientCsr, clusterOfPeerCertificate, InvalidCsrError, isValidClusterName, signClientCertificate, type RelayPki } from "./pki.js";
import { applyStateDelta, createChunkAssembler, diffStates, encodeChunks, stateChecksum, WireError, type RelayState, type StateDelta } from "./wire.js";

/** A rendered output snapshot for one cluster. */
export interface OutputSnapshot {
  /** Increases with every publication for the cluster. */
  readonly version: number;
  /** Git commit the output was rendered from. */
  readonly sourceCommit: string;
  /** true when this is the complete desired output (the agent may prune against it). */
  readonly complete: boolean;
  /** Resource key → bytes (JSON of the Istio object by convention). */
  readonly resources: RelayState;
}

export interface DiscoveryEvent {
  readonly cluster: string;
  readonly version: number;
  readonly full: boolean;
  readonly checksum: string;
  /** The whole state after the update. */
  readonly state: RelayState;
  /** What changed (for a full update: everything, nothing removed). */
  readonly delta: StateDelta;
}

export interface AppliedVersion {
  readonly version: number;
  readonly sourceCommit: string;
  readonly atMs: number;
}

export interface OutputAckEvent extends AppliedVersion {
  readonly cluster: string;
}

export interface OutputNackEvent extends OutputAckEvent {
  readonly errors: readonly { readonly key: string; readonly message: string }[];
}

/** Owned objects an agent found changed or deleted by someone else and put back (bounded: see DRIFT_LIMITS). */
export interface DriftRepairEvent {
  readonly cluster: string;
  readonly repairs: readonly { readonly key: string; readonly why: "changed" | "deleted"; readonly atMs: number; readonly managers: readonly string[] }[];
}

/** What one drift report may carry: anything beyond is dropped (an agent cannot grow the server's memory). */
export const DRIFT_LIMITS = { repairs: 50, keyChars: 300, managers: 5, managerChars: 100 } as const;

export type StreamKind = "push" | "pull";


export interface RelayServerOptions {
  /** CA, server certificate and signing CA (see loadOrCreateRelayPki). */
  readonly pki: RelayPki;
  /**
   * Opt-in fleet-wide bootstrap token (Gloo-style installs; the server's `--bootstrap fleet-token`), or a
   * function returning the current one. Absent or "": only per-cluster credentials (minted in
   * `identities`) register. Either way a cluster holding a live certificate is not re-registered.
   */
  readonly token?: string | (() => string) | undefined;
  /**
   * Per-cluster credentials, live identities and revocations, in the store shared by every replica
   * (default: in memory, for one process only — revocations are then lost on restart).
   */
  readonly identities?: ClusterIdentities;
  /** How often open streams are re-checked against the store's revocations and registration (default 15 s). */
  readonly revalidateIntervalMs?: number;
  /** Largest discovery state (decompressed) one cluster may hold (default 64 MiB). */
  readonly maxDiscoveryBytes?: number;
  /** Largest decompressed/compressed ratio of one update once it exceeds 1 MiB (default 200). */
  readonly maxCompressionRatio?: number;
  /** Whether a cluster may connect: a KubernetesCluster of that name exists in the desired state. */
  readonly isClusterRegistered: (cluster: string) => boolean | Promise<boolean>;
  readonly logger: Logger;
  /** Registry for the relay metrics (no global registry). */
  readonly registry: Registry;
  /** Listen address (default `0.0.0.0`). */
  readonly host?: string;
  /** Listen port (default 9900; 0 picks a free port). */
  readonly port?: number;
  /** Lifetime of issued client certificates (default 30 days). */
  readonly certificateLifetimeMs?: number;
  /** gRPC max message size, both directions (default 4 MiB). */
  readonly maxMessageBytes?: number;
  /** Raw bytes per chunk before gzip when sending output (default 1 MiB). */
  readonly chunkBytes?: number;
  /** Largest assembled update accepted (default 256 MiB). */
  readonly maxStateBytes?: number;
  readonly keepaliveTimeMs?: number;
  readonly keepaliveTimeoutMs?: number;
  /**
   * Most compressed output bytes buffered per stream towards an agent that does not read (default
   * 2 × chunkBytes; at least one chunk is always let through). Beyond it the server waits for the
   * connection to drain, and newer publications replace the version waiting to be sent.
   */
  readonly sendBufferBytes?: number;
  readonly onDiscovery?: (event: DiscoveryEvent) => void | Promise<void>;
  readonly onAck?: (event: OutputAckEvent) => void;
  readonly onNack?: (event: OutputNackEvent) => void;
  /** Drift repairs an agent reported (its owned objects changed by someone else and put back). */
  readonly onDriftRepairs?: (event: DriftRepairEvent) => void;
  readonly onConnect?: (cluster: string, stream: StreamKind) => void;
  readonly onDisconnect?: (cluster: string, stream: StreamKind) => void;
  /**
   * Signs Istio intermediate CA CSRs (Relay.SignIntermediate) with the mesh root CA — src/mesh-ca
   * createMeshCa(...).signIntermediate. Without it SignIntermediate answers UNIMPLEMENTED.
   */
  readonly signIntermediate?: SignIntermediateFn;
  /** Clock (default Date.now). */
  readonly now?: () => number;
}

export interface RelayServer {
  /** Binds and starts serving; resolves with the bound port. */
  start(): Promise<number>;
  /** Closes every stream and the port. */
  stop(): Promise<void>;
  readonly port: number | undefined;
  /** Publishes a cluster's output: sent at once if its agent is subscribed (delta against what it has), else on its next connect (full). */
  publishOutput(cluster: string, snapshot: OutputSnapshot): void;
  /** Clusters with an open push or pull stream. */
  connectedClusters(): { cluster: string; push: boolean; pull: boolean; warmed: boolean }[];
  /** The last version each cluster's agent ACKed, with its source commit. */
  appliedVersions(): ReadonlyMap<string, AppliedVersion>;
  /** The last accepted discovery state of a cluster (kept after disconnects). */
  discoveryState(cluster: string): { version: number; checksum: string; state: RelayState } | undefined;
  /**
   * Closes a cluster's streams (e.g. its KubernetesCluster left Git) without revoking anything: while
   * `isClusterRegistered` says no, its reconnects are refused; once it says yes again, the same
   * certificate works (the agent recovers on its own).
   */
  disconnect(cluster: string, message: string): void;
  /**
   * Revokes every certificate of the cluster issued so far, in the shared store (survives restarts,
   * applies on every replica within revalidateIntervalMs), and closes its streams here.
   */
  revoke(cluster: string, reason: string): Promise<void>;
  /** Re-issue (operator action): revokes like `revoke` and mints a fresh single-use credential for the cluster. */
  reissue(cluster: string, options?: { readonly ttlMs?: number }): Promise<{ credential: string; expiresAtMs: number }>;
  /** The identities store (mint credentials, read records for status). */
  readonly identities: ClusterIdentities;
  /** The last refusal of each cluster's agent since it last connected (status: why a cluster is cut off). */
  refusals(): ReadonlyMap<string, { reason: string; message: string; atMs: number }>;
}

const MALFORMED = Symbol("malformed");
interface Malformed {
  readonly [MALFORMED]: string;
}
function isMalformed(v: unknown): v is Malformed {
  return typeof v === "object" && v !== null && MALFORMED in v;
}
/** A deserializer that never throws: grpc-js would answer INTERNAL; we answer INVALID_ARGUMENT with a clear message. */
function tolerant<T>(decode: (b: Buffer) => T): (b: Buffer) => T | Malformed {
  return (b) => {
    try {
      return decode(b);
    } catch (err) {
      return { [MALFORMED]: describeError(err) };
    }
  };
}

interface PushSession {
  readonly cluster: string;
  readonly issuedAtMs: number;
  readonly call: grpc.ServerDuplexStream<DiscoveryUpdate | Malformed, DiscoveryAck>;
  closed: boolean;
  awaitingFull: boolean;
  warmed: boolean;
  /** Cancels the close-at-certificate-expiry timer. */
  readonly stopExpiry: () => void;
}

interface PullSession {
  readonly cluster: string;
  readonly issuedAtMs: number;
  readonly call: grpc.ServerDuplexStream<OutputAck | Malformed, OutputUpdate>;
  closed: boolean;
  subscribed: boolean;
  sent: { version: number; entries: RelayState } | undefined;
  readonly sentVersions: Map<number, { sourceCommit: string }>;
  /** The next output to send (newer publications replace it: a slow agent gets the latest, not every version). */
  pending: { snap: OutputSnapshot; forceFull: boolean } | undefined;
  sending: boolean;
  /** Compressed bytes handed to gRPC and not yet flushed to the connection. */
  buffered: number;
  /** Woken when `buffered` shrinks or the stream closes. */
  readonly wakeups: (() => void)[];
  readonly stopExpiry: () => void;
}

/**
 * Runs `close` (idempotent) however a bidirectional stream ends (client half-close, cancel, error, close);
 * a client half-close is answered by ending our side too.
 */
function closeWhenStreamEnds<Req, Res>(call: grpc.ServerDuplexStream<Req, Res>, close: () => void): void {
  call.on("end", () => {
    close();
    call.end();
  });
  call.on("cancelled", close);
  call.on("error", close);
  call.on("close", close);
}

/** Discovery updates (chunks) read ahead of handling before the server stops reading a push stream. */
const PUSH_QUEUE_LIMIT = 8;

const digest = (s: string) => createHash("sha256").update(s, "utf8").digest();

export function createRelayServer(options: RelayServerOptions): RelayServer {
  const log = options.logger;
  const metrics = createRelayMetrics(options.registry);
  const now = options.now ?? Date.now;
  const maxMessageBytes = options.maxMessageBytes ?? RELAY_DEFAULTS.maxMessageBytes;
  const chunkBytes = Math.max(1024, Math.min(options.chunkBytes ?? RELAY_DEFAULTS.chunkBytes, Math.floor(maxMessageBytes * 0.9)));
  const sendBufferBytes = Math.max(1, options.sendBufferBytes ?? 2 * chunkBytes);
  const limits = {
    maxChunkBytes: maxMessageBytes,
    maxStateBytes: options.maxStateBytes ?? RELAY_DEFAULTS.maxStateBytes,
    maxRatio: options.maxCompressionRatio ?? RELAY_DEFAULTS.maxCompressionRatio,
    ratioFloorBytes: RELAY_DEFAULTS.ratioFloorBytes,
  };
  const maxDiscoveryBytes = options.maxDiscoveryBytes ?? RELAY_DEFAULTS.maxDiscoveryBytes;
  const identities = options.identities ?? createClusterIdentities(createMemoryRecordStore(), { now });
  const lifetimeMs = options.certificateLifetimeMs ?? RELAY_DEFAULTS.certificateLifetimeMs;
  const signingCa = { certPem: options.pki.signingCaCertPem, keyPem: options.pki.signingCaKeyPem };

  const pushSessions = new Map<string, PushSession>();
  const pullSessions = new Map<string, PullSession>();
  const outputs = new Map<string, OutputSnapshot>();
  const applied = new Map<string, AppliedVersion>();
  const discovery = new Map<string, { version: number; checksum: string; state: RelayState }>();
  const lastRefusal = new Map<string, { reason: string; message: string; atMs: number }>();
  let revalidateTimer: NodeJS.Timeout | undefined;
  let server: grpc.Server | undefined;
  let boundPort: number | undefined;

  const reject = (reason: RejectionReason, code: RelayRejectedError["grpcCode"], message: string) => new RelayRejectedError(reason, code, message);

  /** Logs and counts a rejection, and answers it with its gRPC status. */
  function refuse(err: unknown, fields: Record<string, unknown>, answer: (e: ReturnType<typeof toServiceError>) => void): void {
    const se = toServiceError(err);
    if (err instanceof RelayRejectedError) {
      metrics.rejections.inc({ reason: err.reason });
      const cluster = fields.cluster;
      if (typeof cluster === "string" && fields.rpc !== "Register") lastRefusal.set(cluster, { reason: err.reason, message: err.message, atMs: now() });
      log.warn("relay rejected a request", { reason: err.reason, code: grpc.status[se.code], message: se.details, ...fields });
    } else {
      log.error("relay request failed", { error: describeError(err), ...fields });
    }
    answer(se);
  }

  const revokedError = (cluster: string, r: ClusterIdentityRecord) =>
    reject(
      REJECTION_REASONS.certificateRevoked,
      grpc.status.PERMISSION_DENIED,
      `the client certificate of cluster "${cluster}" was revoked${r.revocation ? ` at ${new Date(r.revocation.atMs).toISOString()} (${r.revocation.reason})` : ""}; the agent registers again with the new bootstrap credential of \`gitmesh cluster reissue ${cluster}\` (secret relay-identity-token-secret in its namespace)`,
    );
  const isRevoked = (r: ClusterIdentityRecord, issuedAtMs: number) => r.revokedBeforeMs !== undefined && issuedAtMs <= r.revokedBeforeMs;

  /**
   * The identity record of a cluster for checking a certificate. When the store cannot be read (Redis
   * down), the last record this replica saw is used (none: nothing known revoked), so connected fleets
   * keep working; registration, which must consume atomically, fails instead (UNAVAILABLE).
   */
  const seen = new Map<string, ClusterIdentityRecord>();
  async function recordFor(cluster: string): Promise<ClusterIdentityRecord> {
    try {
      const r = await identities.read(cluster);
      seen.set(cluster, r);
      return r;
    } catch (err) {
      log.warn("identity store unreachable; checking the certificate against the last record seen", { cluster, store: identities.describe, error: describeError(err) });
      return seen.get(cluster) ?? {};
    }
  }

  async function checkClusterAllowed(cluster: string, issuedAtMs?: number): Promise<void> {
    if (issuedAtMs !== undefined) {
      const r = await recordFor(cluster);
      if (isRevoked(r, issuedAtMs)) throw revokedError(cluster, r);
    }
    if (!(await options.isClusterRegistered(cluster))) {
      throw reject(
        REJECTION_REASONS.clusterNotRegistered,
        grpc.status.PERMISSION_DENIED,
        `cluster "${cluster}" is not registered: add a KubernetesCluster named "${cluster}" in the admin namespace of the configuration repository (e.g. clusters/${cluster}.yaml), or fix relay.cluster in the agent's values; an agent whose cluster is restored in Git reconnects on its own with its certificate`,
      );
    }
  }

  /** The cluster identity of a stream or mTLS call, from the verified peer certificate only. */
  async function identify(call: { getAuthContext(): { sslPeerCertificate?: import("node:tls").PeerCertificate } }, fields: Record<string, unknown>): Promise<{ cluster: string; notAfterMs: number; issuedAtMs: number }> {
    const peer = call.getAuthContext().sslPeerCertificate;
    if (!peer) {
      throw reject(
        REJECTION_REASONS.clientCertificateInvalid,
        grpc.status.UNAUTHENTICATED,
        "no valid client certificate: it is missing, expired or not yet valid, or not issued by this server's signing CA (relay-tls-signing-secret); re-register the agent with the bootstrap token to get a new certificate",
      );
    }
    const id = clusterOfPeerCertificate(peer);
    if (!id) {
      throw reject(
        REJECTION_REASONS.clientCertificateInvalid,
        grpc.status.UNAUTHENTICATED,
        "the client certificate carries no valid cluster identity (subject CN and URI SAN spiffe://gitmesh/cluster/<name> must name the same cluster); use the certificate issued at registration",
      );
    }
    fields.cluster = id.cluster;
    await checkClusterAllowed(id.cluster, id.issuedAtMs);
    const notAfterMs = Date.parse(peer.valid_to);
    const known = seen.get(id.cluster)?.issued;
    if (!known || known.issuedAtMs < id.issuedAtMs) {
      await identities.observeCertificate(id.cluster, id.issuedAtMs, notAfterMs).catch((err: unknown) => log.debug("could not record the presented certificate as the live identity", { cluster: id.cluster, error: describeError(err) }));
    }
    return { cluster: id.cluster, notAfterMs, issuedAtMs: id.issuedAtMs };
  }

  /**
   * TLS checks a certificate's validity only at the handshake, so a connection would outlive its
   * certificate. This timer ends a stream when its peer certificate expires (UNAUTHENTICATED): the
   * agent must reconnect with a renewed certificate or re-register. Uses the real clock, as TLS does.
   */
  function closeAtExpiry(notAfterMs: number, fields: Record<string, unknown>, call: { emit(event: "error", err: unknown): boolean }): () => void {
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    const arm = () => {
      if (stopped) return;
      const delay = notAfterMs - Date.now();
      if (delay > 0) {
        timer = setTimeout(arm, Math.min(delay, 2 ** 31 - 1));
        timer.unref();
        return;
      }
      const err = reject(
        REJECTION_REASONS.certificateExpired,
        grpc.status.UNAUTHENTICATED,
        `the client certificate expired at ${new Date(notAfterMs).toISOString()}; the agent renews it before expiry and reconnects with the new one — if it did not, check the agent's clock and its renewal errors, or re-register it with the bootstrap token`,
      );
      refuse(err, fields, (se) => endWithError(call, se));
    };
    arm();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  function checkNamedCluster(identity: string, named: string): void {
    if (named !== "" && named !== identity) {
      throw reject(
        REJECTION_REASONS.clusterMismatch,
        grpc.status.PERMISSION_DENIED,
        `the message names cluster "${named}" but the client certificate is for cluster "${identity}"; an agent may only send data for its own cluster (check relay.cluster)`,
      );
    }
  }

  function wireRejection(err: unknown): unknown {
    if (!(err instanceof WireError)) return err;
    return err.kind === "too_large"
      ? reject(REJECTION_REASONS.messageTooLarge, grpc.status.RESOURCE_EXHAUSTED, err.message)
      : reject(REJECTION_REASONS.malformedMessage, grpc.status.INVALID_ARGUMENT, err.message);
  }

  function malformed(what: string, detail: string): RelayRejectedError {
    return reject(
      REJECTION_REASONS.malformedMessage,
      grpc.status.INVALID_ARGUMENT,
      `could not decode a ${what} (${detail}); the agent must speak protocol gitmesh.relay.v1 — upgrade or reinstall the agent`,
    );
  }

  // ---- registration and renewal -------------------------------------------------------------

  /** Validates a CSR before anything is consumed (a bad CSR never burns a single-use credential). */
  function validateCsr(csrPem: string): void {
    try {
      checkClientCsr(csrPem);
    } catch (err) {
      if (err instanceof InvalidCsrError) {
        throw reject(REJECTION_REASONS.invalidRequest, grpc.status.INVALID_ARGUMENT, `${err.message}; send a PEM PKCS#10 CSR signed with an RSA key of at least 2048 bits`);
      }
      throw err;
    }
  }

  /** Signs a client certificate whose issue time (ms, in the serial number) was recorded in the identity store. */
  function issue(cluster: string, csrPem: string, kind: "register" | "renew", issuedAt: number): CertificateResponse {
    try {
      const { certPem, notAfterMs } = signClientCertificate(signingCa, { cluster, csrPem, lifetimeMs, now: issuedAt });
      metrics.certificatesIssued.inc({ kind });
      log.info(kind === "register" ? "registered cluster" : "renewed client certificate", { cluster, notAfter: new Date(notAfterMs).toISOString() });
      return { certificatePem: certPem, caPem: options.pki.rootCaCertPem, notAfterMs };
    } catch (err) {
      if (err instanceof InvalidCsrError) {
        throw reject(REJECTION_REASONS.invalidRequest, grpc.status.INVALID_ARGUMENT, `${err.message}; send a PEM PKCS#10 CSR signed with an RSA key of at least 2048 bits`);
      }
      throw err;
    }
  }

  const fleetTokenMatches = (given: string): boolean => {
    const expected = (typeof options.token === "function" ? options.token() : options.token) ?? "";
    // Equal-length digests, compared in constant time: neither the token nor its length leaks.
    return expected.length > 0 && given.length > 0 && timingSafeEqual(digest(given), digest(expected));
  };

  const registration = {
    register(call: grpc.ServerUnaryCall<RegisterRequest | Malformed, CertificateResponse>, callback: grpc.sendUnaryData<CertificateResponse>) {
      const req = call.request;
      const fields: Record<string, unknown> = { rpc: "Register", peer: call.getPeer() };
      void (async () => {
        if (isMalformed(req)) throw malformed("RegisterRequest", req[MALFORMED]);
        fields.cluster = req.cluster;
        if (!isValidClusterName(req.cluster)) {
          throw reject(REJECTION_REASONS.invalidRequest, grpc.status.INVALID_ARGUMENT, `cluster name ${JSON.stringify(req.cluster)} is not a valid KubernetesCluster name (lowercase DNS-1123 subdomain); fix relay.cluster`);
        }
        validateCsr(req.csrPem);
        // Tolerate the newline a token file or `kubectl create secret --from-file` leaves behind.
        const presented = req.token.trim();
        const fleet = fleetTokenMatches(presented);
        const unreachable = (err: unknown) => {
          throw new TransientError(`cannot register now: the identity store (${identities.describe}) is unreachable; the agent retries`, { cause: err });
        };
        const badCredential = () =>
          reject(
            REJECTION_REASONS.badToken,
            grpc.status.UNAUTHENTICATED,
            `the bootstrap credential is not valid for cluster "${req.cluster}" (unknown, already used, expired, or minted for another cluster); mint a new one with \`gitmesh cluster register ${req.cluster}\` (or \`gitmesh cluster reissue ${req.cluster}\` if the cluster was registered before), which writes it to secret relay-identity-token-secret in the agent's namespace`,
          );
        // The credential first (read-only), so that nothing about the cluster is told to a caller without one.
        if (!fleet && !credentialMatches(await identities.read(req.cluster).catch(unreachable), presented, now())) throw badCredential();
        await checkClusterAllowed(req.cluster);
        const decision = await identities.register(req.cluster, presented, fleet, lifetimeMs).catch(unreachable);
        if (!decision.ok && decision.why === "bad_credential") throw badCredential();
        if (!decision.ok) {
          const until = decision.record.issued ? new Date(decision.record.issued.notAfterMs).toISOString() : "?";
          throw reject(
            REJECTION_REASONS.identityInUse,
            grpc.status.PERMISSION_DENIED,
            `cluster "${req.cluster}" already holds a valid client certificate (until ${until}); one live identity per cluster: its agent renews with that certificate, and a new registration needs an explicit re-issue by an operator (\`gitmesh cluster reissue ${req.cluster}\` or POST /api/clusters/${req.cluster}/reissue), which revokes the current certificate`,
          );
        }
        return issue(req.cluster, req.csrPem, "register", decision.issuedAtMs);
      })().then(
        (res) => callback(null, res),
        (err: unknown) => refuse(err, fields, (se) => callback(se)),
      );
    },
  };

  function renew(call: grpc.ServerUnaryCall<RenewRequest | Malformed, CertificateResponse>, callback: grpc.sendUnaryData<CertificateResponse>) {
    const req = call.request;
    const fields: Record<string, unknown> = { rpc: "Renew", peer: call.getPeer() };
    void (async () => {
      const { cluster } = await identify(call, fields);
      fields.cluster = cluster;
      if (isMalformed(req)) throw malformed("RenewRequest", req[MALFORMED]);
      checkNamedCluster(cluster, req.cluster);
      validateCsr(req.csrPem);
      return issue(cluster, req.csrPem, "renew", await identities.recordRenewal(cluster, lifetimeMs));
    })().then(
      (res) => callback(null, res),
      (err: unknown) => refuse(err, fields, (se) => callback(se)),
    );
  }

  // ---- Istio intermediate CA ----------------------------------------------------------------

  const REFUSALS = {
    not_issued: { reason: REJECTION_REASONS.intermediateNotIssued, code: grpc.status.PERMISSION_DENIED },
    invalid_csr: { reason: REJECTION_REASONS.invalidCsr, code: grpc.status.INVALID_ARGUMENT },
    san_mismatch: { reason: REJECTION_REASONS.sanMismatch, code: grpc.status.INVALID_ARGUMENT },
  } as const;

  function signIntermediate(call: grpc.ServerUnaryCall<SignIntermediateRequest | Malformed, SignIntermediateResponse>, callback: grpc.sendUnaryData<SignIntermediateResponse>) {
    const req = call.request;
    const fields: Record<string, unknown> = { rpc: "SignIntermediate", peer: call.getPeer() };
    void (async () => {
      const { cluster } = await identify(call, fields);
      fields.cluster = cluster;
      if (isMalformed(req)) throw malformed("SignIntermediateRequest", req[MALFORMED]);
      checkNamedCluster(cluster, req.cluster);
      fields.issuedCertificate = req.issuedCertificate;
      fields.rootTrustPolicy = req.rootTrustPolicy;
      const sign = options.signIntermediate;
      if (!sign) {
        throw reject(
          REJECTION_REASONS.meshCaNotConfigured,
          grpc.status.UNIMPLEMENTED,
          "this management server has no mesh CA configured, so it cannot sign Istio intermediate CAs for RootTrustPolicies; configure the mesh root CA on the server (src/mesh-ca), or remove the RootTrustPolicy",
        );
      }
      if (req.csrPem.trim() === "") {
        throw reject(REJECTION_REASONS.invalidCsr, grpc.status.INVALID_ARGUMENT, "the request carries no CSR; send the intermediate CA's PEM PKCS#10 CSR in csr_pem");
      }
      const result = await sign(cluster, { csrPem: req.csrPem, issuedCertificate: req.issuedCertificate, rootTrustPolicy: req.rootTrustPolicy });
      if (!result.ok) {
        const r = REFUSALS[result.refusal];
        throw reject(r.reason, r.code, result.message);
      }
      metrics.certificatesIssued.inc({ kind: "intermediate" });
      log.info("signed an Istio intermediate CA", { ...fields, notAfter: new Date(result.notAfterMs).toISOString() });
      return { certificatePem: result.certPem, chainPem: [...result.chainPems], rootCertPem: result.rootCertPem, notAfterMs: result.notAfterMs };
    })().then(
      (res) => callback(null, res),
      (err: unknown) => refuse(err, fields, (se) => callback(se)),
    );
  }

  // ---- discovery push -----------------------------------------------------------------------

  function endWithError(call: { emit(event: "error", err: unknown): boolean }, se: { code: number; details: string }) {
    call.emit("error", se);
  }

  function pushDiscovery(call: grpc.ServerDuplexStream<DiscoveryUpdate | Malformed, DiscoveryAck>) {
    const fields: Record<string, unknown> = { rpc: "PushDiscovery", peer: call.getPeer() };
    let session: PushSession | undefined;
    const queue: (DiscoveryUpdate | Malformed)[] = [];
    let draining = false;
    const assembler = createChunkAssembler<DiscoveryUpdate>(limits, (a, b) => a.version === b.version && a.full === b.full && a.checksum === b.checksum && a.baseVersion === b.baseVersion && a.cluster === b.cluster);

    const close = () => {
      if (!session || session.closed) return;
      session.closed = true;
      session.stopExpiry();
      if (pushSessions.get(session.cluster) === session) {
        pushSessions.delete(session.cluster);
        metrics.pushConnected.set({ cluster: session.cluster }, 0);
        metrics.warmed.set({ cluster: session.cluster }, 0);
        log.info("discovery stream closed", { cluster: session.cluster });
        options.onDisconnect?.(session.cluster, "push");
      }
    };
    const fail = (err: unknown) => {
      refuse(err, fields, (se) => endWithError(call, se));
      close();
    };

    const handle = async (msg: DiscoveryUpdate | Malformed, s: PushSession) => {
      if (isMalformed(msg)) throw malformed("DiscoveryUpdate", msg[MALFORMED]);
      checkNamedCluster(s.cluster, msg.cluster);
      metrics.streamBytes.inc({ direction: "received" }, msg.chunk?.payload.length ?? 0);
      let delta: StateDelta | undefined;
      try {
        delta = assembler.push(msg, msg.chunk);
      } catch (err) {
        throw wireRejection(err);
      }
      if (!delta) return;
      const prev = discovery.get(s.cluster);
      const resync = (why: string) => {
        s.awaitingFull = true;
        metrics.resyncs.inc({ direction: "push" });
        log.warn("asking agent for a full discovery resync", { cluster: s.cluster, version: msg.version, why });
        ack({ version: msg.version, resync: true, checksum: prev?.checksum ?? "", message: why });
      };
      let state: Map<string, Uint8Array>;
      if (msg.full) {
        if (delta.removed.length > 0) throw malformed("DiscoveryUpdate", "a full update cannot remove keys");
        state = new Map(delta.upserts);
      } else {
        if (s.awaitingFull || !prev) return resync("a full snapshot is required first");
        if (msg.baseVersion !== prev.version) return resync(`delta is based on version ${msg.baseVersion} but the server has version ${prev.version}`);
        state = applyStateDelta(prev.state, delta);
      }
      let size = 0;
      for (const [k, v] of state) size += k.length + v.length;
      if (size > maxDiscoveryBytes) {
        throw reject(
          REJECTION_REASONS.messageTooLarge,
          grpc.status.RESOURCE_EXHAUSTED,
          `the discovery state of cluster "${s.cluster}" would be ${size} bytes decompressed, above the server's limit of ${maxDiscoveryBytes} bytes per cluster (maxDiscoveryBytes); narrow the agent's discovery selectors, or raise the limit`,
        );
      }
      const checksum = stateChecksum(state);
      if (checksum !== msg.checksum) {
        if (msg.full) {
          throw reject(
            REJECTION_REASONS.checksumMismatch,
            grpc.status.INVALID_ARGUMENT,
            "the checksum of a full snapshot does not match its content; agent and server compute checksums differently (version skew?) — upgrade the agent to the server's protocol version",
          );
        }
        return resync(`checksum mismatch after applying delta ${msg.version} (agent ${msg.checksum.slice(0, 12)}, server ${checksum.slice(0, 12)})`);
      }
      const entry = { version: msg.version, checksum, state };
      try {
        await options.onDiscovery?.({ cluster: s.cluster, version: msg.version, full: msg.full, checksum, state, delta: msg.full ? { upserts: state, removed: [] } : delta });
      } catch (err) {
        log.error("onDiscovery failed; asking the agent to resend", { cluster: s.cluster, error: describeError(err) });
        return resync("the server could not store the update");
      }
      discovery.set(s.cluster, entry);
      s.awaitingFull = false;
      metrics.discoveryUpdates.inc({ kind: msg.full ? "full" : "delta" });
      if (msg.full && !s.warmed) {
        s.warmed = true;
        metrics.warmed.set({ cluster: s.cluster }, 1);
      }
      ack({ version: msg.version, resync: false, checksum, message: "" });
    };
    // Backpressure both ways: stop reading while updates wait to be handled or while acks cannot be
    // flushed to an agent that does not read them; at most PUSH_QUEUE_LIMIT updates wait in memory.
    let ackBlocked = false;
    const ack = (a: DiscoveryAck) => {
      if (call.write(a) || ackBlocked) return;
      ackBlocked = true;
      call.pause();
      call.once("drain", () => {
        ackBlocked = false;
        if (queue.length < PUSH_QUEUE_LIMIT) call.resume();
      });
    };

    const drain = async () => {
      if (draining) return;
      draining = true;
      try {
        while (queue.length > 0 && session && !session.closed) {
          await handle(queue.shift()!, session);
          if (queue.length < PUSH_QUEUE_LIMIT && !ackBlocked) call.resume();
        }
      } catch (err) {
        fail(err);
      } finally {
        draining = false;
      }
    };

    call.on("data", (msg: DiscoveryUpdate | Malformed) => {
      queue.push(msg);
      if (queue.length >= PUSH_QUEUE_LIMIT) call.pause();
      if (session) void drain();
    });
    closeWhenStreamEnds(call, close);

    identify(call, fields).then(
      ({ cluster, notAfterMs, issuedAtMs }) => {
        if (call.cancelled) return;
        fields.cluster = cluster;
        lastRefusal.delete(cluster);
        const old = pushSessions.get(cluster);
        session = { cluster, issuedAtMs, call, closed: false, awaitingFull: true, warmed: false, stopExpiry: closeAtExpiry(notAfterMs, fields, call) };
        pushSessions.set(cluster, session);
        if (old) {
          old.closed = true;
          old.stopExpiry();
          endWithError(old.call, { code: grpc.status.ABORTED, details: "replaced by a newer discovery stream of the same cluster" });
        }
        metrics.pushConnected.set({ cluster }, 1);
        metrics.warmed.set({ cluster }, 0);
        log.info("discovery stream opened", { cluster });
        options.onConnect?.(cluster, "push");
        void drain();
      },
      (err: unknown) => refuse(err, fields, (se) => endWithError(call, se)),
    );
  }

  // ---- output pull --------------------------------------------------------------------------

  /** Queues the latest output for a stream; a version still waiting is replaced (the agent gets a delta to the newest). */
  function sendOutput(s: PullSession, snap: OutputSnapshot, forceFull: boolean) {
    if (s.pending) metrics.outputCoalesced.inc();
    s.pending = { snap, forceFull: forceFull || (s.pending?.forceFull ?? false) };
    void pumpOutput(s);
  }

  /** Frees what a closed output stream holds: its queued version, buffered-bytes gauge, waiting sender, expiry timer. */
  function releasePull(s: PullSession) {
    s.pending = undefined;
    metrics.outputBuffered.dec({ cluster: s.cluster }, s.buffered);
    s.buffered = 0;
    s.stopExpiry();
    wake(s);
  }

  /** Re-reads `closed` after an await (the stream may close while the sender waits). */
  const isOpen = (s: PullSession) => !s.closed;
  const wake = (s: PullSession) => {
    for (const w of s.wakeups.splice(0)) w();
  };

  /**
   * Writes queued output chunk by chunk, respecting backpressure: it waits while more than
   * sendBufferBytes are handed to gRPC but not flushed (write callbacks), or while the stream's own
   * buffer is full (write() returned false, until 'drain'). So a slow agent costs the server at most
   * one encoded update plus sendBufferBytes, however many versions are published meanwhile.
   */
  async function pumpOutput(s: PullSession): Promise<void> {
    if (s.sending) return;
    s.sending = true;
    try {
      while (s.pending && !s.closed) {
        const { snap, forceFull } = s.pending;
        s.pending = undefined;
        const full = forceFull || s.sent === undefined;
        const delta: StateDelta = full ? { upserts: snap.resources, removed: [] } : diffStates(s.sent!.entries, snap.resources);
        const baseVersion = full ? 0 : s.sent!.version;
        const checksum = stateChecksum(snap.resources);
        const chunks = encodeChunks(delta, chunkBytes);
        s.sent = { version: snap.version, entries: snap.resources };
        s.sentVersions.set(snap.version, { sourceCommit: snap.sourceCommit });
        if (s.sentVersions.size > 64) s.sentVersions.delete(s.sentVersions.keys().next().value!);
        for (const chunk of chunks) {
          while (isOpen(s) && s.buffered > 0 && s.buffered + chunk.payload.length > sendBufferBytes) {
            await new Promise<void>((resolve) => s.wakeups.push(resolve));
          }
          if (!isOpen(s)) return;
          const size = chunk.payload.length;
          s.buffered += size;
          metrics.outputBuffered.inc({ cluster: s.cluster }, size);
          metrics.streamBytes.inc({ direction: "sent" }, size);
          const ok = s.call.write({ version: snap.version, baseVersion, full, complete: snap.complete, sourceCommit: snap.sourceCommit, checksum, chunk }, () => {
            if (!isOpen(s)) return; // close() already released the stream's buffered bytes
            s.buffered -= size;
            metrics.outputBuffered.dec({ cluster: s.cluster }, size);
            wake(s);
          });
          if (!ok && isOpen(s)) {
            await new Promise<void>((resolve) => {
              s.call.once("drain", resolve);
              s.wakeups.push(resolve);
            });
          }
        }
      }
    } finally {
      s.sending = false;
    }
  }

  function pullOutput(call: grpc.ServerDuplexStream<OutputAck | Malformed, OutputUpdate>) {
    const fields: Record<string, unknown> = { rpc: "PullOutput", peer: call.getPeer() };
    let session: PullSession | undefined;
    const early: (OutputAck | Malformed)[] = [];

    const close = () => {
      if (!session || session.closed) return;
      session.closed = true;
      releasePull(session);
      if (pullSessions.get(session.cluster) === session) {
        pullSessions.delete(session.cluster);
        metrics.pullConnected.set({ cluster: session.cluster }, 0);
        log.info("output stream closed", { cluster: session.cluster });
        options.onDisconnect?.(session.cluster, "pull");
      }
    };
    const handle = (msg: OutputAck | Malformed, s: PullSession) => {
      try {
        if (isMalformed(msg)) throw malformed("OutputAck", msg[MALFORMED]);
        checkNamedCluster(s.cluster, msg.cluster);
        const latest = outputs.get(s.cluster);
        if (!s.subscribed) {
          s.subscribed = true;
          if (latest) sendOutput(s, latest, true);
          return;
        }
        if (msg.report) {
          const repairs = msg.repairs.slice(0, DRIFT_LIMITS.repairs).map((r) => ({
            key: r.key.slice(0, DRIFT_LIMITS.keyChars),
            why: r.why === "deleted" ? ("deleted" as const) : ("changed" as const),
            atMs: Number.isFinite(r.atMs) && r.atMs > 0 ? Math.min(r.atMs, now()) : now(),
            managers: r.managers.slice(0, DRIFT_LIMITS.managers).map((m) => m.slice(0, DRIFT_LIMITS.managerChars)),
          }));
          if (repairs.length > 0) options.onDriftRepairs?.({ cluster: s.cluster, repairs });
          return;
        }
        if (msg.resync) {
          metrics.resyncs.inc({ direction: "pull" });
          log.warn("agent asked for a full output resync", { cluster: s.cluster, version: msg.version });
          if (latest) sendOutput(s, latest, true);
          return;
        }
        const sent = s.sentVersions.get(msg.version);
        if (!sent) {
          log.warn("agent acknowledged an output version this stream did not send; ignored", { cluster: s.cluster, version: msg.version });
          return;
        }
        const event = { cluster: s.cluster, version: msg.version, sourceCommit: sent.sourceCommit, atMs: now() };
        if (msg.ack) {
          metrics.outputAcks.inc({ result: "ack" });
          applied.set(s.cluster, { version: event.version, sourceCommit: event.sourceCommit, atMs: event.atMs });
          options.onAck?.(event);
        } else {
          metrics.outputAcks.inc({ result: "nack" });
          const errors = msg.errors.map((e) => ({ key: e.key, message: e.message }));
          log.warn("agent could not apply output", { cluster: s.cluster, version: msg.version, errors: errors.length, first: errors[0]?.message });
          options.onNack?.({ ...event, errors });
        }
      } catch (err) {
        refuse(err, fields, (se) => endWithError(call, se));
        close();
      }
    };
    call.on("data", (msg: OutputAck | Malformed) => {
      if (!session) early.push(msg);
      else if (!session.closed) handle(msg, session);
    });
    closeWhenStreamEnds(call, close);

    identify(call, fields).then(
      ({ cluster, notAfterMs, issuedAtMs }) => {
        if (call.cancelled) return;
        fields.cluster = cluster;
        lastRefusal.delete(cluster);
        const old = pullSessions.get(cluster);
        session = { cluster, issuedAtMs, call, closed: false, subscribed: false, sent: undefined, sentVersions: new Map(), pending: undefined, sending: false, buffered: 0, wakeups: [], stopExpiry: closeAtExpiry(notAfterMs, fields, call) };
        pullSessions.set(cluster, session);
        if (old) {
          old.closed = true;
          releasePull(old);
          endWithError(old.call, { code: grpc.status.ABORTED, details: "replaced by a newer output stream of the same cluster" });
        }
        metrics.pullConnected.set({ cluster }, 1);
        log.info("output stream opened", { cluster });
        options.onConnect?.(cluster, "pull");
        for (const m of early.splice(0)) if (!session.closed) handle(m, session);
      },
      (err: unknown) => refuse(err, fields, (se) => endWithError(call, se)),
    );
  }

  // ---- message size guard -------------------------------------------------------------------

  /**
   * grpc-js refuses a message above grpc.max_receive_message_length itself (its stream decoder reads
   * the length prefix and answers RESOURCE_EXHAUSTED before buffering the body or calling a handler),
   * so the handler never sees it. This interceptor wraps the call's sendStatus, recognises grpc-js's
   * own size refusals, and turns them into a relay rejection: logged, counted
   * (relay_rejections_total{reason="message_too_large"}) and answered with a status that names the
   * limit and the fix. The refusal stays where grpc-js makes it, so memory stays bounded by the limit.
   */
  const sizeGuard: grpc.ServerInterceptor = (method, call) => {
    const sendStatus = call.sendStatus.bind(call);
    call.sendStatus = (st) => {
      const details = st.details;
      if (st.code === grpc.status.RESOURCE_EXHAUSTED && /^Received message/.test(details)) {
        const size = /\((\d+) vs/.exec(details)?.[1];
        const err = reject(
          REJECTION_REASONS.messageTooLarge,
          grpc.status.RESOURCE_EXHAUSTED,
          `a gRPC message${size === undefined ? "" : ` of ${size} bytes`} exceeds the relay's max message size of ${maxMessageBytes} bytes; lower the agent's chunk size (chunkBytes, default ${RELAY_DEFAULTS.chunkBytes} bytes, must stay below the limit) or raise the server's maxMessageBytes`,
        );
        const fields: Record<string, unknown> = { rpc: method.path, peer: call.getPeer() };
        const peer = call.getAuthContext().sslPeerCertificate;
        const id = peer ? clusterOfPeerCertificate(peer) : undefined;
        if (id) fields.cluster = id.cluster;
        refuse(err, fields, (se) => sendStatus({ code: se.code, details: se.details }));
        return;
      }
      if (st.code === grpc.status.RESOURCE_EXHAUSTED && /^Sent message larger/.test(details)) {
        log.error("relay tried to send a message above the max message size (chunking bug)", { rpc: method.path, details });
      }
      sendStatus(st);
    };
    return new grpc.ServerInterceptingCall(call);
  };

  // ---- lifecycle ----------------------------------------------------------------------------

  function credentials(): grpc.ServerCredentials {
    const pki = options.pki;
    // Updates are delivered asynchronously: grpc-js registers its watcher only after adding the listeners.
    const provider: grpc.experimental.CertificateProvider = {
      addCaCertificateListener: (l) => queueMicrotask(() => l({ caCertificate: Buffer.from(pki.signingCaCertPem) })),
      removeCaCertificateListener: () => undefined,
      addIdentityCertificateListener: (l) => queueMicrotask(() => l({ certificate: Buffer.from(pki.serverCertPem), privateKey: Buffer.from(pki.serverKeyPem) })),
      removeIdentityCertificateListener: () => undefined,
    };
    return grpc.experimental.createCertificateProviderServerCredentials(provider, provider, false);
  }

  const closeAll = (cluster: string | undefined, code: grpc.status, details: string) => {
    for (const s of [...pushSessions.values(), ...pullSessions.values()]) {
      if (cluster !== undefined && s.cluster !== cluster) continue;
      endWithError(s.call, { code, details });
    }
  };
  /** Ends the streams of `cluster` (those whose certificate `which` selects) with a logged, counted rejection. */
  const closeWith = (cluster: string, err: RelayRejectedError, which: (s: { issuedAtMs: number }) => boolean = () => true) => {
    let closed = 0;
    for (const s of [...pushSessions.values(), ...pullSessions.values()]) {
      if (s.cluster !== cluster || !which(s)) continue;
      closed++;
      refuse(err, { rpc: "stream", cluster }, (se) => endWithError(s.call, se));
    }
    return closed;
  };

  /**
   * Revocations and deregistrations decided elsewhere (another replica's re-issue, an operator's revoke,
   * the cluster leaving this replica's desired state) end the streams they concern here too.
   */
  async function revalidate(): Promise<void> {
    const clusters = new Set([...pushSessions.keys(), ...pullSessions.keys()]);
    if (clusters.size === 0) return;
    const records = await identities.list();
    for (const [c, r] of records) seen.set(c, r);
    for (const cluster of clusters) {
      const r = records.get(cluster);
      if (r) closeWith(cluster, revokedError(cluster, r), (s) => isRevoked(r, s.issuedAtMs));
      if (!(await options.isClusterRegistered(cluster))) {
        closeWith(cluster, reject(REJECTION_REASONS.clusterNotRegistered, grpc.status.PERMISSION_DENIED, `cluster "${cluster}" is no longer registered (no KubernetesCluster in the desired state); it reconnects on its own once restored`));
      }
    }
  }

  return {
    get port() {
      return boundPort;
    },
    async start() {
      if (server) throw new Error("relay server already started");
      const srv = new grpc.Server({
        "grpc.max_receive_message_length": maxMessageBytes,
        "grpc.max_send_message_length": maxMessageBytes,
        "grpc.keepalive_time_ms": options.keepaliveTimeMs ?? RELAY_DEFAULTS.keepaliveTimeMs,
        "grpc.keepalive_timeout_ms": options.keepaliveTimeoutMs ?? RELAY_DEFAULTS.keepaliveTimeoutMs,
        "grpc.keepalive_permit_without_calls": 1,
        interceptors: [sizeGuard],
      });
      srv.addService(
        { register: { ...RegistrationService.register, requestDeserialize: tolerant((b) => RegisterRequest.decode(b)) } },
        registration,
      );
      srv.addService(
        {
          pushDiscovery: { ...RelayService.pushDiscovery, requestDeserialize: tolerant((b) => DiscoveryUpdate.decode(b)) },
          pullOutput: { ...RelayService.pullOutput, requestDeserialize: tolerant((b) => OutputAck.decode(b)) },
          renew: { ...RelayService.renew, requestDeserialize: tolerant((b) => RenewRequest.decode(b)) },
          signIntermediate: { ...RelayService.signIntermediate, requestDeserialize: tolerant((b) => SignIntermediateRequest.decode(b)) },
        },
        { pushDiscovery, pullOutput, renew, signIntermediate },
      );
      const host = options.host ?? "0.0.0.0";
      boundPort = await new Promise<number>((resolve, rejectBind) => {
        srv.bindAsync(`${host}:${options.port ?? RELAY_DEFAULTS.port}`, credentials(), (err, port) => (err ? rejectBind(err) : resolve(port)));
      });
      server = srv;
      const every = options.revalidateIntervalMs ?? RELAY_DEFAULTS.revalidateIntervalMs;
      revalidateTimer = setInterval(() => {
        revalidate().catch((err: unknown) => log.warn("could not re-check open streams against the identity store", { store: identities.describe, error: describeError(err) }));
      }, every);
      revalidateTimer.unref();
      log.info("relay server listening", { host, port: boundPort, identities: identities.describe, fleetToken: options.token !== undefined });
      return boundPort;
    },
    async stop() {
      const srv = server;
      if (!srv) return;
      server = undefined;
      clearInterval(revalidateTimer);
      closeAll(undefined, grpc.status.UNAVAILABLE, "the relay server is shutting down; reconnect");
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          srv.forceShutdown();
          resolve();
        }, 2000);
        srv.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      log.info("relay server stopped", { port: boundPort });
    },
    publishOutput(cluster, snapshot) {
      outputs.set(cluster, snapshot);
      const s = pullSessions.get(cluster);
      if (s?.subscribed && !s.closed) sendOutput(s, snapshot, false);
    },
    connectedClusters() {
      const names = new Set([...pushSessions.keys(), ...pullSessions.keys()]);
      return [...names].sort().map((cluster) => ({
        cluster,
        push: pushSessions.has(cluster),
        pull: pullSessions.has(cluster),
        warmed: pushSessions.get(cluster)?.warmed ?? false,
      }));
    },
    appliedVersions: () => applied,
    discoveryState: (cluster) => discovery.get(cluster),
    disconnect(cluster, message) {
      log.info("closing a cluster's streams (not revoked)", { cluster, why: message });
      closeWith(cluster, reject(REJECTION_REASONS.clusterNotRegistered, grpc.status.PERMISSION_DENIED, message));
    },
    async revoke(cluster, reason) {
      const before = await identities.revoke(cluster, reason);
      log.warn("revoked the certificates of a cluster", { cluster, reason, issuedUpTo: new Date(before).toISOString() });
      closeWith(cluster, revokedError(cluster, await identities.read(cluster)));
    },
    async reissue(cluster, opts = {}) {
      const minted = await identities.mintCredential(cluster, { reissue: true, reason: "re-issued by an operator", ...(opts.ttlMs === undefined ? {} : { ttlMs: opts.ttlMs }) });
      log.warn("re-issued a cluster's identity: its certificates are revoked and a new bootstrap credential was minted", { cluster, credentialExpires: new Date(minted.expiresAtMs).toISOString() });
      closeWith(cluster, revokedError(cluster, await identities.read(cluster)));
      return { credential: minted.credential, expiresAtMs: minted.expiresAtMs };
    },
    identities,
    refusals: () => lastRefusal,
  };
}
