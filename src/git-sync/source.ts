/**
 * A Git source of desired state: fetch (remote over smart HTTP, or read a local repository's
 * object store), diff the new commit's tree against the last good one, and hand only the changed
 * files to the loader. A commit whose files produce error diagnostics is rejected: the last good
 * state stays in force and the rejection is kept for status and logs.
 */
import * as nodeFs from "node:fs";
import { join } from "node:path";
import * as git from "isomorphic-git";
import type { FsClient, GitAuth, HttpClient } from "isomorphic-git";
import { formatDiagnostic, hasErrors, Severity, stripCredentials, sortDiagnostics, describeError, type Diagnostic, type Logger } from "../core/index.js";
import { classifyGitError, CommitNotYetVisibleError, GitRefNotFoundError, GitTransportError } from "./errors.js";
import { diffTrees, hasObject as hasStoredObject, listBlobs, openObjectStore, peelToCommit, readBlobContent, readCommitSummary, readRawCommit, subtreeOid, type BlobEntry, type CommitSummary, type ObjectStore, type PathFilter } from "./objects.js";
import { withBackoff, type BackoffOptions } from "./retry.js";
import { splitSignedCommit, type CommitVerifier } from "./signatures.js";
import { idleTimeoutsOf } from "./http-client.js";
import { type GitCredentials } from "./credentials.js";
import { openRemote, type SshRemoteOptions } from "./remote.js";
import { fetchFirstPack } from "./pack-fetch.js";

export { splitCredentials, type GitCredentials } from "./credentials.js";

/** A file handed to the loader; structurally a `SourceFile` of src/config. */
export interface GitSourceFile {
  /** POSIX path relative to the source's sub-path (the configuration root, where `gitmesh.yaml` lives). */
  readonly path: string;
  readonly content: Uint8Array;
}

/** The part of src/config that git-sync drives; `configLoader` wires the real one. */
export interface DesiredStateLoader<S> {
  load(files: readonly GitSourceFile[]): { readonly state: S; readonly diagnostics: readonly Diagnostic[] };
  update(
    prev: S,
    changed: readonly GitSourceFile[],
    removedPaths: readonly string[],
  ): { readonly state: S; readonly diagnostics: readonly Diagnostic[]; readonly changedKeys: ReadonlySet<string> };
}

export type GitLocation =
  | {
      readonly kind: "remote";
      /**
       * http(s) URL (credentials inside it are moved to `auth` and never logged), or an SSH URL:
       * `ssh://[user@]host[:port]/path` or `[user@]host:path` (`git@github.com:org/repo.git`), which needs `ssh`.
       */
      readonly url: string;
      readonly auth?: GitCredentials;
      /** Private key and known_hosts for an SSH URL (ignored for http(s)). */
      readonly ssh?: SshRemoteOptions;
      /** Bare repository used as the local object cache (created when missing); one per source. */
      readonly cacheDir: string;
      /** History depth of the first fetch (default 1: only the tip; `null` = full history). Later fetches are incremental. */
      readonly depth?: number | null;
    }
  | {
      readonly kind: "local";
      /** A repository (its `.git` is used) or a bare repository, read in place. */
      readonly path: string;
    };

export interface GitSourceOptions<S> {
  readonly location: GitLocation;
  /** Branch, tag or full commit SHA (default `main`). Pinning a SHA needs `uploadpack.allowReachableSHA1InWant` on the server. */
  readonly ref?: string;
  /** Only files below this directory are read (default: the whole repository). It is the configuration root: paths handed to the loader (and so diagnostic file names) are relative to it. */
  readonly subPath?: string;
  /** Which files are configuration (default: `*.yaml` and `*.yml`). */
  readonly include?: PathFilter;
  readonly loader: DesiredStateLoader<S>;
  readonly logger: Logger;
  /** Retry policy for fetches (defaults of `withBackoff`: 5 attempts from 500 ms). */
  readonly retry?: BackoffOptions;
  /** File system and HTTP client for isomorphic-git (defaults: node:fs, isomorphic-git/http/node with an idle timeout: http-client.ts). An SSH URL uses the SSH transport instead of `http`. */
  readonly fs?: FsClient;
  readonly http?: HttpClient;
  readonly now?: () => number;
  /** Only commits signed by a trusted key come into force (`--verify-commits`); others are rejected. */
  readonly verifier?: CommitVerifier;
}

