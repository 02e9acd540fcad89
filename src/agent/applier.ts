/**
 * Apply of output versions: server-side apply (field manager `gitmesh-agent`, forced — the agent
 * owns these objects) in dependency order, then a SAFE prune:
 * - only objects labelled `gitmesh.io/managed=true` and `gitmesh.io/cluster=<this cluster>`;
 * - only against an output version the server marked complete (an incomplete one is applied,
 *   never pruned against);
 * - never more than `maxPruneFraction` of the owned objects at once (above `pruneAlwaysAllowed`
 *   deletions) unless the output carries the OUTPUT_OPTIONS_KEY entry `{"allowMassDeletion": true}`;
 *   a refused prune is logged as an error, counted (gitmesh_agent_prune_refused_total) and NACKed
 *   with key `prune`;
 * - nothing here runs because of a disconnect: only an output version received from the server
 *   calls applyOutput.
 * The result carries per-resource errors (the relay key of the failing entry) for the ACK/NACK.
 *
 * Unchanged objects are not applied again: the applier keeps a hash of the manifest it last
 * applied per object, lists the owned objects first, and skips an object when its desired manifest
 * hashes the same AND the live object still holds every field of it (drift.ts inSync). Anything
 * else — a changed manifest, an object deleted or edited by someone else, a failed list — is applied.
 */
import { createHash } from "node:crypto";
import { describeError, type Logger } from "../core/index.js";
import { ISTIO_KINDS, messageOf, objectKey, statusOf, type FieldOwnerWriter, type KindRef, type KubeObject, type KubeReader } from "./kube.js";
import type { AgentMetrics } from "./metrics.js";
import { inSync } from "./sync.js";

export const LABEL_MANAGED = "gitmesh.io/managed";
export const LABEL_CLUSTER = "gitmesh.io/cluster";
/** Reserved output entry with options for the agent (JSON `{ "allowMassDeletion"?: boolean }`); never applied. */
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
}

export interface ApplyOutcome {
  readonly ack: boolean;
  readonly errors: readonly ResourceError[];
  /** Objects of the output now in the cluster: applied, or found unchanged. */
  readonly applied: number;
  /** Of those, the ones skipped because they were unchanged since the agent applied them. */
  readonly unchanged: number;
  readonly pruned: number;
  /** Why pruning did not run (incomplete output, mass-deletion guard), if it did not. */
  readonly pruneSkipped?: "incomplete" | "mass_deletion" | "list_failed";
  /** Certificate requests found in the output (not applied to the cluster; see cacerts.ts). */
  readonly certificateRequests: readonly KubeObject[];
}

export interface ApplierOptions {
  readonly cluster: string;
  readonly reader: KubeReader;
  readonly writer: FieldOwnerWriter;
  /** Largest share of owned objects one output may delete (default 0.5). */
  readonly maxPruneFraction?: number;
  /** Deletions always allowed whatever the share (default 2). */
  readonly pruneAlwaysAllowed?: number;
  /** Parallel applies within one dependency rank (default 16). */
  readonly concurrency?: number;
  /** Kinds that may hold owned objects (default: the Istio kinds). */
  readonly kinds?: readonly KindRef[];
  readonly metrics?: AgentMetrics;
  readonly logger: Logger;
}

export interface Applier {
  applyOutput(output: OutputVersion): Promise<ApplyOutcome>;
  /** What the agent currently wants in the cluster (object key → object), for drift repair. */
  desired(): ReadonlyMap<string, KubeObject>;
  /** Re-applies one desired object (drift repair). */
  reapply(key: string): Promise<void>;
}

const decoder = new TextDecoder();

function rankOf(kinds: readonly KindRef[], o: KubeObject): number {
  const i = kinds.findIndex((k) => k.apiVersion === o.apiVersion && k.kind === o.kind);
  // Unknown kinds go after what they may refer to but before VirtualServices (last rank).
  return i >= 0 ? i : kinds.length - 1.5;
}

