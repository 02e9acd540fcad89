/**
 * Writing Git history from objects, without a work tree: apply a set of path → bytes (or null, to
 * delete) changes to a tree, getting the new tree id, and write a commit on it. The audit writer and
 * `gitmesh cluster register/deregister` both commit this way.
 *
 * Only the changed blobs and the trees above them are written; untouched subtrees keep their ids
 * without being read. Objects are written loose, deflated with Node's native zlib (isomorphic-git
 * deflates in JavaScript), or — with `into`, a pack builder (pack.ts) — added to a pack that the
 * caller writes once and can push as it is (the audit writer). The same tree and the same commit
 * fields always give the same ids.
 */
import { createHash } from "node:crypto";
import * as nodeFs from "node:fs";
import { join } from "node:path";
import { setImmediate } from "node:timers/promises";
import { deflateSync } from "node:zlib";
import * as git from "isomorphic-git";
import { readTreeEntries, type ObjectStore, type TreeEntry } from "./objects.js";
import { parseTree } from "./object-reader.js";
import type { PackBuilder } from "./pack.js";

/** Repository-relative POSIX path → new content, or null to delete the file there. */
export type TreeChanges = ReadonlyMap<string, Uint8Array | null>;

export type PathChange = "added" | "changed" | "removed";

export interface TreeEditOptions {
  /**
   * The paths this edit may replace or delete (default: every path). A file at a path it does not
   * own is left as it is: its write is reported in `skipped`, its deletion ignored.
   */
  readonly owns?: (path: string) => boolean;
  /**
   * Write the new objects into this pack builder instead of loose objects: every blob and tree the edit
   * makes goes in (even one the repository may hold already, so the pack has every object the new tree
   * reaches that the old tree does not), and trees added to it earlier are read back from it.
   */
  readonly into?: PackBuilder;
}

export interface TreeEdit {
  /** The new root tree, or undefined when nothing is left in it. Equal to the old id when nothing changed. */
  readonly tree: string | undefined;
  /** What happened at each path that changed. */
  readonly status: ReadonlyMap<string, PathChange>;
  /**
   * Paths that were not written, sorted: a file we do not own is there, or something other than a
   * file is there (a directory, a submodule), or a file is where a directory of the path would be.
   */
  readonly skipped: readonly string[];
}

export interface GitPerson {
  readonly name: string;
  readonly email: string;
  /** Unix seconds. */
  readonly timestamp: number;
  /** Minutes, as git counts them (0 for UTC). */
  readonly timezoneOffset: number;
}

export interface CommitFields {
  readonly tree: string;
  readonly parents: readonly string[];
  readonly author: GitPerson;
  /** Default: the author. */
  readonly committer?: GitPerson;
  /** Newlines are normalised as git does (one at the end, none at the start, no CR). */
  readonly message: string;
}

export interface TreeWriter {
  /** Applies `changes` to the tree `tree` (undefined: an empty tree). */
  edit(tree: string | undefined, changes: TreeChanges, options?: TreeEditOptions): Promise<TreeEdit>;
  /** Writes a tree of exactly these entries (in any order) and returns its id (into the pack builder, when given). */
  writeTree(entries: readonly TreeEntry[], into?: PackBuilder): string;
  /** Writes a commit object (not a ref) and returns its id (into the pack builder, when given). */
  writeCommit(fields: CommitFields, into?: PackBuilder): Promise<string>;
}

/** The id of the empty tree. */
export const EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/**
 * A writer over one object store. It remembers the blob id of each byte array it was handed (by
 * identity), so callers that hand the same bytes again (cached serialisations) do not hash them again.
 */
