/**
 * Output delivery (Relay.PullOutput; README "Protocol flow" 2): versioned output snapshots per cluster,
 * sent to the cluster's agent in full on subscribe (or when it asks for a resync) and as deltas against
 * what its stream was sent otherwise; the agent ACKs or NACKs each version, and the last ACKed version
 * per cluster is kept (`applied`). On the same stream the agent reports drift repairs (bounded:
 * DRIFT_LIMITS).
 *
 * Holds (suspensions, issue #38): `holdOf(cluster)` says whether the server holds a cluster. An agent that
 * subscribed with `acceptsHold` is told the hold (held or not) on subscribe, before any output, and again
 * after `holdsChanged()` whenever what it was last told differs; while held it applies, prunes and repairs
 * nothing. An older agent is never sent one (it would take a chunkless update for a malformed one).
 *
 * A slow agent costs at most one encoded update plus `sendBufferBytes` per stream: each stream's sender
 * writes chunk by chunk, waits for gRPC to flush, and a version still waiting to be sent is replaced by a
 * newer publication (the agent then gets a delta to the newest).
 *
 * State: the latest snapshot and the last ACKed version per cluster, and the open pull streams with
 * their senders.
 */
import type * as grpc from "@grpc/grpc-js";
import type { Logger } from "../core/index.js";
import { RELAY_DEFAULTS } from "./constants.js";
import type { Hold, OutputAck, OutputUpdate } from "./gen/gitmesh/relay/v1/relay.js";
import type { RelayMetrics } from "./metrics.js";
import type { PeerGate } from "./peer-gate.js";
import { assertDecoded, checkNamedCluster, type Malformed, type Refusals, type RequestFields } from "./refusals.js";
import { closeWhenStreamEnds, createStreamSessions, type StreamKind, type StreamSession, type StreamSessions } from "./stream-sessions.js";
import type { RelayHandlers } from "./transport.js";
import { diffStates, encodeChunks, stateChecksum, type RelayState, type StateDelta } from "./wire.js";

/** The server's hold on a cluster (a suspension): while held its agent applies, prunes and repairs nothing. */
export interface OutputHold {
  readonly sinceMs: number;
  /** Who suspended: an API identity, or the commit whose gitmesh.yaml holds the freeze. */
  readonly by: string;
  readonly reason?: string;
  /** The one line every view prints ("suspended since … by …"). */
  readonly summary: string;
}

/** What a hold looks like on the wire (released: `held` false and nothing else). */
export function holdMessage(hold: OutputHold | undefined): Hold {
  return hold ? { held: true, sinceMs: hold.sinceMs, by: hold.by, reason: hold.reason ?? "", summary: hold.summary } : { held: false, sinceMs: 0, by: "", reason: "", summary: "" };
}

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
  /** `transient`: the agent's own word on whether the failure passes without a person (absent from older agents). */
  readonly errors: readonly { readonly key: string; readonly message: string; readonly transient?: boolean }[];
}

/** One owned object an agent found changed or deleted by someone else and put back. */
export interface DriftRepair {
  readonly key: string;
  readonly why: "changed" | "deleted";
  readonly atMs: number;
  readonly managers: readonly string[];
}

/** Owned objects an agent found changed or deleted by someone else and put back (bounded: see DRIFT_LIMITS). */
export interface DriftRepairEvent {
  readonly cluster: string;
  readonly repairs: readonly DriftRepair[];
}

/** What one drift report may carry: anything beyond is dropped (an agent cannot grow the server's memory). */
export const DRIFT_LIMITS = { repairs: 50, keyChars: 300, managers: 5, managerChars: 100 } as const;

/** A drift report as the server keeps it (pure): bounded by DRIFT_LIMITS, times not after `nowMs` (an unset or bad time is `nowMs`). */
export function boundDriftRepairs(repairs: OutputAck["repairs"], nowMs: number): DriftRepair[] {
  return repairs.slice(0, DRIFT_LIMITS.repairs).map((r) => ({
    key: r.key.slice(0, DRIFT_LIMITS.keyChars),
    why: r.why === "deleted" ? ("deleted" as const) : ("changed" as const),
    atMs: Number.isFinite(r.atMs) && r.atMs > 0 ? Math.min(r.atMs, nowMs) : nowMs,
    managers: r.managers.slice(0, DRIFT_LIMITS.managers).map((m) => m.slice(0, DRIFT_LIMITS.managerChars)),
  }));
}

