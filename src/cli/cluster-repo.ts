/**
 * Edits one file of the configuration repository for `gitmesh cluster register/deregister`: a
 * remote over smart HTTP (fetched at depth 1 into a temporary bare repository, one commit made on
 * the branch tip, pushed; a push that loses a race is redone on the new tip) or a local repository
 * (bare, or a work tree whose checked-out branch also gets the file and the index updated).
 * Commits are built from objects with git-sync's tree writer (the audit branch's), so no work tree is
 * needed for remotes.
 */
import * as nodeFs from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, posix, resolve } from "node:path";
import git, { Errors, type GitAuth } from "isomorphic-git";
import { createTreeWriter, openObjectStore, withIdleTimeout } from "../git-sync/index.js";

/** isomorphic-git's HTTP client with an idle timeout: a Git server that stops answering fails the command instead of hanging it. */
const http = withIdleTimeout();

export interface RepoAuthor {
  readonly name: string;
  readonly email: string;
}

export interface ConfigRepoTarget {
  /** `http(s)://…` (credentials taken out of the URL) or a local path (bare repository or work tree). */
  readonly location: string;
  readonly branch: string;
  /** HTTP basic credentials (a token is the password). */
  readonly auth?: GitAuth;
  readonly author: RepoAuthor;
}

/** What `editRepoFile` found and did. */
export interface RepoEditResult {
  /** The file's content at the branch tip before the edit (undefined when absent). */
  readonly before: string | undefined;
  /** The commit made, or undefined when the edit changed nothing (or on a dry run). */
  readonly commit: string | undefined;
  /** The content of the repository's gitmesh.yaml at the tip, when present. */
  readonly settings: string | undefined;
}

/**
 * Decides the new content from the current one: a string writes it, null deletes the file,
 * undefined leaves the repository unchanged. It may throw to refuse (e.g. a foreign file).
 */
export type RepoEdit = (current: string | undefined, settings: string | undefined) => string | null | undefined;

export const isRemoteLocation = (location: string): boolean => /^https?:\/\//i.test(location);

const PUSH_ATTEMPTS = 3;
const fs = nodeFs;

export async function editRepoFile(target: ConfigRepoTarget, path: string, message: string, edit: RepoEdit, options: { dryRun?: boolean } = {}): Promise<RepoEditResult> {
  return isRemoteLocation(target.location) ? editRemote(target, path, message, edit, options.dryRun === true) : editLocal(target, path, message, edit, options.dryRun === true);
}

async function editRemote(target: ConfigRepoTarget, path: string, message: string, edit: RepoEdit, dryRun: boolean): Promise<RepoEditResult> {
  const gitdir = await mkdtemp(join(tmpdir(), "gitmesh-cluster-"));
  const auth = target.auth;
  const onAuth = auth ? (): GitAuth => auth : undefined;
  const onAuthFailure = (): GitAuth => ({ cancel: true });
  const ref = `refs/heads/${target.branch}`;
  try {
    await git.init({ fs, gitdir, bare: true, defaultBranch: target.branch });
    await git.addRemote({ fs, gitdir, remote: "origin", url: target.location });
    for (let attempt = 1; ; attempt++) {
      let tip: string | undefined;
      try {
        const fetched = await git.fetch({ fs, http, gitdir, remote: "origin", ref: target.branch, singleBranch: true, depth: 1, tags: false, ...(onAuth ? { onAuth } : {}), onAuthFailure });
        tip = fetched.fetchHead ?? undefined;
      } catch (err) {
        throw explainGitError(err, `fetching branch ${target.branch}`);
      }
      if (tip === undefined) throw new Error(`branch ${target.branch} not found in the configuration repository`);
      const result = await editAt(gitdir, tip, path, message, edit, target.author, dryRun);
      if (result.commit === undefined) return result;
      await git.writeRef({ fs, gitdir, ref, value: result.commit, force: true });
      try {
        const pushed = await git.push({ fs, http, gitdir, remote: "origin", ref, remoteRef: ref, ...(onAuth ? { onAuth } : {}), onAuthFailure });
        const status = pushed.refs[ref];
        if (!pushed.ok || (status !== undefined && !status.ok)) throw new Error(`push refused by the server: ${status?.error ?? pushed.error ?? "unknown reason"}`);
        return result;
      } catch (err) {
        // Someone pushed in between: redo the edit on the new tip.
        if (err instanceof Errors.PushRejectedError && attempt < PUSH_ATTEMPTS) continue;
        throw explainGitError(err, `pushing to branch ${target.branch}`);
      }
    }
  } finally {
    await rm(gitdir, { recursive: true, force: true });
  }
}

