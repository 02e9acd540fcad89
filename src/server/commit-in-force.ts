/**
 * The commit in force: which accepted commit is current on this replica.
 *
 *   Git sync outcome ──accepted──▶ adopt ──▶ pipeline.setDesiredState
 *                    ├─unchanged─▶ adopt (a new commit, same configuration: nothing re-translated)
 *                    └─rejected──▶ kept out (counted and logged once per commit)
 *   follower: the desired state the leader stored ──newer──▶ adopt (not handed to the pipeline again)
 *
 * Adopting makes a commit's registered clusters (its KubernetesClusters) the ones in force and tells
 * every listener (warming, convergence, audit, the relay's cut-offs). It holds nothing else.
 */
import { formatDiagnostic, Severity, type Logger } from "../core/index.js";
import { objectsOfKind, type DesiredState } from "../config/index.js";
import { allowedDeletions, type SyncOutcome } from "../git-sync/index.js";
import type { SnapshotStore } from "../store/index.js";
import type { ServerMetrics } from "./metrics.js";
import type { PipelinePort } from "./pipeline-port.js";
import type { RegisteredCluster } from "./warming.js";

/**
 * The changed-keys list of a commit whose configuration is unchanged: an object key that names no
 * object, so the pipeline moves the desired state to the commit and re-translates nothing (an empty
 * list would mean "unknown: re-translate everything").
 */
export const UNCHANGED_KEY = "(unchanged)/-/-";

/** The desired state in force on this replica. */
export interface InForce {
  readonly state: DesiredState;
  readonly commit: string;
  /** Commit time, Unix seconds (Git's; on a follower, when the leader accepted it). */
  readonly committedAt: number;
}

/** What listeners learn when a commit comes into force here. */
export interface Adoption {
  readonly commit: string;
  readonly registered: readonly RegisteredCluster[];
  /** When it came into force here (its convergence is measured from this moment). */
  readonly atMs: number;
}

export interface CommitInForceOptions {
  /** Where accepted commits go. */
  readonly pipeline: Pick<PipelinePort, "setDesiredState">;
  /** The store in use now: a follower reads the desired state the leader stored there. */
  readonly store: () => Pick<SnapshotStore, "getDesiredPointer" | "getDesired">;
  /** The branch (handed to the pipeline with each desired state). */
  readonly ref: string;
  readonly metrics: Pick<ServerMetrics, "commits" | "rejectedCommit" | "clustersRegistered">;
  readonly logger: Logger;
  /** Aborted when the server stops: a stored state read after that is not adopted. */
  readonly signal?: AbortSignal;
  /** Clock (default Date.now). */
  readonly now?: () => number;
}

export interface CommitInForce {
  current(): InForce | undefined;
  /** The KubernetesClusters of the commit in force, sorted by name. */
  registered(): readonly RegisteredCluster[];
  isRegistered(cluster: string): boolean;
  /** What a Git sync brought: adopts an accepted (or unchanged new) commit and hands it to the pipeline. */
  onOutcome(outcome: SyncOutcome<DesiredState>): Promise<void>;
  /** A follower's step: adopts the desired state the leader stored when it is another commit. */
  follow(): Promise<void>;
  /** Called after each adoption, in registration order. */
  onAdopted(listener: (adoption: Adoption) => void): void;
}