/** Only what the agent means to own: no server-populated metadata or status. */
function forApply(o: KubeObject, cluster: string): KubeObject {
  const { status: _status, ...rest } = o;
  const { resourceVersion: _rv, uid: _uid, creationTimestamp: _ct, managedFields: _mf, generation: _g, ...meta } = o.metadata;
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

export function createApplier(options: ApplierOptions): Applier {
  const { cluster, reader, writer, metrics } = options;
  const log = options.logger;
  const kinds = options.kinds ?? ISTIO_KINDS;
  const maxFraction = options.maxPruneFraction ?? 0.5;
  const alwaysAllowed = options.pruneAlwaysAllowed ?? 2;
  const concurrency = Math.max(1, options.concurrency ?? 16);
  const selector = `${LABEL_MANAGED}=true,${LABEL_CLUSTER}=${cluster}`;
  let desired = new Map<string, KubeObject>();
  /** Object key → hash of the manifest last applied successfully. */
  const lastApplied = new Map<string, string>();
  const hashOf = (o: KubeObject) => createHash("sha256").update(JSON.stringify(o)).digest("base64");

  async function applyOne(o: KubeObject): Promise<void> {
    const key = objectKey(o);
    lastApplied.delete(key);
    try {
      await writer.apply(o, { force: true });
      lastApplied.set(key, hashOf(o));
      metrics?.applies.inc({ result: "ok" });
    } catch (err) {
      metrics?.applies.inc({ result: "error" });
      throw err;
    }
  }

  /** The owned objects in the cluster (key → object); undefined (with errors) when a kind cannot be listed. */
  async function listOwned(errors: ResourceError[]): Promise<Map<string, KubeObject> | undefined> {
    const owned = new Map<string, KubeObject>();
    const failures: string[] = [];
    await Promise.all(
      kinds.map(async (k) => {
        try {
          for (const o of (await reader.list(k, { labelSelector: selector })).items) owned.set(objectKey(o), o);
        } catch (err) {
          if (statusOf(err) === 404) return; // kind not installed in this cluster
          failures.push(k.kind);
          errors.push({ key: "prune", message: `cannot list owned ${k.kind} objects, nothing pruned: ${messageOf(err)}` });
        }
      }),
    );
    return failures.length > 0 ? undefined : owned;
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
        allowMassDeletion = (parsed as { allowMassDeletion?: unknown } | null)?.allowMassDeletion === true;
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
      wanted.set(objectKey(obj), { relayKey: key, obj: forApply(obj, cluster) });
    }

    // Drift repair compares against the new desired state from now on (our own applies match it).
    const next = new Map(output.complete ? [] : desired);
    for (const [k, { obj }] of wanted) next.set(k, obj);
    desired = next;

    // What the cluster holds now: unchanged objects are skipped, the rest is pruned (complete outputs).
    const listErrors: ResourceError[] = [];
    const owned = await listOwned(listErrors);
    let unchanged = 0;
    const ranks = new Map<number, { relayKey: string; obj: KubeObject }[]>();
    for (const [key, w] of wanted) {
      const live = owned?.get(key);
      if (live !== undefined && lastApplied.get(key) === hashOf(w.obj) && inSync(live, w.obj)) {
        unchanged += 1;
        continue;
      }
      const r = rankOf(kinds, w.obj);
      const list = ranks.get(r);
      if (list) list.push(w);
      else ranks.set(r, [w]);
    }
    let applied = unchanged;
    const inCluster = new Set(owned?.keys() ?? []);
    for (const r of [...ranks.keys()].sort((a, b) => a - b)) {
      await inParallel(ranks.get(r)!, concurrency, async ({ relayKey, obj }) => {
        try {
          await applyOne(obj);
          applied += 1;
          inCluster.add(objectKey(obj));
        } catch (err) {
          errors.push({ key: relayKey, message: `apply failed: ${messageOf(err)}` });
        }
      });
    }

    let pruned = 0;
    let pruneSkipped: ApplyOutcome["pruneSkipped"];
    if (!output.complete) {
      pruneSkipped = "incomplete";
      metrics?.pruneRefused.inc({ reason: "incomplete" });
      log.info("output is not marked complete: applied without pruning", { version: output.version });
    } else {
      const listFailed = owned === undefined;
      errors.push(...listErrors);
      const ownedList = [...(owned?.values() ?? [])];
      const stale = ownedList.filter((o) => !wanted.has(objectKey(o)));
      // owned objects after the applies above (as if listed now)
      const limit = Math.max(alwaysAllowed, Math.floor(maxFraction * inCluster.size));
      if (listFailed) {
        pruneSkipped = "list_failed";
      } else if (stale.length > limit && !allowMassDeletion) {
        pruneSkipped = "mass_deletion";
        metrics?.pruneRefused.inc({ reason: "mass_deletion" });
        const message =
          `refusing to delete ${stale.length} of ${inCluster.size} owned objects (limit ${limit}: ${Math.round(maxFraction * 100)}% of owned, at least ${alwaysAllowed}); ` +
          `nothing was pruned. If this is intended, publish the output with ${OUTPUT_OPTIONS_KEY} {"allowMassDeletion": true} or raise --max-prune-fraction.`;
        log.error("mass deletion refused", { version: output.version, sourceCommit: output.sourceCommit, stale: stale.length, owned: inCluster.size, limit });
        errors.push({ key: "prune", message });
      } else {
        stale.sort((a, b) => rankOf(kinds, b) - rankOf(kinds, a));
        for (const o of stale) {
          try {
            await writer.delete({ apiVersion: o.apiVersion, kind: o.kind, plural: "", namespaced: true }, o.metadata.namespace, o.metadata.name);
            pruned += 1;
            lastApplied.delete(objectKey(o));
            metrics?.prunes.inc({ result: "ok" });
          } catch (err) {
            metrics?.prunes.inc({ result: "error" });
            errors.push({ key: `prune/${objectKey(o)}`, message: `delete failed: ${messageOf(err)}` });
          }
        }
        if (pruned > 0) log.info("pruned objects no longer in the output", { version: output.version, pruned });
      }
    }
    const ack = errors.length === 0;
    metrics?.outputResults.inc({ result: ack ? "ack" : "nack" });
    metrics?.outputVersion.set(output.version);
    log.info(ack ? "output applied" : "output applied with errors", { version: output.version, applied, unchanged, pruned, errors: errors.length });
    return { ack, errors, applied, unchanged, pruned, ...(pruneSkipped ? { pruneSkipped } : {}), certificateRequests };
  }

  return {
    applyOutput,
    desired: () => desired,
    async reapply(key) {
      const o = desired.get(key);
      if (o) await applyOne(o);
    },
  };
}
