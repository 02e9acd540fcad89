/**
 * The audit branch writer: commits the rendered output of every cluster and the compact discovery
 * each cluster reported to a branch (default `gitmesh/rendered`), so every rendered change is
 * reviewable and any commit can be re-rendered offline.
 *
 * Layout: `clusters/<cluster>/<namespace>/<kind>/<name>.yaml` (kind lower-cased, as `gitmesh render --out`) (cluster-scoped objects use the
 * namespace folder `_cluster`) and `discovery/<cluster>.yaml`, each one canonical YAML document.
 *
 * Rules:
 * - one commit per write that changes any output; nothing when the tree is unchanged;
 * - the new tree is built from the old one: only changed blobs and the trees above them are written;
 * - deterministic: same branch tip + same inputs ⇒ same tree and the same commit. The author and
 *   committer are a fixed, configurable identity and the commit time is the `timestamp` of the input
 *   (the source commit's committer time), in UTC, so re-running a render reproduces the commit;
 * - only generated files are touched: the paths written are listed in `.gitmesh/generated-files`
 *   on the branch; a path is deleted or rewritten only if that list names it, so READMEs, CI config
 *   or hand-written files (even under `clusters/`) survive, and a hand-written file at a path we
 *   would generate is left alone and reported in `skipped`;
 * - push races: when the branch moved (non-fast-forward, or another writer won the ref lock), the
 *   commit is rebuilt on the new tip and published again, up to `maxAttempts` times;
 * - one pack per commit: the new blobs, trees and the commit are deflated and hashed once, into a pack
 *   (pack.ts) written to the repository's `objects/pack`; a remote gets those same bytes through
 *   receive-pack (receive-pack.ts), the update conditional on the tip the commit was built on.
 */
import { createHash } from "node:crypto";
import * as nodeFs from "node:fs";
import { dirname, join } from "node:path";
import * as git from "isomorphic-git";
import type { FsClient, GitAuth, HttpClient } from "isomorphic-git";
import { canonicalJson, canonicalYaml, describeError, type Logger } from "../core/index.js";
import { AuditPushConflictError, classifyGitError } from "./errors.js";
import { hasObject, openObjectStore, readBlobContent, readTreeEntries, type ObjectStore, type TreeEntry } from "./objects.js";
import { withBackoff, type BackoffOptions } from "./retry.js";
import { createTreeWriter, pacer, type PathChange } from "./tree-writer.js";
import { createPackBuilder, writePack, type BuiltPack } from "./pack.js";
import { advertisedRefs, PackPushRejectedError, pushPack, type Advertisement } from "./receive-pack.js";
import { consolidatePacks } from "./pack-consolidate.js";
import { createObjectReader } from "./object-reader.js";
import type { GitCredentials } from "./credentials.js";
import { openRemote, type SshRemoteOptions } from "./remote.js";
import { createReadSyncFs } from "./read-sync-fs.js";

/** A rendered Kubernetes object (plain data; translate's IstioResource fits). Serialised whole. */
export interface RenderedResource {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string | undefined;
    readonly labels?: Readonly<Record<string, string>> | undefined;
    readonly annotations?: Readonly<Record<string, string>> | undefined;
  };
  readonly spec?: unknown;
}

export type AuditTarget =
  | { readonly kind: "local"; /** Repository (its `.git`) or bare repository; the branch is updated in place. */ readonly path: string }
  | {
      readonly kind: "remote";
      /** http(s) or SSH URL (`ssh://…`, `git@host:org/repo.git`; then `ssh` is needed). */
      readonly url: string;
      readonly auth?: GitCredentials;
      /** Private key and known_hosts for an SSH URL; the key needs write access. */
      readonly ssh?: SshRemoteOptions;
      /** Bare repository used to build commits before pushing (created when missing). */
      readonly cacheDir: string;
    };

export interface AuditIdentity {
  readonly name: string;
  readonly email: string;
}

