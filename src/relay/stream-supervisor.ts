/**
 * Ends open streams that must end: a cluster revoked or deregistered here (closeCluster), every stream
 * at shutdown (closeAll), and — every `revalidateIntervalMs` — streams whose certificate was revoked or
 * whose cluster left the desired state elsewhere (another replica's re-issue, an operator's revoke).
 * A long-running part: start() arms the re-check, stop() disarms it.
 *
 * State: the re-check timer.
 */
import * as grpc from "@grpc/grpc-js";
import { describeError, type Logger } from "../core/index.js";
import { REJECTION_REASONS, RELAY_DEFAULTS } from "./constants.js";
import { RelayRejectedError } from "./errors.js";
import type { ClusterIdentities } from "./identity.js";
import { isRevoked, revokedRejection, type PeerGate } from "./peer-gate.js";
import { endWithStatus, type Refusals } from "./refusals.js";
import type { StreamSession } from "./stream-sessions.js";

export interface StreamSupervisorOptions {
  /** Where the open streams are (the discovery and output parts). */
  readonly streams: readonly { readonly sessions: { readonly all: () => IterableIterator<StreamSession> } }[];
  readonly identities: Pick<ClusterIdentities, "list" | "describe">;
  readonly isClusterRegistered: (cluster: string) => boolean | Promise<boolean>;
  readonly gate: Pick<PeerGate, "remember">;
  readonly refusals: Pick<Refusals, "endStream">;
  readonly logger: Logger;
  /** How often open streams are re-checked against the store's revocations and registration (default 15 s). */
  readonly revalidateIntervalMs?: number;
}

export interface StreamSupervisor {
  readonly start: () => void;
  readonly stop: () => void;
  /** Ends the cluster's streams (those whose certificate `which` selects) with a logged, counted refusal; returns how many. */
  readonly closeCluster: (cluster: string, err: RelayRejectedError, which?: (s: StreamSession) => boolean) => number;
  /** Ends every stream with a status (not a refusal: shutdown). */
  readonly closeAll: (code: grpc.status, details: string) => void;
  /** One re-check of every open stream. */
  readonly revalidate: () => Promise<void>;
}

export function createStreamSupervisor(options: StreamSupervisorOptions): StreamSupervisor {
  let timer: NodeJS.Timeout | undefined;
  const open = () => options.streams.flatMap((part) => [...part.sessions.all()]);

  const closeCluster: StreamSupervisor["closeCluster"] = (cluster, err, which = () => true) => {
    let closed = 0;
    for (const s of open()) {
      if (s.cluster !== cluster || !which(s)) continue;
      closed++;
      options.refusals.endStream(s.call, err, { rpc: "stream", cluster });
    }
    return closed;
  };

  async function revalidate(): Promise<void> {
    const clusters = new Set(open().map((s) => s.cluster));
    if (clusters.size === 0) return;
    const records = await options.identities.list();
    options.gate.remember(records);
    for (const cluster of clusters) {
      const r = records.get(cluster);
      if (r) closeCluster(cluster, revokedRejection(cluster, r), (s) => isRevoked(r, s.issuedAtMs));
      if (!(await options.isClusterRegistered(cluster))) {
        closeCluster(
          cluster,
          new RelayRejectedError(REJECTION_REASONS.clusterNotRegistered, grpc.status.PERMISSION_DENIED, `cluster "${cluster}" is no longer registered (no KubernetesCluster in the desired state); it reconnects on its own once restored`),
        );
      }
    }
  }

  return {
    start() {
      timer = setInterval(() => {
        revalidate().catch((err: unknown) => options.logger.warn("could not re-check open streams against the identity store", { store: options.identities.describe, error: describeError(err) }));
      }, options.revalidateIntervalMs ?? RELAY_DEFAULTS.revalidateIntervalMs);
      timer.unref();
    },
    stop: () => clearInterval(timer),
    closeCluster,
    closeAll(code, details) {
      for (const s of open()) endWithStatus(s.call, { code, details });
    },
    revalidate,
  };
}
