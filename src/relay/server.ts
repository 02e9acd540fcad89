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
import {
  type OutputAck,
  type OutputUpdate,
} from "./gen/gitmesh/relay/v1/relay.js";
import { createRelayMetrics } from "./metrics.js";
import { createPeerGate, isRevoked, revokedRejection } from "./peer-gate.js";
import type { RelayPki } from "./pki.js";
import { assertDecoded, checkNamedCluster, createRefusals, endWithStatus, type Malformed } from "./refusals.js";
import { createDiscoveryStreams, type DiscoveryEvent } from "./discovery-streams.js";
import { createIntermediateSigning } from "./intermediate-signing.js";
import { closeWhenStreamEnds, type StreamKind } from "./stream-sessions.js";
import { createRegistration } from "./registration.js";
import { createRelayTransport } from "./transport.js";
import { diffStates, encodeChunks, stateChecksum, type RelayState, type StateDelta } from "./wire.js";

export type { DiscoveryEvent } from "./discovery-streams.js";
export type { StreamKind } from "./stream-sessions.js";

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

export function createRelayServer(options: RelayServerOptions): RelayServer {
  const log = options.logger;
  const metrics = createRelayMetrics(options.registry);
  const now = options.now ?? Date.now;
  const maxMessageBytes = options.maxMessageBytes ?? RELAY_DEFAULTS.maxMessageBytes;
  const chunkBytes = Math.max(1024, Math.min(options.chunkBytes ?? RELAY_DEFAULTS.chunkBytes, Math.floor(maxMessageBytes * 0.9)));
  const sendBufferBytes = Math.max(1, options.sendBufferBytes ?? 2 * chunkBytes);
  const identities = options.identities ?? createClusterIdentities(createMemoryRecordStore(), { now });

  const pullSessions = new Map<string, PullSession>();
  const outputs = new Map<string, OutputSnapshot>();
  const applied = new Map<string, AppliedVersion>();
  let revalidateTimer: NodeJS.Timeout | undefined;

  const refusals = createRefusals({ logger: log, metrics, now });
  const refuse = refusals.refuse;
  const reject = (reason: RejectionReason, code: RelayRejectedError["grpcCode"], message: string) => new RelayRejectedError(reason, code, message);
  const gate = createPeerGate({ identities, isClusterRegistered: options.isClusterRegistered, refusals, logger: log });

  const registration = createRegistration({ ...options, identities, gate, refusals, metrics, logger: log });

  const intermediates = createIntermediateSigning({ ...options, gate, refusals, metrics, logger: log });

  const discovery = createDiscoveryStreams({ ...options, gate, refusals, metrics, logger: log });

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
        assertDecoded(msg, "OutputAck");
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
        refuse(err, fields, (se) => endWithStatus(call, se));
        close();
      }
    };
    call.on("data", (msg: OutputAck | Malformed) => {
      if (!session) early.push(msg);
      else if (!session.closed) handle(msg, session);
    });
    closeWhenStreamEnds(call, close);

    gate.acceptStream(call, fields, ({ cluster, issuedAtMs, stopExpiry }) => {
        const old = pullSessions.get(cluster);
        session = { cluster, issuedAtMs, call, closed: false, subscribed: false, sent: undefined, sentVersions: new Map(), pending: undefined, sending: false, buffered: 0, wakeups: [], stopExpiry };
        pullSessions.set(cluster, session);
        if (old) {
          old.closed = true;
          releasePull(old);
          endWithStatus(old.call, { code: grpc.status.ABORTED, details: "replaced by a newer output stream of the same cluster" });
        }
        metrics.pullConnected.set({ cluster }, 1);
        log.info("output stream opened", { cluster });
        options.onConnect?.(cluster, "pull");
        for (const m of early.splice(0)) if (!session.closed) handle(m, session);
    });
  }

  const closeAll = (cluster: string | undefined, code: grpc.status, details: string) => {
    for (const s of [...discovery.sessions.all(), ...pullSessions.values()]) {
      if (cluster !== undefined && s.cluster !== cluster) continue;
      endWithStatus(s.call, { code, details });
    }
  };
  /** Ends the streams of `cluster` (those whose certificate `which` selects) with a logged, counted rejection. */
  const closeWith = (cluster: string, err: RelayRejectedError, which: (s: { issuedAtMs: number }) => boolean = () => true) => {
    let closed = 0;
    for (const s of [...discovery.sessions.all(), ...pullSessions.values()]) {
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
    const clusters = new Set([...discovery.sessions.clusters(), ...pullSessions.keys()]);
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
    handlers: { register: registration.register, renew: registration.renew, signIntermediate: intermediates.signIntermediate, pushDiscovery: discovery.pushDiscovery, pullOutput },
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
    publishOutput(cluster, snapshot) {
      outputs.set(cluster, snapshot);
      const s = pullSessions.get(cluster);
      if (s?.subscribed && !s.closed) sendOutput(s, snapshot, false);
    },
    connectedClusters() {
      const names = new Set([...discovery.sessions.clusters(), ...pullSessions.keys()]);
      return [...names].sort().map((cluster) => ({
        cluster,
        push: discovery.sessions.get(cluster) !== undefined,
        pull: pullSessions.has(cluster),
        warmed: discovery.sessions.get(cluster)?.warmed ?? false,
      }));
    },
    appliedVersions: () => applied,
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
