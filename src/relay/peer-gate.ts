/**
 * Who is calling, and may they be served. The cluster of an mTLS call comes from its verified peer
 * certificate only (subject CN = URI SAN spiffe://gitmesh/cluster/<name>), never from metadata or a
 * message field. A certificate issued at or before the cluster's last revocation is refused, and so is
 * a cluster with no KubernetesCluster in the desired state. An accepted stream is ended when its
 * certificate's notAfter passes (TLS checks validity only at the handshake).
 *
 * State: the last identity record this replica saw per cluster. When the store cannot be read (Redis
 * down), certificates are checked against it (none: nothing known revoked), so a connected fleet keeps
 * working; registration, which must consume a credential atomically, fails instead (registration.ts).
 */
import type { PeerCertificate } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { describeError, type Logger } from "../core/index.js";
import { REJECTION_REASONS } from "./constants.js";
import { RelayRejectedError } from "./errors.js";
import type { ClusterIdentities, ClusterIdentityRecord } from "./identity.js";
import { clusterOfPeerCertificate } from "./pki.js";
import type { EndableCall, Refusals, RequestFields } from "./refusals.js";

/** A caller identified by its client certificate. */
export interface PeerIdentity {
  readonly cluster: string;
  /** Issue time of the certificate (ms, from its serial number): what revocation compares. */
  readonly issuedAtMs: number;
  readonly notAfterMs: number;
}

/** An accepted stream's peer, with the timer that ends the stream at its certificate's expiry. */
export interface AcceptedPeer {
  readonly cluster: string;
  readonly issuedAtMs: number;
  /** Cancels the close-at-certificate-expiry timer (call it when the stream ends). */
  readonly stopExpiry: () => void;
}

/** A call whose TLS peer certificate can be read (unary or stream). */
export interface AuthenticatedCall {
  getAuthContext(): { sslPeerCertificate?: PeerCertificate };
}

export interface PeerGateOptions {
  /** Identity records: revocations, and the live identity a presented certificate is recorded as. */
  readonly identities: ClusterIdentities;
  /** Whether a cluster may connect: a KubernetesCluster of that name exists in the desired state. */
  readonly isClusterRegistered: (cluster: string) => boolean | Promise<boolean>;
  readonly refusals: Pick<Refusals, "endStream" | "forget">;
  readonly logger: Logger;
}

export interface PeerGate {
  /** The caller's identity from its verified peer certificate (sets `fields.cluster`); refuses a missing, foreign, revoked or unregistered one. */
  readonly identify: (call: AuthenticatedCall, fields: RequestFields) => Promise<PeerIdentity>;
  /** Refuses an unregistered cluster and, given a certificate's issue time, a revoked certificate. */
  readonly checkAllowed: (cluster: string, issuedAtMs?: number) => Promise<void>;
  /**
   * Accepts a stream: identifies its peer and hands it to `open` with an expiry timer armed (not if the
   * call was cancelled meanwhile); a refused stream is ended with its status.
   */
  readonly acceptStream: (call: AuthenticatedCall & EndableCall & { readonly cancelled: boolean }, fields: RequestFields, open: (peer: AcceptedPeer) => void) => void;
  /** Records read elsewhere (a revalidation's list) become the last seen. */
  readonly remember: (records: ReadonlyMap<string, ClusterIdentityRecord>) => void;
}

/** Whether a certificate issued at `issuedAtMs` is revoked by the record. */
export const isRevoked = (r: ClusterIdentityRecord, issuedAtMs: number): boolean => r.revokedBeforeMs !== undefined && issuedAtMs <= r.revokedBeforeMs;

/** The refusal of a revoked certificate: says when, why, and how the agent gets a new identity. */
export function revokedRejection(cluster: string, r: ClusterIdentityRecord): RelayRejectedError {
  return new RelayRejectedError(
    REJECTION_REASONS.certificateRevoked,
    grpc.status.PERMISSION_DENIED,
    `the client certificate of cluster "${cluster}" was revoked${r.revocation ? ` at ${new Date(r.revocation.atMs).toISOString()} (${r.revocation.reason})` : ""}; the agent registers again with the new bootstrap credential of \`gitmesh cluster reissue ${cluster}\` (secret relay-identity-token-secret in its namespace)`,
  );
}