export interface SyncHint {
  /** The commit a webhook announced for our ref; fetched exactly when the branch tip does not contain it yet. */
  readonly sha?: string;
}

export interface Rejection {
  readonly commit: string;
  readonly ref: string;
  /** The source's sub-path; diagnostic file paths are relative to it. */
  readonly subPath: string;
  /** Commit time (ISO 8601). */
  readonly committedAt: string;
  readonly rejectedAt: string;
  /** Error (and other) diagnostics with file and line, sorted. */
  readonly diagnostics: readonly Diagnostic[];
}

export type SyncOutcome<S> =
  | {
      readonly kind: "updated";
      readonly commit: CommitSummary;
      readonly state: S;
      /** True on the first load (every object is new); otherwise only `changedKeys` changed. */
      readonly full: boolean;
      readonly changedKeys: ReadonlySet<string>;
      /** Files read and handed to the loader, and files that disappeared. */
      readonly parsedPaths: readonly string[];
      readonly removedPaths: readonly string[];
      readonly diagnostics: readonly Diagnostic[];
    }
  | { readonly kind: "unchanged"; readonly commit: CommitSummary; readonly state: S }
  | { readonly kind: "rejected"; readonly commit: CommitSummary; readonly rejection: Rejection; readonly state: S | undefined };

export interface GitSourceStatus {
  /** URL without credentials, or local path. */
  readonly source: string;
  readonly ref: string;
  readonly subPath: string;
  readonly lastGood?: { readonly commit: string; readonly committedAt: string; readonly syncedAt: string };
  /** The newest rejected commit, cleared when a later commit is accepted. */
  readonly rejection?: Rejection;
  /** The last infrastructure failure (fetch), cleared by the next successful sync. */
  readonly lastError?: { readonly code: string; readonly message: string; readonly at: string };
}

export interface GitSource<S> {
  /** Fetches and applies the newest commit of the ref; calls are serialised. Throws only infrastructure errors (after retries). */
  sync(hint?: SyncHint): Promise<SyncOutcome<S>>;
  /** Last accepted state and commit, if any. */
  current(): { readonly state: S; readonly commit: CommitSummary } | undefined;
  status(): GitSourceStatus;
}

/** Diagnostic codes produced by git-sync itself. */
export const GitSyncCode = {
  SubPathMissing: "GIT_SUBPATH_MISSING",
  /** --verify-commits: the commit is unsigned, or signed by a key that is not trusted. */
  UntrustedCommit: "UNTRUSTED_COMMIT",
} as const;

export const defaultInclude: PathFilter = (path) => /\.ya?ml$/i.test(path);

interface Good<S> {
  readonly state: S;
  readonly commit: CommitSummary;
  /** Tree at the sub-path (undefined only if it never existed — then the commit was rejected). */
  readonly tree: string;
  readonly syncedAt: string;
}

