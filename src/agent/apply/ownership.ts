/**
 * Step `guard` (ownership): each wanted object is created (absent), changed (ours: inventory entry
 * proven against the live object, or adopted on its owner's annotation) or refused (someone
 * else's). An inventory entry proves itself before anything acts on it (`proveEntry`): the live
 * object must carry the recorded uid AND gitmesh's own server-side-apply field manager; an entry
 * that fails is dropped with a warning naming it and counted, never acted on (a forged entry in the
 * ConfigMap deletes nothing). Intents reach the cluster before any create.
 */
import { entryKey, type InventoryEntry } from "../inventory.js";
import { messageOf, objectKey, type KubeObject } from "../kube.js";
import { inSync, foreignManagers } from "../sync.js";
import { isKindNotServed, isTransientFailure, notInstalledMessage, resourceError } from "./errors.js";
import { inventoryName } from "./observe.js";
import { ANNOTATION_ADOPT, appliedBy, describe, entryOf, kindKey, notOwnedMessage, otherManagers, refOf, uidOf } from "./objects.js";
import { DONE, type ApplyContext, type Delivery, type StepResult, type Wanted } from "./types.js";
import { hashOf, ignoredPaths } from "./write.js";

/** What an inventory entry proves about a live object. */
export type EntryProof = "proven" | "intent_confirmed" | "recreated" | "not_applied_by_gitmesh";

/**
 * Whether `entry` (the inventory's record of `live`'s key) proves `live` is gitmesh's: the recorded
 * uid is the live one (an intent without uid: confirmed) and gitmesh's field manager applied it.
 */
export function proveEntry(entry: InventoryEntry, live: KubeObject, fieldManager: string): EntryProof {
  if (entry.uid !== undefined && entry.uid !== uidOf(live)) return "recreated";
  if (!appliedBy(live, fieldManager)) return "not_applied_by_gitmesh";
  return entry.uid === undefined ? "intent_confirmed" : "proven";
}

/** Drops an entry that failed its proof: warned (naming the object), counted, never acted on. */
export function rejectEntry(ctx: ApplyContext, entry: InventoryEntry, live: KubeObject, proof: "recreated" | "not_applied_by_gitmesh"): void {
  ctx.inventory?.remove(entryKey(entry));
  ctx.metrics?.inventoryRejected.inc({ reason: proof });
  const why =
    proof === "recreated"
      ? `the live object has uid ${uidOf(live) ?? "(none)"}, the inventory recorded ${entry.uid ?? "(none)"}: it was deleted and recreated by someone else`
      : `gitmesh's field manager "${ctx.fieldManager}" never applied it (managers: ${otherManagers(live, ctx.fieldManager).join(", ") || "none"})`;
  ctx.log.warn(`inventory entry dropped, the object is not gitmesh's and will not be changed or deleted: ${describe(live)}: ${why}`, { object: describe(live), uid: uidOf(live), reason: proof, inventory: inventoryName(ctx) });
}

const REFUSAL_DETAIL: Record<"none" | "recreated" | "not_applied_by_gitmesh", string> = {
  none: "it is not in the agent's inventory",
  recreated: "it was deleted and recreated by someone else since gitmesh created it",
  not_applied_by_gitmesh: "its inventory entry names it but gitmesh's field manager never applied it",
};

/** Classifies one wanted object whose live state is `live`. */
function classify(ctx: ApplyContext, d: Delivery, key: string, w: Wanted, live: KubeObject | undefined): void {
  const inventory = ctx.inventory!;
  const entry = inventory.get(key);
  if (live === undefined) {
    inventory.set(entryOf(w.obj)); // intent: written before the create
    d.work.push(w);
    return;
  }
  let refusal: keyof typeof REFUSAL_DETAIL = "none";
  if (entry !== undefined) {
    const proof = proveEntry(entry, live, ctx.fieldManager);
    if (proof === "proven" || proof === "intent_confirmed") {
      if (proof === "intent_confirmed") inventory.set(entryOf(w.obj, uidOf(live))); // an intent left by a crash: the object is the one we created
      ours(ctx, d, key, w, live);
      return;
    }
    // An intent that never became ours (someone else created the object) is dropped quietly: it never named a uid.
    if (entry.uid === undefined) inventory.remove(key);
    else rejectEntry(ctx, entry, live, proof);
    refusal = entry.uid === undefined ? "none" : proof;
  }
  if (live.metadata.annotations?.[ANNOTATION_ADOPT] === "true") {
    ctx.log.info("adopting an object its owner handed over", { object: describe(live), uid: uidOf(live) });
    ctx.metrics?.adoptions.inc({ kind: live.kind });
    d.work.push({ ...w, live });
    return;
  }
  d.refused += 1;
  ctx.metrics?.ownershipRefused.inc({ kind: w.obj.kind });
  d.errors.push({ key: w.relayKey, message: notOwnedMessage(live, REFUSAL_DETAIL[refusal]) });
  ctx.log.warn("not applied: the object exists and gitmesh does not own it", { object: describe(live), uid: uidOf(live), managers: otherManagers(live, ctx.fieldManager) });
}

/** An owned object: skipped when unchanged since gitmesh applied it, else queued for a forced apply. */
function ours(ctx: ApplyContext, d: Delivery, key: string, w: Wanted, live: KubeObject): void {
  const ignored = ignoredPaths(ctx, w.obj);
  if (ctx.lastApplied.get(key) === hashOf(w.obj, ignored) && inSync(live, w.obj, ignored)) {
    d.unchanged += 1;
    return;
  }
  const rivals = foreignManagers(live, w.obj, ctx.fieldManager, ignored);
  if (rivals.length > 0 && ctx.lastApplied.has(key)) ctx.log.warn("drift: fields of an owned object were set by another manager; repairing", { object: describe(live), managers: rivals });
  d.work.push({ ...w, live });
}

/** The live object of `w`: from the list, or read on its own when its kind failed to list. */
async function liveOf(ctx: ApplyContext, d: Delivery, w: Wanted): Promise<KubeObject | undefined> {
  if (!d.failedKinds.has(kindKey(w.obj))) return d.live.get(objectKey(w.obj));
  const got = await ctx.reader.get(refOf(w.obj), w.obj.metadata.namespace, w.obj.metadata.name);
  if (got) d.live.set(objectKey(got), got);
  return got;
}

/** Step guard. */
export async function guardOwnership(ctx: ApplyContext, d: Delivery): Promise<StepResult> {
  const inventory = ctx.inventory!;
  for (const [key, w] of d.wanted) {
    const crd = d.missingKinds.get(kindKey(w.obj));
    if (crd !== undefined) {
      d.errors.push({ key: w.relayKey, message: notInstalledMessage(describe(w.obj), crd) });
      continue;
    }
    let live: KubeObject | undefined;
    try {
      live = await liveOf(ctx, d, w);
    } catch (err) {
      d.errors.push(isKindNotServed(err) ? { key: w.relayKey, message: notInstalledMessage(describe(w.obj), `${w.obj.kind} (${w.obj.apiVersion})`) } : resourceError(w.relayKey, `cannot read the live object, not applied: ${messageOf(err)}`, err));
      continue;
    }
    classify(ctx, d, key, w, live);
  }
  try {
    await inventory.flush();
  } catch (err) {
    const reason = `cannot write the inventory ${inventoryName(ctx)}; nothing applied or pruned: ${messageOf(err)}`;
    d.errors.push(resourceError("inventory", reason, err));
    return { reaction: isTransientFailure(err) ? "retry-later" : "needs-person", reason };
  }
  return DONE;
}
