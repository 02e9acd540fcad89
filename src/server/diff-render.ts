/**
 * The work behind `GET /api/diff`, run by the diff worker thread (diff-worker.ts): both revisions
 * loaded (head as an update of base), base translated in full and head incrementally, compared per
 * cluster and object, and the JSON report rendered — what `gitmesh diff --format json` prints.
 * Pure: files and discovery in, report text out.
 */
import type { SourceFile } from "../config/index.js";
import type { DiscoverySnapshot } from "../discovery/index.js";
import { allowedDeletions, compareRenders, renderJson } from "../git-sync/index.js";
import { loadRevisions, renderedSide, renderRevisions, renderRevisionsFromStored } from "../translate/index.js";

export interface DiffRevision {
  /** The revision as asked for (a full SHA). */
  readonly ref: string;
  /** The commit read. */
  readonly commit: string;
  readonly files: readonly SourceFile[];
  /** The commit message (its `Gitmesh-Allow-Deletion` trailers consent to a mass deletion). */
  readonly message?: string;
}

/** `record`: the base's render record from the audit branch (for this discovery), when there is one: only what can differ is translated. */
export function renderDiffReport(base: DiffRevision, head: DiffRevision, discovery: ReadonlyMap<string, DiscoverySnapshot>, record?: unknown): string {
  const loaded = loadRevisions(base.files, head.files);
  const renders = (record === undefined ? undefined : renderRevisionsFromStored(loaded, discovery, record)) ?? renderRevisions(loaded, discovery);
  const headSide = renderedSide(head.ref, head.commit, renders.head);
  const allowMassDeletion = [...headSide.allowMassDeletion, ...allowedDeletions(head.message ?? "").clusters];
  return renderJson(compareRenders(renderedSide(base.ref, base.commit, renders.base), { ...headSide, allowMassDeletion }));
}

/**
 * Main thread → worker: a discovery snapshot the worker does not hold yet (by checksum), or one diff
 * over the snapshots of the clusters it names (the worker forgets the others).
 */
export type DiffMessage =
  | { readonly kind: "snapshot"; readonly cluster: string; readonly checksum: string; readonly snapshot: DiscoverySnapshot }
  | { readonly kind: "diff"; readonly id: number; readonly base: DiffRevision; readonly head: DiffRevision; readonly clusters: readonly (readonly [cluster: string, checksum: string])[]; readonly record?: unknown };

/** Worker → main thread: the report text, or what went wrong. */
export type DiffAnswer =
  | { readonly id: number; readonly report: string }
  | { readonly id: number; readonly error: { readonly name: string; readonly message: string; readonly stack?: string } };