export function createGitSource<S>(options: GitSourceOptions<S>): GitSource<S> {
  const fs = options.fs ?? nodeFs;
  const ref = options.ref ?? "main";
  const subPath = (options.subPath ?? "").replace(/^\/+|\/+$/g, "");
  const include = options.include ?? defaultInclude;
  const now = options.now ?? Date.now;
  const log = options.logger;
  const loc = options.location;
  const remote = loc.kind === "remote" ? openRemote({ url: loc.url, auth: loc.auth, ssh: loc.ssh, http: options.http, logger: log }) : undefined;
  const http = remote?.http;
  const gitdir = loc.kind === "remote" ? loc.cacheDir : resolveGitdir(loc.path);
  const store: ObjectStore = openObjectStore(fs, gitdir);
  const sourceName = remote ? remote.name : gitdir;

  let good: Good<S> | undefined;
  let rejection: Rejection | undefined;
  let lastError: GitSourceStatus["lastError"];
  let chain: Promise<unknown> = Promise.resolve();
  let initialised = false;

  const credentials = remote?.auth;
  const onAuth = credentials ? (): GitAuth => credentials : undefined;
  const onAuthFailure = (): GitAuth => ({ cancel: true });

  const hasObject = (oid: string) => hasStoredObject(store, oid);

  const fetchRef = async (want: string): Promise<string | undefined> => {
    if (!remote || !http || loc.kind !== "remote") throw new Error("fetch on a local source");
    if (!initialised) {
      if (!nodeFs.existsSync(join(gitdir, "HEAD"))) await git.init({ fs, gitdir, bare: true });
      await git.addRemote({ fs, gitdir, remote: "origin", url: remote.url, force: true });
      initialised = true;
    }
    // Depth limits the first fetch only: later fetches send our tip as "have" and get exactly the
    // commits since (a depth-1 re-fetch would make git resend the whole tree).
    const localRef = want.startsWith("refs/") ? want : `refs/heads/${want}`;
    const haveTip = !isSha(want) && (await git.resolveRef({ fs, gitdir, ref: localRef }).then(() => true, () => false));
    const depth = haveTip ? null : loc.depth === undefined ? 1 : loc.depth;
    return withBackoff(
      async () => {
        try {
          if (!haveTip && !isSha(want)) {
            // Nothing to negotiate: stream the pack to disk and index it natively (pack-fetch.ts).
            const first = await fetchFirstPack({ http, url: remote.url, gitdir, ref: want, depth, auth: credentials, onObject: (oid, obj) => store.reader.remember(oid, obj) });
            if (first === undefined) return undefined;
            await git.writeRef({ fs, gitdir, ref: localRef, value: first.oid, force: true });
            return first.oid;
          }
          const res = await git.fetch({
            fs,
            http,
            gitdir,
            url: remote.url,
            ref: want,
            singleBranch: true,
            tags: false,
            cache: store.cache,
            ...(depth === null ? {} : { depth }),
            ...(onAuth ? { onAuth } : {}),
            onAuthFailure,
          });
          if (res.fetchHead && !isSha(want)) {
            // isomorphic-git offers only `refs/heads/<ref>` (not refs/remotes/origin/*) as "have" in
            // the next fetch; without this, every fetch would download the whole tree again.
            await git.writeRef({ fs, gitdir, ref: localRef, value: res.fetchHead, force: true });
          }
          return res.fetchHead ?? undefined;
        } catch (err) {
          throw classifyGitError(err, `fetching ${want} from ${remote.name}`);
        }
      },
      {
        ...options.retry,
        onRetry: (err, attempt, delayMs) =>
          log.warn("fetch failed, retrying", { source: sourceName, ref: want, attempt, delayMs, error: describeError(err) }),
      },
    );
  };

  /** The commit to sync to: remote → fetch; local → resolve. */
  const resolveTarget = async (hint: SyncHint): Promise<string> => {
    if (!remote || !http) {
      try {
        return await peelToCommit(store, await git.resolveRef({ fs, gitdir, ref }));
      } catch (err) {
        throw new GitRefNotFoundError(`ref ${ref} not found in ${gitdir}: ${describeError(err)}`, { cause: err });
      }
    }
    if (isSha(ref)) {
      if (!(await hasObject(ref))) await fetchRef(ref);
      // A commit the server does not have comes back as an empty fetch, not an error.
      if (!(await hasObject(ref))) throw new GitRefNotFoundError(`commit ${ref} is not served by ${remote.name}`);
      return peelToCommit(store, ref);
    }
    const wanted = hint.sha?.toLowerCase();
    if (wanted !== undefined && good?.commit.oid === wanted) return wanted;
    const before = idleTimeoutsOf(http).count;
    const fetched = await fetchRef(ref);
    // An advertisement cut short by the idle timeout reads as "no refs": say what happened.
    const stalled = idleTimeoutsOf(http);
    if (fetched === undefined && stalled.count > before && stalled.last !== undefined) throw new GitTransportError(`fetching ${ref} from ${remote.name}: ${stalled.last.message}`, { cause: stalled.last });
    if (fetched === undefined) throw new GitRefNotFoundError(`${remote.name} is empty; push a commit to ${ref}`);
    const tip = await peelToCommit(store, fetched);
    if (wanted === undefined || wanted === tip) return tip;
    // The webhook named a commit that the branch tip we got is not: either the tip is already newer,
    // or the server we asked lags behind the webhook (Fleet #4837). Fetch exactly the announced SHA.
    if (!(await hasObject(wanted))) {
      try {
        await fetchRef(wanted);
      } catch {
        // servers without allowReachableSHA1InWant refuse; treat like lag
      }
      if (!(await hasObject(wanted))) {
        throw new CommitNotYetVisibleError(`commit ${wanted} announced for ${ref} is not served by ${remote.name} yet`, 2_000);
      }
    }
    // Only a commit reachable from the followed branch's tip may come into force: a hint (even a
    // signed one) naming a commit of another branch must not. The tip contains the hint: take the tip
    // (it is newer). The hint is newer than the tip we got: the server lags; retry until the branch
    // holds it. Neither: the hint names a commit off the branch — ignore it, keep the tip.
    const descends = (oid: string, ancestor: string) => git.isDescendent({ fs, gitdir, oid, ancestor, depth: -1, cache: store.cache }).catch(() => false);
    if (await descends(tip, wanted)) return tip;
    if (await descends(wanted, tip)) {
      throw new CommitNotYetVisibleError(`commit ${wanted} announced for ${ref} is not on the tip of ${ref} at ${remote.name} yet (the tip is ${tip})`, 2_000);
    }
    log.warn("a push hint named a commit that is not on the followed branch; it is ignored and the branch tip stays", { ref, hint: wanted, tip });
    return tip;
  };

  const readFiles = async (entries: readonly BlobEntry[]): Promise<GitSourceFile[]> =>
    Promise.all(entries.map(async (e) => ({ path: e.path, content: await readBlobContent(store, e.oid) })));

  const iso = (ms: number) => new Date(ms).toISOString();

  const reject = (commit: CommitSummary, diagnostics: readonly Diagnostic[]): SyncOutcome<S> => {
    const sorted = sortDiagnostics(diagnostics);
    rejection = { commit: commit.oid, ref, subPath, committedAt: iso(commit.timestamp * 1000), rejectedAt: iso(now()), diagnostics: sorted };
    const errors = sorted.filter((d) => d.severity === Severity.Error);
    log.warn("commit rejected; the last good desired state stays in force", {
      source: sourceName,
      ref,
      commit: commit.oid,
      lastGood: good?.commit.oid,
      errorCount: errors.length,
      errors: errors.slice(0, 20).map(formatDiagnostic),
    });
    return { kind: "rejected", commit, rejection, state: good?.state };
  };

  const doSync = async (hint: SyncHint): Promise<SyncOutcome<S>> => {
    let target: string;
    try {
      target = await resolveTarget(hint);
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      lastError = { code: (e as { code?: string }).code ?? e.name, message: stripCredentials(e.message), at: iso(now()) };
      log.error("sync failed", { source: sourceName, ref, error: stripCredentials(describeError(err)) });
      throw err;
    }
    lastError = undefined;
    const commit = await readCommitSummary(store, target);
    if (good && good.commit.oid === target) return { kind: "unchanged", commit, state: good.state };
    if (rejection?.commit === target) return { kind: "rejected", commit, rejection, state: good?.state };
    if (options.verifier) {
      const { payload, signature } = splitSignedCommit(readRawCommit(store, target));
      const verdict = await options.verifier.verify(payload, signature);
      if (!verdict.ok) {
        return reject(commit, [
          {
            code: GitSyncCode.UntrustedCommit,
            severity: Severity.Error,
            message: `commit ${target.slice(0, 12)} is not trusted: ${verdict.reason}; the last verified commit stays in force — sign commits with a key the server trusts (${options.verifier.describe})`,
          },
        ]);
      }
      log.info("commit signature verified", { commit: target, signer: verdict.signer });
    }

    const tree = await subtreeOid(store, commit.tree, subPath);
    if (tree === undefined) {
      return reject(commit, [
        {
          code: GitSyncCode.SubPathMissing,
          severity: Severity.Error,
          message: `the configured sub-path "${subPath}" does not exist in commit ${commit.oid}; restore it or change the source's subPath`,
        },
      ]);
    }
    const untouched = (g: Good<S>): SyncOutcome<S> => {
      good = { ...g, commit, tree, syncedAt: iso(now()) };
      rejection = undefined;
      log.debug("commit does not touch the configuration", { commit: commit.oid });
      return { kind: "unchanged", commit, state: g.state };
    };
    if (good && good.tree === tree) return untouched(good);

    if (!good) {
      const entries = await listBlobs(store, tree, "", include);
      const files = await readFiles(entries);
      const { state, diagnostics } = options.loader.load(files);
      if (hasErrors(diagnostics)) return reject(commit, diagnostics);
      good = { state, commit, tree, syncedAt: iso(now()) };
      rejection = undefined;
      log.info("desired state loaded", { source: sourceName, ref, commit: commit.oid, files: files.length });
      return { kind: "updated", commit, state, full: true, changedKeys: new Set(), parsedPaths: entries.map((e) => e.path), removedPaths: [], diagnostics };
    }

    const diff = await diffTrees(store, good.tree, tree, "", include);
    if (diff.changed.length === 0 && diff.removed.length === 0) return untouched(good);
    const files = await readFiles(diff.changed);
    const { state, diagnostics, changedKeys } = options.loader.update(good.state, files, diff.removed);
    if (hasErrors(diagnostics)) return reject(commit, diagnostics);
    good = { state, commit, tree, syncedAt: iso(now()) };
    rejection = undefined;
    log.info("desired state updated", {
      source: sourceName,
      ref,
      commit: commit.oid,
      changedFiles: diff.changed.length,
      removedFiles: diff.removed.length,
      changedObjects: changedKeys.size,
    });
    return {
      kind: "updated",
      commit,
      state,
      full: false,
      changedKeys,
      parsedPaths: diff.changed.map((e) => e.path),
      removedPaths: diff.removed,
      diagnostics,
    };
  };

  return {
    sync(hint = {}) {
      // Objects a first fetch handed to the reader and this sync did not read are not kept past it.
      const run = chain.then(() => doSync(hint)).finally(() => store.reader.forgetRemembered());
      chain = run.catch(() => undefined);
      return run;
    },
    current: () => (good ? { state: good.state, commit: good.commit } : undefined),
    status: () => ({
      source: sourceName,
      ref,
      subPath,
      ...(good ? { lastGood: { commit: good.commit.oid, committedAt: iso(good.commit.timestamp * 1000), syncedAt: good.syncedAt } } : {}),
      ...(rejection ? { rejection } : {}),
      ...(lastError ? { lastError } : {}),
    }),
  };
}

