/**
 * The `/scale` subresource of Deployments and StatefulSets (`autoscaling/v1` Scale), as `kubectl
 * scale` and autoscalers use it: GET shows `spec.replicas`, `status.replicas` and the label
 * selector as a string; PUT and PATCH (merge, JSON, strategic) change `spec.replicas` and nothing else.
 */
import { clone, isObject, jsonPatch, mergePatch, type Json, type JsonObject } from "./patch.js";
import type { ResourceKind } from "./kinds.js";
import { badRequest, invalid } from "./status.js";

const SCALABLE = new Set(["apps/Deployment", "apps/StatefulSet"]);

export function hasScale(kind: ResourceKind): boolean {
  return kind.builtIn === true && SCALABLE.has(`${kind.group}/${kind.kind}`);
}

function selectorString(selector: Json | undefined): string {
  if (!isObject(selector)) return "";
  const terms: string[] = [];
  if (isObject(selector.matchLabels)) for (const [k, v] of Object.entries(selector.matchLabels).sort(([a], [b]) => a.localeCompare(b))) terms.push(`${k}=${typeof v === "string" ? v : JSON.stringify(v)}`);
  for (const e of Array.isArray(selector.matchExpressions) ? selector.matchExpressions : []) {
    if (!isObject(e) || typeof e.key !== "string") continue;
    const values = Array.isArray(e.values) ? e.values.map(String).sort().join(",") : "";
    if (e.operator === "In") terms.push(`${e.key} in (${values})`);
    else if (e.operator === "NotIn") terms.push(`${e.key} notin (${values})`);
    else if (e.operator === "Exists") terms.push(e.key);
    else if (e.operator === "DoesNotExist") terms.push(`!${e.key}`);
  }
  return terms.join(",");
}

/** The Scale view of a workload. */
export function scaleOf(obj: Readonly<JsonObject>): JsonObject {
  const meta = isObject(obj.metadata) ? obj.metadata : {};
  const spec = isObject(obj.spec) ? obj.spec : {};
  const status = isObject(obj.status) ? obj.status : {};
  const pick = (k: string): JsonObject => (meta[k] === undefined ? {} : { [k]: meta[k] });
  return {
    kind: "Scale",
    apiVersion: "autoscaling/v1",
    metadata: { ...pick("name"), ...pick("namespace"), ...pick("uid"), ...pick("resourceVersion"), ...pick("creationTimestamp") },
    spec: { replicas: typeof spec.replicas === "number" ? spec.replicas : 1 },
    status: { replicas: typeof status.replicas === "number" ? status.replicas : 0, selector: selectorString(spec.selector) },
  };
}

/** Applies a PATCH body of the given type to the Scale view. */
export function patchScale(scale: JsonObject, type: string, body: unknown): JsonObject {
  const out = type === "application/json-patch+json" ? jsonPatch(scale, body) : isObject(body) ? mergePatch(scale, body) : undefined;
  if (!isObject(out)) throw badRequest("the patch did not produce a Scale object");
  return out;
}

/**
 * The workload with the replicas a Scale asks for; a resourceVersion in the Scale is kept as the
 * update's precondition.
 */
export function workloadWithScale(live: Readonly<JsonObject>, scale: unknown, name: string): JsonObject {
  if (!isObject(scale)) throw badRequest("the request body must be a Scale object");
  const replicas = isObject(scale.spec) ? scale.spec.replicas : undefined;
  if (typeof replicas !== "number" || !Number.isInteger(replicas) || replicas < 0) {
    throw invalid("Scale", "autoscaling", name, [{ reason: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(replicas ?? null)}: must be greater than or equal to 0`, field: "spec.replicas" }]);
  }
  const next = clone(live) as JsonObject;
  next.spec = { ...(isObject(next.spec) ? next.spec : {}), replicas };
  const meta = isObject(next.metadata) ? next.metadata : {};
  const wanted = isObject(scale.metadata) ? scale.metadata.resourceVersion : undefined;
  if (typeof wanted === "string" && wanted !== "") meta.resourceVersion = wanted;
  next.metadata = meta;
  return next;
}