export interface OutputDeliveryOptions {
  readonly gate: Pick<PeerGate, "acceptStream">;
  readonly refusals: Pick<Refusals, "endStream">;
  readonly metrics: Pick<RelayMetrics, "pullConnected" | "outputAcks" | "outputBuffered" | "outputCoalesced" | "resyncs" | "streamBytes">;
  readonly logger: Logger;
  /** gRPC max message size (default 4 MiB): chunks stay within 90 % of it. */
  readonly maxMessageBytes?: number;
  /** Raw bytes per chunk before gzip (default 1 MiB; at least 1 KiB, at most 90 % of maxMessageBytes). */
  readonly chunkBytes?: number;
  /** Compressed bytes handed to gRPC and not yet flushed, per stream (default 2 × chunkBytes; one chunk always goes through). */
  readonly sendBufferBytes?: number;
  readonly onAck?: ((event: OutputAckEvent) => void) | undefined;
  readonly onNack?: ((event: OutputNackEvent) => void) | undefined;
  readonly onDriftRepairs?: ((event: DriftRepairEvent) => void) | undefined;
  readonly onConnect?: ((cluster: string, stream: StreamKind) => void) | undefined;
  readonly onDisconnect?: ((cluster: string, stream: StreamKind) => void) | undefined;
  /** Whether the server holds a cluster (a suspension), asked on subscribe and by `holdsChanged` (default: none is). */
  readonly holdOf?: ((cluster: string) => OutputHold | undefined) | undefined;
  /** Clock for ACK times and drift report bounds (default Date.now). */
  readonly now?: () => number;
}

export interface OutputDelivery extends Pick<RelayHandlers, "pullOutput"> {
  /** Publishes a cluster's output: sent at once if its agent is subscribed (delta against what it has), else on its next connect (full). */
  readonly publish: (cluster: string, snapshot: OutputSnapshot) => void;
  /** The last version each cluster's agent ACKed, with its source commit. */
  readonly applied: () => ReadonlyMap<string, AppliedVersion>;
  /** Holds may have changed: asks `holdOf` again for every subscribed agent that understands holds and tells it what differs from what it was told. */
  readonly holdsChanged: () => void;
  /** The open pull streams. */
  readonly sessions: Pick<StreamSessions<StreamSession>, "get" | "clusters" | "all">;
}

/** How many sent versions a stream remembers for matching ACKs to their source commit. */
const SENT_VERSIONS_KEPT = 64;

/** One stream's sender: what it was sent (the base of the next delta) and the output waiting to go. */
interface OutputSender {
  /** Queues `snap`; a version still waiting is replaced (counted as coalesced). */
  send(snap: OutputSnapshot, forceFull: boolean): void;
  /** Writes a hold notice at once (not queued behind output: it may go between the chunks of an update). */
  hold(hold: Hold): void;
  /** The source commit of a version this stream sent (recent ones only). */
  sentCommit(version: number): string | undefined;
  /** Drops what waits and gives back the buffered bytes (the stream closed). */
  release(): void;
}

interface SenderSettings {
  readonly chunkBytes: number;
  readonly sendBufferBytes: number;
  readonly metrics: OutputDeliveryOptions["metrics"];
}

