/**
 * Two revisions of the configuration rendered for a diff (`gitmesh diff`, the server's `/api/diff`): the base revision is loaded and translated in full; the head
 * revision is the base plus the files that differ, loaded incrementally (updateDesiredState parses
 * only those) and translated incrementally (affectedWorkspaces + retranslate re-run only the
 * workspaces the change touches, and re-assemble only the clusters whose fragments changed), the way
 * the server handles a push. Everything the head does not re-run is the base's own objects, so the
 * structural comparison of the two (compareRenders) skips it by identity.
 *
 * The head's result is the result of a full translation of the head, to the byte (tested against
 * one on generated fleets: test/git-sync/diff-render.test.ts). Where the incremental path would need
 * more than the changed files — gitmesh.yaml changed (its ignore rules decide which files count) —
 * the head is loaded and translated in full.
 *
 * Why the base is translated in full, and not only over the workspaces the change touches (and those
 * that render into the clusters they touch) — evaluated for #20 and rejected: such a base would give
 * every cluster output the report compares (an untouched workspace's fragments, and an untouched
 * cluster's output, are the same objects on both sides), but not its diagnostics. The report counts
 * head's errors over every workspace and cluster (`headErrors`: ":x: head has N errors", the exit
 * status), and lists a touched workspace's diagnostic as introduced or fixed only if no untouched one
 * reports the same. An untouched workspace's diagnostics are the same in base and head (same inputs:
 * the contract of affectedWorkspaces), so they cancel out of introduced/fixed — but they are known only
 * by translating that workspace once. The full base translation is that once: the diff translates
 * every workspace once and the touched ones a second time, the least a diff can do without a stored
 * earlier translation. test/git-sync/diff-render.test.ts holds the counterexample (errors of their own
 * in a workspace the edit does not touch).
 */
import { loadDesiredState, SETTINGS_FILE, updateDesiredState, type LoadResult, type SourceFile } from "../config/index.js";
import { affectedWorkspaces } from "./incremental.js";
import type { DiscoveryMap } from "./input.js";
import { Severity, type Diagnostic } from "../core/index.js";
import type { IstioResource, TranslationResult } from "./types.js";
import { retranslate, translateAll, parseRenderRecord, translatePairFromStored, type TranslateOptions } from "./workspace.js";

export interface RevisionRender {
  readonly load: Pick<LoadResult, "state" | "diagnostics">;
  readonly result: TranslationResult;
}

export interface RevisionRenders {
  readonly base: RevisionRender;
  readonly head: RevisionRender;
  /** Workspaces translated again for the head; undefined when the head was translated in full. */
  readonly rerun?: readonly string[];
}

/** Files of head that are new or differ from base, and paths of base that head no longer has; undefined when gitmesh.yaml differs. */
export function fileDelta(base: readonly SourceFile[], head: readonly SourceFile[]): { changed: SourceFile[]; removed: string[] } | undefined {
  const before = new Map(base.map((f) => [f.path, f.content]));
  const changed: SourceFile[] = [];
  const seen = new Set<string>();
  for (const f of head) {
    seen.add(f.path);
    const old = before.get(f.path);
    if (old === undefined || !sameBytes(old, f.content)) changed.push(f);
  }
  const removed = [...before.keys()].filter((p) => !seen.has(p));
  if (changed.some((f) => f.path === SETTINGS_FILE) || removed.includes(SETTINGS_FILE)) return undefined;
  return { changed, removed };
}