export function createTreeWriter(store: ObjectStore): TreeWriter {
  const { gitdir } = store;
  const blobOids = new WeakMap<Uint8Array, string>();

  const writeTree = (entries: readonly TreeEntry[], into?: PackBuilder): string => {
    const key = (e: TreeEntry) => (e.type === "tree" ? `${e.path}/` : e.path);
    const sorted = [...entries].sort((a, b) => Buffer.compare(Buffer.from(key(a)), Buffer.from(key(b))));
    const content = Buffer.concat(sorted.flatMap((e) => [Buffer.from(`${e.mode.replace(/^0+/, "")} ${e.path}\0`), Buffer.from(e.oid, "hex")]));
    const oid = hashObject("tree", content);
    if (into) into.add("tree", content, oid);
    else if (!hasLoose(gitdir, oid)) writeLooseObject(gitdir, "tree", oid, content);
    return oid;
  };

  /** A tree's entries: from the pack being built when it is there, else from the store. */
  const entriesOf = (oid: string | undefined, into: PackBuilder | undefined): Promise<readonly TreeEntry[]> => {
    const pending = oid === undefined ? undefined : into?.read(oid);
    return pending?.type === "tree" ? Promise.resolve(parseTree(pending.content)) : readTreeEntries(store, oid);
  };

  const edit = async (treeOid: string | undefined, changes: TreeChanges, options: TreeEditOptions = {}): Promise<TreeEdit> => {
    const owns = options.owns ?? (() => true);
    const into = options.into;
    const status = new Map<string, PathChange>();
    const skipped: string[] = [];
    const pace = pacer();
    const visit = async (oid: string | undefined, local: Map<string, Uint8Array | null>, prefix: string): Promise<string | undefined> => {
      const entries = new Map((await entriesOf(oid, into)).map((e) => [e.path, { ...e }]));
      const leaves = new Map<string, Uint8Array | null>();
      const dirs = new Map<string, Map<string, Uint8Array | null>>();
      for (const [path, content] of local) {
        const i = path.indexOf("/");
        if (i < 0) leaves.set(path, content);
        else {
          const name = path.slice(0, i);
          let sub = dirs.get(name);
          if (!sub) dirs.set(name, (sub = new Map<string, Uint8Array | null>()));
          sub.set(path.slice(i + 1), content);
        }
      }
      let modified = false;
      for (const [name, content] of leaves) {
        const full = prefix + name;
        const existing = entries.get(name);
        if (content === null) {
          if (existing?.type === "blob" && owns(full)) {
            entries.delete(name);
            status.set(full, "removed");
            modified = true;
          }
          continue;
        }
        if (existing && (existing.type !== "blob" || !owns(full))) {
          skipped.push(full);
          continue;
        }
        let blobOid = blobOids.get(content);
        if (blobOid === undefined) blobOids.set(content, (blobOid = hashObject("blob", content)));
        await pace();
        if (existing?.oid === blobOid) continue;
        if (into) into.add("blob", content, blobOid);
        else if (!hasLoose(gitdir, blobOid)) writeLooseObject(gitdir, "blob", blobOid, content);
        entries.set(name, { mode: "100644", path: name, oid: blobOid, type: "blob" });
        status.set(full, existing ? "changed" : "added");
        modified = true;
      }
      for (const [name, sub] of dirs) {
        const existing = entries.get(name);
        if (existing && existing.type !== "tree") {
          for (const [p, c] of sub) if (c !== null) skipped.push(`${prefix}${name}/${p}`);
          continue;
        }
        const next = await visit(existing?.oid, sub, `${prefix}${name}/`);
        if (next === existing?.oid) continue;
        modified = true;
        if (next === undefined) entries.delete(name);
        else entries.set(name, { mode: "040000", path: name, oid: next, type: "tree" });
      }
      if (!modified) return oid;
      if (entries.size === 0) return undefined;
      return writeTree([...entries.values()], into);
    };
    const tree = await visit(treeOid, new Map<string, Uint8Array | null>(changes), "");
    return { tree, status, skipped: skipped.sort() };
  };

  const writeCommit = (fields: CommitFields, into?: PackBuilder): Promise<string> => {
    if (into) return Promise.resolve(into.add("commit", commitBytes(fields)));
    return git.writeCommit({
      fs: store.fs,
      gitdir,
      commit: { tree: fields.tree, parent: [...fields.parents], author: { ...fields.author }, committer: { ...(fields.committer ?? fields.author) }, message: fields.message },
    });
  };

  return { edit, writeTree, writeCommit };
}

/**
 * Keeps a long synchronous loop from holding the event loop: the returned function yields to it
 * (timers, sockets: leases, relay keep-alives) once `sliceMs` of work has passed since the last yield.
 */
export function pacer(sliceMs = 10): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < sliceMs) return;
    await setImmediate();
    since = performance.now();
  };
}

/**
 * A commit object's bytes, as git (and isomorphic-git's writeCommit) write them: tree, parents, author,
 * committer (`<name> <<email>> <seconds> <±hhmm>`), a blank line, the message with CRs dropped, leading
 * newlines dropped and exactly one newline at the end.
 */
export function commitBytes(fields: CommitFields): Buffer {
  const person = (p: GitPerson) => `${p.name} <${p.email}> ${p.timestamp} ${timezone(p.timezoneOffset)}`;
  const message = fields.message.replace(/\r/g, "").replace(/^\n+/, "").replace(/\n+$/, "") + "\n";
  const parents = fields.parents.map((p) => `parent ${p}\n`).join("");
  return Buffer.from(`tree ${fields.tree}\n${parents}author ${person(fields.author)}\ncommitter ${person(fields.committer ?? fields.author)}\n\n${message}`);
}

/** `timezoneOffset` counts minutes as JavaScript's Date does (west of UTC positive): -120 is `+0200`. */
function timezone(offsetMinutes: number): string {
  const east = offsetMinutes === 0 ? 0 : -offsetMinutes;
  const abs = Math.abs(east);
  const hhmm = `${String(Math.floor(abs / 60)).padStart(2, "0")}${String(abs % 60).padStart(2, "0")}`;
  return `${east < 0 ? "-" : "+"}${hhmm}`;
}

/** The object id git gives an object (sha1 of `<type> <size>\0<content>`). */
export function hashObject(type: "blob" | "tree", content: Uint8Array): string {
  return createHash("sha1").update(`${type} ${content.length}\0`).update(content).digest("hex");
}

const hasLoose = (gitdir: string, oid: string): boolean => nodeFs.existsSync(join(gitdir, "objects", oid.slice(0, 2), oid.slice(2)));

/**
 * Writes a loose object with native zlib; temp file + rename, as git does. Synchronous: a fleet-wide
 * audit commit writes thousands of small objects, and the promise file API cost several times the CPU
 * per object of these calls (microseconds each; the callers give the event loop a turn every few
 * milliseconds). The fan-out directory is made only when missing.
 */
function writeLooseObject(gitdir: string, type: "blob" | "tree", oid: string, content: Uint8Array): void {
  const dir = join(gitdir, "objects", oid.slice(0, 2));
  const file = join(dir, oid.slice(2));
  const tmp = `${file}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  const data = deflateSync(Buffer.concat([Buffer.from(`${type} ${content.length}\0`), content]));
  try {
    nodeFs.writeFileSync(tmp, data);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    nodeFs.mkdirSync(dir, { recursive: true });
    nodeFs.writeFileSync(tmp, data);
  }
  nodeFs.renameSync(tmp, file);
}