const NO_CERTIFICATE =
  "no valid client certificate: it is missing, expired or not yet valid, or not issued by this server's signing CA (relay-tls-signing-secret); re-register the agent with the bootstrap token to get a new certificate";
const NO_IDENTITY =
  "the client certificate carries no valid cluster identity (subject CN and URI SAN spiffe://gitmesh/cluster/<name> must name the same cluster); use the certificate issued at registration";

export function createPeerGate(options: PeerGateOptions): PeerGate {
  const { identities, logger: log } = options;
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

  async function checkAllowed(cluster: string, issuedAtMs?: number): Promise<void> {
    if (issuedAtMs !== undefined) {
      const r = await recordFor(cluster);
      if (isRevoked(r, issuedAtMs)) throw revokedRejection(cluster, r);
    }
    if (!(await options.isClusterRegistered(cluster))) {
      throw new RelayRejectedError(
        REJECTION_REASONS.clusterNotRegistered,
        grpc.status.PERMISSION_DENIED,
        `cluster "${cluster}" is not registered: add a KubernetesCluster named "${cluster}" in the admin namespace of the configuration repository (e.g. clusters/${cluster}.yaml), or fix relay.cluster in the agent's values; an agent whose cluster is restored in Git reconnects on its own with its certificate`,
      );
    }
  }

  async function identify(call: AuthenticatedCall, fields: RequestFields): Promise<PeerIdentity> {
    const peer = call.getAuthContext().sslPeerCertificate;
    if (!peer) throw new RelayRejectedError(REJECTION_REASONS.clientCertificateInvalid, grpc.status.UNAUTHENTICATED, NO_CERTIFICATE);
    const id = clusterOfPeerCertificate(peer);
    if (!id) throw new RelayRejectedError(REJECTION_REASONS.clientCertificateInvalid, grpc.status.UNAUTHENTICATED, NO_IDENTITY);
    fields.cluster = id.cluster;
    await checkAllowed(id.cluster, id.issuedAtMs);
    const notAfterMs = Date.parse(peer.valid_to);
    const known = seen.get(id.cluster)?.issued;
    if (!known || known.issuedAtMs < id.issuedAtMs) {
      // A certificate the store never recorded (issued before it existed, or the store was lost) becomes the live identity.
      await identities.observeCertificate(id.cluster, id.issuedAtMs, notAfterMs).catch((err: unknown) => log.debug("could not record the presented certificate as the live identity", { cluster: id.cluster, error: describeError(err) }));
    }
    return { cluster: id.cluster, notAfterMs, issuedAtMs: id.issuedAtMs };
  }

  /** Ends the stream when its certificate expires (UNAUTHENTICATED). Uses the real clock, as TLS does. */
  function closeAtExpiry(notAfterMs: number, fields: RequestFields, call: EndableCall): () => void {
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
      const err = new RelayRejectedError(
        REJECTION_REASONS.certificateExpired,
        grpc.status.UNAUTHENTICATED,
        `the client certificate expired at ${new Date(notAfterMs).toISOString()}; the agent renews it before expiry and reconnects with the new one — if it did not, check the agent's clock and its renewal errors, or re-register it with the bootstrap token`,
      );
      options.refusals.endStream(call, err, fields);
    };
    arm();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  return {
    identify,
    checkAllowed,
    acceptStream: (call, fields, open) => {
      identify(call, fields).then(
        ({ cluster, notAfterMs, issuedAtMs }) => {
          if (call.cancelled) return;
          options.refusals.forget(cluster);
          open({ cluster, issuedAtMs, stopExpiry: closeAtExpiry(notAfterMs, fields, call) });
        },
        (err: unknown) => options.refusals.endStream(call, err, fields),
      );
    },
    remember: (records) => {
      for (const [c, r] of records) seen.set(c, r);
    },
  };
}