function isSha(ref: string): boolean {
  return /^[0-9a-f]{40}$/i.test(ref);
}

function resolveGitdir(path: string): string {
  const dotGit = join(path, ".git");
  return nodeFs.existsSync(dotGit) && nodeFs.statSync(dotGit).isDirectory() ? dotGit : path;
}

export interface RevisionFilesOptions {
  readonly location: GitLocation;
  readonly ref: string;
  readonly subPath?: string;
  readonly include?: PathFilter;
  readonly logger: Logger;
  readonly retry?: BackoffOptions;
  /** HTTP client for a remote location (default: isomorphic-git's, with an idle timeout). */
  readonly http?: HttpClient;
}

/** Every configuration file of one revision (for `gitmesh diff` and offline tools), read from the object store. */
export async function readRevisionFiles(options: RevisionFilesOptions): Promise<{ commit: CommitSummary; files: readonly GitSourceFile[] }> {
  let captured: readonly GitSourceFile[] = [];
  const capture: DesiredStateLoader<null> = {
    load: (files) => {
      captured = files;
      return { state: null, diagnostics: [] };
    },
    update: () => ({ state: null, diagnostics: [], changedKeys: new Set() }),
  };
  const source = createGitSource({
    location: options.location,
    ref: options.ref,
    loader: capture,
    logger: options.logger,
    ...(options.subPath === undefined ? {} : { subPath: options.subPath }),
    ...(options.include === undefined ? {} : { include: options.include }),
    ...(options.retry === undefined ? {} : { retry: options.retry }),
    ...(options.http === undefined ? {} : { http: options.http }),
  });
  const outcome = await source.sync();
  if (outcome.kind === "rejected") {
    throw new GitRefNotFoundError(`${options.ref}: ${outcome.rejection.diagnostics.map((d) => d.message).join("; ")}`);
  }
  return { commit: outcome.commit, files: captured };
}
