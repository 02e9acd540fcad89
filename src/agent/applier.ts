/**
 * Apply of output versions: server-side apply (field manager `gitmesh-agent`) in dependency order,
 * then a SAFE prune. Ownership is the INVENTORY (inventory.ts), never labels:
 * - an object that does not exist is created (intent written to the inventory first, uid confirmed
 *   after; a create is a non-forced apply, so an object someone created in the meantime is not
 *   taken over);
 * - an object in the inventory whose live uid matches is ours: applied with force, with its uid as a
 *   precondition (an object deleted and recreated by someone else in between is not touched);
 * - any other existing object is NOT changed: the output is NACKed for it with a message naming it
 *   and how to hand it over (its owner annotates it `gitmesh.io/adopt: "true"`, or deletes it);
 *   counted in gitmesh_agent_ownership_refused_total. Adopted objects join the inventory.
 * Prune deletes only inventory members no longer in the output, each with a `uid` precondition:
 * - only against an output version the server marked complete (an incomplete one is applied,
 *   never pruned against);
 * - never more than `maxPruneFraction` of the owned objects at once (above `pruneAlwaysAllowed`
 *   deletions) unless the output carries OUTPUT_OPTIONS_KEY `{"allowMassDeletion": true}` (the
 *   server sets it for a commit with the trailer `Gitmesh-Allow-Deletion: <cluster>` or `*`); a
 *   refused prune is logged as an error, counted (gitmesh_agent_prune_refused_total) and NACKed
 *   with key `prune` and a message that says how to allow it;
 * - nothing here runs because of a disconnect: only an output version received from the server
 *   calls applyOutput.
 * The result carries per-resource errors (the relay key of the failing entry) for the ACK/NACK.
 *
 * OUTPUT_OPTIONS_KEY may also carry `ignoreDifferences` (Argo CD's model): JSON pointers per
 * group/kind[/namespace/name] that other controllers own (e.g. route weights of a rollout tool).
 * They are left out of the applied manifest (inside a list, applied whole, the live value is kept)
 * and not compared.
 *
 * Unchanged objects are not applied again: the applier keeps a hash of the manifest it last
 * applied per object and skips an object when its desired manifest hashes the same AND the live
 * object still holds every field of it (sync.ts inSync: lists compared exactly, except server-defaulted fields inside list items of built-in kinds).
 */
import { createHash } from "node:crypto";
import { describeError, type Logger } from "../core/index.js";
import { entryKey, type Inventory } from "./inventory.js";
import { isInstallObject, isRateLimitConfig, writableKinds, messageOf, objectKey, statusOf, type FieldOwnerWriter, type KindRef, type KubeObject, type KubeReader } from "./kube.js";
import type { AgentMetrics } from "./metrics.js";
import { foreignManagers, inSync, leftoverPatch, pointerPath, withIgnoredPaths } from "./sync.js";
import { retryTransient, type TransientRetryOptions } from "./transient.js";

export const LABEL_MANAGED = "gitmesh.io/managed";
export const LABEL_CLUSTER = "gitmesh.io/cluster";
/** Set by an object's owner to hand it over to gitmesh. */
export const ANNOTATION_ADOPT = "gitmesh.io/adopt";
/**
 * Reserved output entry with options for the agent; never applied. JSON
 * `{ "allowMassDeletion"?: boolean, "ignoreDifferences"?: [{ "group"?, "kind", "namespace"?, "name"?, "jsonPointers": string[] }] }`.
 */
export const OUTPUT_OPTIONS_KEY = "gitmesh.io/output-options";
export const ISSUED_CERTIFICATE = { apiVersion: "internal.gitmesh.io/v1", kind: "IssuedCertificate" } as const;

/** One output version as received from the relay. */
export interface OutputVersion {
  readonly version: number;
  /** The server marked this the complete desired output: prune against it is allowed. */
  readonly complete: boolean;
  readonly sourceCommit: string;
  /** Relay key → JSON bytes of one object. */
  readonly resources: ReadonlyMap<string, Uint8Array>;
}

export interface ResourceError {
  readonly key: string;
  readonly message: string;
  readonly transient?: boolean;
}

