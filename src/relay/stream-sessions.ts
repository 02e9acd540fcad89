/**
 * The open streams of one kind (discovery push or output pull), one per cluster: a newer stream of the
 * same cluster replaces the older one (ABORTED), the connected gauge and the connect/disconnect
 * callbacks follow, and whatever a session holds is released exactly once when it closes or is replaced.
 */
import * as grpc from "@grpc/grpc-js";
import type { Logger } from "../core/index.js";
import type { RelayMetrics } from "./metrics.js";
import { endWithStatus, type EndableCall } from "./refusals.js";

/** The two streams an agent opens. */
export type StreamKind = "push" | "pull";

/** What every open stream is: its cluster, the certificate it was opened with, its call. */
export interface StreamSession {
  readonly cluster: string;
  /** Issue time of the peer certificate (what revocation compares). */
  readonly issuedAtMs: number;
  readonly call: EndableCall;
  /** Set once the stream ended or was replaced: re-read it after every await. */
  closed: boolean;
}

export interface StreamSessionsOptions<S extends StreamSession> {
  readonly kind: StreamKind;
  /** gitmesh_relay_push_clients_connected or gitmesh_relay_pull_clients_connected. */
  readonly connected: RelayMetrics["pushConnected"];
  readonly logger: Logger;
  /** Frees what a session holds (timers, queued output); called once, when it closes or is replaced. */
  readonly release: (s: S) => void;
  readonly onConnect?: ((cluster: string, stream: StreamKind) => void) | undefined;
  readonly onDisconnect?: ((cluster: string, stream: StreamKind) => void) | undefined;
}

export interface StreamSessions<S extends StreamSession> {
  readonly get: (cluster: string) => S | undefined;
  readonly clusters: () => IterableIterator<string>;
  readonly all: () => IterableIterator<S>;
  /** Makes `s` its cluster's stream; the one it replaces is released and ended with ABORTED. */
  readonly open: (s: S) => void;
  /** Closes `s` (idempotent); true when it was still its cluster's stream (then the cluster is disconnected). */
  readonly close: (s: S) => boolean;
}

const NOUN = { push: "discovery", pull: "output" } as const;

export function createStreamSessions<S extends StreamSession>(options: StreamSessionsOptions<S>): StreamSessions<S> {
  const { kind, logger: log } = options;
  const noun = NOUN[kind];
  const sessions = new Map<string, S>();
  return {
    get: (cluster) => sessions.get(cluster),
    clusters: () => sessions.keys(),
    all: () => sessions.values(),
    open(s) {
      const old = sessions.get(s.cluster);
      sessions.set(s.cluster, s);
      if (old) {
        old.closed = true;
        options.release(old);
        endWithStatus(old.call, { code: grpc.status.ABORTED, details: `replaced by a newer ${noun} stream of the same cluster` });
      }
      options.connected.set({ cluster: s.cluster }, 1);
      log.info(`${noun} stream opened`, { cluster: s.cluster });
      options.onConnect?.(s.cluster, kind);
    },
    close(s) {
      if (s.closed) return false;
      s.closed = true;
      options.release(s);
      if (sessions.get(s.cluster) !== s) return false;
      sessions.delete(s.cluster);
      options.connected.set({ cluster: s.cluster }, 0);
      log.info(`${noun} stream closed`, { cluster: s.cluster });
      options.onDisconnect?.(s.cluster, kind);
      return true;
    },
  };
}

/**
 * Runs `close` (idempotent) however a bidirectional stream ends (client half-close, cancel, error, close);
 * a client half-close is answered by ending our side too.
 */
export function closeWhenStreamEnds<Req, Res>(call: grpc.ServerDuplexStream<Req, Res>, close: () => void): void {
  call.on("end", () => {
    close();
    call.end();
  });
  call.on("cancelled", close);
  call.on("error", close);
  call.on("close", close);
}
