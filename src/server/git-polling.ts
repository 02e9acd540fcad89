/**
 * Reading Git: the configuration source, its first sync at start, and who polls it.
 *
 *   start ──first sync──▶ onOutcome   (a repository, branch or credential that does not work: fail fast)
 *   leader (or any replica while the pipeline is degraded) ──polls──▶ onOutcome
 *   follower ──serves webhook hints only (a hint is idempotent: the pipeline keeps one state per commit)
 *
 * The role is re-evaluated on every leadership change and every second (the pipeline's mode): when it
 * changes, the trigger is swapped for one that polls, or one that does not.
 */
import { describeError, NeedsHumanError, Reaction, reactionOf, type Logger } from "../core/index.js";
import type { DesiredState } from "../config/index.js";
import {
  createConfigLoader,
  createGitSource,
  createSyncTrigger,
  isSshUrl,
  type CommitVerifier,
  type GitLocation,
  type GitSource,
  type GitSourceStatus,
  type HintDisposition,
  type HttpClient,
  type PushHint,
  type SyncOutcome,
  type SyncTrigger,
} from "../git-sync/index.js";
import { SERVER_ENV } from "./config.js";

export interface GitPollingOptions {
  readonly location: GitLocation;
  /** HTTP client for a remote repository (default: isomorphic-git's, with git-sync's idle timeout). */
  readonly http?: HttpClient;
  /** How logs and errors name the repository (no credentials in it). */
  readonly name: string;
  /** Branch, tag or commit. */
  readonly ref: string;
  /** Sub-directory holding the configuration (default: the whole repository). */
  readonly subPath?: string;
  /** Signed commits only (default: every commit is read). */
  readonly verifier?: CommitVerifier;
  /** Poll interval while this replica polls (0: webhooks only). */
  readonly pollIntervalMs: number;
  /** Quiet time after a webhook hint before the sync. */
  readonly debounceMs: number;
  readonly onOutcome: (outcome: SyncOutcome<DesiredState>) => Promise<void>;
  readonly isLeader: () => boolean;
  /** The server's logger (the source logs as `git`, the trigger as `trigger`). */
  readonly logger: Logger;
  /** Aborted when the server stops: no trigger is started after it. */
  readonly signal?: AbortSignal;
}

export interface GitPolling {
  /** Syncs once; throws NeedsHumanError when the repository, branch or credentials do not work. */
  firstSync(): Promise<void>;
  /** Starts the trigger (a sync at once, then polls if this replica polls). */
  start(pipelineMode: string): void;
  /** Swaps the trigger when the role changed (leadership, or the pipeline's mode when given). */
  reconcile(pipelineMode?: string): void;
  hint(push: PushHint): HintDisposition;
  /** Resolves when no sync is running or scheduled. */
  idle(): Promise<void>;
  /** Whether this replica polls Git now. */
  polling(): boolean;
  status(): GitSourceStatus;
  stop(): Promise<void>;
}

export function createGitPolling(options: GitPollingOptions): GitPolling {
  const { logger: log } = options;
  const source: GitSource<DesiredState> = createGitSource({
    location: options.location,
    ref: options.ref,
    ...(options.subPath ? { subPath: options.subPath } : {}),
    loader: createConfigLoader(),
    logger: log.child("git"),
    ...(options.verifier ? { verifier: options.verifier } : {}),
    ...(options.http ? { http: options.http } : {}),
    // A stopping server stops retrying a fetch (the Git server may be gone with it).
    ...(options.signal ? { retry: { signal: options.signal } } : {}),
  });
  let trigger: SyncTrigger | undefined;
  let polling = false;
  let mode = "";
  let swapping: Promise<void> = Promise.resolve();
  const stopped = () => options.signal?.aborted === true;
  const wanted = () => options.isLeader() || mode === "degraded";
  const makeTrigger = (poll: boolean) =>
    createSyncTrigger({ source, ref: options.ref, pollIntervalMs: poll ? options.pollIntervalMs : 0, debounceMs: options.debounceMs, onOutcome: options.onOutcome, logger: log.child("trigger") });

  return {
    async firstSync() {
      try {
        await options.onOutcome(await source.sync());
      } catch (err) {
        // Will not fix itself: stop with what to fix, before anything listens. An unreachable server is retried.
        if (reactionOf(err) === Reaction.NeedsHuman) {
          throw new NeedsHumanError(
            `cannot start: the configuration repository ${options.name} (ref ${options.ref}): ${err instanceof Error ? err.message : String(err)}; fix --git-url / --git-local, --branch (${SERVER_ENV.gitBranch}) or ${credentialsHint(options.name)} and start again`,
            { cause: err },
          );
        }
        log.warn("first Git sync failed: the Git server could not be reached; retrying at every poll", { error: describeError(err), source: options.name, pollIntervalSeconds: options.pollIntervalMs / 1000 });
      }
    },
    start(pipelineMode) {
      mode = pipelineMode;
      polling = wanted();
      trigger = makeTrigger(polling);
      trigger.start();
    },
    reconcile(pipelineMode) {
      if (pipelineMode !== undefined) mode = pipelineMode;
      const want = wanted();
      if (stopped() || trigger === undefined || want === polling) return;
      polling = want;
      log.info(want ? "polling Git" : "not polling Git (the leader does)", { leader: options.isLeader(), pipeline: mode });
      swapping = swapping.then(async () => {
        await trigger?.stop();
        if (stopped()) return;
        trigger = makeTrigger(polling);
        trigger.start();
      });
    },
    hint: (push) => trigger?.hint(push) ?? "ignored",
    idle: () => trigger?.idle() ?? Promise.resolve(),
    polling: () => polling,
    status: () => source.status(),
    async stop() {
      await swapping;
      await trigger?.stop();
    },
  };
}

/** Which settings give access to `repository`: the SSH key and known_hosts, or the HTTP credentials. */
function credentialsHint(repository: string): string {
  return isSshUrl(repository)
    ? `the SSH key and known_hosts (${SERVER_ENV.gitSshKeyFile}, ${SERVER_ENV.gitSshKeyPassphrase}, ${SERVER_ENV.gitSshKnownHostsFile})`
    : `the Git credentials (${SERVER_ENV.gitUsername}, ${SERVER_ENV.gitPassword})`;
}
