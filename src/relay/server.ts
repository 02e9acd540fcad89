/**
 * The relay server (management side, port 9900).
 */
import * as grpc from "@grpc/grpc-js";
import type { Registry } from "prom-client";
import { describeError, type Logger } from "../core/index.js";
import type { SignIntermediateFn } from "../pki/index.js";
import { REJECTION_REASONS, RELAY_DEFAULTS, type RejectionReason } from "./constants.js";
import { RelayRejectedError } from "./errors.js";
import { createClusterIdentities, createMemoryRecordStore, type ClusterIdentities } from "./identity.js";
import { createRelayMetrics } from "./metrics.js";
import { createPeerGate, isRevoked, revokedRejection } from "./peer-gate.js";
import type { RelayPki } from "./pki.js";
import { createRefusals, endWithStatus } from "./refusals.js";
import { createDiscoveryStreams, type DiscoveryEvent } from "./discovery-streams.js";
import { createIntermediateSigning } from "./intermediate-signing.js";
import { createOutputDelivery, type AppliedVersion, type DriftRepairEvent, type OutputAckEvent, type OutputNackEvent, type OutputSnapshot } from "./output-delivery.js";
import type { StreamKind } from "./stream-sessions.js";
import { createRegistration } from "./registration.js";
import { createRelayTransport } from "./transport.js";
import type { RelayState } from "./wire.js";

export type { DiscoveryEvent } from "./discovery-streams.js";
export type { StreamKind } from "./stream-sessions.js";

export { DRIFT_LIMITS, type AppliedVersion, type DriftRepairEvent, type OutputAckEvent, type OutputNackEvent, type OutputSnapshot } from "./output-delivery.js";

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

export function createRelayServer(options: RelayServerOptions): RelayServer {
  const log = options.logger;
  const metrics = createRelayMetrics(options.registry);
  const now = options.now ?? Date.now;
  const identities = options.identities ?? createClusterIdentities(createMemoryRecordStore(), { now });

  let revalidateTimer: NodeJS.Timeout | undefined;

  const refusals = createRefusals({ logger: log, metrics, now });
  const refuse = refusals.refuse;
  const reject = (reason: RejectionReason, code: RelayRejectedError["grpcCode"], message: string) => new RelayRejectedError(reason, code, message);
  const gate = createPeerGate({ identities, isClusterRegistered: options.isClusterRegistered, refusals, logger: log });

  const registration = createRegistration({ ...options, identities, gate, refusals, metrics, logger: log });

  const intermediates = createIntermediateSigning({ ...options, gate, refusals, metrics, logger: log });

  const discovery = createDiscoveryStreams({ ...options, gate, refusals, metrics, logger: log });

  const output = createOutputDelivery({ ...options, gate, refusals, metrics, logger: log });

  const closeAll = (cluster: string | undefined, code: grpc.status, details: string) => {
    for (const s of [...discovery.sessions.all(), ...output.sessions.all()]) {
      if (cluster !== undefined && s.cluster !== cluster) continue;
      endWithStatus(s.call, { code, details });
    }
  };
  /** Ends the streams of `cluster` (those whose certificate `which` selects) with a logged, counted rejection. */
  const closeWith = (cluster: string, err: RelayRejectedError, which: (s: { issuedAtMs: number }) => boolean = () => true) => {
    let closed = 0;
    for (const s of [...discovery.sessions.all(), ...output.sessions.all()]) {
      if (s.cluster !== cluster || !which(s)) continue;
      closed++;
      refuse(err, { rpc: "stream", cluster }, (se) => endWithStatus(s.call, se));
    }
    return closed;
  };

  /**
   * Revocations and deregistrations decided elsewhere (another replica's re-issue, an operator's revoke,
   * the cluster leaving this replica's desired state) end the streams they concern here too.
   */
  async function revalidate(): Promise<void> {
    const clusters = new Set([...discovery.sessions.clusters(), ...output.sessions.clusters()]);
    if (clusters.size === 0) return;
    const records = await identities.list();
    gate.remember(records);
    for (const cluster of clusters) {
      const r = records.get(cluster);
      if (r) closeWith(cluster, revokedRejection(cluster, r), (s) => isRevoked(r, s.issuedAtMs));
      if (!(await options.isClusterRegistered(cluster))) {
        closeWith(cluster, reject(REJECTION_REASONS.clusterNotRegistered, grpc.status.PERMISSION_DENIED, `cluster "${cluster}" is no longer registered (no KubernetesCluster in the desired state); it reconnects on its own once restored`));
      }
    }
  }

  const transport = createRelayTransport({
    ...options,
    handlers: { register: registration.register, renew: registration.renew, signIntermediate: intermediates.signIntermediate, pushDiscovery: discovery.pushDiscovery, pullOutput: output.pullOutput },
    refusals,
    logger: log,
    describe: { identities: identities.describe, fleetToken: options.token !== undefined },
  });

  return {
    get port() {
      return transport.port;
    },
    async start() {
      const port = await transport.start();
      const every = options.revalidateIntervalMs ?? RELAY_DEFAULTS.revalidateIntervalMs;
      revalidateTimer = setInterval(() => {
        revalidate().catch((err: unknown) => log.warn("could not re-check open streams against the identity store", { store: identities.describe, error: describeError(err) }));
      }, every);
      revalidateTimer.unref();
      return port;
    },
    async stop() {
      if (!transport.serving) return;
      clearInterval(revalidateTimer);
      closeAll(undefined, grpc.status.UNAVAILABLE, "the relay server is shutting down; reconnect");
      await transport.stop();
    },
    publishOutput: output.publish,
    connectedClusters() {
      const names = new Set([...discovery.sessions.clusters(), ...output.sessions.clusters()]);
      return [...names].sort().map((cluster) => ({
        cluster,
        push: discovery.sessions.get(cluster) !== undefined,
        pull: output.sessions.get(cluster) !== undefined,
        warmed: discovery.sessions.get(cluster)?.warmed ?? false,
      }));
    },
    appliedVersions: output.applied,
    discoveryState: (cluster) => discovery.state(cluster),
    disconnect(cluster, message) {
      log.info("closing a cluster's streams (not revoked)", { cluster, why: message });
      closeWith(cluster, reject(REJECTION_REASONS.clusterNotRegistered, grpc.status.PERMISSION_DENIED, message));
    },
    async revoke(cluster, reason) {
      closeWith(cluster, await registration.revoke(cluster, reason));
    },
    async reissue(cluster, opts = {}) {
      const { rejection, ...minted } = await registration.reissue(cluster, opts);
      closeWith(cluster, rejection);
      return minted;
    },
    identities,
    refusals: () => refusals.last(),
  };
}
