/**
 * Step `prune` (with preconditions): deletes inventory members the output no longer holds, only
 * - against an output the server marked complete;
 * - for kinds listed successfully in this delivery (a kind whose CRD is missing or whose list failed
 *   is held: its entries are kept, never taken for "already gone");
 * - when the entry proves itself against the live object (recorded uid, gitmesh's field manager);
 * - within the mass-deletion guard, and never a control plane without the commit's allowance;
 * - each DELETE with the recorded uid as a precondition; every deletion is logged by name.
 */
import { entryKey, type InventoryEntry } from "../inventory.js";
import { messageOf, statusOf, type KubeObject } from "../kube.js";
import { NotLeaderError, resourceError } from "./errors.js";
import { describe, isControlPlaneObject, kindKey, rankOf, refOf, uidOf } from "./objects.js";
import { proveEntry, rejectEntry } from "./ownership.js";
import { DONE, type ApplyContext, type Delivery, type StepResult } from "./types.js";
import { massDeletionLimit } from "../../core/index.js";

/** An owned object to delete. */
export interface Stale {
  readonly key: string;
  readonly obj: KubeObject;
  readonly uid: string;
}

// How many of `owned` objects one output may delete: core's rule, shared with the PR diff's warning.
export { massDeletionLimit };

/** Whether the kind of an inventory entry was listed in this delivery (so its absence means gone). */
function listedKind(ctx: ApplyContext, d: Delivery, e: InventoryEntry): boolean {
  const k = kindKey(e);
  // A kind given some namespaces only is listed there only.
  const listed = ctx.kinds.some((x) => kindKey(x) === k && (x.namespaces === undefined || x.namespaces.includes(e.namespace ?? "")));
  return listed && !d.missingKinds.has(k) && !d.failedKinds.has(k);
}

/** The prune candidates: entries no longer wanted, of listed kinds, that prove themselves. Drops what is gone or not ours. */
export function pruneCandidates(ctx: ApplyContext, d: Delivery): { stale: Stale[]; held: InventoryEntry[] } {
  const inventory = ctx.inventory!;
  const stale: Stale[] = [];
  const held: InventoryEntry[] = [];
  for (const e of inventory.entries()) {
    const key = entryKey(e);
    if (d.wanted.has(key)) continue;
    if (!listedKind(ctx, d, e)) {
      held.push(e);
      continue;
    }
    const live = d.live.get(key);
    if (live === undefined) {
      inventory.remove(key); // listed, absent: already gone
      continue;
    }
    const proof = proveEntry(e, live, ctx.fieldManager);
    if (proof === "proven" || proof === "intent_confirmed") stale.push({ key, obj: live, uid: uidOf(live)! });
    else {
      if (proof === "recreated") ctx.metrics?.pruneSkipped.inc({ reason: "recreated" });
      rejectEntry(ctx, e, live, proof);
    }
  }
  return { stale, held };
}

function refuseMassDeletion(ctx: ApplyContext, d: Delivery, stale: number, owned: number, limit: number): void {
  const { cluster, maxPruneFraction: fraction, pruneAlwaysAllowed: always } = ctx;
  d.pruneSkipped = "mass_deletion";
  ctx.metrics?.pruneRefused.inc({ reason: "mass_deletion" });
  const message =
    `refusing to delete ${stale} of ${owned} owned objects (limit ${limit}: ${Math.round(fraction * 100)}% of owned, at least ${always}); nothing was pruned. ` +
    `If this deletion is intended, allow it from Git: add the trailer "Gitmesh-Allow-Deletion: ${cluster}" (or "Gitmesh-Allow-Deletion: *") to the commit that removes the configuration ` +
    `(e.g. git commit --trailer "Gitmesh-Allow-Deletion: ${cluster}"), or raise the agent's --max-prune-fraction (chart value prune.maxFraction).`;
  ctx.log.error("mass deletion refused", { version: d.output.version, sourceCommit: d.output.sourceCommit, stale, owned, limit });
  d.errors.push({ key: "prune", message });
}

