/**
 * Apply of output versions: server-side apply (field manager `gitmesh-agent`) in dependency order,
 * then a SAFE prune. The reconcile is a list of named steps (apply/pipeline.ts): plan → observe →
 * guard (ownership) → apply (with retry) → prune (with preconditions) → record, and report always.
 * Ownership is the INVENTORY (inventory.ts), never labels, and an entry proves itself against the
 * live object (its recorded uid and gitmesh's own field manager) before anything acts on it:
 * - an object that does not exist is created (intent written to the inventory first, uid confirmed
 *   after; a create is a non-forced apply, so an object someone created in the meantime is not
 *   taken over);
 * - an object whose inventory entry proves itself is ours: applied with force, with its uid as a
 *   precondition (an object deleted and recreated by someone else in between is not touched);
 * - any other existing object is NOT changed: the output is NACKed for it with a message naming it
 *   and how to hand it over (its owner annotates it `gitmesh.io/adopt: "true"`, or deletes it);
 *   counted in gitmesh_agent_ownership_refused_total. Adopted objects join the inventory. An entry
 *   that fails its proof is dropped with a warning and counted (gitmesh_agent_inventory_entries_rejected_total).
 * Prune deletes only proven inventory members no longer in the output, each with a `uid` precondition:
 * - only against an output version the server marked complete;
 * - only of kinds listed in this delivery: a kind whose CRD is not installed or whose list failed is
 *   held (its entries kept), every other kind is pruned;
 * - never more than `maxPruneFraction` of the owned objects at once (above `pruneAlwaysAllowed`
 *   deletions) unless the output carries OUTPUT_OPTIONS_KEY `{"allowMassDeletion": true}`;
 * - nothing here runs because of a disconnect: only an output version received from the server
 *   calls applyOutput.
 * The result carries per-resource errors (the relay key of the failing entry) for the ACK/NACK, each
 * marked `transient` when retrying is expected to succeed without anyone acting.
 *
 * OUTPUT_OPTIONS_KEY may also carry `ignoreDifferences` (Argo CD's model): JSON pointers per
 * group/kind[/namespace/name] that other controllers own. They are left out of the applied manifest
 * and not compared. Unchanged objects are not applied again (hash of the last applied manifest, and
 * the live object still holds every field of it: sync.ts inSync).
 */
import { MASS_DELETION_DEFAULTS, type Logger } from "../core/index.js";
import type { Inventory } from "./inventory.js";
import { writableKinds, objectKey, type FieldOwnerWriter, type KindRef, type KubeObject, type KubeReader } from "./kube.js";
import type { AgentMetrics } from "./metrics.js";
import { retryTransient, type TransientRetryOptions } from "./transient.js";
import { NotLeaderError } from "./apply/errors.js";
import { appliedBy, entryOf, refOf, uidOf } from "./apply/objects.js";
import { rejectEntry } from "./apply/ownership.js";
import { reconcileOutput } from "./apply/pipeline.js";
import type { ApplyContext, ApplyOutcome, OutputVersion } from "./apply/types.js";
import { applyOwned, createOwned, ignoredPaths } from "./apply/write.js";

export { ANNOTATION_ADOPT, LABEL_CLUSTER, LABEL_MANAGED, notOwnedMessage } from "./apply/objects.js";
export { ISSUED_CERTIFICATE, OUTPUT_OPTIONS_KEY } from "./apply/parse.js";
export { NotLeaderError } from "./apply/errors.js";
export type { ApplyOutcome, IgnoreDifference, OutputVersion, ResourceError } from "./apply/types.js";

export interface ApplierOptions {
  readonly cluster: string;
  readonly reader: KubeReader;
  readonly writer: FieldOwnerWriter;
  /** Where ownership is recorded (inventory.ts). Without one every delivery is refused (needs a person). */
  readonly inventory: Inventory;
  /** Writes are refused when this says false (leadership lost); default always true. */
  readonly canWrite?: () => boolean;
  /** Largest share of owned objects one output may delete (default 0.5). */
  readonly maxPruneFraction?: number;
  /** Deletions always allowed whatever the share (default 2). */
  readonly pruneAlwaysAllowed?: number;
  /** Parallel applies within one dependency rank (default 16). */
  readonly concurrency?: number;
  /** Kinds that may hold owned objects (default: the Istio kinds, and the install kinds when `manageIstioInstall`). */
  readonly kinds?: readonly KindRef[];
  /**
   * Whether this agent installs Istio (IstioLifecycleManager / GatewayLifecycleManager output: Sail
   * resources, gateway Deployments, Services, Roles…). Default false: such objects are not applied,
   * each is an error that says how to opt in, and everything else applies.
   */
  readonly manageIstioInstall?: boolean;
  /**
   * Namespaces where this agent writes rate limiters' configuration (RateLimitServerConfig
   * ConfigMaps). Default none: such a ConfigMap elsewhere is an error that says how to opt in.
   */
  readonly rateLimitConfigNamespaces?: readonly string[];
  /** How transient API answers (429, 5xx, resets) are retried within a delivery (transient.ts defaults). */
  readonly retry?: TransientRetryOptions;
  readonly metrics?: AgentMetrics;
  readonly logger: Logger;
}

/** What a drift repair did. */
export type RepairResult = "repaired" | "not_owned" | "not_desired";

