/**
 * What the server tells agents and operators about completeness (src/queue/holds.ts decides it):
 *
 * - the relay form of an output: every resource under its key, plus the reserved entry
 *   OUTPUT_OPTIONS_KEY with the options of the output (allowMassDeletion for the commit that allows
 *   it, gitmesh.yaml's ignoreDifferences) — the contract with src/agent (applier.ts), which never
 *   applies that entry;
 * - the per-cluster `pruneHeld` view of /api/status and `gitmesh check`: which deletions are held
 *   back, why and since when. A cluster with held deletions is not in sync.
 */
import { resourceKey } from "../translate/index.js";
import type { PipelineOutput } from "./pipeline-port.js";

/** The reserved output entry with options for the agent (same value as src/agent's OUTPUT_OPTIONS_KEY). */
export const OUTPUT_OPTIONS_KEY = "gitmesh.io/output-options";

const enc = new TextEncoder();

/** The relay's key → bytes form of an output (with the options entry when the output has options). */
export function relayResources(rec: PipelineOutput): Map<string, Uint8Array> {
  const resources = new Map<string, Uint8Array>();
  for (const r of rec.resources) resources.set(resourceKey(r), enc.encode(JSON.stringify(r)));
  if (rec.options !== undefined) resources.set(OUTPUT_OPTIONS_KEY, enc.encode(JSON.stringify(rec.options)));
  return resources;
}

export interface PruneHeldView {
  /** Every reason, `; `-separated (one per cause). */
  readonly reason: string;
  /** When the oldest hold began (ISO time). */
  readonly since: string;
  /** `kind/namespace/name` of every held object, sorted. */
  readonly objects: readonly string[];
  /** The holds one by one. */
  readonly holds: readonly { cause: string; reason: string; since: string; objects: readonly string[] }[];
  /** Set when the output is published incomplete (the agent prunes nothing at all in the cluster). */
  readonly incomplete: string | null;
}

/** The `pruneHeld` of a cluster's status (null when nothing is held back). */
export function pruneHeldView(rec: Pick<PipelineOutput, "held" | "incompleteReason" | "complete"> | undefined, atMs: number): PruneHeldView | null {
  if (rec === undefined) return null;
  const held = rec.held ?? [];
  if (held.length === 0 && rec.complete) return null;
  const iso = (ms: number) => new Date(ms).toISOString();
  const reasons = held.map((h) => h.reason);
  if (rec.incompleteReason !== undefined) reasons.push(rec.incompleteReason);
  else if (!rec.complete) reasons.push("the output is incomplete: nothing is pruned in this cluster");
  return {
    reason: reasons.join("; "),
    since: iso(held.length === 0 ? atMs : Math.min(...held.map((h) => h.sinceMs))),
    objects: [...new Set(held.flatMap((h) => h.objects))].sort(),
    holds: held.map((h) => ({ cause: h.cause, reason: h.reason, since: iso(h.sinceMs), objects: h.objects })),
    incomplete: rec.complete ? null : (rec.incompleteReason ?? "incomplete"),
  };
}

/** Route tables frozen in a cluster (from its holds), `namespace/name`. */
export function frozenTables(rec: Pick<PipelineOutput, "held"> | undefined): string[] {
  const out = new Set<string>();
  for (const h of rec?.held ?? []) if (h.cause === "frozen" && h.table !== undefined) out.add(h.table);
  return [...out].sort();
}