function createOutputSender(call: grpc.ServerDuplexStream<OutputAck | Malformed, OutputUpdate>, cluster: string, isOpen: () => boolean, settings: SenderSettings): OutputSender {
  const { metrics, chunkBytes, sendBufferBytes } = settings;
  let sent: { version: number; entries: RelayState } | undefined;
  const sentVersions = new Map<number, { sourceCommit: string }>();
  /** The next output to send (newer publications replace it: a slow agent gets the latest, not every version). */
  let pending: { snap: OutputSnapshot; forceFull: boolean } | undefined;
  let sending = false;
  /** Compressed bytes handed to gRPC and not yet flushed to the connection. */
  let buffered = 0;
  /** Woken when `buffered` shrinks or the stream closes. */
  const wakeups: (() => void)[] = [];
  const wake = () => {
    for (const w of wakeups.splice(0)) w();
  };

  /** Writes one update chunk by chunk, waiting while sendBufferBytes are unflushed or the stream's own buffer is full. */
  async function write(snap: OutputSnapshot, forceFull: boolean): Promise<void> {
    const full = forceFull || sent === undefined;
    const delta: StateDelta = full || !sent ? { upserts: snap.resources, removed: [] } : diffStates(sent.entries, snap.resources);
    const baseVersion = full || !sent ? 0 : sent.version;
    const checksum = stateChecksum(snap.resources);
    const chunks = encodeChunks(delta, chunkBytes);
    sent = { version: snap.version, entries: snap.resources };
    sentVersions.set(snap.version, { sourceCommit: snap.sourceCommit });
    if (sentVersions.size > SENT_VERSIONS_KEPT) sentVersions.delete(sentVersions.keys().next().value!);
    for (const chunk of chunks) {
      while (isOpen() && buffered > 0 && buffered + chunk.payload.length > sendBufferBytes) {
        await new Promise<void>((resolve) => wakeups.push(resolve));
      }
      if (!isOpen()) return;
      const size = chunk.payload.length;
      buffered += size;
      metrics.outputBuffered.inc({ cluster }, size);
      metrics.streamBytes.inc({ direction: "sent" }, size);
      const ok = call.write({ version: snap.version, baseVersion, full, complete: snap.complete, sourceCommit: snap.sourceCommit, checksum, chunk, hold: undefined }, () => {
        if (!isOpen()) return; // release() already gave back the stream's buffered bytes
        buffered -= size;
        metrics.outputBuffered.dec({ cluster }, size);
        wake();
      });
      if (!ok && isOpen()) {
        await new Promise<void>((resolve) => {
          call.once("drain", resolve);
          wakeups.push(resolve);
        });
      }
    }
  }

  async function pump(): Promise<void> {
    if (sending) return;
    sending = true;
    try {
      while (pending && isOpen()) {
        const { snap, forceFull } = pending;
        pending = undefined;
        await write(snap, forceFull);
      }
    } finally {
      sending = false;
    }
  }

  return {
    send(snap, forceFull) {
      if (pending) metrics.outputCoalesced.inc();
      pending = { snap, forceFull: forceFull || (pending?.forceFull ?? false) };
      void pump();
    },
    hold(hold) {
      if (isOpen()) call.write({ version: 0, baseVersion: 0, full: false, complete: false, sourceCommit: "", checksum: "", chunk: undefined, hold });
    },
    sentCommit: (version) => sentVersions.get(version)?.sourceCommit,
    release() {
      pending = undefined;
      metrics.outputBuffered.dec({ cluster }, buffered);
      buffered = 0;
      wake();
    },
  };
}

interface PullSession extends StreamSession {
  /** The agent's first message (version 0) subscribes it. */
  subscribed: boolean;
  /** Set on subscribe: the agent understands holds. */
  acceptsHold: boolean;
  /** The hold this stream was last told (its summary; "" = released), undefined before the first. */
  toldHold: string | undefined;
  readonly sender: OutputSender;
  readonly stopExpiry: () => void;
}

