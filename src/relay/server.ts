/**
 * The relay server (management side, port 9900): the composition root of the relay's parts.
 *
 *   agent ──TLS :9900──▶ transport.ts (gRPC listener: TLS without a required client cert, tolerant decoding, size guard)
 *                          │  every mTLS call: peer-gate.ts (cluster from the peer certificate; revoked/unregistered refused; closed at expiry)
 *                          │  every refusal:   refusals.ts  (logged, counted, last per cluster, one gRPC status)
 *                          ├─ Register, Renew ─────▶ registration.ts         ◀─ revoke / reissue (operator)
 *                          ├─ PushDiscovery ──────▶ discovery-streams.ts    ─▶ onDiscovery, discoveryState()
 *                          ├─ PullOutput ─────────▶ output-delivery.ts      ◀─ publishOutput; ─▶ onAck/onNack, appliedVersions()
 *                          └─ SignIntermediate ───▶ intermediate-signing.ts ─▶ signIntermediate (src/mesh-ca)
 *   stream-supervisor.ts: ends the open streams (of discovery and output) on revoke, disconnect, shutdown,
 *   and re-checks them every revalidateIntervalMs against the shared identity store.
 *
 * Each part keeps its own state; this file only wires them. README.md tells the protocol.
 */
import * as grpc from "@grpc/grpc-js";
import type { Registry } from "prom-client";
import type { Logger } from "../core/index.js";
import type { SignIntermediateFn } from "../pki/index.js";
import { REJECTION_REASONS } from "./constants.js";
import { createDiscoveryStreams, type DiscoveryEvent } from "./discovery-streams.js";
import { RelayRejectedError } from "./errors.js";
import { createAdmission } from "./admission.js";
import { createClusterIdentities, createMemoryRecordStore, type ClusterIdentities } from "./identity.js";
import { createIntermediateSigning } from "./intermediate-signing.js";
import { createRelayMetrics } from "./metrics.js";
import { createOutputDelivery, type AppliedVersion, type DriftRepairEvent, type OutputAckEvent, type OutputHold, type OutputNackEvent, type OutputSnapshot } from "./output-delivery.js";
import { createPeerGate } from "./peer-gate.js";
import type { RelayPki } from "./pki.js";
import { createRefusals } from "./refusals.js";
import { createRegistration } from "./registration.js";
import type { StreamKind } from "./stream-sessions.js";
import { createStreamSupervisor } from "./stream-supervisor.js";
import { createRelayTransport } from "./transport.js";
import type { RelayState } from "./wire.js";

export type { DiscoveryEvent } from "./discovery-streams.js";
export type { StreamKind } from "./stream-sessions.js";

export { DRIFT_LIMITS, type AppliedVersion, type DriftRepairEvent, type OutputAckEvent, type OutputHold, type OutputNackEvent, type OutputSnapshot } from "./output-delivery.js";

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
  /**
   * Whether the server holds a cluster (a suspension; default: none is). Asked when an agent subscribes
   * and after `holdsChanged()`; an agent that understands holds is told (README "Protocol flow" 2) and
   * then applies, prunes and repairs nothing until released.
   */
  readonly holdOf?: (cluster: string) => OutputHold | undefined;
  readonly onConnect?: (cluster: string, stream: StreamKind) => void;
  readonly onDisconnect?: (cluster: string, stream: StreamKind) => void;
  /**
   * Signs Istio intermediate CA CSRs (Relay.SignIntermediate) with the mesh root CA — src/mesh-ca
   * createMeshCa(...).signIntermediate. Without it SignIntermediate answers UNIMPLEMENTED.
   */
  readonly signIntermediate?: SignIntermediateFn;
  /**
   * (Re)connecting agents admitted per second — registrations and discovery streams — and the burst
   * (defaults 50/s, burst 100; ratePerSecond 0: no limit). The excess is answered RESOURCE_EXHAUSTED
   * with a retry hint the agents honour with jitter, so a reconnect storm cannot starve the server.
   */
  readonly admission?: { readonly ratePerSecond?: number; readonly burst?: number };
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
  /** Holds may have changed (`holdOf` answers differently): every subscribed agent is told what differs from what it was told. */
  holdsChanged(): void;
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

export function createRelayServer(options: RelayServerOptions): RelayServer {
  const logger = options.logger;
  const metrics = createRelayMetrics(options.registry);
  const identities = options.identities ?? createClusterIdentities(createMemoryRecordStore(), { now: options.now ?? Date.now });
  const refusals = createRefusals({ ...options, metrics });
  const gate = createPeerGate({ ...options, identities, refusals });
  const admission = createAdmission({ ...options.admission, ...(options.now ? { now: options.now } : {}) });
  const parts = { ...options, identities, gate, refusals, metrics, admission };

  const registration = createRegistration(parts);
  const discovery = createDiscoveryStreams(parts);
  const output = createOutputDelivery(parts);
  const intermediates = createIntermediateSigning(parts);
  const supervisor = createStreamSupervisor({ ...parts, streams: [discovery, output] });
  const transport = createRelayTransport({
    ...parts,
    handlers: { register: registration.register, renew: registration.renew, pushDiscovery: discovery.pushDiscovery, pullOutput: output.pullOutput, signIntermediate: intermediates.signIntermediate },
    describe: { identities: identities.describe, fleetToken: options.token !== undefined },
  });

  return {
    get port() {
      return transport.port;
    },
    async start() {
      const port = await transport.start();
      supervisor.start();
      return port;
    },
    async stop() {
      if (!transport.serving) return;
      supervisor.stop();
      supervisor.closeAll(grpc.status.UNAVAILABLE, "the relay server is shutting down; reconnect");
      await transport.stop();
    },
    publishOutput: output.publish,
    holdsChanged: output.holdsChanged,
    connectedClusters: () =>
      [...new Set([...discovery.sessions.clusters(), ...output.sessions.clusters()])].sort().map((cluster) => ({
        cluster,
        push: discovery.sessions.get(cluster) !== undefined,
        pull: output.sessions.get(cluster) !== undefined,
        warmed: discovery.sessions.get(cluster)?.warmed ?? false,
      })),
    appliedVersions: output.applied,
    discoveryState: discovery.state,
    disconnect(cluster, message) {
      logger.info("closing a cluster's streams (not revoked)", { cluster, why: message });
      supervisor.closeCluster(cluster, new RelayRejectedError(REJECTION_REASONS.clusterNotRegistered, grpc.status.PERMISSION_DENIED, message));
    },
    async revoke(cluster, reason) {
      supervisor.closeCluster(cluster, await registration.revoke(cluster, reason));
    },
    async reissue(cluster, opts = {}) {
      const { rejection, ...minted } = await registration.reissue(cluster, opts);
      supervisor.closeCluster(cluster, rejection);
      return minted;
    },
    identities,
    refusals: refusals.last,
  };
}