export interface Applier {
  applyOutput(output: OutputVersion): Promise<ApplyOutcome>;
  /** What the agent currently wants in the cluster (object key → object), for drift repair. */
  desired(): ReadonlyMap<string, KubeObject>;
  /** JSON pointer paths of `key` left to other controllers (ignoreDifferences). */
  ignoredPaths(key: string): readonly (readonly string[])[];
  /** Whether `live` is an inventory member (same key AND same uid). */
  owns(live: KubeObject): boolean;
  /**
   * Re-applies one desired object given its live state (undefined: deleted) — only when the agent
   * owns it (its inventory entry proves itself against the object read now).
   */
  reapply(key: string, live?: KubeObject): Promise<RepairResult>;
  /** Records (message) or clears (undefined) a fight over `key`; reported with the next output's result. */
  reportFight(key: string, message: string | undefined): void;
}

/**
 * The inventory with its reads and writes retried on transient answers as every other request of a
 * delivery: a 429 on the inventory ConfigMap is "not applied yet", never a NACK.
 */
function retriedInventory(inventory: Inventory, again: <T>(request: () => Promise<T>) => Promise<T>): Inventory {
  return {
    name: inventory.name,
    namespace: inventory.namespace,
    load: () => again(() => inventory.load()),
    get: (key) => inventory.get(key),
    entries: () => inventory.entries(),
    set: (entry) => inventory.set(entry),
    remove: (key) => inventory.remove(key),
    flush: () => again(() => inventory.flush()),
    get storedBytes() {
      return inventory.storedBytes;
    },
  };
}

/** The applier's long-lived context: retried reads, retried and leader-guarded writes, options with defaults. */
export function createApplyContext(options: ApplierOptions): ApplyContext {
  // Transient answers (a real server's 429 while a kind's storage initializes, 5xx) are retried here,
  // within the delivery: they are "not applied yet", never a NACK.
  // Retries end when this agent may no longer write (it stopped leading, or stops): the delivery they
  // serve is abandoned, and the next leader gets the output again.
  const canWrite = options.canWrite ?? (() => true);
  const again = <T>(request: () => Promise<T>) => retryTransient(request, { ...options.retry, stillWanted: canWrite });
  const manageIstioInstall = options.manageIstioInstall === true;
  const guard = () => {
    if (!canWrite()) throw new NotLeaderError();
  };
  const w = options.writer;
  return {
    cluster: options.cluster,
    reader: {
      get: (ref, namespace, name) => again(() => options.reader.get(ref, namespace, name)),
      list: (ref, o) => again(() => options.reader.list(ref, o)),
    },
    // Each attempt checks leadership first. Server-side applies and deletes with a uid precondition are
    // idempotent; create and replace (not used by the applier) are not retried.
    writer: {
      fieldManager: w.fieldManager,
      apply: (o, opts) => again(() => (guard(), w.apply(o, opts))),
      create: (o) => (guard(), w.create(o)),
      replace: (o) => (guard(), w.replace(o)),
      mergePatch: (o) => again(() => (guard(), w.mergePatch(o))),
      delete: (ref, ns, name, opts) => again(() => (guard(), w.delete(ref, ns, name, opts))),
    },
    // Typed as required, but a caller driving the applier without one gets a reported step, not a crash.
    inventory: (options.inventory as Inventory | undefined) === undefined ? undefined : retriedInventory(options.inventory, again),
    kinds: options.kinds ?? writableKinds({ manageIstioInstall, rateLimitConfigNamespaces: options.rateLimitConfigNamespaces ?? [] }),
    manageIstioInstall,
    fieldManager: w.fieldManager,
    maxPruneFraction: options.maxPruneFraction ?? MASS_DELETION_DEFAULTS.maxFraction,
    pruneAlwaysAllowed: options.pruneAlwaysAllowed ?? MASS_DELETION_DEFAULTS.alwaysAllowed,
    concurrency: Math.max(1, options.concurrency ?? 16),
    canWrite,
    log: options.logger,
    metrics: options.metrics,
    lastApplied: new Map(),
    fights: new Map(),
    desired: new Map(),
    ignoreRules: [],
    migrationChecked: false,
  };
}

/** Drift repair of one object: proven ownership first, then created again or re-applied. */
async function repair(ctx: ApplyContext, key: string, live: KubeObject | undefined): Promise<RepairResult> {
  const want = ctx.desired.get(key);
  if (!want) return "not_desired";
  const inventory = ctx.inventory;
  const entry = inventory?.get(key);
  if (inventory === undefined || entry?.uid === undefined || (live !== undefined && entry.uid !== uidOf(live))) return "not_owned";
  const current = await ctx.reader.get(refOf(want), want.metadata.namespace, want.metadata.name);
  if (current === undefined) {
    // Deleted by someone else: created again (intent first, uid confirmed after).
    inventory.set(entryOf(want));
    await inventory.flush();
    const problem = await createOwned(ctx, want);
    await inventory.flush();
    if (problem !== undefined) throw new Error(problem);
    return "repaired";
  }
  if (uidOf(current) !== entry.uid) return "not_owned";
  if (!appliedBy(current, ctx.fieldManager)) {
    rejectEntry(ctx, entry, current, "not_applied_by_gitmesh");
    await inventory.flush();
    return "not_owned";
  }
  await applyOwned(ctx, want, current);
  return "repaired";
}

export function createApplier(options: ApplierOptions): Applier {
  const ctx = createApplyContext(options);
  return {
    applyOutput: (output) => reconcileOutput(ctx, output),
    desired: () => ctx.desired,
    ignoredPaths: (key) => {
      const o = ctx.desired.get(key);
      return o ? ignoredPaths(ctx, o) : [];
    },
    owns(l) {
      const e = ctx.inventory?.get(objectKey(l));
      return e?.uid !== undefined && e.uid === uidOf(l);
    },
    reapply: (key, l) => repair(ctx, key, l),
    reportFight(key, message) {
      if (message === undefined) ctx.fights.delete(key);
      else ctx.fights.set(key, message);
    },
  };
}
