/**
 * The agents this replica holds: which relay streams each cluster's agent has open here, when it was
 * last heard from, and the drift repairs it reported (newest first; kept in the memory of the replica
 * holding the agent). Fed by the relay's callbacks; read by the API views, presence and the cut-off of
 * clusters removed from Git.
 */
import type { Logger } from "../core/index.js";
import type { DriftRepairEvent, StreamKind } from "../relay/index.js";
import type { ServerMetrics } from "./metrics.js";

export interface DriftRepair {
  readonly key: string;
  readonly why: string;
  /** ISO time. */
  readonly at: string;
  readonly managers: readonly string[];
}

export interface AgentSessionsOptions {
  /** This replica's name (in the connect and lost lines). */
  readonly replica: string;
  readonly metrics: Pick<ServerMetrics, "clustersConnected">;
  readonly logger: Logger;
  /** Drift repairs kept per cluster (default 20). */
  readonly driftRepairsKept?: number;
  /** Clock (default Date.now). */
  readonly now?: () => number;
}

export interface AgentSessions {
  /** A relay stream of a cluster's agent opened (`up`) or closed here. */
  streamChanged(cluster: string, stream: StreamKind, up: boolean): void;
  /** The agent was heard from (discovery). */
  seen(cluster: string): void;
  driftRepaired(event: DriftRepairEvent): void;
  /** Clusters whose agent holds at least one stream here, in connection order. */
  held(): string[];
  /** Every cluster whose agent was ever connected here. */
  known(): string[];
  /** The open streams of a cluster's agent here (undefined: it never connected here). */
  streams(cluster: string): ReadonlySet<StreamKind> | undefined;
  /** When the agent was last heard from here (ms). */
  lastSeen(cluster: string): number | undefined;
  driftRepairs(cluster: string): readonly DriftRepair[];
}

export function createAgentSessions(options: AgentSessionsOptions): AgentSessions {
  const { logger: log, replica } = options;
  const now = options.now ?? Date.now;
  const kept = options.driftRepairsKept ?? 20;
  const connected = new Map<string, Set<StreamKind>>();
  const lastSeen = new Map<string, number>();
  const repairs = new Map<string, DriftRepair[]>();
  /** Clusters whose both streams were up since they last had none. */
  const complete = new Set<string>();

  return {
    streamChanged(cluster, stream, up) {
      const set = connected.get(cluster) ?? new Set();
      const before = set.size;
      if (up) set.add(stream);
      else set.delete(stream);
      connected.set(cluster, set);
      lastSeen.set(cluster, now());
      // Connected means both streams (as the gauge counts); "lost" is said only of a cluster that was. A
      // session that ends before both were up — its discovery stream refused by the admission limit while
      // hundreds reconnect, say — is no loss: the agent retries, and saying "lost" for each is noise.
      if (set.size === 2 && !complete.has(cluster)) {
        complete.add(cluster);
        log.info("cluster connected", { cluster, replica });
      }
      if (set.size === 0 && before > 0) {
        if (complete.delete(cluster)) log.warn("cluster lost; it keeps its last applied config", { cluster, replica });
        else log.debug("agent session ended before both streams were up", { cluster, replica });
      }
      options.metrics.clustersConnected.set([...connected.values()].filter((s) => s.size === 2).length);
    },
    seen: (cluster) => void lastSeen.set(cluster, now()),
    driftRepaired(e) {
      const fresh = e.repairs.map((r) => ({ key: r.key, why: r.why, at: new Date(r.atMs).toISOString(), managers: r.managers })).reverse();
      repairs.set(e.cluster, [...fresh, ...(repairs.get(e.cluster) ?? [])].slice(0, kept));
      log.info("agent repaired drift", { cluster: e.cluster, repairs: e.repairs.length, first: `${e.repairs[0]?.why ?? ""} ${e.repairs[0]?.key ?? ""}` });
    },
    held: () => [...connected.entries()].filter(([, set]) => set.size > 0).map(([c]) => c),
    known: () => [...connected.keys()],
    streams: (cluster) => connected.get(cluster),
    lastSeen: (cluster) => lastSeen.get(cluster),
    driftRepairs: (cluster) => repairs.get(cluster) ?? [],
  };
}
