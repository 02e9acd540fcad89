/**
 * The stored render of a source commit on the audit branch, for diffs (`gitmesh diff`, `/api/diff`): the
 * newest audit commit whose `Source-Commit` trailer names the commit and whose tree holds
 * `.gitmesh/render.json` (written by the audit writer next to the output: see AuditInput.render). A diff
 * whose base has one, rendered with the discovery the diff uses (by the `discovery/` tree, or by digests of the snapshots), translates only what differs between base
 * and head instead of the whole base (translate's renderRevisionsFromStored).
 *
 * Why a record and not the YAML under `clusters/`: reading the base's output back costs what translating it
 * does — parsing the canonical YAML of every object (the same size as writing it: canonicalYaml of the
 * 20-cluster fleet's 17,440 objects took 7.4 s against 2.7 s for the translation that made them, measured
 * 2026-11-29) — and still gives neither the base's diagnostics nor an incremental head. The record holds
 * what the output does not: each workspace's diagnostics and the clusters its fragments go to.
 */
import * as nodeFs from "node:fs";
import { commitTrailers } from "./trailers.js";
import { resolveRevision } from "./revisions.js";
import { openObjectStore, readTreeEntries, subtreeOid, type ObjectStore } from "./objects.js";
import { discoveryDigest, RENDER_RECORD_FORMAT, RENDER_RECORD_PATH } from "./audit.js";

export interface StoredRender {
  /** The audit commit that holds it. */
  readonly auditCommit: string;
  /** Tree id of `discovery/` in that commit (undefined when it has none). */
  readonly discoveryTree: string | undefined;
  /** Digest of each cluster's discovery as the render used it (discoveryDigest). */
  readonly discovery: ReadonlyMap<string, string>;
  /** The record as the writer was given it (translate's RenderRecord), plain JSON. */
  readonly render: unknown;
}

export interface FindStoredRenderOptions {
  readonly store: ObjectStore;
  /** The audit branch's tip (a commit id). */
  readonly tip: string;
  readonly sourceCommit: string;
  /** First-parent commits looked at from the tip (default 1,000). */
  readonly maxCommits?: number;
}

/** The newest stored render of `sourceCommit` on the audit branch, or undefined (none, or an unreadable record). */
export async function findStoredRender(options: FindStoredRenderOptions): Promise<StoredRender | undefined> {
  const { store } = options;
  let oid: string | undefined = options.tip;
  for (let n = 0; oid !== undefined && n < (options.maxCommits ?? 1000); n++) {
    const commit = parseCommit(store, oid);
    if (commit === undefined) return undefined;
    const source = commitTrailers(commit.message).find((t) => t.key.toLowerCase() === "source-commit")?.value;
    if (source === options.sourceCommit) return readRecord(store, oid, commit.tree);
    oid = commit.parent;
  }
  return undefined;
}

/**
 * Whether the render used the same discovery as the diff: by the `discovery/` tree when the diff reads
 * discovery from the audit branch (`tree`), else by the digest of every snapshot (`snapshots`).
 */
export function sameDiscovery(
  stored: StoredRender,
  used: { readonly tree: string | undefined } | { readonly snapshots: ReadonlyMap<string, unknown> } | { readonly digests: ReadonlyMap<string, string> },
): boolean {
  if ("tree" in used) return used.tree !== undefined && used.tree === stored.discoveryTree;
  const digests = "digests" in used ? used.digests : new Map([...used.snapshots].map(([c, s]) => [c, discoveryDigest(s)]));
  if (digests.size !== stored.discovery.size) return false;
  for (const [cluster, digest] of digests) if (stored.discovery.get(cluster) !== digest) return false;
  return true;
}

/** Tree id of `discovery/` at a commit (for sameDiscovery's `tree`). */
export async function discoveryTreeOf(store: ObjectStore, commit: string): Promise<string | undefined> {
  const parsed = parseCommit(store, commit);
  return parsed === undefined ? undefined : subtreeOid(store, parsed.tree, "discovery");
}

async function readRecord(store: ObjectStore, auditCommit: string, tree: string): Promise<StoredRender | undefined> {
  const dir = await subtreeOid(store, tree, ".gitmesh");
  if (dir === undefined) return undefined;
  const found = (await readTreeEntries(store, dir)).find((e) => `.gitmesh/${e.path}` === RENDER_RECORD_PATH);
  if (found?.type !== "blob") return undefined;
  const obj = store.reader.read(found.oid);
  let parsed: unknown;
  try {
    parsed = JSON.parse(obj.content.toString("utf8"));
  } catch {
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null) return undefined;
  const { format, discovery, render } = parsed as { format?: unknown; discovery?: unknown; render?: unknown };
  if (format !== RENDER_RECORD_FORMAT || typeof discovery !== "object" || discovery === null || render === undefined) return undefined;
  const digests = new Map<string, string>();
  for (const [cluster, digest] of Object.entries(discovery)) if (typeof digest === "string") digests.set(cluster, digest);
  return { auditCommit, discoveryTree: await subtreeOid(store, tree, "discovery"), discovery: digests, render };
}

function parseCommit(store: ObjectStore, oid: string): { tree: string; parent: string | undefined; message: string } | undefined {
  let obj;
  try {
    obj = store.reader.read(oid);
  } catch {
    return undefined;
  }
  if (obj.type !== "commit") return undefined;
  const text = obj.content.toString("utf8");
  const end = text.indexOf("\n\n");
  const headers = (end === -1 ? text : text.slice(0, end)).split("\n");
  const tree = headers.find((h) => h.startsWith("tree "))?.slice(5);
  if (tree === undefined) return undefined;
  const parent = headers.find((h) => h.startsWith("parent "))?.slice(7);
  return { tree, parent, message: end === -1 ? "" : text.slice(end + 2) };
}

export interface ReadStoredRenderOptions {
  /** Git directory holding the audit branch (a local repository's, or a remote's cache). */
  readonly gitdir: string;
  readonly branch: string;
  /** The base commit of the diff. */
  readonly sourceCommit: string;
  /** The discovery the diff renders with: the audit commit it was read from, or the snapshots themselves. */
  readonly discovery: { readonly auditCommit: string } | { readonly snapshots: ReadonlyMap<string, unknown> } | { readonly digests: ReadonlyMap<string, string> };
  readonly maxCommits?: number;
}

/** The stored render of the base when the diff may use it, else why not (a sentence, for a log line). */
export async function readStoredRender(options: ReadStoredRenderOptions): Promise<{ readonly stored: StoredRender } | { readonly why: string }> {
  const store = openObjectStore(nodeFs, options.gitdir);
  let tip: string;
  try {
    tip = "auditCommit" in options.discovery ? options.discovery.auditCommit : (await resolveRevision(options.gitdir, `refs/heads/${options.branch}`)).oid;
  } catch {
    return { why: `no audit branch ${options.branch}` };
  }
  const stored = await findStoredRender({ store, tip, sourceCommit: options.sourceCommit, ...(options.maxCommits === undefined ? {} : { maxCommits: options.maxCommits }) });
  if (stored === undefined) return { why: `the audit branch ${options.branch} holds no render record of ${options.sourceCommit.slice(0, 12)}` };
  const used = "auditCommit" in options.discovery ? { tree: await discoveryTreeOf(store, options.discovery.auditCommit) } : options.discovery;
  if (!sameDiscovery(stored, used)) return { why: `the render of ${options.sourceCommit.slice(0, 12)} on ${options.branch} (${stored.auditCommit.slice(0, 12)}) used other discovery` };
  return { stored };
}