export interface ApplyOutcome {
  readonly ack: boolean;
  readonly errors: readonly ResourceError[];
  /** Objects of the output now in the cluster: applied, or found unchanged. */
  readonly applied: number;
  /** Of those, the ones skipped because they were unchanged since the agent applied them. */
  readonly unchanged: number;
  readonly pruned: number;
  /** Objects of the output that exist but are not the agent's (not applied; NACKed). */
  readonly refused: number;
  /** Why pruning did not run (incomplete output, mass-deletion guard) or was partly held (a control plane's removal), if so. */
  readonly pruneSkipped?: "incomplete" | "mass_deletion" | "list_failed" | "control_plane";
  /** Certificate requests found in the output (not applied to the cluster; see cacerts.ts). */
  readonly certificateRequests: readonly KubeObject[];
}

/** One ignoreDifferences rule of the output options. */
export interface IgnoreDifference {
  readonly group?: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly jsonPointers: readonly string[];
}

export interface ApplierOptions {
  readonly cluster: string;
  readonly reader: KubeReader;
  readonly writer: FieldOwnerWriter;
  /** Where ownership is recorded (inventory.ts). */
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
  /** Re-applies one desired object given its live state (undefined: deleted) — only when the agent owns it. */
  reapply(key: string, live?: KubeObject): Promise<RepairResult>;
  /** Records (message) or clears (undefined) a fight over `key`; reported with the next output's result. */
  reportFight(key: string, message: string | undefined): void;
}

/** Thrown when a write is attempted after leadership was lost. */
export class NotLeaderError extends Error {
  readonly code = "NotLeaderError";
  constructor() {
    super("this replica is no longer the leader: it stopped applying");
  }
}

const decoder = new TextDecoder();

function rankOf(kinds: readonly KindRef[], o: KubeObject): number {
  const i = kinds.findIndex((k) => k.apiVersion === o.apiVersion && k.kind === o.kind);
  // Unknown kinds go after what they may refer to, before the last kinds (VirtualServices, then the EnvoyFilters that patch their routes).
  return i >= 0 ? i : kinds.length - 1.5;
}

/** Only what the agent means to own: no server-populated metadata or status. */
function forApply(o: KubeObject, cluster: string): KubeObject {
  const { status: _status, ...rest } = o;
  const { resourceVersion: _rv, uid: _uid, creationTimestamp: _ct, managedFields: _mf, generation: _g, namespace, ...others } = o.metadata;
  // A cluster-scoped object (a Sail Istio) is rendered with namespace "": it has none.
  const meta = namespace === undefined || namespace === "" ? others : { ...others, namespace };
  return {
    ...rest,
    apiVersion: o.apiVersion,
    kind: o.kind,
    metadata: { ...meta, labels: { ...(o.metadata.labels ?? {}), [LABEL_MANAGED]: "true", [LABEL_CLUSTER]: cluster } },
  };
}

async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Sail operator objects: deleting one uninstalls a control plane, the CNI node agent or the default revision. */
const isControlPlaneObject = (o: KubeObject) => o.apiVersion.startsWith("sailoperator.io/");
const groupOf = (apiVersion: string) => (apiVersion.includes("/") ? apiVersion.slice(0, apiVersion.lastIndexOf("/")) : "");
const describe = (o: { kind: string; metadata: { namespace?: string | undefined; name: string } }) =>
  `${o.kind} ${o.metadata.namespace === undefined || o.metadata.namespace === "" ? "" : `${o.metadata.namespace}/`}${o.metadata.name}`;
const uidOf = (o: KubeObject | undefined) => (typeof o?.metadata.uid === "string" ? o.metadata.uid : undefined);

/** Whether the agent's own field manager applied to this object (confirms an intent left by a crash). */
function appliedBy(o: KubeObject, fieldManager: string): boolean {
  const mf = Array.isArray(o.metadata.managedFields) ? (o.metadata.managedFields as { manager?: unknown; operation?: unknown }[]) : [];
  return mf.some((e) => e.manager === fieldManager && e.operation === "Apply");
}

function otherManagers(o: KubeObject, fieldManager: string): string[] {
  const mf = Array.isArray(o.metadata.managedFields) ? (o.metadata.managedFields as { manager?: unknown }[]) : [];
  return [...new Set(mf.map((e) => (typeof e.manager === "string" ? e.manager : "")).filter((m) => m !== "" && m !== fieldManager))].sort();
}

/**
 * Whether a write that named the live object's uid met another object (deleted and recreated since).
 * A real API server answers a server-side apply (a PATCH: no storage precondition) whose body names
 * another uid with 422 "metadata.uid: Invalid value: …: field is immutable"; an Update, and the
 * emulator, with 409 "Precondition failed: UID in precondition".
 */
