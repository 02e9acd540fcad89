/**
 * Reading trees and blobs straight from a Git object store (never a working tree). These helpers
 * assume valid input (oids that exist); the edges (source.ts, audit.ts) validate and add context.
 */
import type { FsClient } from "isomorphic-git";
import { createObjectReader, parseTree, type ObjectReader } from "./object-reader.js";

/** A Git directory, isomorphic-git's object cache (for its own commands) and our fast object reader. */
export interface ObjectStore {
  readonly fs: FsClient;
  readonly gitdir: string;
  /** isomorphic-git's memo of parsed pack indexes; keep one per store for its lifetime. */
  readonly cache: object;
  readonly reader: ObjectReader;
}

export function openObjectStore(fs: FsClient, gitdir: string): ObjectStore {
  return { fs, gitdir, cache: {}, reader: createObjectReader(gitdir) };
}

export interface TreeEntry {
  readonly mode: string;
  readonly path: string;
  readonly oid: string;
  readonly type: "blob" | "tree" | "commit";
}

export interface BlobEntry {
  /** Repository-relative POSIX path. */
  readonly path: string;
  readonly oid: string;
}

export interface TreeDiff {
  /** Blobs added or modified in the new tree (sorted by path). */
  readonly changed: BlobEntry[];
  /** Paths that held a blob in the old tree and no longer do (sorted). */
  readonly removed: string[];
}

export type PathFilter = (path: string) => boolean;

const EMPTY: readonly TreeEntry[] = [];

export function readTreeEntries(store: ObjectStore, oid: string | undefined): Promise<readonly TreeEntry[]> {
  if (oid === undefined) return Promise.resolve(EMPTY);
  const obj = store.reader.read(oid);
  if (obj.type !== "tree") return Promise.reject(new Error(`object ${oid} is a ${obj.type}, not a tree`));
  return Promise.resolve(parseTree(obj.content));
}

