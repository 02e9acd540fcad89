/**
 * Registration and client certificates: bootstrap registration (Registration.Register, simple TLS),
 * renewal (Relay.Renew, mTLS), the one-live-identity rule, revocation and re-issue. README "Protocol
 * flow" 1, 3 and 5.
 *
 * Register, in this order: the CSR is checked (before anything is consumed: a bad CSR never burns a
 * single-use credential); the credential — the single-use one bound to the cluster, or the opted-in
 * fleet token, compared in constant time — before anything about the cluster is told; the cluster must
 * be registered; then ONE compare-and-swap on the identity record refuses a cluster holding a live
 * identity, consumes the credential and records the new certificate, which is signed only then.
 *
 * State: none of its own — identity records live in the shared store (`identities`), so revocations
 * survive restarts and reach every replica.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { TransientError, type Logger } from "../core/index.js";
import { REJECTION_REASONS, RELAY_DEFAULTS } from "./constants.js";
import { RelayRejectedError } from "./errors.js";
import type { CertificateResponse, RegisterRequest, RenewRequest } from "./gen/gitmesh/relay/v1/relay.js";
import { credentialMatches, type ClusterIdentities } from "./identity.js";
import type { RelayMetrics } from "./metrics.js";
import { revokedRejection, type PeerGate } from "./peer-gate.js";
import { checkClientCsr, InvalidCsrError, isValidClusterName, signClientCertificate, type CheckedCsr, type RelayPki } from "./pki.js";
import { assertDecoded, checkNamedCluster, type Malformed, type Refusals } from "./refusals.js";
import type { RelayHandlers } from "./transport.js";
import type { Admission } from "./admission.js";

export interface RegistrationOptions {
  /** The signing CA (client certificates) and the root CA sent back to the agent. */
  readonly pki: Pick<RelayPki, "signingCaCertPem" | "signingCaKeyPem" | "rootCaCertPem">;
  /** Credentials, live identities and revocations (the store shared by every replica). */
  readonly identities: ClusterIdentities;
  /**
   * Opt-in fleet-wide bootstrap token, or a function returning the current one. Absent or "": only
   * per-cluster credentials register. Either way a cluster holding a live certificate is not re-registered.
   */
  readonly token?: string | (() => string) | undefined;
  /** Lifetime of issued client certificates (default 30 days). */
  readonly certificateLifetimeMs?: number;
  readonly gate: Pick<PeerGate, "identify" | "checkAllowed">;
  readonly refusals: Pick<Refusals, "unary">;
  readonly metrics: Pick<RelayMetrics, "certificatesIssued">;
  readonly logger: Logger;
  /** Clock for credential expiry (default Date.now). */
  readonly now?: () => number;
  /** Bounded admission of (re)connecting agents (admission.ts); absent: every registration is admitted. */
  readonly admission?: Admission;
}

export interface Registration extends Pick<RelayHandlers, "register" | "renew"> {
  /** Revokes every certificate of the cluster issued so far; resolves with the refusal its open streams are to be closed with. */
  readonly revoke: (cluster: string, reason: string) => Promise<RelayRejectedError>;
  /** Revokes like `revoke` and mints a fresh single-use credential (an operator's re-issue). */
  readonly reissue: (cluster: string, options?: { readonly ttlMs?: number }) => Promise<{ credential: string; expiresAtMs: number; rejection: RelayRejectedError }>;
}

const digest = (s: string) => createHash("sha256").update(s, "utf8").digest();

/** Checks a CSR (PEM, RSA ≥ 2048 bits, self-signature); a bad one is the caller's mistake (INVALID_ARGUMENT). */
function checkCsr<T>(sign: () => T): T {
  try {
    return sign();
  } catch (err) {
    if (err instanceof InvalidCsrError) {
      throw new RelayRejectedError(REJECTION_REASONS.invalidRequest, grpc.status.INVALID_ARGUMENT, `${err.message}; send a PEM PKCS#10 CSR signed with an RSA key of at least 2048 bits`);
    }
    throw err;
  }
}

const badCredential = (cluster: string) =>
  new RelayRejectedError(
    REJECTION_REASONS.badToken,
    grpc.status.UNAUTHENTICATED,
    `the bootstrap credential is not valid for cluster "${cluster}" (unknown, already used, expired, or minted for another cluster); mint a new one with \`gitmesh cluster register ${cluster}\` (or \`gitmesh cluster reissue ${cluster}\` if the cluster was registered before), which writes it to secret relay-identity-token-secret in the agent's namespace`,
  );

const identityInUse = (cluster: string, notAfterMs: number | undefined) =>
  new RelayRejectedError(
    REJECTION_REASONS.identityInUse,
    grpc.status.PERMISSION_DENIED,
    `cluster "${cluster}" already holds a valid client certificate (until ${notAfterMs === undefined ? "?" : new Date(notAfterMs).toISOString()}); one live identity per cluster: its agent renews with that certificate, and a new registration needs an explicit re-issue by an operator (\`gitmesh cluster reissue ${cluster}\` or POST /api/clusters/${cluster}/reissue), which revokes the current certificate`,
  );

