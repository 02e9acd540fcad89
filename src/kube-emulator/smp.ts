/**
 * Strategic merge patch (`application/strategic-merge-patch+json`), as `kubectl edit`, `kubectl set
 * image`, `kubectl patch` and client-side `kubectl apply` send it: maps merge and `null` deletes,
 * as in a JSON merge patch, but lists with `x-kubernetes-patch-strategy: merge` merge by their
 * `x-kubernetes-patch-merge-key` (Deployment containers by name, ports by containerPort), lists of
 * scalars with the merge strategy are unions, and the directives are understood:
 * `$patch: replace|delete|merge` (on a map or a list item), `$retainKeys`,
 * `$setElementOrder/<list>`, `$deleteFromPrimitiveList/<list>`. Lists without a merge strategy
 * are replaced. Only built-in kinds take it (custom resources answer 415, as on a real server).
 */
import { childSchema, type Schema } from "./schema.js";
import { clone, deepEqual, dropKey, isObject, type Json, type JsonObject } from "./patch.js";
import { badRequest } from "./status.js";

const DELETE = Symbol("delete");

const SET_ORDER = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE = "$deleteFromPrimitiveList/";

export function strategicMergePatch(original: JsonObject, patch: Json, schema: Schema | undefined): JsonObject {
  if (!isObject(patch)) throw badRequest("a strategic merge patch must be a JSON object");
  const out = mergeMap(original, patch, schema);
  return out === DELETE ? {} : out;
}

function mergeMap(original: JsonObject, patch: JsonObject, s: Schema | undefined): JsonObject | typeof DELETE {
  const directive = patch.$patch;
  if (directive === "delete") return DELETE;
  if (directive === "replace") return withoutDirectives(patch, s);
  if (directive !== undefined && directive !== "merge") throw badRequest(`unknown patch type: ${JSON.stringify(directive)} in the $patch directive`);
  const out = clone(original);
  const retain = patch.$retainKeys;
  if (retain !== undefined) {
    if (!Array.isArray(retain)) throw badRequest("$retainKeys must be a list of field names");
    for (const k of Object.keys(out)) if (!retain.includes(k)) dropKey(out, k);
  }
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith(DELETE_FROM_PRIMITIVE)) {
      const field = key.slice(DELETE_FROM_PRIMITIVE.length);
      if (!Array.isArray(value)) throw badRequest(`${key} must be a list`);
      const cur = out[field];
      if (Array.isArray(cur)) out[field] = cur.filter((v) => !value.some((d) => deepEqual(d, v)));
    }
  }
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$")) continue;
    if (value === null) {
      dropKey(out, key);
      continue;
    }
    const cs = childSchema(s, key);
    if (isObject(value)) {
      const cur = out[key];
      const merged = mergeMap(isObject(cur) ? cur : {}, value, cs);
      if (merged === DELETE) dropKey(out, key);
      else out[key] = merged;
    } else if (Array.isArray(value)) {
      const cur = out[key];
      out[key] = mergeList(Array.isArray(cur) ? cur : [], value, cs);
    } else {
      out[key] = value;
    }
  }
  for (const [key, value] of Object.entries(patch)) {
    if (!key.startsWith(SET_ORDER)) continue;
    const field = key.slice(SET_ORDER.length);
    if (!Array.isArray(value)) throw badRequest(`${key} must be a list`);
    const cur = out[field];
    if (Array.isArray(cur)) out[field] = reorder(cur, value, childSchema(s, field)?.["x-kubernetes-patch-merge-key"]);
  }
  return out;
}

function isMergeStrategy(s: Schema | undefined): boolean {
  return (s?.["x-kubernetes-patch-strategy"] ?? "").split(",").includes("merge");
}

function mergeList(original: Json[], patch: Json[], s: Schema | undefined): Json[] {
  const items = s?.items;
  if (!isMergeStrategy(s) || patch.some((p) => isObject(p) && p.$patch === "replace")) {
    return patch.filter((p) => !(isObject(p) && p.$patch === "replace")).map((p) => (isObject(p) ? withoutDirectives(p, items) : p));
  }
  const mergeKey = s?.["x-kubernetes-patch-merge-key"];
  if (mergeKey === undefined) {
    // A set of scalars: union, ordered as the real server orders a merge.
    const out = clone(original);
    for (const p of patch) if (!out.some((o) => deepEqual(o, p))) out.push(clone(p));
    return mergeOrder(out, patch, original, (v) => v);
  }
  const out = clone(original);
  for (const p of patch) {
    if (!isObject(p)) throw badRequest(`a strategic merge patch of a list merged by "${mergeKey}" must hold objects`);
    const key = p[mergeKey];
    if (key === undefined) throw badRequest(`map: ${JSON.stringify(p)} does not contain declared merge key: ${mergeKey}`);
    const at = out.findIndex((o) => isObject(o) && deepEqual(o[mergeKey], key));
    if (p.$patch === "delete") {
      if (at >= 0) out.splice(at, 1);
      continue;
    }
    const base = at >= 0 ? out[at] : undefined;
    const merged = mergeMap(isObject(base) ? base : {}, p, items);
    if (merged === DELETE) {
      if (at >= 0) out.splice(at, 1);
    } else if (at >= 0) out[at] = merged;
    else out.push(merged);
  }
  return mergeOrder(out, patch, original, (v) => (isObject(v) ? v[mergeKey] : undefined));
}

/**
 * The order of a merged list (apimachinery's strategicpatch `normalizeElementOrder`): the patch's
 * items in patch order, the server-only items in their live order, interleaved where the live order
 * says a server-only item comes before a patch item; otherwise the patch item first.
 */
function mergeOrder(merged: Json[], patch: readonly Json[], original: readonly Json[], keyOf: (v: Json) => Json | undefined): Json[] {
  const indexIn = (list: readonly Json[], v: Json): number => list.findIndex((x) => deepEqual(keyOf(x), keyOf(v)));
  const right = merged.filter((v) => indexIn(patch, v) >= 0).sort((a, b) => indexIn(patch, a) - indexIn(patch, b));
  const left = merged.filter((v) => indexIn(patch, v) < 0);
  const out: Json[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    if (j >= right.length) out.push(left[i++]!);
    else if (i >= left.length) out.push(right[j++]!);
    else {
      const li = indexIn(original, left[i]!);
      const ri = indexIn(original, right[j]!);
      if (li >= 0 && ri >= 0 && li < ri) out.push(left[i++]!);
      else out.push(right[j++]!);
    }
  }
  return out;
}

/** `$setElementOrder`: the named elements in the given order, then the others in their current order. */
function reorder(list: Json[], order: Json[], mergeKey: string | undefined): Json[] {
  const keyOf = (v: Json): Json | undefined => (mergeKey === undefined ? v : isObject(v) ? v[mergeKey] : undefined);
  const rank = (v: Json): number => {
    const k = keyOf(v);
    const i = order.findIndex((o) => deepEqual(keyOf(o), k));
    return i < 0 ? order.length : i;
  };
  return list.map((v, i) => ({ v, i, r: rank(v) })).sort((a, b) => a.r - b.r || a.i - b.i).map((e) => e.v);
}

/** A patch value that lands as-is (new map, replaced list): directives are not data. */
function withoutDirectives(v: JsonObject, s: Schema | undefined): JsonObject {
  const merged = mergeMap({}, { ...v, $patch: "merge" }, s);
  return merged === DELETE ? {} : merged;
}
