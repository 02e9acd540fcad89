/**
 * Commit statuses on the Git host (opt-in): the journey of each commit that comes into force, as the
 * Git host shows it beside the commit — `pending` when accepted, `success` when every registered
 * cluster applied it (with the time it took), `failure` on a NACK (which cluster, what it said) or a
 * rejected commit (the first file:line error). Only the leader reports (one writer); it re-evaluates
 * every second from the convergence every replica shares, and posts only when the state changes.
 * A host that fails never blocks or crashes the pipeline: transient errors are retried with backoff,
 * a refusal (token, permission, repository) is logged once per commit and not retried.
 */
import { backoffDelay, describeError, Reaction, reactionOf, type Logger } from "../core/index.js";
import type { CommitState, CommitStatusPoster } from "../git-host/index.js";

/** What the server knows of one commit in force. */
export interface CommitJourney {
  readonly commit: string;
  readonly acceptedAtMs: number | undefined;
  /** Clusters registered in the commit's desired state. */
  readonly expected: readonly string[];
  /** cluster → when it applied the commit. */
  readonly applied: ReadonlyMap<string, number>;
  readonly nacks: readonly { readonly cluster: string; readonly message: string }[];
}

export interface CommitStatusReporter {
  /** The commit in force and its progress. */
  inForce(journey: CommitJourney): Promise<void>;
  /** A commit that was rejected (it never comes into force). */
  rejected(commit: string, firstError: string): Promise<void>;
}

export interface CommitStatusReporterOptions {
  readonly poster: CommitStatusPoster;
  readonly logger: Logger;
  /** Link shown with each status (e.g. the server's /api/commits/<sha>); `{sha}` is replaced. */
  readonly targetUrl?: string;
  readonly now?: () => number;
}

interface Posted {
  readonly key: string;
  /** Set while a post failed transiently: when to try again. */
  retryAtMs?: number;
  attempts: number;
}

/** How many commits' last posted state is remembered (older ones are never posted again). */
const REMEMBERED = 200;

export function createCommitStatusReporter(options: CommitStatusReporterOptions): CommitStatusReporter {
  const log = options.logger;
  const now = options.now ?? Date.now;
  const posted = new Map<string, Posted>();

  async function report(sha: string, state: CommitState, description: string): Promise<void> {
    const key = `${state}\n${state === "pending" ? "" : description}`;
    const prev = posted.get(sha);
    if (prev?.key === key && (prev.retryAtMs === undefined || now() < prev.retryAtMs)) return;
    const entry: Posted = { key, attempts: prev?.key === key ? prev.attempts + 1 : 1 };
    posted.delete(sha);
    posted.set(sha, entry);
    while (posted.size > REMEMBERED) posted.delete(posted.keys().next().value!);
    try {
      await options.poster.post(sha, state, description, options.targetUrl?.replace("{sha}", sha));
      log.info("commit status posted", { commit: sha, state, description, host: options.poster.describe });
    } catch (err) {
      if (reactionOf(err) === Reaction.NeedsHuman) {
        // Not retried: the same request would be refused again. Said once per commit and state.
        log.error("commit status refused by the Git host; fix the token or repository settings", { commit: sha, state, host: options.poster.describe, error: describeError(err) });
        return;
      }
      entry.retryAtMs = now() + backoffDelay({ initialMs: 1000, maxMs: 60_000 }, entry.attempts - 1);
      log.warn("commit status not posted; retrying", { commit: sha, state, host: options.poster.describe, retryInMs: entry.retryAtMs - now(), error: describeError(err) });
    }
  }

  return {
    async inForce(j) {
      const nack = j.nacks.find((n) => j.expected.includes(n.cluster));
      if (nack) return report(j.commit, "failure", `${nack.cluster} rejected the output: ${nack.message}`);
      const done = j.expected.filter((c) => j.applied.has(c));
      if (j.expected.length > 0 && done.length === j.expected.length) {
        const last = Math.max(...done.map((c) => j.applied.get(c)!));
        const took = j.acceptedAtMs === undefined ? "" : ` in ${((last - j.acceptedAtMs) / 1000).toFixed(1)} s`;
        return report(j.commit, "success", `applied on ${String(done.length)} cluster${done.length === 1 ? "" : "s"}${took}`);
      }
      return report(j.commit, "pending", `accepted; applied on ${String(done.length)} of ${String(j.expected.length)} clusters`);
    },
    rejected: (commit, firstError) => report(commit, "failure", `rejected: ${firstError}`),
  };
}
