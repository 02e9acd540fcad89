/**
 * Step `observe`: what the cluster holds of every kind the agent writes, and what the inventory
 * says it owns. A kind whose CRD is not installed (404, or absent from discovery) is noted as
 * missing; a kind whose list failed otherwise is noted as failed (its objects are read one by one,
 * and neither kind is pruned). Without a readable inventory nothing is written.
 */
import { messageOf, objectKey, statusOf } from "../kube.js";
import { isKindNotServed, isTransientFailure } from "./errors.js";
import { ANNOTATION_ADOPT, crdName, kindKey, LABEL_CLUSTER, LABEL_MANAGED } from "./objects.js";
import { DONE, type ApplyContext, type Delivery, type StepResult } from "./types.js";

/** Lists every kind the agent writes into `d.live`; notes missing and failed kinds. Never throws. */
export async function listLive(ctx: ApplyContext, d: Delivery): Promise<void> {
  await Promise.all(
    ctx.kinds.map(async (k) => {
      try {
        for (const namespace of k.namespaces ?? [undefined]) for (const o of (await ctx.reader.list(k, namespace === undefined ? {} : { namespace })).items) d.live.set(objectKey(o), o);
      } catch (err) {
        if (statusOf(err) === 404 || isKindNotServed(err)) {
          d.missingKinds.set(kindKey(k), crdName(k));
          return;
        }
        d.failedKinds.set(kindKey(k), { message: messageOf(err), transient: isTransientFailure(err) });
      }
    }),
  );
  if (d.missingKinds.size > 0) ctx.log.info("kinds not installed in this cluster: their objects are neither applied nor pruned until their CRDs appear", { crds: [...d.missingKinds.values()].sort().join(", ") });
}

/** The inventory's name for messages (it may be absent). */
export function inventoryName(ctx: ApplyContext): string {
  return ctx.inventory === undefined ? "(none configured)" : `${ctx.inventory.namespace}/${ctx.inventory.name}`;
}

/** Step observe. */
export async function observeCluster(ctx: ApplyContext, d: Delivery): Promise<StepResult> {
  await listLive(ctx, d);
  const inventory = ctx.inventory;
  if (inventory === undefined) {
    const reason = "the applier was given no inventory: it cannot tell what it owns, so nothing was applied or pruned; the agent's composition root must pass one (createInventory)";
    d.errors.push({ key: "inventory", message: reason });
    return { reaction: "needs-person", reason };
  }
  try {
    const { existed } = await inventory.load();
    if (!ctx.migrationChecked) {
      ctx.migrationChecked = true;
      if (!existed) warnLabelledWithoutInventory(ctx, d);
    }
  } catch (err) {
    const reason = `cannot read the inventory ${inventoryName(ctx)}; nothing applied or pruned: ${messageOf(err)}`;
    const transient = isTransientFailure(err);
    d.errors.push(transient ? { key: "inventory", message: reason, transient } : { key: "inventory", message: reason });
    return { reaction: transient ? "retry-later" : "needs-person", reason };
  }
  return DONE;
}

/** A first start with objects carrying gitmesh's labels: labels prove nothing; say how to hand them over. */
function warnLabelledWithoutInventory(ctx: ApplyContext, d: Delivery): void {
  const labelled = [...d.live.values()].filter((o) => o.metadata.labels?.[LABEL_MANAGED] === "true" && o.metadata.labels[LABEL_CLUSTER] === ctx.cluster);
  if (labelled.length === 0) return;
  ctx.log.warn(
    `first start without an inventory: ${labelled.length} objects carry gitmesh's labels but labels are not proof of ownership, so none is adopted; ` +
      `the output is NACKed for each until it is handed over. To hand them all over (e.g. after upgrading from a version without an inventory): ` +
      `kubectl annotate ${[...new Set(labelled.map((o) => o.kind.toLowerCase()))].sort().join(",")} -A -l ${LABEL_MANAGED}=true,${LABEL_CLUSTER}=${ctx.cluster} ${ANNOTATION_ADOPT}=true`,
    { inventory: inventoryName(ctx), labelled: labelled.length },
  );
}
