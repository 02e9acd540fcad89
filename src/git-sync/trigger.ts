/**
 * Drives a GitSource from two triggers: a poll loop (the backstop) and webhook hints. Hints are
 * deduplicated by (repo, ref, SHA) and debounced, so a burst of pushes (bulk merges) costs one
 * fetch of the newest SHA. Syncs never overlap; a request during a sync runs once after it.
 */
import { describeError, RetryLaterError, type Logger } from "../core/index.js";
import type { GitSource, SyncOutcome } from "./source.js";
import type { HintDisposition } from "./webhooks.js";

export interface SyncTriggerOptions<S> {
  readonly source: GitSource<S>;
  /** The ref the source follows: a branch name (`main`), or a full ref (`refs/tags/v1`). Pushes to other refs are ignored. */
  readonly ref: string;
  /** When set, pushes naming another repository are ignored (compared with the payload's repo name). */
  readonly repo?: string;
  /** Poll interval (default 60 s; 0 turns polling off — not recommended, webhooks get lost). */
  readonly pollIntervalMs?: number;
  /** Quiet time after the last hint before fetching (default 250 ms). */
  readonly debounceMs?: number;
  /** How many (repo, ref, SHA) keys are remembered for dedupe (default 1000). */
  readonly rememberHints?: number;
  /** Called with every outcome (updated / unchanged / rejected), in order. */
  readonly onOutcome?: (outcome: SyncOutcome<S>) => void | Promise<void>;
  readonly logger: Logger;
}

export interface PushHint {
  readonly repo?: string | undefined;
  readonly ref: string;
  readonly sha: string;
}

export interface SyncTrigger {
  /** Syncs at once, then polls. */
  start(): void;
  /** Stops timers and waits for a running sync. */
  stop(): Promise<void>;
  /** A webhook's push: `accepted` (a sync is scheduled), `duplicate` (already seen or current), `ignored` (other ref/repo). */
  hint(push: PushHint): HintDisposition;
  /** Resolves when no sync is running or scheduled (for tests and graceful shutdown). */
  idle(): Promise<void>;
}

/** How many times a hinted commit that is not on the branch yet is waited for (about 10 s with the source's 2 s). */
const MAX_DEFERRALS = 5;

export function createSyncTrigger<S>(options: SyncTriggerOptions<S>): SyncTrigger {
  const { source, logger: log } = options;
  const pollMs = options.pollIntervalMs ?? 60_000;
  const debounceMs = options.debounceMs ?? 250;
  const remember = options.rememberHints ?? 1000;
  const wantedRef = options.ref.startsWith("refs/") ? options.ref : `refs/heads/${options.ref}`;
  const seen = new Map<string, true>();

  let running = false;
  let inFlight: Promise<void> | undefined;
  let pending = false;
  let pendingSha: string | undefined;
  let debounceTimer: NodeJS.Timeout | undefined;
  let pollTimer: NodeJS.Timeout | undefined;
  const retryTimers = new Set<NodeJS.Timeout>();
  /** Hinted commits waited for, and how many times. */
  const deferrals = new Map<string, number>();

  const runOnce = async (sha: string | undefined): Promise<void> => {
    try {
      const outcome = await source.sync(sha === undefined ? {} : { sha });
      await options.onOutcome?.(outcome);
    } catch (err) {
      if (err instanceof RetryLaterError && running) {
        // A hinted commit not on the branch yet (replica lag) is waited for a few times; one that never
        // appears there (a commit of another branch that descends from the tip) is dropped: the branch
        // tip stays in force and polling goes on.
        const tries = sha === undefined ? 0 : (deferrals.get(sha) ?? 0) + 1;
        if (sha !== undefined && tries > MAX_DEFERRALS) {
          deferrals.delete(sha);
          log.warn("the commit a push hint named never appeared on the followed branch; hint dropped, the branch tip stays", { commit: sha, ref: wantedRef });
          request();
          return;
        }
        if (sha !== undefined) deferrals.set(sha, tries);
        log.warn("sync deferred", { error: describeError(err), retryAfterMs: err.retryAfterMs });
        const t = setTimeout(() => {
          retryTimers.delete(t);
          request(sha);
        }, err.retryAfterMs);
        retryTimers.add(t);
      } else {
        // the source has already retried with backoff and logged; the next poll tries again, and a
        // redelivery of the same webhook is no longer a duplicate
        if (sha !== undefined) for (const key of [...seen.keys()]) if (key.endsWith(`|${sha}`)) seen.delete(key);
        log.error("sync failed; polling will retry", { error: describeError(err) });
      }
    }
  };

  /** A request arrived while the last sync ran (set from other async paths, hence a function). */
  const requestedAgain = (): boolean => pending && running;

  const request = (sha?: string): void => {
    if (sha !== undefined) pendingSha = sha;
    if (inFlight) {
      pending = true;
      return;
    }
    inFlight = (async () => {
      do {
        pending = false;
        const next = pendingSha;
        pendingSha = undefined;
        await runOnce(next);
      } while (requestedAgain());
      inFlight = undefined;
    })();
  };

  const schedulePoll = (): void => {
    if (!running || pollMs <= 0) return;
    pollTimer = setTimeout(() => {
      request();
      void (inFlight ?? Promise.resolve()).then(schedulePoll);
    }, pollMs);
  };

  return {
    start() {
      if (running) return;
      running = true;
      request();
      schedulePoll();
    },
    async stop() {
      running = false;
      if (debounceTimer) clearTimeout(debounceTimer);
      if (pollTimer) clearTimeout(pollTimer);
      for (const t of retryTimers) clearTimeout(t);
      retryTimers.clear();
      await inFlight;
    },
    hint(push) {
      const ref = push.ref.startsWith("refs/") ? push.ref : `refs/heads/${push.ref}`;
      if (ref !== wantedRef) return "ignored";
      if (options.repo !== undefined && push.repo !== undefined && push.repo !== options.repo) return "ignored";
      const sha = push.sha.toLowerCase();
      const key = `${push.repo ?? ""}|${ref}|${sha}`;
      if (seen.has(key) || source.current()?.commit.oid === sha) return "duplicate";
      seen.set(key, true);
      if (seen.size > remember) seen.delete(seen.keys().next().value!);
      pendingSha = sha;
      if (debounceTimer) clearTimeout(debounceTimer);
      debounceTimer = setTimeout(() => {
        debounceTimer = undefined;
        if (running) request(pendingSha);
      }, debounceMs);
      return "accepted";
    },
    async idle() {
      while (inFlight || debounceTimer) {
        if (inFlight) await inFlight;
        else await new Promise((r) => setTimeout(r, debounceMs));
      }
    },
  };
}