export interface AuditWriterOptions {
  readonly target: AuditTarget;
  /** Default `gitmesh/rendered`. */
  readonly branch?: string;
  /** Author and committer (default `gitmesh <gitmesh@localhost>`). */
  readonly identity?: AuditIdentity;
  /** Attempts when the branch moves under us (default 5). */
  readonly maxAttempts?: number;
  /** Transport retries for fetch/push (see withBackoff). */
  readonly retry?: BackoffOptions;
  readonly logger: Logger;
  /** Default: node:fs with synchronous reads (read-sync-fs.ts). */
  readonly fs?: FsClient;
  readonly http?: HttpClient;
  /** More packs than this in the writer's repository merge the small ones (pack-consolidate.ts; default 32). */
  readonly packLimit?: number;
}

export interface AuditInput {
  /**
   * The complete rendered output per cluster. A cluster missing here loses its generated files.
   * Objects are treated as immutable: their YAML is cached per object between writes.
   */
  readonly clusters: ReadonlyMap<string, readonly RenderedResource[]>;
  /** The compact discovery snapshot per cluster. */
  readonly discovery: ReadonlyMap<string, unknown>;
  readonly sourceCommit: string;
  /** e.g. `refs/heads/main`. */
  readonly sourceRef: string;
  /** Unix seconds used as author and committer time: the source commit's committer time. */
  readonly timestamp: number;
  /**
   * What a diff needs of this render besides its output (translate's `renderRecord`: fragments' clusters
   * and diagnostics per workspace, diagnostics per cluster), plain JSON. Written with a digest of each
   * cluster's discovery to `.gitmesh/render.json`, where `gitmesh diff` and `/api/diff` read it instead of
   * translating a base commit again (stored-render.ts). Absent: no such file (and a diff translates).
   */
  readonly render?: unknown;
}

export interface ClusterChange {
  readonly cluster: string;
  readonly added: number;
  readonly changed: number;
  readonly removed: number;
  /** True when `discovery/<cluster>.yaml` changed. */
  readonly discovery: boolean;
}

export interface AuditResult {
  /** The new commit, or undefined when the output was unchanged. */
  readonly commit: string | undefined;
  readonly tree: string;
  /** Clusters with any change, sorted. */
  readonly changes: readonly ClusterChange[];
  /** Paths we would have written but that hold a file we did not generate. */
  readonly skipped: readonly string[];
  readonly attempts: number;
}

export interface AuditWriter {
  write(input: AuditInput): Promise<AuditResult>;
}

export const MANIFEST_PATH = ".gitmesh/generated-files";
/** The record of the render a commit holds (AuditInput.render), for diffs from a stored base. */
export const RENDER_RECORD_PATH = ".gitmesh/render.json";
export const CLUSTER_SCOPED_DIR = "_cluster";
const ZERO = "0000000000000000000000000000000000000000";

/** Repository path of one rendered object; the same layout as `gitmesh render --out` (translate's `renderedPath`, kind lower-cased). */
export function renderedPath(cluster: string, r: RenderedResource): string {
  const ns = r.metadata.namespace !== undefined && r.metadata.namespace !== "" ? r.metadata.namespace : CLUSTER_SCOPED_DIR;
  return `clusters/${segment(cluster)}/${segment(ns)}/${segment(r.kind.toLowerCase())}/${segment(r.metadata.name)}.yaml`;
}

export function discoveryPath(cluster: string): string {
  return `discovery/${segment(cluster)}.yaml`;
}

/** A safe single path segment: no separators, no dot-only names. */
function segment(s: string): string {
  const clean = s.replace(/[^A-Za-z0-9._-]/g, "_");
  return /^\.*$/.test(clean) ? `_${clean}` : clean;
}