function uidMismatch(err: unknown): boolean {
  const status = statusOf(err);
  const message = messageOf(err);
  return (status === 409 && /UID in precondition/.test(message)) || (status === 422 && /metadata\.uid: Invalid value: .*field is immutable/.test(message));
}

/**
 * Whether a write that named the live object's uid found no object: a real API server answers a
 * server-side apply with a uid for an object that no longer exists with 409 "uid mismatch: the
 * provided object specified uid …, and no existing object was found" (it never creates it).
 */
function deletedSinceListed(err: unknown): boolean {
  return statusOf(err) === 409 && /uid mismatch: the provided object specified uid .*no existing object was found/.test(messageOf(err));
}

/** The NACK message for an existing object the agent does not own. */
export function notOwnedMessage(o: KubeObject, detail: string): string {
  const ns = o.metadata.namespace === undefined ? "" : ` -n ${o.metadata.namespace}`;
  return (
    `${describe(o)} already exists and was not created by gitmesh (${detail}); it was not changed. ` +
    `To hand it over, its owner annotates it: kubectl annotate ${o.kind.toLowerCase()}${ns} ${o.metadata.name} ${ANNOTATION_ADOPT}=true ` +
    `(gitmesh then takes it over and may later delete it), or deletes it so gitmesh creates its own.`
  );
}

function parseOptions(value: unknown): { allowMassDeletion: boolean; ignore: IgnoreDifference[]; problems: string[] } {
  const problems: string[] = [];
  const o = (value ?? {}) as { allowMassDeletion?: unknown; ignoreDifferences?: unknown };
  const ignore: IgnoreDifference[] = [];
  if (o.ignoreDifferences !== undefined) {
    if (!Array.isArray(o.ignoreDifferences)) problems.push("ignoreDifferences must be a list");
    else
      for (const [i, r] of (o.ignoreDifferences as unknown[]).entries()) {
        const rule = r as Partial<Record<keyof IgnoreDifference, unknown>> | null;
        const str = (v: unknown) => v === undefined || typeof v === "string";
        if (
          rule === null ||
          typeof rule !== "object" ||
          typeof rule.kind !== "string" ||
          !str(rule.group) ||
          !str(rule.namespace) ||
          !str(rule.name) ||
          !Array.isArray(rule.jsonPointers) ||
          !rule.jsonPointers.every((p) => typeof p === "string" && p.startsWith("/"))
        ) {
          problems.push(`ignoreDifferences[${i}] needs kind and jsonPointers (strings starting with "/"); group, namespace, name are optional strings`);
          continue;
        }
        ignore.push(rule as IgnoreDifference);
      }
  }
  return { allowMassDeletion: o.allowMassDeletion === true, ignore, problems };
}

