/**
 * The emulator's state: objects by kind, one global resource version counter, a bounded history of
 * change events for watches, and the write semantics of the API server (create, update with
 * optimistic concurrency, patches, server-side apply, delete, namespace cascade).
 */
import { randomUUID } from "node:crypto";
import { recordUpdate, serverSideApply, formatPath, type FieldConflict } from "./fields.js";
import { applyDefaults, createDefaultingState } from "./defaults.js";
import { apiVersionOf, type KindRegistry, type ResourceKind } from "./kinds.js";
import { clone, deepEqual, dropKey, isObject, jsonPatch, mergePatch, type Json, type JsonObject } from "./patch.js";
import { strategicMergePatch } from "./smp.js";
import { checkCustomResource, typedPatchError } from "./validation.js";
import { decodeBuiltIn, nameError, validateBuiltIn, validateMetadata } from "./builtin-validation.js";
import type { Schema } from "./schema.js";
import { matchesFields, matchesLabels, type FieldRequirement, type Selector } from "./selectors.js";
import {
  alreadyExists,
  badRequest,
  invalid,
  KubeApiError,
  notFound,
  qualifiedResource,
  staleConflict,
  StatusReason,
  type StatusCause,
} from "./status.js";

export type EventType = "ADDED" | "MODIFIED" | "DELETED";

export interface StoreEvent {
  readonly type: EventType;
  readonly rv: number;
  readonly kind: ResourceKind;
  readonly object: JsonObject;
  /** The object before a MODIFIED event (to tell selector enter/leave apart). */
  readonly previous?: JsonObject;
}

export const PatchType = {
  Merge: "application/merge-patch+json",
  Strategic: "application/strategic-merge-patch+json",
  Json: "application/json-patch+json",
  Apply: "application/apply-patch+yaml",
} as const;
export type PatchType = (typeof PatchType)[keyof typeof PatchType];

/** `fieldValidation`: what to do with unknown fields (the API server's default is Warn). */
export type FieldValidation = "Strict" | "Warn" | "Ignore";

export interface StoreOptions {
  readonly kinds: KindRegistry;
  /** How many change events are kept for watches to resume from. */
  readonly historySize: number;
  readonly now: () => Date;
  /** Create a missing namespace instead of answering 404 on a namespaced create. */
  readonly autoCreateNamespaces: boolean;
}

const NAMESPACE_KIND_KEY = "/namespaces";
const kindKey = (k: ResourceKind): string => `${k.group}/${k.plural}`;
const objKey = (ns: string | undefined, name: string): string => `${ns ?? ""}/${name}`;

export function metaOf(obj: JsonObject): JsonObject {
  if (!isObject(obj.metadata)) obj.metadata = {};
  return obj.metadata;
}

function str(v: Json | undefined): string | undefined {
  return typeof v === "string" ? v : undefined;
}

export class ObjectStore {
  private rv = 0;
  private compactedRv = 0;
  private readonly objects = new Map<string, Map<string, JsonObject>>();
  /** Change events; the live window is `history[head..]` (compacted in chunks, not shifted per write). */
  private history: StoreEvent[] = [];
  private head = 0;
  private readonly listeners = new Set<(e: StoreEvent) => void>();
  private readonly defaulting = createDefaultingState();
  /** Set while a `dryRun=All` request runs: writes go through every check but `commit` stores nothing. */
  private dryRunning = false;
  /** The running request's `fieldValidation` (unknown fields: refuse, warn or drop silently). */
  private fieldValidation: FieldValidation = "Warn";
  /** Warnings for the running request (`Warning: 299` headers). */
  private warnings: string[] = [];
  /** The running request's subresource (`status`), if any. */
  private subresource: "status" | undefined;
  /** Seeding writes state as controllers would: status included, no status-subresource reset. */
  private seeding = false;

  constructor(private readonly opts: StoreOptions) {}

  get resourceVersion(): number {
    return this.rv;
  }