export function createOutputDelivery(options: OutputDeliveryOptions): OutputDelivery {
  const { metrics, logger: log } = options;
  const now = options.now ?? Date.now;
  const maxMessageBytes = options.maxMessageBytes ?? RELAY_DEFAULTS.maxMessageBytes;
  const chunkBytes = Math.max(1024, Math.min(options.chunkBytes ?? RELAY_DEFAULTS.chunkBytes, Math.floor(maxMessageBytes * 0.9)));
  const settings: SenderSettings = { chunkBytes, sendBufferBytes: Math.max(1, options.sendBufferBytes ?? 2 * chunkBytes), metrics };
  const outputs = new Map<string, OutputSnapshot>();
  const applied = new Map<string, AppliedVersion>();
  const sessions = createStreamSessions<PullSession>({
    ...options,
    kind: "pull",
    connected: metrics.pullConnected,
    release: (s) => {
      s.sender.release();
      s.stopExpiry();
    },
  });

  /** An ACK or NACK of a version this stream sent. */
  function acknowledged(s: PullSession, msg: OutputAck): void {
    const sourceCommit = s.sender.sentCommit(msg.version);
    if (sourceCommit === undefined) {
      log.warn("agent acknowledged an output version this stream did not send; ignored", { cluster: s.cluster, version: msg.version });
      return;
    }
    const event = { cluster: s.cluster, version: msg.version, sourceCommit, atMs: now() };
    if (msg.ack) {
      metrics.outputAcks.inc({ result: "ack" });
      applied.set(s.cluster, { version: event.version, sourceCommit: event.sourceCommit, atMs: event.atMs });
      options.onAck?.(event);
    } else {
      metrics.outputAcks.inc({ result: "nack" });
      const errors = msg.errors.map((e) => ({ key: e.key, message: e.message, ...(e.transient === undefined ? {} : { transient: e.transient }) }));
      log.warn("agent could not apply output", { cluster: s.cluster, version: msg.version, errors: errors.length, first: errors[0]?.message });
      options.onNack?.({ ...event, errors });
    }
  }

  /**
   * Tells a hold-aware agent the cluster's hold when it differs from what its stream was last told. Written
   * straight to the stream, not through the sender: it is small, and it must not wait behind (or be
   * coalesced with) an output; the agent reads it between the chunks of an update as well.
   */
  function tellHold(s: PullSession): void {
    if (!s.acceptsHold || s.closed) return;
    const hold = options.holdOf?.(s.cluster);
    const told = hold?.summary ?? "";
    if (s.toldHold === told) return;
    const wasHeld = (s.toldHold ?? "") !== "";
    s.toldHold = told;
    // "Not held" on subscribe is every agent's normal case: not worth an info line per connect.
    if (hold) log.info("told the agent its cluster is held", { cluster: s.cluster, hold: hold.summary });
    else log[wasHeld ? "info" : "debug"]("told the agent its cluster is not held", { cluster: s.cluster });
    s.sender.hold(holdMessage(hold));
  }

  /** One message from the agent: subscribe, drift report, resync request, or ACK/NACK. */
  function handle(msg: OutputAck | Malformed, s: PullSession): void {
    assertDecoded(msg, "OutputAck");
    checkNamedCluster(s.cluster, msg.cluster);
    const latest = outputs.get(s.cluster);
    if (!s.subscribed) {
      s.subscribed = true;
      s.acceptsHold = msg.acceptsHold;
      // The hold first: the agent must know it before the output arrives.
      tellHold(s);
      if (latest) s.sender.send(latest, true);
    } else if (msg.report) {
      const repairs = boundDriftRepairs(msg.repairs, now());
      if (repairs.length > 0) options.onDriftRepairs?.({ cluster: s.cluster, repairs });
    } else if (msg.resync) {
      metrics.resyncs.inc({ direction: "pull" });
      log.warn("agent asked for a full output resync", { cluster: s.cluster, version: msg.version });
      if (latest) s.sender.send(latest, true);
    } else {
      acknowledged(s, msg);
    }
  }

  function pullOutput(call: grpc.ServerDuplexStream<OutputAck | Malformed, OutputUpdate>): void {
    const fields: RequestFields = { rpc: "PullOutput", peer: call.getPeer() };
    let session: PullSession | undefined;
    const early: (OutputAck | Malformed)[] = [];
    const close = () => {
      if (session) sessions.close(session);
    };
    const receive = (msg: OutputAck | Malformed, s: PullSession) => {
      try {
        handle(msg, s);
      } catch (err) {
        options.refusals.endStream(call, err, fields);
        close();
      }
    };
    call.on("data", (msg: OutputAck | Malformed) => {
      if (!session) early.push(msg);
      else if (!session.closed) receive(msg, session);
    });
    closeWhenStreamEnds(call, close);
    options.gate.acceptStream(call, fields, ({ cluster, issuedAtMs, stopExpiry }) => {
      const s: PullSession = { cluster, issuedAtMs, call, closed: false, subscribed: false, acceptsHold: false, toldHold: undefined, stopExpiry, sender: createOutputSender(call, cluster, () => !s.closed, settings) };
      session = s;
      sessions.open(s);
      for (const m of early.splice(0)) if (!s.closed) receive(m, s);
    });
  }

  return {
    pullOutput,
    publish(cluster, snapshot) {
      outputs.set(cluster, snapshot);
      const s = sessions.get(cluster);
      if (s?.subscribed && !s.closed) s.sender.send(snapshot, false);
    },
    applied: () => applied,
    holdsChanged() {
      for (const s of sessions.all()) if (s.subscribed) tellHold(s);
    },
    sessions,
  };
}