export function createAuditWriter(options: AuditWriterOptions): AuditWriter {
  // Reads of its own git directory synchronously underneath: a push reads every object it sends (read-sync-fs.ts).
  const fs = options.fs ?? createReadSyncFs();
  const branch = options.branch ?? "gitmesh/rendered";
  const fullRef = `refs/heads/${branch}`;
  const identity = options.identity ?? { name: "gitmesh", email: "gitmesh@localhost" };
  const maxAttempts = options.maxAttempts ?? 5;
  const log = options.logger;
  const target = options.target;
  const remote = target.kind === "remote" ? openRemote({ url: target.url, auth: target.auth, ssh: target.ssh, http: options.http, logger: log }) : undefined;
  const gitdir = target.kind === "remote" ? target.cacheDir : resolveGitdir(target.path);
  // The reader is replaced after packs were merged (the old one holds the deleted packs in memory).
  let reader = openObjectStore(fs, gitdir).reader;
  const store: ObjectStore = { fs, gitdir, cache: {}, get reader() { return reader; } };
  const trees = createTreeWriter(store);
  const credentials = remote?.auth;
  const auth = credentials ? { onAuth: (): GitAuth => credentials } : {};
  let initialised = false;
  /** What the last write committed (or found unchanged): the files by path, the paths owned and skipped. */
  let last: { readonly commit: string; readonly files: ReadonlyMap<string, Uint8Array>; readonly owned: ReadonlySet<string>; readonly skipped: readonly string[] } | undefined;
  /** The remote's receive-pack advertisement of the current attempt. */
  let listed: Advertisement | undefined;

  const transport = <T>(what: string, fn: (attempt: number) => Promise<T>): Promise<T> =>
    withBackoff(
      async (attempt) => {
        try {
          return await fn(attempt);
        } catch (err) {
          // the server's own refusal (ng from a hook, a protected branch) is not retried
          if (err instanceof PackPushRejectedError) throw err;
          throw classifyGitError(err, what);
        }
      },
      { ...options.retry, onRetry: (err, attempt, delayMs) => log.warn(`${what} failed, retrying`, { attempt, delayMs, error: describeError(err) }) },
    );

  /** The tree of a commit, read with our reader (isomorphic-git's would load a whole pack in JavaScript). */
  const treeOf = (commit: string): string => {
    const obj = store.reader.read(commit);
    const m = obj.type === "commit" ? /^tree ([0-9a-f]{40})$/m.exec(obj.content.subarray(0, 100).toString("latin1")) : null;
    if (!m) throw new Error(`audit branch tip ${commit} is not a commit`);
    return m[1]!;
  };

  /** Merges the small packs once they pile up (pack-consolidate.ts); a failure is logged, never fatal. */
  const consolidate = (): void => {
    try {
      const merged = consolidatePacks(gitdir, store.reader, options.packLimit);
      if (merged) {
        reader = createObjectReader(gitdir);
        log.info("audit repository: merged small packs", { branch, packs: merged.packs, objects: merged.objects });
      }
    } catch (err) {
      log.warn("audit repository: merging packs failed; left as they are", { error: describeError(err) });
    }
  };

  /** The current tip of the branch (fetched for a remote), or undefined when it does not exist yet. */
  const currentTip = async (): Promise<string | undefined> => {
    if (!remote) return resolveLocal(fs, gitdir, fullRef);
    if (!initialised) {
      if (!nodeFs.existsSync(join(gitdir, "HEAD"))) await git.init({ fs, gitdir, bare: true });
      await git.addRemote({ fs, gitdir, remote: "origin", url: remote.url, force: true });
      initialised = true;
    }
    const { http } = remote;
    // receive-pack's advertisement: the push that follows needs no second look (and the writer needs write access anyway)
    listed = await transport(`listing refs of ${remote.name}`, () => advertisedRefs(http, remote.url, remote.name, credentials));
    const tip = listed.refs.get(fullRef);
    if (tip === undefined) return undefined;
    // Usually the tip is our own last push; fetch only when another writer moved the branch.
    // (isomorphic-git's fetch needs the remote HEAD to name an existing branch.)
    if (!(await hasObject(store, tip))) {
      await transport(`fetching ${branch} from ${remote.name}`, () =>
        git.fetch({ fs, http, gitdir, url: remote.url, ref: branch, singleBranch: true, tags: false, depth: 1, cache: store.cache, onAuthFailure: () => ({ cancel: true }), ...auth }),
      );
    }
    return tip;
  };

  /**
   * Makes `commit` the branch tip if the tip is still `base`. Remote: the commit's pack, as written
   * locally, is pushed as the update `base → commit` (a moved branch is an answer, not a failure: the
   * caller rebuilds on the new tip; a cut connection is retried, and the retry first looks where the
   * branch is, so an update that landed is not pushed twice).
   */
  const publish = async (base: string | undefined, commit: string, pack: BuiltPack): Promise<boolean> => {
    if (!remote) return casRef(fullRef, base, commit);
    await git.writeRef({ fs, gitdir, ref: fullRef, value: commit, force: true });
    const { http } = remote;
    const outcome = await transport(`pushing ${branch} to ${remote.name}`, (attempt) =>
      pushPack({ http, url: remote.url, name: remote.name, auth: credentials, ref: fullRef, old: base, new: commit, pack: pack.pack, listed: attempt === 1 ? listed : undefined }),
    );
    return outcome.kind === "ok";
  };

  /** Compare-and-swap of a loose ref with git's own `<ref>.lock` protocol, so the git CLI and other writers cooperate. */
  const casRef = async (ref: string, expected: string | undefined, value: string): Promise<boolean> => {
    const refFile = join(gitdir, ref);
    const lock = `${refFile}.lock`;
    await nodeFs.promises.mkdir(dirname(refFile), { recursive: true });
    let handle: nodeFs.promises.FileHandle;
    try {
      handle = await nodeFs.promises.open(lock, "wx");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw err;
    }
    try {
      const current = await resolveLocal(fs, gitdir, ref);
      if (current !== expected) return false;
      await handle.writeFile(`${value}\n`);
      await handle.close();
      await nodeFs.promises.rename(lock, refFile);
      return true;
    } finally {
      await handle.close().catch(() => undefined);
      await nodeFs.promises.rm(lock, { force: true });
    }
  };

  /**
   * Serialised YAML, cached twice so that a write serialises only what changed (canonicalYaml is the
   * dominant cost of a write; a fleet-wide change touches one object of each cluster):
   * - per input object (identity): incremental translation hands the same objects again for unchanged
   *   resources. Objects must not be mutated after a write.
   * - per path, by a digest of the object's canonical JSON: outputs read back from the snapshot store
   *   are new objects on every read, with mostly the same content. The JSON of the canonical form
   *   decides the YAML (rendered objects and discovery snapshots are JSON data). Entries of paths no
   *   longer written are dropped with each write.
   */
  const serialised = new WeakMap<object, Uint8Array>();
  const byPath = new Map<string, { readonly digest: string; readonly bytes: Uint8Array }>();
  const yamlOf = (path: string, obj: unknown): Uint8Array => {
    if (typeof obj !== "object" || obj === null) return Buffer.from(canonicalYaml(obj));
    let bytes = serialised.get(obj);
    if (bytes) return bytes;
    const digest = createHash("sha256").update(canonicalJson(obj)).digest("base64");
    const known = byPath.get(path);
    if (known?.digest === digest) bytes = known.bytes;
    else byPath.set(path, { digest, bytes: (bytes = Buffer.from(canonicalYaml(obj))) });
    serialised.set(obj, bytes);
    return bytes;
  };

  const buildFiles = async (input: AuditInput): Promise<Map<string, Uint8Array>> => {
    const files = new Map<string, Uint8Array>();
    const pace = pacer();
    for (const [cluster, resources] of input.clusters) {
      for (const r of resources) {
        const path = renderedPath(cluster, r);
        files.set(path, yamlOf(path, r));
        await pace();
      }
    }
    for (const [cluster, snapshot] of input.discovery) {
      const path = discoveryPath(cluster);
      files.set(path, yamlOf(path, snapshot));
      await pace();
    }
    for (const path of byPath.keys()) if (!files.has(path)) byPath.delete(path);
    if (input.render !== undefined) files.set(RENDER_RECORD_PATH, renderRecordBytes(input.discovery, input.render));
    return files;
  };

  const readManifest = async (tree: string | undefined): Promise<Set<string>> => {
    if (tree === undefined) return new Set();
    let cur: string | undefined = tree;
    const parts = MANIFEST_PATH.split("/");
    for (const [i, part] of parts.entries()) {
      const entry: TreeEntry | undefined = (await readTreeEntries(store, cur)).find((e) => e.path === part);
      if (!entry) return new Set();
      if (i === parts.length - 1) {
        if (entry.type !== "blob") return new Set();
        const text = Buffer.from(await readBlobContent(store, entry.oid)).toString("utf8");
        return new Set(text.split("\n").filter((l) => l !== ""));
      }
      cur = entry.oid;
    }
    return new Set();
  };

  const attempt = async (input: AuditInput, files: ReadonlyMap<string, Uint8Array>, n: number): Promise<AuditResult | "race"> => {
    const base = await currentTip();
    const baseTree = base === undefined ? undefined : treeOf(base);
    // On our own last commit only the paths whose bytes are not the very bytes written then can have
    // changed (the YAML cache hands unchanged content back as the same buffer): a one-resource commit
    // of a large fleet walks one path, not all of them. Otherwise (first write, restart, another
    // writer moved the branch) every path is compared with the tree.
    const known = last !== undefined && base !== undefined && base === last.commit ? last : undefined;
    const managed = known ? known.owned : await readManifest(baseTree);
    const changes = new Map<string, Uint8Array | null>();
    if (known) {
      for (const [path, bytes] of files) if (known.files.get(path) !== bytes) changes.set(path, bytes);
      for (const path of known.files.keys()) if (!files.has(path)) changes.set(path, null);
    } else {
      for (const [path, bytes] of files) changes.set(path, bytes);
      for (const path of managed) if (!files.has(path)) changes.set(path, null);
    }
    // Every object this attempt makes goes into one pack: written once here, pushed as it is.
    const into = createPackBuilder();
    const first = await trees.edit(baseTree, changes, { owns: (path) => managed.has(path), into });
    // paths we would write that hold someone else's file (those not looked at again are still theirs)
    const skipped = new Set(first.skipped);
    if (known) for (const path of known.skipped) if (files.has(path) && !changes.has(path)) skipped.add(path);
    const skippedList = [...skipped].sort();
    // the manifest lists what we generated and still own; unchanged when the paths and the skipped ones are
    const samePaths = known !== undefined && files.size === known.files.size && skippedList.join("\n") === known.skipped.join("\n") && [...files.keys()].every((p) => known.files.has(p));
    const owned = samePaths ? known.owned : new Set([...files.keys()].filter((p) => !skipped.has(p)));
    let tree = first.tree;
    if (!samePaths) {
      const sorted = [...owned].sort();
      const manifest = sorted.length === 0 ? null : Buffer.from(sorted.join("\n") + "\n");
      tree = (await trees.edit(first.tree, new Map([[MANIFEST_PATH, manifest]]), { owns: (path) => path === MANIFEST_PATH, into })).tree;
    }
    tree ??= trees.writeTree([], into);
    const changesByCluster = summarise(first.status);
    const remember = (commit: string) => (last = { commit, files, owned, skipped: skippedList });
    if (tree === baseTree) {
      if (base !== undefined) remember(base);
      return { commit: undefined, tree, changes: [], skipped: skippedList, attempts: n };
    }
    const who = { ...identity, timestamp: input.timestamp, timezoneOffset: 0 };
    const commit = await trees.writeCommit({ tree, parents: base === undefined ? [] : [base], author: who, message: commitMessage(input, changesByCluster) }, into);
    // only what the commit reaches (the root tree the manifest edit replaced is left out)
    const pack = into.finish([commit]);
    writePack(gitdir, pack);
    if (!(await publish(base, commit, pack))) return "race";
    remember(commit);
    consolidate();
    return { commit, tree, changes: changesByCluster, skipped: skippedList, attempts: n };
  };

  return {
    async write(input) {
      const files = await buildFiles(input);
      for (let n = 1; n <= maxAttempts; n++) {
        const result = await attempt(input, files, n);
        if (result !== "race") {
          if (result.skipped.length > 0) log.warn("audit branch: paths hold files gitmesh did not generate; left alone", { branch, skipped: result.skipped.slice(0, 20) });
          if (result.commit !== undefined) {
            log.info("audit commit", { branch, commit: result.commit, sourceCommit: input.sourceCommit, clusters: result.changes.length, attempts: n });
          }
          return result;
        }
        log.info("audit branch moved; rebuilding on the new tip", { branch, attempt: n });
      }
      throw new AuditPushConflictError(`audit branch ${branch} kept moving; gave up after ${maxAttempts} attempts (the next write will try again)`);
    },
  };
}