  /** Events after `rv`, or `undefined` when that version is older than the history kept (410 Gone). */
  eventsSince(rv: number): StoreEvent[] | undefined {
    if (rv < this.compactedRv) return undefined;
    let lo = this.head;
    let hi = this.history.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.history[mid]!.rv <= rv) lo = mid + 1;
      else hi = mid;
    }
    return this.history.slice(lo);
  }

  get oldestResumableVersion(): number {
    return this.compactedRv;
  }

  /**
   * Runs a write as `dryRun=All` does on a real server: validation, admission, defaulting and
   * conflicts as usual, the answer as it would be, but nothing stored, no resourceVersion, no event.
   */
  dryRun<T>(enabled: boolean, fn: () => T): T {
    return this.run({ dryRun: enabled }, fn).value;
  }

  /** Runs one request's writes with its options; returns what they produced and the warnings to send. */
  run<T>(ctx: { dryRun?: boolean; fieldValidation?: FieldValidation; subresource?: "status" }, fn: () => T): { value: T; warnings: string[] } {
    this.dryRunning = ctx.dryRun === true;
    this.fieldValidation = ctx.fieldValidation ?? "Warn";
    this.subresource = ctx.subresource;
    this.warnings = [];
    try {
      return { value: fn(), warnings: this.warnings };
    } finally {
      this.dryRunning = false;
      this.fieldValidation = "Warn";
      this.subresource = undefined;
      this.warnings = [];
    }
  }

  /**
   * Admission for custom resources: prunes unknown fields (refused under fieldValidation=Strict,
   * a warning under Warn) and validates against the CRD's structural schema (422).
   * `partial` (an apply configuration) only prunes: required fields may live elsewhere.
   */
  private admit(kind: ResourceKind, obj: JsonObject, partial = false, live?: JsonObject): void {
    if (kind.builtIn === true) {
      const decoded = decodeBuiltIn(kind, obj);
      if (decoded.error !== undefined) throw badRequest(decoded.error);
      this.unknownFields(decoded.unknown);
      if (partial) return;
      const causes = validateBuiltIn(kind, obj, live);
      if (causes.length > 0) throw invalid(kind.kind, kind.group, str(metaOf(obj).name) ?? "", causes);
      return;
    }
    if (kind.schema === undefined) return;
    const { errors, pruned } = checkCustomResource(obj, kind.schema);
    this.unknownFields(pruned);
    if (!partial && errors.length > 0) throw invalid(kind.kind, kind.group, str(metaOf(obj).name) ?? "", errors);
  }

  /**
   * An apply patch is first made a typed object of the kind's schema, as structured-merge-diff does
   * on the real server: a field the schema does not declare, or (custom resources) a value of the
   * wrong type, fails there with HTTP 500 `failed to create typed patch object (<ns>/<name>;
   * <group>/<version>, Kind=<kind>): …` whatever `fieldValidation` says. `at` is the namespace (as
   * the body gives it) and name.
   */
  private admitApplyPatch(kind: ResourceKind, applied: JsonObject, at: string): void {
    const typed = (detail: string): KubeApiError =>
      new KubeApiError(500, StatusReason.Unknown, `failed to create typed patch object (${at}; ${kind.group}/${kind.version}, Kind=${kind.kind}): ${detail}`);
    if (kind.builtIn === true) {
      const decoded = decodeBuiltIn(kind, clone(applied));
      if (decoded.error === undefined && decoded.unknown.length > 0) throw typed(`.${decoded.unknown[0]!}: field not declared in schema`);
    } else if (kind.schema !== undefined) {
      const error = typedPatchError(applied, kind.schema);
      if (error !== undefined) throw typed(error);
    }
    this.admit(kind, applied, true);
  }

  /** Unknown fields (already dropped): refused under fieldValidation=Strict, a warning under Warn. */
  private unknownFields(pruned: readonly string[]): void {
    if (pruned.length > 0) {
      if (this.fieldValidation === "Strict") {
        throw badRequest(`strict decoding error: ${pruned.map((p) => `unknown field "${p}"`).join(", ")}`);
      }
      if (this.fieldValidation === "Warn") this.warnings.push(...pruned.map((p) => `unknown field "${p}"`));
    }
  }

  /** The status subresource: the main resource leaves status alone, `/status` changes nothing else. */
  private scopeToSubresource(kind: ResourceKind, live: JsonObject | undefined, next: JsonObject): JsonObject {
    if (this.seeding || kind.statusSubresource !== true) return next;
    if (this.subresource === "status") {
      if (live === undefined) return next;
      const out = clone(live);
      if (next.status === undefined) delete out.status;
      else out.status = next.status;
      metaOf(out).managedFields = metaOf(next).managedFields ?? null;
      if (metaOf(out).managedFields === null) delete metaOf(out).managedFields;
      return out;
    }
    if (live === undefined || live.status === undefined) delete next.status;
    else next.status = clone(live.status);
    return next;
  }

  /**
   * The objects of a kind as they were at `rv` (for list `resourceVersionMatch=Exact` and continue
   * tokens): the current state with the newer events undone. Undefined when the history no longer reaches `rv`.
   */
  snapshot(kind: ResourceKind, rv: number): Map<string, JsonObject> | undefined {
    const events = this.eventsSince(rv);
    if (events === undefined) return undefined;
    const out = new Map(this.bucket(kind));
    for (let i = events.length - 1; i >= 0; i--) {
      const e = events[i]!;
      if (e.kind !== kind) continue;
      const m = metaOf(e.object);
      const key = objKey(str(m.namespace), str(m.name) ?? "");
      if (e.type === "ADDED" || e.previous === undefined) out.delete(key);
      else out.set(key, e.previous);
    }
    return out;
  }

  subscribe(listener: (e: StoreEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private bucket(kind: ResourceKind): Map<string, JsonObject> {
    let b = this.objects.get(kindKey(kind));
    if (b === undefined) {
      b = new Map();
      this.objects.set(kindKey(kind), b);
    }
    return b;
  }

  private commit(kind: ResourceKind, type: EventType, input: JsonObject, previous?: JsonObject): JsonObject {
    // Field order as the real server writes it: kind, apiVersion, metadata, then the rest.
    const { kind: k, apiVersion: av, metadata: md, ...rest } = input;
    const obj: JsonObject = { kind: k ?? kind.kind, apiVersion: av ?? apiVersionOf(kind), metadata: md ?? {}, ...rest };
    const meta = metaOf(obj);
    if (this.dryRunning) {
      // As the real server answers a dry run: a create has no resourceVersion yet, an update or a
      // delete shows the live object's.
      if (type === "ADDED") delete meta.resourceVersion;
      else meta.resourceVersion = previous === undefined ? (meta.resourceVersion ?? null) : (metaOf(previous).resourceVersion ?? null);
      return obj;
    }
    this.rv += 1;
    if (type !== "DELETED") {
      meta.resourceVersion = String(this.rv);
      this.bucket(kind).set(objKey(str(meta.namespace), str(meta.name) ?? ""), obj);
    } else {
      this.bucket(kind).delete(objKey(str(meta.namespace), str(meta.name) ?? ""));
      meta.resourceVersion = String(this.rv);
    }
    const event: StoreEvent = { type, rv: this.rv, kind, object: obj, ...(previous === undefined ? {} : { previous }) };
    this.history.push(event);
    if (this.history.length - this.head > this.opts.historySize) {
      this.head += 1;
      this.compactedRv = this.history[this.head - 1]!.rv;
      if (this.head >= this.opts.historySize) {
        this.history = this.history.slice(this.head);
        this.head = 0;
      }
    }
    for (const l of this.listeners) l(event);
    return obj;
  }

  private namespaceKind(): ResourceKind {
    return this.opts.kinds.byResource("", "v1", "namespaces")!;
  }

  private requireNamespace(kind: ResourceKind, ns: string | undefined, name = ""): void {
    if (!kind.namespaced) return;
    if (ns === undefined || ns === "") throw badRequest("the server could not find the requested resource: a namespace is required");
    const namespace = this.bucket(this.namespaceKind()).get(objKey(undefined, ns));
    if (namespace !== undefined && metaOf(namespace).deletionTimestamp !== undefined && !this.seeding) {
      // The NamespaceLifecycle admission plugin: nothing new in a namespace being deleted.
      const message = `unable to create new content in namespace ${ns} because it is being terminated`;
      throw new KubeApiError(403, StatusReason.Forbidden, `${qualifiedResource(kind.plural, kind.group)} "${name}" is forbidden: ${message}`, {
        name,
        ...(kind.group === "" ? {} : { group: kind.group }),
        kind: kind.plural,
        causes: [{ reason: "NamespaceTerminating", message, field: "metadata.namespace" }],
      });
    }
    if (namespace !== undefined) return;
    if (this.opts.autoCreateNamespaces) {
      this.create(this.namespaceKind(), undefined, { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } }, "kube-emulator");
      return;
    }
    throw new KubeApiError(404, StatusReason.NotFound, `namespaces "${ns}" not found`, { name: ns, kind: "namespaces" });
  }

  get(kind: ResourceKind, ns: string | undefined, name: string): Readonly<JsonObject> {
    const o = this.bucket(kind).get(objKey(kind.namespaced ? ns : undefined, name));
    if (o === undefined) throw notFound(kind.plural, kind.group, name);
    return o;
  }

  find(kind: ResourceKind, ns: string | undefined, name: string): JsonObject | undefined {
    const o = this.bucket(kind).get(objKey(kind.namespaced ? ns : undefined, name));
    return o === undefined ? undefined : clone(o);
  }

  /** Matching objects sorted by namespace/name. They are the stored objects: serialise them, never mutate them. */
  list(kind: ResourceKind, ns: string | undefined, labels: Selector, fields: readonly FieldRequirement[]): readonly Readonly<JsonObject>[] {
    return this.listKeyed(kind, ns, labels, fields).map((e) => e[1]);
  }

  /** Like `list`, with each object's storage key (`namespace/name`), from `source` (a snapshot) when given. */
  listKeyed(
    kind: ResourceKind,
    ns: string | undefined,
    labels: Selector,
    fields: readonly FieldRequirement[],
    source: ReadonlyMap<string, JsonObject> = this.bucket(kind),
  ): [string, Readonly<JsonObject>][] {
    const out: [string, JsonObject][] = [];
    for (const [key, o] of source) {
      if (this.matches(o, ns, labels, fields)) out.push([key, o]);
    }
    return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }

  matches(o: Readonly<JsonObject>, ns: string | undefined, labels: Selector, fields: readonly FieldRequirement[]): boolean {
    const meta = metaOf(o);
    const namespace = str(meta.namespace);
    if (ns !== undefined && namespace !== ns) return false;
    const lbls = isObject(meta.labels) ? (meta.labels as Record<string, string>) : undefined;
    return matchesLabels(labels, lbls) && matchesFields(fields, o);
  }

  /** Checks identity and metadata shape; fills apiVersion/kind/namespace. Throws 400/422. */
  private normalize(kind: ResourceKind, ns: string | undefined, body: unknown, nameFromUrl?: string): JsonObject {
    if (!isObject(body)) throw badRequest("the request body must be a JSON or YAML object");
    const obj = clone(body);
    const apiVersion = apiVersionOf(kind);
    if (obj.apiVersion !== undefined && obj.apiVersion !== apiVersion) {
      throw badRequest(`the API version in the data (${JSON.stringify(obj.apiVersion)}) does not match the expected API version (${apiVersion})`);
    }
    if (obj.kind !== undefined && obj.kind !== kind.kind) {
      throw badRequest(`the kind in the data (${JSON.stringify(obj.kind)}) does not match the expected kind (${kind.kind})`);
    }
    obj.apiVersion = apiVersion;
    obj.kind = kind.kind;
    const meta = metaOf(obj);
    if (kind.namespaced) {
      // null, like "", is unset (JSON null decodes to Go's zero value): the namespace of the path.
      if (meta.namespace !== undefined && meta.namespace !== null && meta.namespace !== "" && meta.namespace !== ns) {
        throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
      }
      meta.namespace = ns ?? null;
    } else {
      delete meta.namespace;
    }
    if (meta.name === undefined && typeof meta.generateName === "string" && nameFromUrl === undefined) {
      meta.name = `${meta.generateName}${randomUUID().slice(0, 5)}`;
    }
    const name = str(meta.name) ?? "";
    if (nameFromUrl !== undefined && name !== nameFromUrl) {
      if (name === "") meta.name = nameFromUrl;
      else throw badRequest(`the name of the object (${name}) does not match the name on the URL (${nameFromUrl})`);
    }
    const causes: StatusCause[] = [];
    const finalName = str(meta.name) ?? "";
    if (finalName === "") causes.push({ reason: "FieldValueRequired", message: "Required value: name or generateName is required", field: "metadata.name" });
    else {
      const e = nameError(kind, finalName);
      if (e !== undefined) causes.push({ reason: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(finalName)}: ${e}`, field: "metadata.name" });
    }
    for (const field of ["labels", "annotations"] as const) {
      const m = meta[field];
      if (m === undefined || m === null) continue;
      if (!isObject(m) || Object.values(m).some((v) => typeof v !== "string")) {
        causes.push({ reason: "FieldValueInvalid", message: "Invalid value: must be a map of string to string", field: `metadata.${field}` });
      }
    }
    if (causes.length === 0) causes.push(...validateMetadata(meta));
    if (causes.length > 0) throw invalid(kind.kind, kind.group, finalName, causes);
    return obj;
  }

  private stampNew(obj: JsonObject): void {
    const meta = metaOf(obj);
    meta.uid = randomUUID();
    meta.creationTimestamp = this.opts.now().toISOString().replace(/\.\d{3}Z$/, "Z");
    meta.generation = 1;
    delete meta.resourceVersion;
    delete meta.deletionTimestamp;
  }

  /** Carries server-owned metadata over from the live object and bumps generation on a spec change. */
  private carryOver(live: JsonObject, next: JsonObject): void {
    const lm = metaOf(live);
    const nm = metaOf(next);
    nm.uid = lm.uid ?? null;
    nm.creationTimestamp = lm.creationTimestamp ?? null;
    // Deletion state is the server's: it cannot be set, changed or undone by a write.
    for (const k of ["deletionTimestamp", "deletionGracePeriodSeconds"]) {
      if (lm[k] === undefined) dropKey(nm, k);
      else nm[k] = lm[k]!;
    }
    if (lm.deletionTimestamp !== undefined) {
      const before = new Set((Array.isArray(lm.finalizers) ? lm.finalizers : []).map(String));
      const added = (Array.isArray(nm.finalizers) ? nm.finalizers : []).map(String).filter((f) => !before.has(f));
      if (added.length > 0) {
        throw invalid(str(next.kind) ?? "", groupOf(next), str(nm.name) ?? "", [
          { reason: "FieldValueForbidden", message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(", ")}}`, field: "metadata.finalizers" },
        ]);
      }
    }
    if (lm.managedFields !== undefined) nm.managedFields = lm.managedFields;
    else delete nm.managedFields;
    const strip = (o: JsonObject): JsonObject => {
      const c = { ...o };
      delete c.metadata;
      delete c.status;
      return c;
    };
    const gen = typeof lm.generation === "number" ? lm.generation : 1;
    nm.generation = deepEqual(strip(live), strip(next)) ? gen : gen + 1;
  }

  private now(): string {
    return this.opts.now().toISOString().replace(/\.\d{3}Z$/, "Z");
  }

  create(kind: ResourceKind, ns: string | undefined, body: unknown, manager: string): JsonObject {
    const obj = this.normalize(kind, ns, body);
    const meta = metaOf(obj);
    const name = str(meta.name)!;
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== null && meta.resourceVersion !== "") {
      throw badRequest("resourceVersion should not be set on objects to be created");
    }
    this.requireNamespace(kind, str(meta.namespace), name);
    if (this.bucket(kind).has(objKey(str(meta.namespace), name))) throw alreadyExists(kind.plural, kind.group, name);
    if (kind.statusSubresource === true && !this.seeding) delete obj.status;
    this.admit(kind, obj);
    this.stampNew(obj);
    delete meta.managedFields;
    if (kind.kind === "Namespace") obj.status = { phase: "Active" };
    applyDefaults(kind, obj, undefined, this.defaulting);
    recordUpdate({ old: undefined, next: obj, manager, apiVersion: apiVersionOf(kind), now: this.now(), ...schemaOpt(kind), builtIn: kind.builtIn === true });
    return this.commit(kind, "ADDED", obj);
  }

  update(kind: ResourceKind, ns: string | undefined, name: string, body: unknown, manager: string): JsonObject {
    const next = this.normalize(kind, ns, body, name);
    const live = this.bucket(kind).get(objKey(kind.namespaced ? ns : undefined, name));
    if (live === undefined) throw notFound(kind.plural, kind.group, name);
    const wanted = metaOf(next).resourceVersion;
    if (wanted === undefined || wanted === null || wanted === "") {
      // Built-in kinds allow an unconditional update; custom resources do not.
      if (kind.builtIn !== true) {
        throw invalid(kind.kind, kind.group, name, [
          { reason: "FieldValueInvalid", message: "Invalid value: 0x0: must be specified for an update", field: "metadata.resourceVersion" },
        ]);
      }
    } else if (wanted !== metaOf(live).resourceVersion) {
      throw staleConflict(kind.plural, kind.group, name);
    }
    return this.write(kind, live, next, manager);
  }

  /** Stores `next` in place of `live` unless nothing changed (then no new version, no event). */
  private write(kind: ResourceKind, live: JsonObject, input: JsonObject, manager: string): JsonObject {
    checkUid(live, input);
    const next = this.scopeToSubresource(kind, live, input);
    this.admit(kind, next, false, live);
    this.carryOver(live, next);
    metaOf(next).resourceVersion = metaOf(live).resourceVersion ?? null;
    applyDefaults(kind, next, live, this.defaulting);
    recordUpdate({ old: live, next, manager, apiVersion: apiVersionOf(kind), now: this.now(), ...schemaOpt(kind), ...this.subresourceOpt(), builtIn: kind.builtIn === true });
    return this.storeIfChanged(kind, live, next);
  }

  private storeIfChanged(kind: ResourceKind, live: JsonObject, next: JsonObject): JsonObject {
    const withoutTimes = (o: JsonObject): JsonObject => {
      const c = clone(o);
      const m = metaOf(c);
      if (Array.isArray(m.managedFields)) for (const e of m.managedFields) if (isObject(e)) delete e.time;
      return c;
    };
    if (deepEqual(withoutTimes(live), withoutTimes(next))) return clone(live);
    const nm = metaOf(next);
    if (nm.deletionTimestamp !== undefined && !hasFinalizers(next)) {
      // The last finalizer is gone from an object being deleted: the write deletes it, one DELETED
      // event carrying the written state (the real storage's update that ends in a delete).
      const out = this.commit(kind, "DELETED", next, clone(live));
      const ns = str(nm.namespace);
      if (kind.namespaced && ns !== undefined && !this.dryRunning) this.finalizeNamespace(ns);
      return out;
    }
    return this.commit(kind, "MODIFIED", next, clone(live));
  }

  /** Removes an object whose deletion was waiting on finalizers, then its namespace if that was waiting on it. */
  private finalize(kind: ResourceKind, obj: JsonObject): void {
    this.commit(kind, "DELETED", clone(obj), clone(obj));
    const ns = str(metaOf(obj).namespace);
    if (kind.namespaced && ns !== undefined) this.finalizeNamespace(ns);
  }

  /** The namespace controller's last step: a Terminating namespace with nothing left in it is deleted. */
  private finalizeNamespace(ns: string): void {
    const nsKind = this.namespaceKind();
    const namespace = this.bucket(nsKind).get(objKey(undefined, ns));
    if (namespace === undefined || metaOf(namespace).deletionTimestamp === undefined || hasFinalizers(namespace)) return;
    for (const k of this.namespacedBuckets()) for (const o of k.objects.values()) if (metaOf(o).namespace === ns) return;
    if (this.dryRunning) return;
    this.commit(nsKind, "DELETED", clone(namespace), clone(namespace));
  }

  /** Each namespaced bucket once (a CRD's versions share one). */
  private namespacedBuckets(): { kind: ResourceKind; objects: Map<string, JsonObject> }[] {
    const seen = new Set<string>();
    const out: { kind: ResourceKind; objects: Map<string, JsonObject> }[] = [];
    for (const k of this.opts.kinds.all()) {
      if (!k.namespaced || seen.has(kindKey(k))) continue;
      seen.add(kindKey(k));
      out.push({ kind: this.opts.kinds.storageOf(k), objects: this.bucket(k) });
    }
    return out;
  }

  patch(opts: {
    kind: ResourceKind;
    ns: string | undefined;
    name: string;
    type: PatchType;
    body: unknown;
    manager: string | undefined;
    force: boolean;
  }): { object: JsonObject; created: boolean } {
    const { kind, ns, name, type, body } = opts;
    const live = this.bucket(kind).get(objKey(kind.namespaced ? ns : undefined, name));
    if (type === PatchType.Apply) return this.apply(kind, ns, name, body, opts.manager, opts.force, live);
    if (opts.force) throw badRequest("force is only allowed for apply patches (application/apply-patch+yaml)");
    if (live === undefined) throw notFound(kind.plural, kind.group, name);
    const manager = opts.manager ?? "unknown";
    let patched: Json;
    if (type === PatchType.Json) patched = jsonPatch(live, body);
    else if (type === PatchType.Strategic) {
      if (kind.builtIn !== true) {
        // Custom resources have no Go struct tags to take patch strategies from: a real server refuses.
        throw new KubeApiError(
          415,
          StatusReason.UnsupportedMediaType,
          "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        );
      }
      checkPatchResourceVersion(kind, name, live, body);
      patched = strategicMergePatch(live, body as Json, kind.schema);
    } else {
      if (!isObject(body)) throw badRequest("a merge patch must be a JSON object");
      checkPatchResourceVersion(kind, name, live, body);
      patched = mergePatch(live, body);
    }
    if (!isObject(patched)) throw badRequest("the patch did not produce an object");
    const pm = metaOf(patched);
    if (pm.name !== name || (kind.namespaced && pm.namespace !== ns)) {
      throw invalid(kind.kind, kind.group, name, [{ reason: "FieldValueInvalid", message: "field is immutable", field: "metadata.name" }]);
    }
    const next = this.normalize(kind, ns, patched, name);
    return { object: this.write(kind, live, next, manager), created: false };
  }

  private apply(
    kind: ResourceKind,
    ns: string | undefined,
    name: string,
    body: unknown,
    manager: string | undefined,
    force: boolean,
    live: JsonObject | undefined,
  ): { object: JsonObject; created: boolean } {
    if (manager === undefined || manager === "") {
      throw badRequest("PATCH, application/apply-patch+yaml requests require fieldManager to be set");
    }
    if (!isObject(body)) throw badRequest("an apply patch must be a YAML or JSON object");
    if (body.apiVersion === undefined || body.kind === undefined) {
      throw badRequest("invalid object type: apiVersion and kind must be set in an apply patch");
    }
    const bodyNs = isObject(body.metadata) && typeof body.metadata.namespace === "string" ? body.metadata.namespace : "";
    const applied = this.normalize(kind, ns, body, name);
    const am = metaOf(applied);
    if (Array.isArray(am.managedFields) && am.managedFields.length > 0) {
      throw badRequest("metadata.managedFields must be nil in an apply patch");
    }
    delete am.managedFields;
    if (live === undefined) this.requireNamespace(kind, ns, name);
    const wanted = am.resourceVersion;
    if (live !== undefined && typeof wanted === "string" && wanted !== "" && wanted !== metaOf(live).resourceVersion) {
      throw staleConflict(kind.plural, kind.group, name);
    }
    // A uid in the applied object is a precondition on an existing object (ignored on create), as on a real server.
    if (live !== undefined) checkUid(live, applied);
    for (const k of ["resourceVersion", "uid", "creationTimestamp", "generation"]) dropKey(am, k);
    if (kind.statusSubresource === true) {
      // Each endpoint owns its part: /status applies status only, the main resource everything but status.
      if (this.subresource === "status") {
        if (live === undefined) throw notFound(kind.plural, kind.group, name);
        for (const k of Object.keys(applied)) if (!["apiVersion", "kind", "metadata", "status"].includes(k)) dropKey(applied, k);
        for (const k of Object.keys(am)) if (k !== "name" && k !== "namespace") dropKey(am, k);
      } else delete applied.status;
    }
    this.admitApplyPatch(kind, applied, `${bodyNs}/${name}`);
    const result = serverSideApply({ live, applied, manager, force, apiVersion: apiVersionOf(kind), now: this.now(), ...schemaOpt(kind), ...this.subresourceOpt() });
    if (result.conflicts.length > 0) throw applyConflict(result.conflicts);
    const next = result.object;
    this.admit(kind, next, false, live);
    if (live === undefined) {
      this.stampNew(next);
      if (kind.kind === "Namespace") next.status = { phase: "Active" };
      applyDefaults(kind, next, undefined, this.defaulting);
      return { object: this.commit(kind, "ADDED", next), created: true };
    }
    const managed = metaOf(next).managedFields;
    this.carryOver(live, next);
    if (managed === undefined) delete metaOf(next).managedFields;
    else metaOf(next).managedFields = managed;
    metaOf(next).resourceVersion = metaOf(live).resourceVersion ?? null;
    applyDefaults(kind, next, live, this.defaulting);
    return { object: this.storeIfChanged(kind, live, next), created: false };
  }

  delete(kind: ResourceKind, ns: string | undefined, name: string, preconditions?: { uid?: string; resourceVersion?: string }): JsonObject {
    return this.deleteObject(kind, ns, name, preconditions).object;
  }

  /**
   * Deletes like the real server: an object with finalizers (or a namespace, whose controller empties
   * it first) gets `deletionTimestamp` and stays until they are gone; anything else goes at once.
   * `finalized` says whether it is gone.
   */
  deleteObject(kind: ResourceKind, ns: string | undefined, name: string, preconditions?: { uid?: string; resourceVersion?: string }): { object: JsonObject; finalized: boolean } {
    const live = this.bucket(kind).get(objKey(kind.namespaced ? ns : undefined, name));
    if (live === undefined) throw notFound(kind.plural, kind.group, name);
    const lm = metaOf(live);
    if (preconditions?.uid !== undefined && preconditions.uid !== lm.uid) {
      throw new KubeApiError(409, StatusReason.Conflict, `Precondition failed: UID in precondition: ${preconditions.uid}, UID in object meta: ${str(lm.uid) ?? ""}`);
    }
    if (preconditions?.resourceVersion !== undefined && preconditions.resourceVersion !== lm.resourceVersion) {
      throw new KubeApiError(
        409,
        StatusReason.Conflict,
        `Precondition failed: ResourceVersion in precondition: ${preconditions.resourceVersion}, ResourceVersion in object meta: ${str(lm.resourceVersion) ?? ""}`,
      );
    }
    return this.deleteLive(kind, live);
  }

  private deleteLive(kind: ResourceKind, live: JsonObject): { object: JsonObject; finalized: boolean } {
    const lm = metaOf(live);
    const isNamespace = kindKey(kind) === NAMESPACE_KIND_KEY;
    let result: { object: JsonObject; finalized: boolean };
    if (lm.deletionTimestamp !== undefined) {
      result = { object: clone(live), finalized: false };
    } else if (isNamespace || hasFinalizers(live)) {
      const next = clone(live);
      const nm = metaOf(next);
      nm.deletionTimestamp = this.now();
      nm.deletionGracePeriodSeconds = 0;
      nm.generation = (typeof lm.generation === "number" ? lm.generation : 1) + 1;
      if (isNamespace) next.status = { ...(isObject(next.status) ? next.status : {}), phase: "Terminating" };
      const marked = this.commit(kind, "MODIFIED", next, clone(live));
      result = { object: marked, finalized: false };
      if (isNamespace) {
        const name = str(lm.name) ?? "";
        for (const b of this.namespacedBuckets()) {
          for (const o of [...b.objects.values()]) if (metaOf(o).namespace === name && !this.dryRunning) this.deleteLive(b.kind, o);
        }
        this.finalizeNamespace(name);
        result = { object: marked, finalized: !this.dryRunning && !this.bucket(kind).has(objKey(undefined, name)) };
      }
    } else {
      const gone = this.commit(kind, "DELETED", clone(live), clone(live));
      const ns = str(lm.namespace);
      if (kind.namespaced && ns !== undefined && !this.dryRunning) this.finalizeNamespace(ns);
      result = { object: gone, finalized: true };
    }
    return result;
  }

  /** Removes an object at once, finalizers or not (direct state access, not an API request). */
  forceRemove(kind: ResourceKind, ns: string | undefined, name: string): void {
    const live = this.bucket(kind).get(objKey(kind.namespaced ? ns : undefined, name));
    if (live === undefined) return;
    if (kindKey(kind) === NAMESPACE_KIND_KEY) {
      for (const b of this.namespacedBuckets()) for (const o of [...b.objects.values()]) if (metaOf(o).namespace === name) this.commit(b.kind, "DELETED", clone(o), clone(o));
    }
    this.commit(kind, "DELETED", clone(live), clone(live));
  }

  private subresourceOpt(): { subresource?: string } {
    return this.subresource === undefined ? {} : { subresource: this.subresource };
  }

  /** Writes an object as-is (seeding): creates it, or replaces the live one keeping its uid. */
  upsert(kind: ResourceKind, body: unknown, manager: string): JsonObject {
    this.seeding = true;
    try {
      return this.upsertNow(kind, body, manager);
    } finally {
      this.seeding = false;
    }
  }

  private upsertNow(kind: ResourceKind, body: unknown, manager: string): JsonObject {
    const meta = isObject(body) && isObject(body.metadata) ? body.metadata : {};
    const ns = kind.namespaced ? (str(meta.namespace) ?? "default") : undefined;
    const name = str(meta.name) ?? "";
    const live = this.bucket(kind).get(objKey(ns, name));
    const next = this.normalize(kind, ns, body, name);
    if (live === undefined) {
      // Seeds are often `kubectl get -o yaml` dumps: drop what the server owns.
      const m = metaOf(next);
      for (const k of ["resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"]) dropKey(m, k);
      return this.create(kind, ns, next, manager);
    }
    delete metaOf(next).resourceVersion;
    delete metaOf(next).uid; // seeding keeps the live object's identity
    return this.write(kind, live, next, manager);
  }
}

