/**
 * Discovery streams (Relay.PushDiscovery; README "Protocol flow" 2): each agent pushes a full snapshot
 * on every (re)connect, then deltas. An update arrives as chunks (assembled by wire.ts's bounded
 * assembler), is applied to the cluster's last accepted state, and is acknowledged — or answered with
 * `resync: true` when its base version or the checksum after it differs, or no full snapshot came yet;
 * deltas are then ignored until a full snapshot arrives. The stream stops reading while
 * PUSH_QUEUE_LIMIT updates wait to be handled or while acks cannot be flushed.
 *
 * State: the last accepted discovery state per cluster (kept after disconnects), and the open push
 * streams (stream-sessions.ts).
 */
import * as grpc from "@grpc/grpc-js";
import { describeError, type Logger } from "../core/index.js";
import { REJECTION_REASONS, RELAY_DEFAULTS } from "./constants.js";
import { RelayRejectedError } from "./errors.js";
import type { DiscoveryAck, DiscoveryUpdate } from "./gen/gitmesh/relay/v1/relay.js";
import type { RelayMetrics } from "./metrics.js";
import type { Admission } from "./admission.js";
import type { PeerGate } from "./peer-gate.js";
import { assertDecoded, checkNamedCluster, malformedMessage, wireRejection, type Malformed, type Refusals, type RequestFields } from "./refusals.js";
import { closeWhenStreamEnds, createStreamSessions, type StreamKind, type StreamSession, type StreamSessions } from "./stream-sessions.js";
import type { RelayHandlers } from "./transport.js";
import { applyStateDelta, createChunkAssembler, stateChecksum, type RelayState, type StateDelta } from "./wire.js";

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

/** A cluster's last accepted discovery state. */
export interface DiscoveryStateEntry {
  readonly version: number;
  readonly checksum: string;
  readonly state: RelayState;
}

export interface DiscoveryStreamsOptions {
  readonly gate: Pick<PeerGate, "acceptStream">;
  readonly refusals: Pick<Refusals, "endStream">;
  readonly metrics: Pick<RelayMetrics, "pushConnected" | "warmed" | "streamBytes" | "resyncs" | "discoveryUpdates">;
  readonly logger: Logger;
  /** Most one chunk may decompress to: the gRPC max message size (default 4 MiB). */
  readonly maxMessageBytes?: number;
  /** Largest assembled update (default 256 MiB). */
  readonly maxStateBytes?: number;
  /** Largest decompressed/compressed ratio of one update once it exceeds 1 MiB (default 200). */
  readonly maxCompressionRatio?: number;
  /** Largest discovery state (keys + values, decompressed) one cluster may hold (default 64 MiB). */
  readonly maxDiscoveryBytes?: number;
  /** Stores an accepted update; when it throws, the agent is asked to resend (resync). */
  readonly onDiscovery?: ((event: DiscoveryEvent) => void | Promise<void>) | undefined;
  readonly onConnect?: ((cluster: string, stream: StreamKind) => void) | undefined;
  readonly onDisconnect?: ((cluster: string, stream: StreamKind) => void) | undefined;
  /** Bounded admission of (re)connecting agents (admission.ts); absent: every stream is admitted. */
  readonly admission?: Admission;
}

interface PushSession extends StreamSession {
  /** Deltas are ignored (answered with resync) until a full snapshot is accepted. */
  awaitingFull: boolean;
  /** A full snapshot was accepted on this stream. */
  warmed: boolean;
  readonly stopExpiry: () => void;
}

export interface DiscoveryStreams extends Pick<RelayHandlers, "pushDiscovery"> {
  /** The last accepted discovery state of a cluster (kept after disconnects). */
  readonly state: (cluster: string) => DiscoveryStateEntry | undefined;
  /** The open push streams (`warmed`: a full snapshot was accepted on it). */
  readonly sessions: Pick<StreamSessions<StreamSession & { readonly warmed: boolean }>, "get" | "clusters" | "all">;
}

/** Discovery updates (chunks) read ahead of handling before the server stops reading a push stream. */
export const PUSH_QUEUE_LIMIT = 8;

/** What an assembled update does to the cluster's state: a new state to accept, or a resync to ask for (and why). */
export type DiscoveryDecision = { readonly accept: DiscoveryStateEntry; readonly resync?: undefined } | { readonly resync: string; readonly accept?: undefined };

/**
 * Applies an assembled update to the cluster's last accepted state (pure). A broken protocol (a full
 * update removing keys, a full snapshot whose checksum does not match) or a state above
 * `maxDiscoveryBytes` throws a refusal; a delta that does not fit asks for a resync.
 */
