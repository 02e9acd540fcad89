/**
 * Step `record` (the inventory written once more after apply and prune) and `report`, which always
 * runs, also after a step stopped the pipeline (flux's `finally` that writes status): fights, metrics,
 * one log line, the outcome.
 */
import { messageOf } from "../kube.js";
import { resourceError } from "./errors.js";
import { inventoryName } from "./observe.js";
import { DONE, type ApplyContext, type ApplyOutcome, type Delivery, type StepResult } from "./types.js";

/** Step record. */
export async function recordInventory(ctx: ApplyContext, d: Delivery): Promise<StepResult> {
  try {
    await ctx.inventory!.flush();
    ctx.metrics?.inventoryBytes.set(ctx.inventory!.storedBytes);
  } catch (err) {
    d.errors.push(resourceError("inventory", `cannot write the inventory ${inventoryName(ctx)}: ${messageOf(err)}`, err));
  }
  return DONE;
}

/** Step report: never throws. */
export function report(ctx: ApplyContext, d: Delivery): ApplyOutcome {
  for (const [key, message] of ctx.fights) if (d.wanted.has(key)) d.errors.push({ key: `fight/${key}`, message });
  const ack = d.errors.length === 0;
  // Stopped before prune ran (inventory unreadable or not written): nothing was pruned.
  const pruneSkipped = d.pruneSkipped ?? (d.halted !== undefined && d.output.complete ? "list_failed" : undefined);
  const m = ctx.metrics;
  m?.outputResults.inc({ result: ack ? "ack" : "nack" });
  m?.outputVersion.set(d.output.version);
  if (ctx.inventory !== undefined) m?.inventoryObjects.set(ctx.inventory.entries().length);
  m?.ownershipConflicts.set(d.refused);
  const counts = { applied: d.applied, unchanged: d.unchanged, pruned: d.pruned, refused: d.refused };
  const fields = { version: d.output.version, ...counts, errors: d.errors.length, transient: d.errors.filter((e) => e.transient === true).length, ...(d.halted ? { stopped: `${d.halted.reaction}: ${d.halted.reason}` } : {}) };
  if (ack) ctx.log.info("output applied", fields);
  else ctx.log.info(d.halted ? "output not applied" : "output applied with errors", fields);
  return { ack, errors: d.errors, ...counts, ...(pruneSkipped ? { pruneSkipped } : {}), certificateRequests: d.certificateRequests };
}
