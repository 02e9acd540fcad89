/**
 * The apply path as a list of named steps (CONVENTIONS.md rule 12, as flux's reconcilers run
 * `[]reconcileFunc{…}`): each takes the delivery state the previous one left and says how to go on;
 * the first that does not answer `done` stops the list; `report` always runs. A step that throws
 * anyway (a bug) is caught here and reported, never thrown at the caller.
 */
import { describeError } from "../../core/index.js";
import { isTransientFailure } from "./errors.js";
import { observeCluster } from "./observe.js";
import { guardOwnership } from "./ownership.js";
import { planOutput } from "./parse.js";
import { pruneObjects } from "./prune.js";
import { recordInventory, report } from "./report.js";
import { newDelivery, type ApplyContext, type ApplyOutcome, type Delivery, type OutputVersion, type StepResult } from "./types.js";
import { applyObjects } from "./write.js";

export interface ApplyStep {
  readonly name: string;
  run(ctx: ApplyContext, d: Delivery): Promise<StepResult> | StepResult;
}

/** The steps of one delivery, in order. */
export const APPLY_STEPS: readonly ApplyStep[] = [
  { name: "plan", run: planOutput },
  { name: "observe", run: observeCluster },
  { name: "guard", run: guardOwnership },
  { name: "apply", run: applyObjects },
  { name: "prune", run: pruneObjects },
  { name: "record", run: recordInventory },
];

/** Runs one step; an unexpected throw becomes an error of the delivery and stops the list. */
async function runStep(step: ApplyStep, ctx: ApplyContext, d: Delivery): Promise<StepResult> {
  try {
    return await step.run(ctx, d);
  } catch (err) {
    const transient = isTransientFailure(err);
    const reason = `step ${step.name} failed: ${describeError(err)}`;
    ctx.log.error("apply step failed unexpectedly", { step: step.name, version: d.output.version, error: describeError(err) });
    d.errors.push(transient ? { key: step.name, message: reason, transient } : { key: step.name, message: reason });
    return { reaction: transient ? "retry-later" : "needs-person", reason };
  }
}

/** Reconciles one output version through `steps`, then reports. Never throws. */
export async function reconcileOutput(ctx: ApplyContext, output: OutputVersion, steps: readonly ApplyStep[] = APPLY_STEPS): Promise<ApplyOutcome> {
  const d = newDelivery(output);
  for (const step of steps) {
    const r = await runStep(step, ctx, d);
    if (r.reaction !== "done") {
      d.halted = r;
      break;
    }
  }
  return report(ctx, d);
}