/** The KubernetesClusters of a desired state, sorted by name. */
export function registeredClusters(state: DesiredState): RegisteredCluster[] {
  return objectsOfKind(state, "KubernetesCluster")
    .map((o) => ({ name: o.metadata.name, skipWarming: (o.spec as { skipWarming?: boolean } | undefined)?.skipWarming === true }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

export function createCommitInForce(options: CommitInForceOptions): CommitInForce {
  const { pipeline, metrics, logger: log } = options;
  const now = options.now ?? Date.now;
  const listeners: ((adoption: Adoption) => void)[] = [];
  let desired: InForce | undefined;
  let registered: readonly RegisteredCluster[] = [];
  let lastRejected: string | undefined;

  const adopt = (state: DesiredState, commit: string, committedAt: number, atMs: number): void => {
    desired = { state, commit, committedAt };
    registered = registeredClusters(state);
    metrics.clustersRegistered.set(registered.length);
    for (const l of listeners) l({ commit, registered, atMs });
  };

  /** `Gitmesh-Allow-Deletion` trailers of the commit brought into force: its outputs may delete any number of objects there. */
  const allowance = (commit: { oid: string; message: string }): { allowMassDeletion?: string[] } => {
    const { clusters, invalid } = allowedDeletions(commit.message);
    if (invalid.length > 0) log.warn("Gitmesh-Allow-Deletion trailer names no cluster; ignored", { commit: commit.oid, values: invalid });
    if (clusters.length === 0) return {};
    log.info("commit allows mass deletion", { commit: commit.oid, clusters });
    return { allowMassDeletion: clusters };
  };

  const unchanged = async (outcome: Extract<SyncOutcome<DesiredState>, { kind: "unchanged" }>): Promise<void> => {
    metrics.commits.inc({ result: "unchanged" });
    // A new commit with the same configuration (a revert of a rejected commit, a README change):
    // it becomes the commit in force everywhere, nothing is re-translated.
    if (desired === undefined || outcome.commit.oid === desired.commit) return;
    const atMs = now();
    adopt(outcome.state, outcome.commit.oid, outcome.commit.timestamp, atMs);
    metrics.rejectedCommit.set(0);
    log.info("commit accepted (configuration unchanged)", { commit: outcome.commit.oid });
    await pipeline.setDesiredState({ commit: outcome.commit.oid, ref: options.ref, state: outcome.state, changedKeys: [UNCHANGED_KEY], ...allowance(outcome.commit), atMs });
  };

  const rejected = (outcome: Extract<SyncOutcome<DesiredState>, { kind: "rejected" }>): void => {
    metrics.rejectedCommit.set(1);
    // Every poll answers the same rejection until a new commit arrives: count and log it once.
    if (outcome.commit.oid === lastRejected) return;
    lastRejected = outcome.commit.oid;
    metrics.commits.inc({ result: "rejected" });
    const errors = outcome.rejection.diagnostics.filter((d) => d.severity === Severity.Error);
    log.warn("commit rejected; the last good desired state stays in force", { commit: outcome.commit.oid, errors: errors.length, first: errors[0] ? formatDiagnostic(errors[0]) : undefined, inForce: desired?.commit });
  };

  const accepted = async (outcome: Extract<SyncOutcome<DesiredState>, { kind: "updated" }>): Promise<void> => {
    metrics.commits.inc({ result: "accepted" });
    metrics.rejectedCommit.set(0);
    const atMs = now();
    adopt(outcome.state, outcome.commit.oid, outcome.commit.timestamp, atMs);
    log.info("commit accepted", {
      commit: outcome.commit.oid,
      full: outcome.full,
      changedObjects: outcome.changedKeys.size,
      clusters: registered.map((c) => c.name),
      warnings: outcome.diagnostics.filter((d) => d.severity === Severity.Warning).length,
    });
    await pipeline.setDesiredState({ commit: outcome.commit.oid, ref: options.ref, state: outcome.state, changedKeys: [...outcome.changedKeys], ...allowance(outcome.commit), atMs });
  };

  return {
    current: () => desired,
    registered: () => registered,
    isRegistered: (cluster) => registered.some((r) => r.name === cluster),
    onOutcome(outcome) {
      if (outcome.kind === "unchanged") return unchanged(outcome);
      if (outcome.kind === "rejected") return Promise.resolve(rejected(outcome));
      return accepted(outcome);
    },
    async follow() {
      const pointer = await options.store().getDesiredPointer();
      if (pointer === undefined || pointer.commit === desired?.commit) return;
      const rec = await options.store().getDesired(pointer.commit);
      if (rec === undefined || options.signal?.aborted === true) return;
      // committedAt is in seconds (Git); the store knows when the leader accepted the commit.
      adopt(rec.state, rec.commit, Math.floor(rec.atMs / 1000), rec.atMs);
      log.info("desired state adopted from the leader", { commit: rec.commit, generation: rec.generation, clusters: registered.map((c) => c.name) });
    },
    onAdopted: (listener) => void listeners.push(listener),
  };
}
