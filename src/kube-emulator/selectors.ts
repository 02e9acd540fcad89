/**
 * Label selectors (`a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`) and field
 * selectors (`metadata.name`, `metadata.namespace`, with `=`, `==`, `!=`), parsed once per request.
 */
import { badRequest } from "./status.js";

export type Requirement =
  | { readonly op: "eq" | "neq"; readonly key: string; readonly value: string }
  | { readonly op: "in" | "notin"; readonly key: string; readonly values: readonly string[] }
  | { readonly op: "exists" | "notexists"; readonly key: string };

export type Selector = readonly Requirement[];

const KEY = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$/;
const VALUE = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?)?$/;

/** Splits on commas that are not inside parentheses. */
function splitTerms(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of s) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      out.push(cur);
      cur = "";
    } else cur += ch;
  }
  out.push(cur);
  return out.map((t) => t.trim()).filter((t) => t !== "");
}

function checkKey(key: string, raw: string): string {
  if (!KEY.test(key)) throw badRequest(`unable to parse requirement: invalid label key "${key}" in "${raw}"`);
  return key;
}

function checkValue(value: string, raw: string): string {
  if (!VALUE.test(value) || value.length > 63) throw badRequest(`unable to parse requirement: invalid label value "${value}" in "${raw}"`);
  return value;
}

/** Parses a label selector; throws a 400 KubeApiError on bad syntax. */
export function parseLabelSelector(text: string): Selector {
  return splitTerms(text).map((raw): Requirement => {
    const set = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(raw);
    if (set) {
      const values = set[3]!.split(",").map((v) => checkValue(v.trim(), raw));
      return { op: set[2] === "in" ? "in" : "notin", key: checkKey(set[1]!, raw), values };
    }
    const cmp = /^([^!=\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(raw);
    if (cmp) return { op: cmp[2] === "!=" ? "neq" : "eq", key: checkKey(cmp[1]!, raw), value: checkValue(cmp[3]!, raw) };
    if (raw.startsWith("!")) return { op: "notexists", key: checkKey(raw.slice(1).trim(), raw) };
    return { op: "exists", key: checkKey(raw, raw) };
  });
}

export function matchesLabels(selector: Selector, labels: Readonly<Record<string, string>> | undefined): boolean {
  const l = labels ?? {};
  return selector.every((r) => {
    const has = Object.hasOwn(l, r.key);
    const v = l[r.key];
    switch (r.op) {
      case "eq":
        return has && v === r.value;
      case "neq":
        return !has || v !== r.value;
      case "in":
        return has && r.values.includes(v!);
      case "notin":
        return !has || !r.values.includes(v!);
      case "exists":
        return has;
      case "notexists":
        return !has;
    }
  });
}

export interface FieldRequirement {
  /** A field path the kind supports (`metadata.name`, `status.phase`, …). */
  readonly field: string;
  readonly op: "eq" | "neq";
  readonly value: string;
}

/** Every kind supports these. */
const COMMON_FIELDS = ["metadata.name", "metadata.namespace"];

/** The kind-specific field selectors of the built-in kinds (their field label conversion functions). */
const KIND_FIELDS: Readonly<Record<string, readonly string[]>> = {
  "/Pod": ["spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"],
  "/Secret": ["type"],
  "/Namespace": ["status.phase"],
  "/Node": ["spec.unschedulable"],
};

/** The field selectors a kind (`<group>/<Kind>` of a built-in kind) supports. */
export function selectableFields(builtInKey: string | undefined): readonly string[] {
  return [...COMMON_FIELDS, ...(builtInKey === undefined ? [] : (KIND_FIELDS[builtInKey] ?? []))];
}

/** Parses a field selector; a field the kind does not support is 400 `field label not supported`. */
export function parseFieldSelector(text: string, supported: readonly string[] = COMMON_FIELDS): readonly FieldRequirement[] {
  return splitTerms(text).map((raw) => {
    const m = /^([^!=\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(raw);
    if (!m) throw badRequest(`invalid selector: '${raw}'; can't understand '${raw}'`);
    const field = m[1]!;
    if (!supported.includes(field)) throw badRequest(`field label not supported: ${field}`);
    return { field, op: m[2] === "!=" ? "neq" : "eq", value: m[3]! };
  });
}

/** The selector value of a field: scalars as strings, booleans `true`/`false` (false when absent), absent as "". */
function fieldValue(obj: Readonly<Record<string, unknown>>, field: string): string {
  let cur: unknown = obj;
  for (const k of field.split(".")) cur = typeof cur === "object" && cur !== null && !Array.isArray(cur) ? (cur as Record<string, unknown>)[k] : undefined;
  if (typeof cur === "string") return cur;
  if (typeof cur === "number" || typeof cur === "boolean") return String(cur);
  return field === "spec.hostNetwork" || field === "spec.unschedulable" ? "false" : "";
}

export function matchesFields(reqs: readonly FieldRequirement[], obj: Readonly<Record<string, unknown>>): boolean {
  return reqs.every((r) => {
    const actual = fieldValue(obj, r.field);
    return r.op === "eq" ? actual === r.value : actual !== r.value;
  });
}