function sameBytes(a: string | Uint8Array, b: string | Uint8Array): boolean {
  if (typeof a === "string" || typeof b === "string") return toText(a) === toText(b);
  if (a.byteLength !== b.byteLength) return false;
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

function toText(v: string | Uint8Array): string {
  return typeof v === "string" ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("utf8");
}

export interface LoadedRevisions {
  readonly base: Pick<LoadResult, "state" | "diagnostics">;
  readonly head: Pick<LoadResult, "state" | "diagnostics">;
  /** Set when head was loaded as an update of base: the keys whose object differs. */
  readonly changedKeys?: ReadonlySet<string>;
}

/** Loads base in full and head as an update of base (only the files that differ are parsed); head in full when gitmesh.yaml differs. */
export function loadRevisions(base: readonly SourceFile[], head: readonly SourceFile[]): LoadedRevisions {
  const baseLoad = loadDesiredState(base);
  const delta = fileDelta(base, head);
  if (delta === undefined) return { base: baseLoad, head: loadDesiredState(head) };
  const headLoad = updateDesiredState(baseLoad.state, delta.changed, delta.removed);
  return { base: baseLoad, head: headLoad, changedKeys: headLoad.changedKeys };
}

/**
 * One side of a diff as git-sync's compareRenders takes it: the revision's output per cluster, every
 * diagnostic (load, then translation), the load errors for which the server would reject the revision,
 * and the clusters its gitmesh.yaml allows to delete any number of objects (callers add the commit's
 * `Gitmesh-Allow-Deletion` trailers).
 */
export function renderedSide(
  ref: string,
  commit: string,
  render: RevisionRender,
): { ref: string; commit: string; clusters: Map<string, readonly IstioResource[]>; diagnostics: Diagnostic[]; rejection: Diagnostic[]; allowMassDeletion: string[] } {
  return {
    ref,
    commit,
    clusters: new Map([...render.result.clusters].map(([c, out]) => [c, out.resources])),
    diagnostics: [...render.load.diagnostics, ...render.result.diagnostics],
    rejection: render.load.diagnostics.filter((d) => d.severity === Severity.Error),
    allowMassDeletion: [...render.load.state.settings.allowMassDeletion],
  };
}

/** Translates the base in full and the head incrementally from it (see above). */
export function renderRevisions(loaded: LoadedRevisions, discovery: DiscoveryMap, options: TranslateOptions = {}): RevisionRenders {
  const baseResult = translateAll(loaded.base.state, discovery, options);
  const base = { load: loaded.base, result: baseResult };
  const full = (): RevisionRenders => ({ base, head: { load: loaded.head, result: translateAll(loaded.head.state, discovery, options) } });
  if (loaded.changedKeys === undefined) return full();
  const rerun = affectedWorkspaces({ desired: loaded.base.state, discovery }, { desired: loaded.head.state, discovery }, { changedKeys: loaded.changedKeys });
  const { result } = retranslate(baseResult, loaded.head.state, discovery, rerun, options);
  // translateAll also assembles a cluster that only fragments name (not in the index): never seen,
  // but the full translation is the reference, so such a head is translated in full.
  for (const w of result.workspaces.values()) for (const c of w.fragments.keys()) if (!result.clusters.has(c)) return full();
  return { base, head: { load: loaded.head, result }, rerun };
}

/**
 * renderRevisions with the stored record of the base's render (the audit branch's, for the same base
 * commit and the same discovery): only what can differ between the two is translated
 * (translatePairFromStored), and the report equals renderRevisions' to the byte. Undefined when the
 * record cannot be used (head loaded in full because gitmesh.yaml changed, or a record that does not fit
 * the base): the caller renders with renderRevisions.
 */
export function renderRevisionsFromStored(loaded: LoadedRevisions, discovery: DiscoveryMap, record: unknown, options: TranslateOptions = {}): RevisionRenders | undefined {
  const parsed = parseRenderRecord(record);
  if (loaded.changedKeys === undefined || parsed === undefined) return undefined;
  const rerun = affectedWorkspaces({ desired: loaded.base.state, discovery }, { desired: loaded.head.state, discovery }, { changedKeys: loaded.changedKeys });
  const pair = translatePairFromStored(loaded.base.state, loaded.head.state, discovery, rerun, parsed, options);
  if (pair === undefined) return undefined;
  return { base: { load: loaded.base, result: pair.base }, head: { load: loaded.head, result: pair.head }, rerun };
}