/** Removing a control plane (a Sail Istio, IstioCNI or revision tag) needs the commit's allowance, however few objects go. */
function holdControlPlanes(ctx: ApplyContext, d: Delivery, stale: readonly Stale[]): Stale[] {
  const held = d.allowMassDeletion ? [] : stale.filter((s) => isControlPlaneObject(s.obj));
  if (held.length === 0) return [...stale];
  d.pruneSkipped = "control_plane";
  ctx.metrics?.pruneRefused.inc({ reason: "control_plane" });
  const what = held.map((s) => describe(s.obj)).join(", ");
  ctx.log.error("control plane removal refused", { version: d.output.version, sourceCommit: d.output.sourceCommit, objects: what });
  d.errors.push({
    key: "prune",
    message:
      `refusing to delete ${what}: it uninstalls Istio (or its default revision) for the workloads it serves; the rest of the output was applied and pruned. ` +
      `If this is intended (e.g. a finished canary), allow it from Git: add the trailer "Gitmesh-Allow-Deletion: ${ctx.cluster}" to the commit that removes it (git commit --trailer "Gitmesh-Allow-Deletion: ${ctx.cluster}").`,
  });
  return stale.filter((s) => !held.includes(s));
}

/** Deletes one object with its uid as a precondition. Returns false when leadership was lost. */
async function deleteOne(ctx: ApplyContext, d: Delivery, s: Stale): Promise<boolean> {
  const o = s.obj;
  try {
    const existed = await ctx.writer.delete(refOf(o), o.metadata.namespace, o.metadata.name, { uid: s.uid });
    ctx.inventory?.remove(s.key);
    ctx.lastApplied.delete(s.key);
    if (existed) {
      d.pruned += 1;
      ctx.metrics?.prunes.inc({ result: "ok" });
      ctx.log.info(`pruned ${describe(o)}: no longer in the output`, { object: describe(o), uid: s.uid, version: d.output.version, sourceCommit: d.output.sourceCommit });
    }
  } catch (err) {
    if (statusOf(err) === 409) {
      ctx.inventory?.remove(s.key);
      ctx.metrics?.pruneSkipped.inc({ reason: "recreated" });
      ctx.log.info("not pruned: the object was recreated by someone else just before the delete (uid precondition)", { object: describe(o) });
      return true;
    }
    ctx.metrics?.prunes.inc({ result: "error" });
    d.errors.push(resourceError(`prune/${s.key}`, `delete failed: ${messageOf(err)}`, err));
    if (err instanceof NotLeaderError) return false;
  }
  return true;
}

/** Step prune. */
export async function pruneObjects(ctx: ApplyContext, d: Delivery): Promise<StepResult> {
  if (!d.output.complete) {
    d.pruneSkipped = "incomplete";
    ctx.metrics?.pruneRefused.inc({ reason: "incomplete" });
    ctx.log.info("output is not marked complete: applied without pruning", { version: d.output.version });
    return DONE;
  }
  const { stale, held } = pruneCandidates(ctx, d);
  if (d.failedKinds.size > 0) {
    d.pruneSkipped = "list_failed";
    for (const [k, f] of d.failedKinds) d.errors.push({ key: "prune", message: `cannot list ${k} objects, none of them pruned (other kinds were): ${f.message}`, ...(f.transient ? { transient: true } : {}) });
  }
  if (held.length > 0) ctx.log.info("prune held for kinds not listed in this delivery (CRD missing, list failed, or no longer written)", { objects: held.map((e) => describe({ kind: e.kind, metadata: e })).join(", ") });
  const owned = ctx.inventory!.entries().filter((e) => e.uid !== undefined).length;
  const limit = massDeletionLimit(owned, ctx.maxPruneFraction, ctx.pruneAlwaysAllowed);
  if (stale.length > limit && !d.allowMassDeletion) {
    refuseMassDeletion(ctx, d, stale.length, owned, limit);
    return DONE;
  }
  const deletable = holdControlPlanes(ctx, d, stale).sort((a, b) => rankOf(ctx.kinds, b.obj) - rankOf(ctx.kinds, a.obj));
  for (const s of deletable) {
    if (!(await deleteOne(ctx, d, s))) return { reaction: "retry-later", reason: new NotLeaderError().message };
  }
  if (d.pruned > 0) ctx.log.info("pruned objects no longer in the output", { version: d.output.version, pruned: d.pruned });
  return DONE;
}