export const RENDER_RECORD_FORMAT = 1;

/** The bytes of `.gitmesh/render.json`: the record and a digest of the discovery of each cluster it was rendered with. */
export function renderRecordBytes(discovery: ReadonlyMap<string, unknown>, render: unknown): Buffer {
  const digests: Record<string, string> = {};
  for (const [cluster, snapshot] of [...discovery].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) digests[cluster] = discoveryDigest(snapshot);
  // Plain JSON, not canonical: the diagnostics in it come back into reports with their keys in this order.
  return Buffer.from(JSON.stringify({ format: RENDER_RECORD_FORMAT, discovery: digests, render }) + "\n");
}

/** Digest of a discovery snapshot as a render used it (SHA-256 of its canonical JSON, hex). */
export function discoveryDigest(snapshot: unknown): string {
  return createHash("sha256").update(canonicalJson(snapshot)).digest("hex");
}

function summarise(status: ReadonlyMap<string, PathChange>): ClusterChange[] {
  const by = new Map<string, { added: number; changed: number; removed: number; discovery: boolean }>();
  const get = (c: string) => {
    let s = by.get(c);
    if (!s) by.set(c, (s = { added: 0, changed: 0, removed: 0, discovery: false }));
    return s;
  };
  for (const [path, st] of status) {
    const parts = path.split("/");
    if (parts[0] === "clusters" && parts[1] !== undefined) get(parts[1])[st]++;
    else if (parts[0] === "discovery" && parts[1] !== undefined) get(parts[1].replace(/\.yaml$/, "")).discovery = true;
  }
  return [...by.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([cluster, s]) => ({ cluster, ...s }));
}

