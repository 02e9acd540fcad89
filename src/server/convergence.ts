/**
 * Convergence per source commit: which clusters were sent output rendered from it, which applied it
 * (ACK), how long that took from the moment the commit was accepted, and which rejected it (NACK)
 * with what. Kept in memory (bounded: the newest `keepCommits` commits) and mirrored to a shared sink
 * (the snapshot store) so every replica's API shows the ACKs received by the others.
 */
import type { OutputAckEvent, OutputNackEvent } from "../relay/index.js";

export interface ClusterProgress {
  readonly cluster: string;
  /** Output version that carried the commit. */
  readonly version: number;
  readonly publishedAtMs?: number;
  readonly appliedAtMs?: number;
  /** appliedAtMs − the commit's acceptance time. */
  readonly latencyMs?: number;
  readonly nack?: { readonly atMs: number; readonly errors: readonly { readonly key: string; readonly message: string; readonly transient?: boolean }[] };
}

export interface CommitProgress {
  readonly commit: string;
  readonly acceptedAtMs?: number;
  readonly clusters: Readonly<Record<string, ClusterProgress>>;
}

/** Where progress is mirrored (the snapshot store's recordConvergence), best effort. */
export interface ConvergenceSink {
  record(commit: string, entry: ClusterProgress): Promise<void>;
}

export interface ConvergenceTracker {
  accepted(commit: string, atMs: number): void;
  published(cluster: string, version: number, commit: string, atMs: number): void;
  /** Returns the latency (ms) when the ACK is the first for this commit and cluster. */
  ack(event: OutputAckEvent): number | undefined;
  nack(event: OutputNackEvent): void;
  /** Newest first. */
  commits(): CommitProgress[];
  get(commit: string): CommitProgress | undefined;
  /** Merges progress learned elsewhere (another replica) into a commit's entry. */
  merge(commit: string, entries: readonly ClusterProgress[]): void;
}

export function createConvergenceTracker(options: { keepCommits?: number; sink?: ConvergenceSink; onSinkError?: (err: unknown) => void } = {}): ConvergenceTracker {
  const keep = options.keepCommits ?? 100;
  const byCommit = new Map<string, { commit: string; acceptedAtMs?: number; clusters: Map<string, ClusterProgress> }>();

  const entry = (commit: string) => {
    let e = byCommit.get(commit);
    if (!e) {
      e = { commit, clusters: new Map() };
      byCommit.set(commit, e);
      while (byCommit.size > keep) byCommit.delete(byCommit.keys().next().value!);
    }
    return e;
  };
  const mirror = (commit: string, p: ClusterProgress) => {
    if (options.sink) options.sink.record(commit, p).catch((err: unknown) => options.onSinkError?.(err));
  };
  const view = (e: { commit: string; acceptedAtMs?: number; clusters: Map<string, ClusterProgress> }): CommitProgress => ({
    commit: e.commit,
    ...(e.acceptedAtMs === undefined ? {} : { acceptedAtMs: e.acceptedAtMs }),
    clusters: Object.fromEntries([...e.clusters.entries()].sort(([a], [b]) => a.localeCompare(b))),
  });

  return {
    accepted(commit, atMs) {
      const e = entry(commit);
      e.acceptedAtMs ??= atMs;
    },
    published(cluster, version, commit, atMs) {
      const e = entry(commit);
      const prev = e.clusters.get(cluster);
      if (prev?.appliedAtMs !== undefined) return;
      // The same version sent again (a redelivery after a transient NACK): its NACK stands until the agent answers.
      const p: ClusterProgress = { cluster, version, publishedAtMs: prev?.publishedAtMs ?? atMs, ...(prev?.version === version && prev.nack ? { nack: prev.nack } : {}) };
      e.clusters.set(cluster, p);
      mirror(commit, p);
    },
    ack(event) {
      const e = entry(event.sourceCommit);
      const prev = e.clusters.get(event.cluster);
      if (prev?.appliedAtMs !== undefined) {
        // A newer version of the same commit (published incomplete, then complete): the cluster runs it
        // now. Recorded, so that "in sync" compares the version it runs; the latency stays the first ACK's.
        if (event.version > prev.version) {
          const p: ClusterProgress = { ...prev, version: event.version, appliedAtMs: event.atMs };
          e.clusters.set(event.cluster, p);
          mirror(event.sourceCommit, p);
        }
        return undefined;
      }
      const latencyMs = e.acceptedAtMs === undefined ? undefined : Math.max(0, event.atMs - e.acceptedAtMs);
      const p: ClusterProgress = {
        cluster: event.cluster,
        version: event.version,
        ...(prev?.publishedAtMs === undefined ? {} : { publishedAtMs: prev.publishedAtMs }),
        appliedAtMs: event.atMs,
        ...(latencyMs === undefined ? {} : { latencyMs }),
      };
      e.clusters.set(event.cluster, p);
      mirror(event.sourceCommit, p);
      return latencyMs;
    },
    nack(event) {
      const e = entry(event.sourceCommit);
      const prev = e.clusters.get(event.cluster);
      const p: ClusterProgress = {
        cluster: event.cluster,
        version: event.version,
        ...(prev?.publishedAtMs === undefined ? {} : { publishedAtMs: prev.publishedAtMs }),
        nack: { atMs: event.atMs, errors: event.errors.slice(0, 20).map((x) => ({ key: x.key, message: x.message, ...(x.transient === undefined ? {} : { transient: x.transient }) })) },
      };
      e.clusters.set(event.cluster, p);
      mirror(event.sourceCommit, p);
    },
    commits: () => [...byCommit.values()].reverse().map(view),
    get(commit) {
      const e = byCommit.get(commit);
      return e ? view(e) : undefined;
    },
    merge(commit, entries) {
      const e = entry(commit);
      for (const p of entries) {
        const mine = e.clusters.get(p.cluster);
        if (mine?.appliedAtMs !== undefined && p.appliedAtMs === undefined) continue;
        if (mine && mine.version > p.version) continue;
        e.clusters.set(p.cluster, { ...mine, ...p });
      }
    },
  };
}