export function createApplier(options: ApplierOptions): Applier {
  const { cluster, metrics, inventory } = options;
  // Transient answers (a real server's 429 while a kind's storage initializes, 5xx) are retried here,
  // within the delivery: they are "not applied yet", never a NACK.
  const again = <T>(request: () => Promise<T>) => retryTransient(request, options.retry);
  const reader: KubeReader = {
    get: (ref, namespace, name) => again(() => options.reader.get(ref, namespace, name)),
    list: (ref, o) => again(() => options.reader.list(ref, o)),
  };
  const log = options.logger;
  const manageIstioInstall = options.manageIstioInstall === true;
  const rateLimitNamespaces = options.rateLimitConfigNamespaces ?? [];
  const kinds = options.kinds ?? writableKinds({ manageIstioInstall, rateLimitConfigNamespaces: rateLimitNamespaces });
  /**
   * Why this agent does not write `obj` (undefined: it does). One rule: an object is applied only when
   * its kind — in its namespace, for kinds given some namespaces only — is one the agent owns, lists,
   * prunes and repairs; anything else would be written once and then never pruned nor repaired. The
   * message says how to opt in where there is a way.
   */
  const notWritable = (obj: KubeObject): string | undefined => {
    const ns = obj.metadata.namespace ?? "";
    if (kinds.some((k) => k.apiVersion === obj.apiVersion && k.kind === obj.kind && (k.namespaces === undefined || k.namespaces.includes(ns)))) return undefined;
    const parent = obj.metadata.labels?.["gitmesh.io/parent-kind"];
    if (isInstallObject(obj)) {
      return (
        `${describe(obj)} installs Istio (from ${parent ?? "a lifecycle manager"}); this agent manages Istio's configuration only, so it is not applied. ` +
        `To let gitmesh install Istio in cluster "${cluster}", install the agent with lifecycle.enabled=true (flag --manage-istio-install), which also grants the RBAC it needs`
      );
    }
    if (isRateLimitConfig(obj)) {
      return (
        `${describe(obj)} is a rate limiter's configuration (from ${parent ?? "RateLimitServerConfig"}); this agent writes it only in the namespaces it is given, so it is not applied. ` +
        `To let gitmesh configure the rate limiter in namespace "${ns}" of cluster "${cluster}", add it to the agent's rateLimit.configNamespaces (flag --rate-limit-config-namespaces), which also grants the RBAC it needs there`
      );
    }
    return `${describe(obj)}: this agent does not write ${obj.kind} (${obj.apiVersion})${ns === "" ? "" : ` in namespace "${ns}"`}, so it is not applied (an object it wrote could never be pruned or repaired)`;
  };
  const maxFraction = options.maxPruneFraction ?? 0.5;
  const alwaysAllowed = options.pruneAlwaysAllowed ?? 2;
  const concurrency = Math.max(1, options.concurrency ?? 16);
  const fieldManager = options.writer.fieldManager;
  const canWrite = options.canWrite ?? (() => true);
  const guard = () => {
    if (!canWrite()) throw new NotLeaderError();
  };
  // Each attempt checks leadership first. Server-side applies and deletes with a uid precondition are
  // idempotent; create and replace (not used by the applier) are not retried.
  const writer: FieldOwnerWriter = {
    fieldManager,
    apply: (o, opts) => again(() => (guard(), options.writer.apply(o, opts))),
    create: (o) => (guard(), options.writer.create(o)),
    replace: (o) => (guard(), options.writer.replace(o)),
    mergePatch: (o) => again(() => (guard(), options.writer.mergePatch(o))),
    delete: (ref, ns, name, opts) => again(() => (guard(), options.writer.delete(ref, ns, name, opts))),
  };
  let desired = new Map<string, KubeObject>();
  let ignoreRules: IgnoreDifference[] = [];
  /** Object key → hash of the manifest last applied successfully. */
  const lastApplied = new Map<string, string>();
  const fights = new Map<string, string>();
  let migrationChecked = false;
  const hashOf = (o: KubeObject, ignored: readonly (readonly string[])[]) => createHash("sha256").update(JSON.stringify([o, ignored])).digest("base64");

  function ignoredPaths(o: KubeObject): string[][] {
    const g = groupOf(o.apiVersion);
    return ignoreRules
      .filter((r) => r.kind === o.kind && (r.group === undefined || r.group === g) && (r.namespace === undefined || r.namespace === o.metadata.namespace) && (r.name === undefined || r.name === o.metadata.name))
      .flatMap((r) => r.jsonPointers.map(pointerPath));
  }

  function entryOf(o: KubeObject, uid?: string) {
    return { apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, ...(o.metadata.namespace === undefined ? {} : { namespace: o.metadata.namespace }), ...(uid === undefined ? {} : { uid }) };
  }

  /** Applies an object the agent owns (or is adopting): forced, with the live uid as a precondition. */
  async function applyOwned(want: KubeObject, live: KubeObject): Promise<KubeObject> {
    const key = objectKey(want);
    const ignored = ignoredPaths(want);
    const body = withIgnoredPaths(want, live, ignored);
    lastApplied.delete(key);
    try {
      let out = await writer.apply({ ...body, metadata: { ...body.metadata, uid: uidOf(live) } }, { force: true });
      // What the forced apply could not take back (another manager's element in a list merged by key) goes with a merge patch.
      const leftover = leftoverPatch(out, body);
      if (leftover !== undefined) {
        const rivals = otherManagers(out, fieldManager);
        out = await writer.mergePatch({ apiVersion: want.apiVersion, kind: want.kind, metadata: { name: want.metadata.name, ...(want.metadata.namespace === undefined ? {} : { namespace: want.metadata.namespace }), uid: uidOf(out), ...(out.metadata.resourceVersion === undefined ? {} : { resourceVersion: out.metadata.resourceVersion }) }, ...leftover });
        log.warn("removed fields other managers added inside an owned object (a server-side apply keeps them)", { object: describe(want), fields: Object.keys(leftover).join(", "), managers: rivals.join(", ") });
      }
      lastApplied.set(key, hashOf(want, ignored));
      metrics?.applies.inc({ result: "ok" });
      return out;
    } catch (err) {
      metrics?.applies.inc({ result: "error" });
      throw err;
    }
  }

  /**
   * Creates an object that did not exist: intent in the inventory first, a non-forced apply, the uid
   * confirmed after. Returns an error message when someone else's object turned up in between.
   */
  async function createOwned(want: KubeObject): Promise<string | undefined> {
    const key = objectKey(want);
    const ignored = ignoredPaths(want);
    lastApplied.delete(key);
    let out: KubeObject;
    try {
      out = await writer.apply(withIgnoredPaths(want, undefined, ignored), { force: false });
      metrics?.applies.inc({ result: "ok" });
    } catch (err) {
      metrics?.applies.inc({ result: "error" });
      if (statusOf(err) === 409) {
        inventory.remove(key);
        metrics?.ownershipRefused.inc({ kind: want.kind });
        return notOwnedMessage(want, `someone else created it while gitmesh was creating it: ${messageOf(err)}`);
      }
      throw err;
    }
    const others = otherManagers(out, fieldManager);
    if (others.length > 0) {
      inventory.remove(key);
      metrics?.ownershipRefused.inc({ kind: want.kind });
      return notOwnedMessage(want, `someone else created it while gitmesh was creating it (field managers: ${others.join(", ")})`);
    }
    inventory.set(entryOf(want, uidOf(out)));
    lastApplied.set(key, hashOf(want, ignored));
    return undefined;
  }

  /** Every object of the kinds the agent writes (key → object); kinds that failed to list are named. */
  async function listLive(): Promise<{ live: Map<string, KubeObject>; failed: Map<string, string> }> {
    const live = new Map<string, KubeObject>();
    const failed = new Map<string, string>();
    await Promise.all(
      kinds.map(async (k) => {
        try {
          for (const namespace of k.namespaces ?? [undefined]) for (const o of (await reader.list(k, namespace === undefined ? {} : { namespace })).items) live.set(objectKey(o), o);
        } catch (err) {
          if (statusOf(err) === 404) return; // kind not installed in this cluster
          failed.set(`${k.apiVersion}/${k.kind}`, messageOf(err));
        }
      }),
    );
    return { live, failed };
  }

  async function checkMigration(live: ReadonlyMap<string, KubeObject>): Promise<void> {
    if (migrationChecked) return;
    migrationChecked = true;
    const { existed } = await inventory.load();
    if (existed) return;
    const labelled = [...live.values()].filter((o) => o.metadata.labels?.[LABEL_MANAGED] === "true" && o.metadata.labels[LABEL_CLUSTER] === cluster);
    if (labelled.length > 0) {
      log.warn(
        `first start without an inventory: ${labelled.length} objects carry gitmesh's labels but labels are not proof of ownership, so none is adopted; ` +
          `the output is NACKed for each until it is handed over. To hand them all over (e.g. after upgrading from a version without an inventory): ` +
          `kubectl annotate ${[...new Set(labelled.map((o) => o.kind.toLowerCase()))].sort().join(",")} -A -l ${LABEL_MANAGED}=true,${LABEL_CLUSTER}=${cluster} ${ANNOTATION_ADOPT}=true`,
        { inventory: `${inventory.namespace}/${inventory.name}`, labelled: labelled.length },
      );
    }
  }

  async function applyOutput(output: OutputVersion): Promise<ApplyOutcome> {
    const errors: ResourceError[] = [];
    const wanted = new Map<string, { relayKey: string; obj: KubeObject }>();
    const certificateRequests: KubeObject[] = [];
    let allowMassDeletion = false;
    for (const [key, bytes] of output.resources) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(decoder.decode(bytes));
      } catch (err) {
        errors.push({ key, message: `not valid JSON: ${describeError(err)}` });
        continue;
      }
      if (key === OUTPUT_OPTIONS_KEY) {
        const opts = parseOptions(parsed);
        allowMassDeletion = opts.allowMassDeletion;
        ignoreRules = opts.ignore;
        for (const p of opts.problems) errors.push({ key, message: p });
        continue;
      }
      const o = parsed as Partial<KubeObject> | null;
      if (o === null || typeof o !== "object" || typeof o.apiVersion !== "string" || typeof o.kind !== "string" || typeof o.metadata?.name !== "string") {
        errors.push({ key, message: "not a Kubernetes object (apiVersion, kind and metadata.name are required)" });
        continue;
      }
      const obj = o as KubeObject;
      const target = obj.metadata.labels?.[LABEL_CLUSTER];
      if (target !== undefined && target !== cluster) {
        errors.push({ key, message: `object is labelled for cluster "${target}", this agent serves "${cluster}"; not applied` });
        continue;
      }
      if (obj.apiVersion === ISSUED_CERTIFICATE.apiVersion && obj.kind === ISSUED_CERTIFICATE.kind) {
        certificateRequests.push(obj);
        continue;
      }
      const refused = notWritable(obj);
      if (refused !== undefined) {
        errors.push({ key, message: refused });
        continue;
      }
      wanted.set(objectKey(obj), { relayKey: key, obj: forApply(obj, cluster) });
    }
    if (![...output.resources.keys()].includes(OUTPUT_OPTIONS_KEY)) ignoreRules = [];

    // Drift repair compares against the new desired state from now on (our own applies match it).
    const next = new Map(output.complete ? [] : desired);
    for (const [k, { obj }] of wanted) next.set(k, obj);
    desired = next;

    const finish = (r: Omit<ApplyOutcome, "ack" | "errors" | "certificateRequests">): ApplyOutcome => {
      for (const [key, message] of fights) if (wanted.has(key)) errors.push({ key: `fight/${key}`, message });
      const ack = errors.length === 0;
      metrics?.outputResults.inc({ result: ack ? "ack" : "nack" });
      metrics?.outputVersion.set(output.version);
      metrics?.inventoryObjects.set(inventory.entries().length);
      metrics?.ownershipConflicts.set(r.refused);
      log.info(ack ? "output applied" : "output applied with errors", { version: output.version, applied: r.applied, unchanged: r.unchanged, pruned: r.pruned, refused: r.refused, errors: errors.length });
      return { ack, errors, ...r, certificateRequests };
    };

    // Ownership needs the inventory and the live state; without them nothing is written.
    const { live, failed } = await listLive();
    try {
      await inventory.load();
      await checkMigration(live);
    } catch (err) {
      errors.push({ key: "inventory", message: `cannot read the inventory ${inventory.namespace}/${inventory.name}; nothing applied or pruned: ${messageOf(err)}` });
      return finish({ applied: 0, unchanged: 0, pruned: 0, refused: 0, pruneSkipped: "list_failed" });
    }
    const liveOf = async (o: KubeObject): Promise<KubeObject | undefined> => {
      if (!failed.has(`${o.apiVersion}/${o.kind}`)) return live.get(objectKey(o));
      const got = await reader.get({ apiVersion: o.apiVersion, kind: o.kind, plural: "", namespaced: o.metadata.namespace !== undefined }, o.metadata.namespace, o.metadata.name);
      if (got) live.set(objectKey(got), got);
      return got;
    };

    // Classify: create (absent), ours (inventory + same uid), adopt (annotated), or refuse.
    type Work = { relayKey: string; obj: KubeObject; live?: KubeObject };
    const work: Work[] = [];
    let unchanged = 0;
    let refused = 0;
    for (const [key, w] of wanted) {
      let l: KubeObject | undefined;
      try {
        l = await liveOf(w.obj);
      } catch (err) {
        errors.push({ key: w.relayKey, message: `cannot read the live object, not applied: ${messageOf(err)}` });
        continue;
      }
      const entry = inventory.get(key);
      if (l === undefined) {
        inventory.set(entryOf(w.obj)); // intent: written before the create
        work.push(w);
        continue;
      }
      const uid = uidOf(l);
      let ours = entry?.uid !== undefined && entry.uid === uid;
      if (!ours && entry !== undefined && entry.uid === undefined && appliedBy(l, fieldManager)) {
        inventory.set(entryOf(w.obj, uid)); // an intent left by a crash: the object is the one we created
        ours = true;
      }
      if (!ours) {
        if (entry !== undefined) inventory.remove(key); // ours once, deleted and recreated by someone else since
        if (l.metadata.annotations?.[ANNOTATION_ADOPT] === "true") {
          log.info("adopting an object its owner handed over", { object: describe(l), uid });
          metrics?.adoptions.inc({ kind: l.kind });
          work.push({ ...w, live: l });
          continue;
        }
        refused += 1;
        metrics?.ownershipRefused.inc({ kind: w.obj.kind });
        const detail = entry !== undefined ? "it was deleted and recreated by someone else since gitmesh created it" : "it is not in the agent's inventory";
        errors.push({ key: w.relayKey, message: notOwnedMessage(l, detail) });
        log.warn("not applied: the object exists and gitmesh does not own it", { object: describe(l), uid, managers: otherManagers(l, fieldManager) });
        continue;
      }
      const ignored = ignoredPaths(w.obj);
      if (lastApplied.get(key) === hashOf(w.obj, ignored) && inSync(l, w.obj, ignored)) {
        unchanged += 1;
        continue;
      }
      const rivals = foreignManagers(l, w.obj, fieldManager, ignored);
      if (rivals.length > 0 && lastApplied.has(key)) log.warn("drift: fields of an owned object were set by another manager; repairing", { object: describe(l), managers: rivals });
      work.push({ ...w, live: l });
    }

    // Intents reach the cluster before any create.
    try {
      await inventory.flush();
    } catch (err) {
      errors.push({ key: "inventory", message: `cannot write the inventory ${inventory.namespace}/${inventory.name}; nothing applied or pruned: ${messageOf(err)}` });
      return finish({ applied: 0, unchanged, pruned: 0, refused, pruneSkipped: "list_failed" });
    }

    let applied = unchanged;
    const ranks = new Map<number, Work[]>();
    for (const w of work) {
      const r = rankOf(kinds, w.obj);
      const list = ranks.get(r);
      if (list) list.push(w);
      else ranks.set(r, [w]);
    }
    for (const r of [...ranks.keys()].sort((a, b) => a - b)) {
      await inParallel(ranks.get(r)!, concurrency, async (w) => {
        const key = objectKey(w.obj);
        try {
          if (w.live === undefined) {
            const problem = await createOwned(w.obj);
            if (problem !== undefined) {
              refused += 1;
              errors.push({ key: w.relayKey, message: problem });
              return;
            }
          } else {
            try {
              const out = await applyOwned(w.obj, w.live);
              inventory.set(entryOf(w.obj, uidOf(out)));
            } catch (err) {
              if (!deletedSinceListed(err)) throw err;
              // Deleted by someone else since the list: created again like any absent object (intent first).
              log.info("an owned object was deleted while gitmesh applied it; creating it again", { object: describe(w.obj) });
              inventory.set(entryOf(w.obj));
              await inventory.flush();
              const problem = await createOwned(w.obj);
              if (problem !== undefined) {
                refused += 1;
                errors.push({ key: w.relayKey, message: problem });
                return;
              }
            }
          }
          applied += 1;
        } catch (err) {
          if (uidMismatch(err)) {
            inventory.remove(key);
            refused += 1;
            errors.push({ key: w.relayKey, message: notOwnedMessage(w.obj, "it was deleted and recreated by someone else while gitmesh applied it") });
            return;
          }
          errors.push({ key: w.relayKey, message: `apply failed: ${messageOf(err)}` });
        }
      });
    }

    let pruned = 0;
    let pruneSkipped: ApplyOutcome["pruneSkipped"];
    if (!output.complete) {
      pruneSkipped = "incomplete";
      metrics?.pruneRefused.inc({ reason: "incomplete" });
      log.info("output is not marked complete: applied without pruning", { version: output.version });
    } else if (failed.size > 0) {
      pruneSkipped = "list_failed";
      for (const [k, m] of failed) errors.push({ key: "prune", message: `cannot list ${k} objects, nothing pruned: ${m}` });
    } else {
      // Candidates: inventory members no longer wanted whose live uid is still the recorded one.
      const stale: { key: string; obj: KubeObject; uid: string }[] = [];
      for (const e of inventory.entries()) {
        const key = entryKey(e);
        if (wanted.has(key)) continue;
        const l = live.get(key);
        if (l === undefined) {
          inventory.remove(key); // already gone
          continue;
        }
        const uid = uidOf(l)!;
        if (e.uid === undefined ? appliedBy(l, fieldManager) : e.uid === uid) stale.push({ key, obj: l, uid });
        else {
          inventory.remove(key);
          metrics?.pruneSkipped.inc({ reason: "recreated" });
          log.info("not pruned: the object was deleted and recreated by someone else; it is not gitmesh's any more", { object: describe(l) });
        }
      }
      const owned = inventory.entries().filter((e) => e.uid !== undefined).length;
      const limit = Math.max(alwaysAllowed, Math.floor(maxFraction * owned));
      if (stale.length > limit && !allowMassDeletion) {
        pruneSkipped = "mass_deletion";
        metrics?.pruneRefused.inc({ reason: "mass_deletion" });
        const message =
          `refusing to delete ${stale.length} of ${owned} owned objects (limit ${limit}: ${Math.round(maxFraction * 100)}% of owned, at least ${alwaysAllowed}); nothing was pruned. ` +
          `If this deletion is intended, allow it from Git: add the trailer "Gitmesh-Allow-Deletion: ${cluster}" (or "Gitmesh-Allow-Deletion: *") to the commit that removes the configuration ` +
          `(e.g. git commit --trailer "Gitmesh-Allow-Deletion: ${cluster}"), or raise the agent's --max-prune-fraction (chart value prune.maxFraction).`;
        log.error("mass deletion refused", { version: output.version, sourceCommit: output.sourceCommit, stale: stale.length, owned, limit });
        errors.push({ key: "prune", message });
      } else {
        // Removing a control plane (a Sail Istio, IstioCNI or revision tag) uninstalls Istio for every
        // workload it serves: like a mass deletion, it needs the commit's explicit allowance, however
        // few objects go. A typo in a lifecycle manager's cluster name must not take a mesh down.
        const protectedStale = allowMassDeletion ? [] : stale.filter((s) => isControlPlaneObject(s.obj));
        if (protectedStale.length > 0) {
          pruneSkipped = "control_plane";
          metrics?.pruneRefused.inc({ reason: "control_plane" });
          const what = protectedStale.map((s) => describe(s.obj)).join(", ");
          log.error("control plane removal refused", { version: output.version, sourceCommit: output.sourceCommit, objects: what });
          errors.push({
            key: "prune",
            message:
              `refusing to delete ${what}: it uninstalls Istio (or its default revision) for the workloads it serves; the rest of the output was applied and pruned. ` +
              `If this is intended (e.g. a finished canary), allow it from Git: add the trailer "Gitmesh-Allow-Deletion: ${cluster}" to the commit that removes it (git commit --trailer "Gitmesh-Allow-Deletion: ${cluster}").`,
          });
        }
        const deletable = stale.filter((s) => !protectedStale.includes(s));
        deletable.sort((a, b) => rankOf(kinds, b.obj) - rankOf(kinds, a.obj));
        for (const s of deletable) {
          const o = s.obj;
          try {
            const existed = await writer.delete({ apiVersion: o.apiVersion, kind: o.kind, plural: "", namespaced: o.metadata.namespace !== undefined }, o.metadata.namespace, o.metadata.name, { uid: s.uid });
            inventory.remove(s.key);
            lastApplied.delete(s.key);
            if (existed) {
              pruned += 1;
              metrics?.prunes.inc({ result: "ok" });
            }
          } catch (err) {
            if (statusOf(err) === 409) {
              inventory.remove(s.key);
              metrics?.pruneSkipped.inc({ reason: "recreated" });
              log.info("not pruned: the object was recreated by someone else just before the delete (uid precondition)", { object: describe(o) });
              continue;
            }
            metrics?.prunes.inc({ result: "error" });
            errors.push({ key: `prune/${s.key}`, message: `delete failed: ${messageOf(err)}` });
          }
        }
        if (pruned > 0) log.info("pruned objects no longer in the output", { version: output.version, pruned });
      }
    }
    try {
      await inventory.flush();
      metrics?.inventoryBytes.set(inventory.storedBytes);
    } catch (err) {
      errors.push({ key: "inventory", message: `cannot write the inventory ${inventory.namespace}/${inventory.name}: ${messageOf(err)}` });
    }
    return finish({ applied, unchanged, pruned, refused, ...(pruneSkipped ? { pruneSkipped } : {}) });
  }

  return {
    applyOutput,
    desired: () => desired,
    ignoredPaths: (key) => {
      const o = desired.get(key);
      return o ? ignoredPaths(o) : [];
    },
    owns(l) {
      const e = inventory.get(objectKey(l));
      return e?.uid !== undefined && e.uid === uidOf(l);
    },
    async reapply(key, l) {
      const want = desired.get(key);
      if (!want) return "not_desired";
      const entry = inventory.get(key);
      if (entry?.uid === undefined || (l !== undefined && entry.uid !== uidOf(l))) return "not_owned";
      const current = await reader.get({ apiVersion: want.apiVersion, kind: want.kind, plural: "", namespaced: want.metadata.namespace !== undefined }, want.metadata.namespace, want.metadata.name);
      if (current === undefined) {
        // Deleted by someone else: created again (intent first, uid confirmed after).
        inventory.set(entryOf(want));
        await inventory.flush();
        const problem = await createOwned(want);
        await inventory.flush();
        if (problem !== undefined) throw new Error(problem);
        return "repaired";
      }
      if (uidOf(current) !== entry.uid) return "not_owned";
      await applyOwned(want, current);
      return "repaired";
    },
    reportFight(key, message) {
      if (message === undefined) fights.delete(key);
      else fights.set(key, message);
    },
  };
}