/** Follows annotated tags down to the commit they name (isomorphic-git's readCommit peels tags). */
export function peelToCommit(store: ObjectStore, oid: string): Promise<string> {
  try {
    return Promise.resolve(peel(store, oid));
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}

function peel(store: ObjectStore, oid: string): string {
  // Our reader, not isomorphic-git's readCommit: that parsed the pack index of a first fetch (10,000
  // entries) and read the pack once more, in JavaScript, just to see one commit.
  let current = oid;
  for (let depth = 0; depth < 16; depth++) {
    const obj = store.reader.read(current);
    if (obj.type === "commit") return current;
    const target = obj.type === "tag" ? /^object ([0-9a-f]{40})$/m.exec(obj.content.toString("latin1", 0, Math.min(obj.content.length, 512))) : null;
    if (!target) throw new Error(`object ${oid} is ${obj.type === "tag" ? "a tag without a target" : `a ${obj.type}`}, not a commit`);
    current = target[1]!;
  }
  throw new Error(`object ${oid}: tags nested too deep`);
}

/** True when the object store holds `oid` (of any type). */
export function hasObject(store: ObjectStore, oid: string): Promise<boolean> {
  return Promise.resolve(store.reader.has(oid));
}

export interface CommitSummary {
  readonly oid: string;
  readonly tree: string;
  readonly parents: readonly string[];
  /** Committer time, Unix seconds. */
  readonly timestamp: number;
  readonly message: string;
  /** Who wrote the change (the commit's author line). */
  readonly author: { readonly name: string; readonly email: string };
}

/**
 * A commit's tree, parents, committer time, message and author, parsed from the raw object as
 * isomorphic-git's readCommit parses it (whose pack reading in JavaScript this avoids).
 */
export function readCommitSummary(store: ObjectStore, oid: string): Promise<CommitSummary> {
  try {
    return Promise.resolve(parseCommit(oid, readRawCommit(store, oid)));
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}

function parseCommit(oid: string, raw: string): CommitSummary {
  const split = raw.indexOf("\n\n");
  const head = split < 0 ? raw : raw.slice(0, split);
  const message = split < 0 ? "" : raw.slice(split + 2);
  let tree: string | undefined;
  const parents: string[] = [];
  let author: { name: string; email: string } | undefined;
  let timestamp: number | undefined;
  // Continuation lines (a gpgsig's) start with a space and belong to the header above.
  for (const line of head.split("\n")) {
    if (line.startsWith(" ")) continue;
    const space = line.indexOf(" ");
    const key = line.slice(0, space);
    const value = line.slice(space + 1);
    if (key === "tree") tree = value;
    else if (key === "parent") parents.push(value);
    else if (key === "author" || key === "committer") {
      const m = /^(.*) <(.*)> (-?\d+) (\S+)$/.exec(value);
      if (!m) throw new Error(`commit ${oid} has a malformed ${key} line`);
      if (key === "author") author = { name: m[1]!, email: m[2]! };
      else timestamp = Number(m[3]);
    }
  }
  if (tree === undefined || author === undefined || timestamp === undefined) throw new Error(`commit ${oid} lacks a tree, author or committer`);
  return { oid, tree, parents, timestamp, message, author };
}

/** The raw text of a commit object (what its signature covers, with the gpgsig header). */
export function readRawCommit(store: ObjectStore, oid: string): string {
  const obj = store.reader.read(oid);
  if (obj.type !== "commit") throw new Error(`object ${oid} is a ${obj.type}, not a commit`);
  return obj.content.toString("utf8");
}

/** The tree at `subPath` inside `treeOid` (`""` = the tree itself); undefined when missing or not a tree. */
export async function subtreeOid(store: ObjectStore, treeOid: string, subPath: string): Promise<string | undefined> {
  let cur = treeOid;
  for (const part of subPath.split("/").filter((p) => p !== "")) {
    const entry = (await readTreeEntries(store, cur)).find((e) => e.path === part);
    if (entry?.type !== "tree") return undefined;
    cur = entry.oid;
  }
  return cur;
}

/** Every blob below a tree (symlinks and submodules skipped), sorted by path. */
export async function listBlobs(store: ObjectStore, treeOid: string | undefined, prefix: string, include: PathFilter): Promise<BlobEntry[]> {
  const out: BlobEntry[] = [];
  const visit = async (oid: string | undefined, base: string): Promise<void> => {
    for (const e of await readTreeEntries(store, oid)) {
      const path = base + e.path;
      if (e.type === "tree") await visit(e.oid, path + "/");
      else if (isRegularBlob(e) && include(path)) out.push({ path, oid: e.oid });
    }
  };
  await visit(treeOid, prefix);
  return out.sort(byPath);
}

/**
 * Blob-level difference between two trees. Subtrees with equal oids are skipped without being read,
 * so the cost follows the size of the change, not the size of the repository.
 */
export async function diffTrees(store: ObjectStore, oldTree: string | undefined, newTree: string | undefined, prefix: string, include: PathFilter): Promise<TreeDiff> {
  const changed: BlobEntry[] = [];
  const removed: string[] = [];
  const visit = async (a: string | undefined, b: string | undefined, base: string): Promise<void> => {
    if (a === b) return;
    const [oldEntries, newEntries] = await Promise.all([readTreeEntries(store, a), readTreeEntries(store, b)]);
    const olds = new Map(oldEntries.map((e) => [e.path, e]));
    const news = new Map(newEntries.map((e) => [e.path, e]));
    for (const name of new Set([...olds.keys(), ...news.keys()])) {
      const o = olds.get(name);
      const n = news.get(name);
      if (o && n && o.oid === n.oid && o.type === n.type) continue;
      const path = base + name;
      const oTree = o?.type === "tree" ? o.oid : undefined;
      const nTree = n?.type === "tree" ? n.oid : undefined;
      if (oTree !== undefined || nTree !== undefined) await visit(oTree, nTree, path + "/");
      const oBlob = o && isRegularBlob(o) ? o : undefined;
      const nBlob = n && isRegularBlob(n) ? n : undefined;
      if (!include(path)) continue;
      if (nBlob && nBlob.oid !== oBlob?.oid) changed.push({ path, oid: nBlob.oid });
      else if (oBlob && !nBlob) removed.push(path);
    }
  };
  await visit(oldTree, newTree, prefix);
  return { changed: changed.sort(byPath), removed: removed.sort() };
}

export function readBlobContent(store: ObjectStore, oid: string): Promise<Uint8Array> {
  const obj = store.reader.read(oid);
  if (obj.type !== "blob") return Promise.reject(new Error(`object ${oid} is a ${obj.type}, not a blob`));
  return Promise.resolve(obj.content);
}

function isRegularBlob(e: TreeEntry): boolean {
  return e.type === "blob" && (e.mode === "100644" || e.mode === "100755");
}

function byPath(a: BlobEntry, b: BlobEntry): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}