export function decideDiscoveryUpdate(input: {
  readonly cluster: string;
  readonly update: Pick<DiscoveryUpdate, "version" | "full" | "baseVersion" | "checksum">;
  readonly delta: StateDelta;
  readonly prev: DiscoveryStateEntry | undefined;
  readonly awaitingFull: boolean;
  readonly maxDiscoveryBytes: number;
}): DiscoveryDecision {
  const { update, delta, prev } = input;
  let state: RelayState;
  if (update.full) {
    if (delta.removed.length > 0) throw malformedMessage("DiscoveryUpdate", "a full update cannot remove keys");
    state = new Map(delta.upserts);
  } else {
    if (input.awaitingFull || !prev) return { resync: "a full snapshot is required first" };
    if (update.baseVersion !== prev.version) return { resync: `delta is based on version ${update.baseVersion} but the server has version ${prev.version}` };
    state = applyStateDelta(prev.state, delta);
  }
  let size = 0;
  for (const [k, v] of state) size += k.length + v.length;
  if (size > input.maxDiscoveryBytes) {
    throw new RelayRejectedError(
      REJECTION_REASONS.messageTooLarge,
      grpc.status.RESOURCE_EXHAUSTED,
      `the discovery state of cluster "${input.cluster}" would be ${size} bytes decompressed, above the server's limit of ${input.maxDiscoveryBytes} bytes per cluster (maxDiscoveryBytes); narrow the agent's discovery selectors, or raise the limit`,
    );
  }
  const checksum = stateChecksum(state);
  if (checksum === update.checksum) return { accept: { version: update.version, checksum, state } };
  if (update.full) {
    throw new RelayRejectedError(
      REJECTION_REASONS.checksumMismatch,
      grpc.status.INVALID_ARGUMENT,
      "the checksum of a full snapshot does not match its content; agent and server compute checksums differently (version skew?) — upgrade the agent to the server's protocol version",
    );
  }
  return { resync: `checksum mismatch after applying delta ${update.version} (agent ${update.checksum.slice(0, 12)}, server ${checksum.slice(0, 12)})` };
}

const sameHeader = (a: DiscoveryUpdate, b: DiscoveryUpdate) => a.version === b.version && a.full === b.full && a.checksum === b.checksum && a.baseVersion === b.baseVersion && a.cluster === b.cluster;

export function createDiscoveryStreams(options: DiscoveryStreamsOptions): DiscoveryStreams {
  const { metrics, logger: log } = options;
  const limits = {
    maxChunkBytes: options.maxMessageBytes ?? RELAY_DEFAULTS.maxMessageBytes,
    maxStateBytes: options.maxStateBytes ?? RELAY_DEFAULTS.maxStateBytes,
    maxRatio: options.maxCompressionRatio ?? RELAY_DEFAULTS.maxCompressionRatio,
    ratioFloorBytes: RELAY_DEFAULTS.ratioFloorBytes,
  };
  const maxDiscoveryBytes = options.maxDiscoveryBytes ?? RELAY_DEFAULTS.maxDiscoveryBytes;
  const discovery = new Map<string, DiscoveryStateEntry>();
  const sessions = createStreamSessions<PushSession>({ ...options, kind: "push", connected: metrics.pushConnected, release: (s) => s.stopExpiry() });

  /** Accepts an assembled update (or asks for a resync) and acknowledges it. */
  async function accept(s: PushSession, msg: DiscoveryUpdate, delta: StateDelta, ack: (a: DiscoveryAck) => void): Promise<void> {
    const prev = discovery.get(s.cluster);
    const resync = (why: string) => {
      s.awaitingFull = true;
      metrics.resyncs.inc({ direction: "push" });
      log.warn("asking agent for a full discovery resync", { cluster: s.cluster, version: msg.version, why });
      ack({ version: msg.version, resync: true, checksum: prev?.checksum ?? "", message: why });
    };
    const decision = decideDiscoveryUpdate({ cluster: s.cluster, update: msg, delta, prev, awaitingFull: s.awaitingFull, maxDiscoveryBytes });
    if (decision.resync !== undefined) return resync(decision.resync);
    const { state, checksum } = decision.accept;
    try {
      await options.onDiscovery?.({ cluster: s.cluster, version: msg.version, full: msg.full, checksum, state, delta: msg.full ? { upserts: state, removed: [] } : delta });
    } catch (err) {
      log.error("onDiscovery failed; asking the agent to resend", { cluster: s.cluster, error: describeError(err) });
      return resync("the server could not store the update");
    }
    discovery.set(s.cluster, decision.accept);
    s.awaitingFull = false;
    metrics.discoveryUpdates.inc({ kind: msg.full ? "full" : "delta" });
    if (msg.full && !s.warmed) {
      s.warmed = true;
      metrics.warmed.set({ cluster: s.cluster }, 1);
    }
    ack({ version: msg.version, resync: false, checksum, message: "" });
  }

  function pushDiscovery(call: grpc.ServerDuplexStream<DiscoveryUpdate | Malformed, DiscoveryAck>): void {
    const fields: RequestFields = { rpc: "PushDiscovery", peer: call.getPeer() };
    let session: PushSession | undefined;
    const queue: (DiscoveryUpdate | Malformed)[] = [];
    let draining = false;
    const assembler = createChunkAssembler<DiscoveryUpdate>(limits, sameHeader);

    const close = () => {
      if (session && sessions.close(session)) metrics.warmed.set({ cluster: session.cluster }, 0);
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
    const handle = async (msg: DiscoveryUpdate | Malformed, s: PushSession) => {
      assertDecoded(msg, "DiscoveryUpdate");
      checkNamedCluster(s.cluster, msg.cluster);
      metrics.streamBytes.inc({ direction: "received" }, msg.chunk?.payload.length ?? 0);
      let delta: StateDelta | undefined;
      try {
        delta = assembler.push(msg, msg.chunk);
      } catch (err) {
        throw wireRejection(err);
      }
      if (delta) await accept(s, msg, delta, ack);
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
        options.refusals.endStream(call, err, fields);
        close();
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
    options.gate.acceptStream(call, fields, ({ cluster, issuedAtMs, stopExpiry }) => {
      try {
        options.admission?.admit(cluster);
      } catch (err) {
        stopExpiry();
        options.refusals.endStream(call, err, fields);
        return;
      }
      session = { cluster, issuedAtMs, call, closed: false, awaitingFull: true, warmed: false, stopExpiry };
      sessions.open(session);
      metrics.warmed.set({ cluster }, 0);
      void drain();
    });
  }

  return { pushDiscovery, state: (cluster) => discovery.get(cluster), sessions };
}