/** A `metadata.resourceVersion` in a merge or strategic patch is a precondition. */
function checkPatchResourceVersion(kind: ResourceKind, name: string, live: JsonObject, body: unknown): void {
  const wanted = isObject(body) && isObject(body.metadata) ? body.metadata.resourceVersion : undefined;
  if (typeof wanted === "string" && wanted !== metaOf(live).resourceVersion) throw staleConflict(kind.plural, kind.group, name);
}

/** A write whose body names another uid than the live object's fails like the real server's storage precondition. */
function checkUid(live: JsonObject, next: JsonObject): void {
  const want = metaOf(next).uid;
  const have = str(metaOf(live).uid) ?? "";
  if (typeof want === "string" && want !== "" && want !== have) {
    throw new KubeApiError(409, StatusReason.Conflict, `Precondition failed: UID in precondition: ${want}, UID in object meta: ${have}`);
  }
}

/**
 * The real server's conflict error (apimachinery's managedfields `NewConflictError`): a manager is
 * named by its name, `with subresource "status"` when it wrote a subresource, and `using <apiVersion>`
 * only for Update managers (an Apply manager's identity has no version; neither has a time). One
 * conflict inline; several grouped as `conflicts with <manager>:` lines, managers sorted by identity.
 */
function applyConflict(conflicts: readonly FieldConflict[]): KubeApiError {
  const managerOf = (c: FieldConflict): string =>
    `"${c.manager}"${c.subresource === undefined ? "" : ` with subresource "${c.subresource}"`}${c.operation === "Update" ? ` using ${c.apiVersion}` : ""}`;
  // Sorted as the real server sorts them: by the JSON identity {"manager":…,"operation":…,"apiVersion":…}.
  const identity = (c: FieldConflict): string =>
    JSON.stringify({ manager: c.manager, operation: c.operation, ...(c.operation === "Update" ? { apiVersion: c.apiVersion } : {}), ...(c.subresource === undefined ? {} : { subresource: c.subresource }) });
  const n = conflicts.length;
  let message: string;
  if (n === 1) {
    message = `Apply failed with 1 conflict: conflict with ${managerOf(conflicts[0]!)}: ${formatPath(conflicts[0]!.path)}`;
  } else {
    const byManager = new Map<string, FieldConflict[]>();
    for (const c of conflicts) byManager.set(identity(c), [...(byManager.get(identity(c)) ?? []), c]);
    const lines = [...byManager.keys()].sort().flatMap((k) => {
      const cs = byManager.get(k)!;
      return [`conflicts with ${managerOf(cs[0]!)}:`, ...cs.map((c) => `- ${formatPath(c.path)}`)];
    });
    message = `Apply failed with ${n} conflicts: ${lines.join("\n")}`;
  }
  return new KubeApiError(409, StatusReason.Conflict, message, {
    causes: conflicts.map((c) => ({ reason: "FieldManagerConflict", message: `conflict with ${managerOf(c)}`, field: formatPath(c.path) })),
  });
}

function hasFinalizers(o: JsonObject): boolean {
  const f = metaOf(o).finalizers;
  return Array.isArray(f) && f.length > 0;
}

function groupOf(o: JsonObject): string {
  const av = str(o.apiVersion) ?? "";
  return av.includes("/") ? av.slice(0, av.indexOf("/")) : "";
}

function schemaOpt(kind: ResourceKind): { schema?: Schema } {
  return kind.schema === undefined ? {} : { schema: kind.schema };
}