/** Subject, one line per changed cluster (`+added ~changed -removed`, discovery), and the trailers. */
export function commitMessage(input: Pick<AuditInput, "sourceCommit" | "sourceRef">, changes: readonly ClusterChange[]): string {
  const short = input.sourceCommit.slice(0, 12);
  const ref = input.sourceRef.replace(/^refs\/heads\//, "");
  const rendered = changes.filter((c) => c.added + c.changed + c.removed > 0).length;
  const lines = changes.map((c) => {
    const parts: string[] = [];
    if (c.added + c.changed + c.removed > 0) parts.push(`+${c.added} ~${c.changed} -${c.removed}`);
    if (c.discovery) parts.push("discovery updated");
    return `${c.cluster}: ${parts.join(", ")}`;
  });
  const subject = rendered > 0 ? `Render ${short} (${ref}): ${rendered} cluster${rendered === 1 ? "" : "s"} changed` : `Discovery update at ${short} (${ref})`;
  return `${subject}\n\n${lines.join("\n")}\n\nSource-Commit: ${input.sourceCommit}\nSource-Ref: ${input.sourceRef}\n`;
}

async function resolveLocal(fs: FsClient, gitdir: string, ref: string): Promise<string | undefined> {
  try {
    const oid = await git.resolveRef({ fs, gitdir, ref });
    return oid === ZERO ? undefined : oid;
  } catch {
    return undefined;
  }
}

function resolveGitdir(path: string): string {
  const dotGit = join(path, ".git");
  return nodeFs.existsSync(dotGit) && nodeFs.statSync(dotGit).isDirectory() ? dotGit : path;
}
