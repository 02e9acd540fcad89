/**
 * The little server-side defaulting that clients observably rely on: Secret `stringData` folded into
 * base64 `data` (and never returned) with `type: Opaque`; Service `type: ClusterIP`, an allocated
 * `clusterIP`/`clusterIPs` kept across updates, and port `protocol: TCP`; a Namespace's
 * `kubernetes.io/metadata.name` label. Nothing else is defaulted.
 */
import { isObject, type JsonObject } from "./patch.js";
import type { ResourceKind } from "./kinds.js";

export interface DefaultingState {
  /** Next ClusterIP host number in 10.96.0.0/16 (10.96.0.1 is the `kubernetes` Service on a real cluster). */
  nextClusterIp: number;
}

export function createDefaultingState(): DefaultingState {
  return { nextClusterIp: 10 };
}

function allocateClusterIp(state: DefaultingState): string {
  const n = state.nextClusterIp;
  state.nextClusterIp = n >= 65_534 ? 10 : n + 1;
  return `10.96.${Math.floor(n / 256)}.${n % 256}`;
}

/** Mutates `obj` (the object about to be stored); `live` is the stored version, if any. */
export function applyDefaults(kind: ResourceKind, obj: JsonObject, live: JsonObject | undefined, state: DefaultingState): void {
  if (kind.group !== "" || kind.version !== "v1") return;
  if (kind.kind === "Namespace") {
    // SetDefaults_Namespace: every named Namespace carries its name as a label, always (selectors rely on it).
    const meta = isObject(obj.metadata) ? obj.metadata : {};
    if (typeof meta.name === "string" && meta.name !== "") meta.labels = { ...(isObject(meta.labels) ? meta.labels : {}), "kubernetes.io/metadata.name": meta.name };
    return;
  }
  if (kind.kind === "Secret") {
    if (isObject(obj.stringData)) {
      const data = isObject(obj.data) ? obj.data : {};
      for (const [k, v] of Object.entries(obj.stringData)) {
        if (typeof v === "string") data[k] = Buffer.from(v, "utf8").toString("base64");
      }
      obj.data = data;
    }
    delete obj.stringData;
    if (typeof obj.type !== "string" || obj.type === "") obj.type = "Opaque";
    return;
  }
  if (kind.kind === "Service") {
    const spec = isObject(obj.spec) ? obj.spec : {};
    obj.spec = spec;
    if (typeof spec.type !== "string" || spec.type === "") spec.type = "ClusterIP";
    if (Array.isArray(spec.ports)) for (const p of spec.ports) if (isObject(p) && p.protocol === undefined) p.protocol = "TCP";
    if (spec.type === "ExternalName") return;
    const liveSpec = live !== undefined && isObject(live.spec) ? live.spec : {};
    if (typeof spec.clusterIP !== "string" || spec.clusterIP === "") {
      spec.clusterIP = typeof liveSpec.clusterIP === "string" && liveSpec.clusterIP !== "" ? liveSpec.clusterIP : allocateClusterIp(state);
    }
    if (!Array.isArray(spec.clusterIPs) || spec.clusterIPs.length === 0) spec.clusterIPs = [spec.clusterIP];
  }
}