async function editLocal(target: ConfigRepoTarget, path: string, message: string, edit: RepoEdit, dryRun: boolean): Promise<RepoEditResult> {
  const root = resolve(target.location);
  const workTree = fs.existsSync(join(root, ".git"));
  const gitdir = workTree ? join(root, ".git") : root;
  if (!fs.existsSync(join(gitdir, "HEAD"))) throw new Error(`${root} is not a Git repository (no .git directory, not a bare repository)`);
  const ref = `refs/heads/${target.branch}`;
  const tip = await git.resolveRef({ fs, gitdir, ref }).catch(() => undefined);
  if (tip === undefined) throw new Error(`branch ${target.branch} not found in ${root}`);
  const result = await editAt(gitdir, tip, path, message, edit, target.author, dryRun);
  if (result.commit === undefined) return result;
  // A compare-and-swap on the branch: refuse when it moved while the commit was built.
  const now = await git.resolveRef({ fs, gitdir, ref });
  if (now !== tip) throw new Error(`branch ${target.branch} in ${root} moved while committing; run the command again`);
  await git.writeRef({ fs, gitdir, ref, value: result.commit, force: true });
  if (workTree && (await git.currentBranch({ fs, gitdir })) === target.branch) {
    // Keep the checked-out work tree and index in step with the new commit for this one path.
    const file = join(root, ...path.split("/"));
    const content = await readAt(gitdir, result.commit, path);
    if (content === undefined) {
      await rm(file, { force: true });
      await git.remove({ fs, dir: root, gitdir, filepath: path });
    } else {
      fs.mkdirSync(dirname(file), { recursive: true });
      fs.writeFileSync(file, content);
      await git.add({ fs, dir: root, gitdir, filepath: path });
    }
  }
  return result;
}

async function readAt(gitdir: string, commit: string, path: string): Promise<string | undefined> {
  try {
    const { blob } = await git.readBlob({ fs, gitdir, oid: commit, filepath: path });
    return Buffer.from(blob).toString("utf8");
  } catch (err) {
    if (err instanceof Errors.NotFoundError) return undefined;
    throw err;
  }
}

async function editAt(gitdir: string, tip: string, path: string, message: string, edit: RepoEdit, author: RepoAuthor, dryRun: boolean): Promise<RepoEditResult> {
  const before = await readAt(gitdir, tip, path);
  const settings = await readAt(gitdir, tip, "gitmesh.yaml");
  const after = edit(before, settings);
  if (after === undefined || after === before || (after === null && before === undefined) || dryRun) return { before, commit: undefined, settings };
  const { tree: rootTree } = await git.readCommit({ fs, gitdir, oid: tip }).then((c) => c.commit);
  const trees = createTreeWriter(openObjectStore(fs, gitdir));
  const edited = await trees.edit(rootTree, new Map([[path, after === null ? null : Buffer.from(after, "utf8")]]));
  if (edited.skipped.length > 0) throw new Error(`${path} is not a file in the repository (a directory or a submodule is in the way); nothing committed`);
  const when = { timestamp: Math.floor(Date.now() / 1000), timezoneOffset: 0 };
  const commit = await trees.writeCommit({ tree: edited.tree ?? trees.writeTree([]), parents: [tip], author: { ...author, ...when }, message });
  return { before, commit, settings };
}

function explainGitError(err: unknown, doing: string): Error {
  if (err instanceof Errors.HttpError) {
    const status = err.data.statusCode;
    if (status === 401 || status === 403) {
      return new Error(`${doing}: the Git server refused the credentials (HTTP ${String(status)}); set GITMESH_GIT_USERNAME and GITMESH_GIT_PASSWORD (a token works as the password)`);
    }
    return new Error(`${doing}: HTTP ${String(status)} ${err.data.statusMessage}`);
  }
  if (err instanceof Errors.UserCanceledError) {
    return new Error(`${doing}: the Git server refused the credentials; set GITMESH_GIT_USERNAME and GITMESH_GIT_PASSWORD (a token works as the password)`);
  }
  const message = err instanceof Error ? err.message : String(err);
  return new Error(`${doing}: ${message}`);
}

/** Repository-relative path of a cluster's file. */
export const clusterFilePath = (name: string): string => posix.join("clusters", `${name}.yaml`);