export function createRegistration(options: RegistrationOptions): Registration {
  const { identities, gate, logger: log } = options;
  const now = options.now ?? Date.now;
  const lifetimeMs = options.certificateLifetimeMs ?? RELAY_DEFAULTS.certificateLifetimeMs;
  const signingCa = { certPem: options.pki.signingCaCertPem, keyPem: options.pki.signingCaKeyPem };

  /** Signs a client certificate whose issue time (ms, in the serial number) was recorded in the identity store. */
  function issue(cluster: string, csrPem: string, checked: CheckedCsr, kind: "register" | "renew", issuedAt: number): CertificateResponse {
    const { certPem, notAfterMs } = signClientCertificate(signingCa, { cluster, csrPem, checked, lifetimeMs, now: issuedAt });
    options.metrics.certificatesIssued.inc({ kind });
    log.info(kind === "register" ? "registered cluster" : "renewed client certificate", { cluster, notAfter: new Date(notAfterMs).toISOString() });
    return { certificatePem: certPem, caPem: options.pki.rootCaCertPem, notAfterMs };
  }

  const fleetTokenMatches = (given: string): boolean => {
    const expected = (typeof options.token === "function" ? options.token() : options.token) ?? "";
    // Equal-length digests, compared in constant time: neither the token nor its length leaks.
    return expected.length > 0 && given.length > 0 && timingSafeEqual(digest(given), digest(expected));
  };

  const unreachable = (err: unknown): never => {
    throw new TransientError(`cannot register now: the identity store (${identities.describe}) is unreachable; the agent retries`, { cause: err });
  };

  async function register(req: RegisterRequest | Malformed, fields: Record<string, unknown>): Promise<CertificateResponse> {
    assertDecoded(req, "RegisterRequest");
    const cluster = req.cluster;
    fields.cluster = cluster;
    if (!isValidClusterName(cluster)) {
      throw new RelayRejectedError(REJECTION_REASONS.invalidRequest, grpc.status.INVALID_ARGUMENT, `cluster name ${JSON.stringify(cluster)} is not a valid KubernetesCluster name (lowercase DNS-1123 subdomain); fix relay.cluster`);
    }
    options.admission?.admit(cluster);
    const checked = checkCsr(() => checkClientCsr(req.csrPem));
    // Tolerate the newline a token file or `kubectl create secret --from-file` leaves behind.
    const presented = req.token.trim();
    const fleet = fleetTokenMatches(presented);
    // The credential first (read-only), so that nothing about the cluster is told to a caller without one.
    if (!fleet && !credentialMatches(await identities.read(cluster).catch(unreachable), presented, now())) throw badCredential(cluster);
    await gate.checkAllowed(cluster);
    const decision = await identities.register(cluster, presented, fleet, lifetimeMs).catch(unreachable);
    if (!decision.ok) throw decision.why === "bad_credential" ? badCredential(cluster) : identityInUse(cluster, decision.record.issued?.notAfterMs);
    return issue(cluster, req.csrPem, checked, "register", decision.issuedAtMs);
  }

  return {
    register: options.refusals.unary("Register", (call, fields) => register(call.request, fields)),
    renew: options.refusals.unary("Renew", async (call: grpc.ServerUnaryCall<RenewRequest | Malformed, CertificateResponse>, fields) => {
      const { cluster } = await gate.identify(call, fields);
      const req = call.request;
      assertDecoded(req, "RenewRequest");
      checkNamedCluster(cluster, req.cluster);
      const checked = checkCsr(() => checkClientCsr(req.csrPem));
      return issue(cluster, req.csrPem, checked, "renew", await identities.recordRenewal(cluster, lifetimeMs));
    }),
    async revoke(cluster, reason) {
      const before = await identities.revoke(cluster, reason);
      log.warn("revoked the certificates of a cluster", { cluster, reason, issuedUpTo: new Date(before).toISOString() });
      return revokedRejection(cluster, await identities.read(cluster));
    },
    async reissue(cluster, opts = {}) {
      const minted = await identities.mintCredential(cluster, { reissue: true, reason: "re-issued by an operator", ...(opts.ttlMs === undefined ? {} : { ttlMs: opts.ttlMs }) });
      log.warn("re-issued a cluster's identity: its certificates are revoked and a new bootstrap credential was minted", { cluster, credentialExpires: new Date(minted.expiresAtMs).toISOString() });
      return { credential: minted.credential, expiresAtMs: minted.expiresAtMs, rejection: revokedRejection(cluster, await identities.read(cluster)) };
    },
  };
}
