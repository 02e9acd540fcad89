/** Small facts about Kubernetes objects the apply steps share. */
import type { KindRef, KubeObject } from "../kube.js";

export const LABEL_MANAGED = "gitmesh.io/managed";
export const LABEL_CLUSTER = "gitmesh.io/cluster";
/** Set by an object's owner to hand it over to gitmesh. */
export const ANNOTATION_ADOPT = "gitmesh.io/adopt";

type Named = { kind: string; metadata: { namespace?: string | undefined; name: string } };

/** `Kind namespace/name` (no namespace for cluster-scoped objects), as logs and messages name an object. */
export const describe = (o: Named) => `${o.kind} ${o.metadata.namespace === undefined || o.metadata.namespace === "" ? "" : `${o.metadata.namespace}/`}${o.metadata.name}`;
export const uidOf = (o: KubeObject | undefined) => (typeof o?.metadata.uid === "string" ? o.metadata.uid : undefined);
/** `apiVersion/kind`: how the steps name a kind. */
export const kindKey = (o: { apiVersion: string; kind: string }) => `${o.apiVersion}/${o.kind}`;
const groupOf = (apiVersion: string) => (apiVersion.includes("/") ? apiVersion.slice(0, apiVersion.lastIndexOf("/")) : "");
export { groupOf };
/** The CRD that serves a kind: `virtualservices.networking.istio.io` (the plural alone for a core kind). */
export const crdName = (k: KindRef) => (groupOf(k.apiVersion) === "" ? k.plural : `${k.plural}.${groupOf(k.apiVersion)}`);
/** A reference the reader and writer resolve by discovery (plural and scope looked up). */
export const refOf = (o: KubeObject): KindRef => ({ apiVersion: o.apiVersion, kind: o.kind, plural: "", namespaced: o.metadata.namespace !== undefined });

/** Sail operator objects: deleting one uninstalls a control plane, the CNI node agent or the default revision. */
export const isControlPlaneObject = (o: KubeObject) => o.apiVersion.startsWith("sailoperator.io/");

/** Apply rank of an object: the index of its kind (what others refer to first). */
export function rankOf(kinds: readonly KindRef[], o: KubeObject): number {
  const i = kinds.findIndex((k) => k.apiVersion === o.apiVersion && k.kind === o.kind);
  // Unknown kinds go after what they may refer to, before the last kinds (VirtualServices, then the EnvoyFilters that patch their routes).
  return i >= 0 ? i : kinds.length - 1.5;
}

function managedFieldsOf(o: KubeObject): { manager?: unknown; operation?: unknown }[] {
  return Array.isArray(o.metadata.managedFields) ? (o.metadata.managedFields as { manager?: unknown; operation?: unknown }[]) : [];
}

/**
 * Whether the agent's own field manager applied to this object (server-side apply, operation
 * Apply): an object gitmesh never applied has no such entry, whatever an inventory says.
 */
export function appliedBy(o: KubeObject, fieldManager: string): boolean {
  return managedFieldsOf(o).some((e) => e.manager === fieldManager && e.operation === "Apply");
}

/** The other field managers of an object, sorted. */
export function otherManagers(o: KubeObject, fieldManager: string): string[] {
  return [...new Set(managedFieldsOf(o).map((e) => (typeof e.manager === "string" ? e.manager : "")).filter((m) => m !== "" && m !== fieldManager))].sort();
}

/** Only what the agent means to own: no server-populated metadata or status; gitmesh's labels added. */
export function forApply(o: KubeObject, cluster: string): KubeObject {
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

/** The inventory entry of an object (an intent without `uid`). */
export function entryOf(o: KubeObject, uid?: string) {
  return { apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, ...(o.metadata.namespace === undefined ? {} : { namespace: o.metadata.namespace }), ...(uid === undefined ? {} : { uid }) };
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

/** Runs `fn` over `items`, at most `limit` at once. */
export async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
