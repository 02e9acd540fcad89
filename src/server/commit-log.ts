/**
 * The commits this replica read from Git, for the commit views: each commit's message and author, and
 * the rejected ones with their errors (the commit in force stays; the Commits page lists them beside
 * the accepted ones). Bounded: the newest `keep` of each.
 */
import { formatDiagnostic, Severity } from "../core/index.js";
import type { SyncOutcome } from "../git-sync/index.js";

export interface CommitInfo {
  readonly commit: string;
  /** The first line of the message. */
  readonly subject: string;
  readonly message: string;
  readonly author: { readonly name: string; readonly email: string };
  /** Committer time (ISO). */
  readonly committedAt: string;
}

export interface RejectedCommit extends CommitInfo {
  readonly rejectedAt: string;
  readonly errorCount: number;
  /** The first error diagnostics, `file:line:col: message`. */
  readonly errors: readonly string[];
}

export interface CommitLog {
  /** Learns the commit of a sync outcome (every kind). */
  record(outcome: SyncOutcome<unknown>): void;
  info(commit: string): CommitInfo | undefined;
  /** Rejected commits, newest first. */
  rejected(): readonly RejectedCommit[];
}

export function createCommitLog(options: { readonly keep?: number } = {}): CommitLog {
  const keep = options.keep ?? 100;
  const infos = new Map<string, CommitInfo>();
  const rejections = new Map<string, RejectedCommit>();
  const bound = (m: Map<string, unknown>) => {
    while (m.size > keep) m.delete(m.keys().next().value!);
  };
  return {
    record(outcome) {
      const c = outcome.commit;
      const info: CommitInfo = { commit: c.oid, subject: c.message.split("\n", 1)[0]?.trim() ?? "", message: c.message.trimEnd(), author: c.author, committedAt: new Date(c.timestamp * 1000).toISOString() };
      infos.delete(c.oid);
      infos.set(c.oid, info);
      bound(infos);
      if (outcome.kind !== "rejected" || rejections.has(c.oid)) return;
      const errors = outcome.rejection.diagnostics.filter((d) => d.severity === Severity.Error);
      rejections.set(c.oid, { ...info, rejectedAt: outcome.rejection.rejectedAt, errorCount: errors.length, errors: errors.slice(0, 10).map(formatDiagnostic) });
      bound(rejections);
    },
    info: (commit) => infos.get(commit),
    rejected: () => [...rejections.values()].reverse(),
  };
}
