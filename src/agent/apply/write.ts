/**
 * Step `apply` (with retry): writes what the guard queued, in dependency order, at most
 * `concurrency` at once per rank. Transient answers are retried per request by the applier's
 * writer (transient.ts); what still fails is a per-object error marked transient. A create is a
 * NON-forced apply (an object someone else created in the meantime is not taken over); a change is
 * a forced apply carrying the live uid (an object deleted and recreated since is not touched).
 */
import { createHash } from "node:crypto";
import { messageOf, objectKey, statusOf, type KubeObject } from "../kube.js";
import { leftoverPatch, pointerPath, withIgnoredPaths } from "../sync.js";
import { deletedSinceListed, isKindNotServed, NotLeaderError, notInstalledMessage, resourceError, uidMismatch } from "./errors.js";
import { describe, entryOf, groupOf, inParallel, notOwnedMessage, otherManagers, rankOf, uidOf } from "./objects.js";
import { DONE, type ApplyContext, type Delivery, type StepResult, type Work } from "./types.js";

export const hashOf = (o: KubeObject, ignored: readonly (readonly string[])[]) => createHash("sha256").update(JSON.stringify([o, ignored])).digest("base64");

/** Paths of `o` left to other controllers by the output's ignoreDifferences rules. */
export function ignoredPaths(ctx: ApplyContext, o: KubeObject): string[][] {
  const g = groupOf(o.apiVersion);
  return ctx.ignoreRules
    .filter((r) => r.kind === o.kind && (r.group === undefined || r.group === g) && (r.namespace === undefined || r.namespace === o.metadata.namespace) && (r.name === undefined || r.name === o.metadata.name))
    .flatMap((r) => r.jsonPointers.map(pointerPath));
}

/** Applies an object the agent owns (or is adopting): forced, with the live uid as a precondition. */
export async function applyOwned(ctx: ApplyContext, want: KubeObject, live: KubeObject): Promise<KubeObject> {
  const key = objectKey(want);
  const ignored = ignoredPaths(ctx, want);
  const body = withIgnoredPaths(want, live, ignored);
  ctx.lastApplied.delete(key);
  try {
    let out = await ctx.writer.apply({ ...body, metadata: { ...body.metadata, uid: uidOf(live) } }, { force: true });
    // What the forced apply could not take back (another manager's element in a list merged by key) goes with a merge patch.
    const leftover = leftoverPatch(out, body);
    if (leftover !== undefined) {
      const rivals = otherManagers(out, ctx.fieldManager);
      const target = { name: want.metadata.name, ...(want.metadata.namespace === undefined ? {} : { namespace: want.metadata.namespace }), uid: uidOf(out) };
      out = await ctx.writer.mergePatch({ apiVersion: want.apiVersion, kind: want.kind, metadata: { ...target, ...(out.metadata.resourceVersion === undefined ? {} : { resourceVersion: out.metadata.resourceVersion }) }, ...leftover });
      ctx.log.warn("removed fields other managers added inside an owned object (a server-side apply keeps them)", { object: describe(want), fields: Object.keys(leftover).join(", "), managers: rivals.join(", ") });
    }
    ctx.lastApplied.set(key, hashOf(want, ignored));
    ctx.metrics?.applies.inc({ result: "ok" });
    return out;
  } catch (err) {
    ctx.metrics?.applies.inc({ result: "error" });
    throw err;
  }
}

/**
 * Creates an object that did not exist: intent in the inventory first (the caller's), a non-forced
 * apply, the uid confirmed after. Returns an error message when someone else's object turned up in between.
 */
export async function createOwned(ctx: ApplyContext, want: KubeObject): Promise<string | undefined> {
  const key = objectKey(want);
  const ignored = ignoredPaths(ctx, want);
  ctx.lastApplied.delete(key);
  let out: KubeObject;
  try {
    out = await ctx.writer.apply(withIgnoredPaths(want, undefined, ignored), { force: false });
    ctx.metrics?.applies.inc({ result: "ok" });
  } catch (err) {
    ctx.metrics?.applies.inc({ result: "error" });
    if (statusOf(err) === 409) {
      ctx.inventory?.remove(key);
      ctx.metrics?.ownershipRefused.inc({ kind: want.kind });
      return notOwnedMessage(want, `someone else created it while gitmesh was creating it: ${messageOf(err)}`);
    }
    throw err;
  }
  const others = otherManagers(out, ctx.fieldManager);
  if (others.length > 0) {
    ctx.inventory?.remove(key);
    ctx.metrics?.ownershipRefused.inc({ kind: want.kind });
    return notOwnedMessage(want, `someone else created it while gitmesh was creating it (field managers: ${others.join(", ")})`);
  }
  ctx.inventory?.set(entryOf(want, uidOf(out)));
  ctx.lastApplied.set(key, hashOf(want, ignored));
  return undefined;
}

/** Writes one queued object; its failure is recorded for its relay key. */
async function writeOne(ctx: ApplyContext, d: Delivery, w: Work, lostLeadership: () => void): Promise<void> {
  const key = objectKey(w.obj);
  const refuse = (message: string) => {
    d.refused += 1;
    d.errors.push({ key: w.relayKey, message });
  };
  try {
    if (w.live === undefined) {
      const problem = await createOwned(ctx, w.obj);
      if (problem !== undefined) return refuse(problem);
    } else {
      try {
        const out = await applyOwned(ctx, w.obj, w.live);
        ctx.inventory?.set(entryOf(w.obj, uidOf(out)));
      } catch (err) {
        if (!deletedSinceListed(err)) throw err;
        // Deleted by someone else since the list: created again like any absent object (intent first).
        ctx.log.info("an owned object was deleted while gitmesh applied it; creating it again", { object: describe(w.obj) });
        ctx.inventory?.set(entryOf(w.obj));
        await ctx.inventory?.flush();
        const problem = await createOwned(ctx, w.obj);
        if (problem !== undefined) return refuse(problem);
      }
    }
    d.applied += 1;
  } catch (err) {
    if (uidMismatch(err)) {
      ctx.inventory?.remove(key);
      return refuse(notOwnedMessage(w.obj, "it was deleted and recreated by someone else while gitmesh applied it"));
    }
    if (err instanceof NotLeaderError) lostLeadership();
    if (isKindNotServed(err)) return void d.errors.push({ key: w.relayKey, message: notInstalledMessage(describe(w.obj), `${w.obj.kind} (${w.obj.apiVersion})`) });
    d.errors.push(resourceError(w.relayKey, `apply failed: ${messageOf(err)}`, err));
  }
}

/** Step apply. Stops (retry later) when leadership was lost while applying: nothing more is written. */
export async function applyObjects(ctx: ApplyContext, d: Delivery): Promise<StepResult> {
  d.applied = d.unchanged;
  const leadership = { lost: false };
  const ranks = new Map<number, Work[]>();
  for (const w of d.work) {
    const r = rankOf(ctx.kinds, w.obj);
    const list = ranks.get(r);
    if (list) list.push(w);
    else ranks.set(r, [w]);
  }
  for (const r of [...ranks.keys()].sort((a, b) => a - b)) {
    await inParallel(ranks.get(r)!, ctx.concurrency, (w) => writeOne(ctx, d, w, () => (leadership.lost = true)));
    if (leadership.lost) break;
  }
  if (!leadership.lost) return DONE;
  const reason = `${new NotLeaderError().message}; the rest of the output is applied by the new leader`;
  d.errors.push({ key: "leader", message: reason, transient: true });
  return { reaction: "retry-later", reason };
}
