/**
 * Structural-schema validation and pruning, as the API server does for custom resources from their
 * CRD's `openAPIV3Schema`: unknown fields are pruned (reported so the caller can warn, or refuse
 * under `fieldValidation=Strict`), `null` is dropped where the schema is not `nullable`, then
 * types, `required`, `enum`, bounds, lengths, `pattern`, `oneOf`/`anyOf`/`allOf`/`not` are checked.
 * Errors are StatusCauses with the real server's field paths and wording
 * (`spec.hosts: Invalid value: "string": spec.hosts in body must be of type array: "string"`).
 * CEL rules (`x-kubernetes-validations`) are not evaluated (see README).
 */
import { childSchema, type Schema } from "./schema.js";
import { deepEqual, dropKey, isObject, type Json, type JsonObject } from "./patch.js";
import type { StatusCause } from "./status.js";

export interface SchemaCheck {
  readonly errors: StatusCause[];
  /** Paths of unknown fields that were pruned (`spec.foo`). */
  readonly pruned: string[];
}

function typeName(v: Json): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v === "object" ? "object" : typeof v;
}

function quote(v: Json): string {
  return typeof v === "string" ? JSON.stringify(v) : JSON.stringify(v);
}

/** A decoded JSON value as field.Error prints a bad value: JSON, map keys sorted (Go's encoding/json). */
function goValue(v: Json): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(goValue).join(",")}]`;
  return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${goValue(v[k]!)}`).join(",")}}`;
}

const child = (path: string, key: string): string => (path === "" ? key : `${path}.${key}`);

/** A value as Go's `%v` prints it (structured-merge-diff's `&{…}` in type errors). */
function goPlain(v: Json): string {
  if (v === null) return "<nil>";
  if (Array.isArray(v)) return `[${v.map(goPlain).join(" ")}]`;
  if (isObject(v)) return `map[${Object.keys(v).sort().map((k) => `${k}:${goPlain(v[k]!)}`).join(" ")}]`;
  return String(v);
}

/** A value as Go's `%#v` prints a decoded JSON value. */
function goSharp(v: Json): string {
  if (v === null) return "interface {}(nil)";
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return `[]interface {}{${v.map(goSharp).join(", ")}}`;
  if (isObject(v)) return `map[string]interface {}{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${goSharp(v[k]!)}`).join(", ")}}`;
  return String(v);
}

/**
 * What structured-merge-diff says when an apply patch does not fit the schema (the real server makes
 * a typed object of the patch before anything else): the first field the schema does not declare
 * (`.spec.x: field not declared in schema`) or value of the wrong type (`.spec.hosts: expected list,
 * got &{a}`, `.spec.resolution: expected string, got &value.valueUnstructured{Value:5}`); undefined
 * when it fits. Nulls fit anywhere (they unset).
 */
export function typedPatchError(v: Json, s: Schema | undefined, path = ""): string | undefined {
  if (s === undefined || v === null) return undefined;
  if (s["x-kubernetes-int-or-string"] === true) {
    return typeof v === "string" || typeof v === "number" ? undefined : `${path}: expected numeric or string, got &value.valueUnstructured{Value:${goSharp(v)}}`;
  }
  if (s.type === "array") {
    if (!Array.isArray(v)) return `${path}: expected list, got &{${goPlain(v)}}`;
    for (let i = 0; i < v.length; i++) {
      const e = typedPatchError(v[i]!, s.items, `${path}[${i}]`);
      if (e !== undefined) return e;
    }
    return undefined;
  }
  if (s.type === "object" || s.properties !== undefined) {
    if (!isObject(v)) return `${path}: expected map, got &{${goPlain(v)}}`;
    const open = s["x-kubernetes-preserve-unknown-fields"] === true || s.additionalProperties === true;
    for (const [k, val] of Object.entries(v)) {
      if (path === "" && (k === "apiVersion" || k === "kind" || k === "metadata")) continue; // ObjectMeta: not the CRD's schema
      const cs = s.properties?.[k] ?? (typeof s.additionalProperties === "object" ? s.additionalProperties : undefined);
      if (cs === undefined) {
        if (!open) return `${path}.${k}: field not declared in schema`;
        continue;
      }
      const e = typedPatchError(val, cs, `${path}.${k}`);
      if (e !== undefined) return e;
    }
    return undefined;
  }
  const scalar = s.type === "string" ? "string" : s.type === "integer" || s.type === "number" ? "numeric" : s.type === "boolean" ? "boolean" : undefined;
  if (scalar === undefined) return undefined;
  const fits = scalar === "string" ? typeof v === "string" : scalar === "numeric" ? typeof v === "number" : typeof v === "boolean";
  return fits ? undefined : `${path}: expected ${scalar}, got &value.valueUnstructured{Value:${goSharp(v)}}`;
}

/** Removes unknown fields and non-nullable nulls in place; returns the pruned paths. */
export function prune(v: Json, s: Schema | undefined, path: string, pruned: string[]): void {
  if (s === undefined) return;
  if (isObject(v)) {
    const preserve = s["x-kubernetes-preserve-unknown-fields"] === true;
    for (const [k, val] of Object.entries(v)) {
      const cs = s.properties?.[k] ?? (typeof s.additionalProperties === "object" ? s.additionalProperties : undefined);
      if (cs === undefined && s.additionalProperties !== true && !preserve) {
        if (s.properties !== undefined || s.additionalProperties === false || s.type === "object") {
          dropKey(v, k);
          pruned.push(child(path, k));
          continue;
        }
      }
      if (val === null && cs !== undefined && cs.nullable !== true) {
        dropKey(v, k);
        continue;
      }
      prune(val, cs, child(path, k), pruned);
    }
    return;
  }
  if (Array.isArray(v)) v.forEach((el, i) => prune(el, s.items, `${path}[${i}]`, pruned));
}

/** Validates `v` against `s`; pushes causes. */
export function validateValue(v: Json, s: Schema, path: string, errors: StatusCause[]): void {
  const invalid = (message: string, value: Json = v): void => {
    errors.push({ reason: "FieldValueInvalid", message: `Invalid value: ${quote(value)}: ${message}`, field: path });
  };
  if (v === null) {
    if (s.nullable !== true && s.type !== undefined) invalid(`${path} in body must be of type ${s.type}: "null"`, "null");
    return;
  }
  const actual = typeName(v);
  if (s["x-kubernetes-int-or-string"] === true) {
    if (actual !== "integer" && actual !== "string") invalid(`${path} in body must be of type integer,string: "${actual}"`, actual);
  } else if (s.type !== undefined) {
    const ok = s.type === actual || (s.type === "number" && actual === "integer");
    if (!ok) {
      invalid(`${path} in body must be of type ${s.type}: "${actual}"`, actual);
      return;
    }
  }
  if (s.enum !== undefined && !s.enum.some((e) => deepEqual(e, v))) {
    errors.push({ reason: "FieldValueNotSupported", message: `Unsupported value: ${quote(v)}: supported values: ${s.enum.map((e) => quote(e)).join(", ")}`, field: path });
  }
  if (typeof v === "number") {
    if (s.minimum !== undefined && (s.exclusiveMinimum === true ? v <= s.minimum : v < s.minimum)) {
      invalid(`${path} in body should be greater than ${s.exclusiveMinimum === true ? "" : "or equal to "}${s.minimum}`);
    }
    if (s.maximum !== undefined && (s.exclusiveMaximum === true ? v >= s.maximum : v > s.maximum)) {
      invalid(`${path} in body should be less than ${s.exclusiveMaximum === true ? "" : "or equal to "}${s.maximum}`);
    }
    if (s.format === "int32" && (v < -2147483648 || v > 2147483647)) invalid(`${path} in body must be of type int32`);
    if (s.format === "uint32" && (v < 0 || v > 4294967295)) invalid(`${path} in body must be of type uint32`);
  }
  if (typeof v === "string") {
    if (s.maxLength !== undefined && runes(v) > s.maxLength) errors.push({ reason: "FieldValueTooLong", message: `Too long: may not be more than ${s.maxLength} bytes`, field: path });
    if (s.minLength !== undefined && runes(v) < s.minLength) invalid(`${path} in body should be at least ${s.minLength} chars long`);
    if (s.pattern !== undefined && !safeRegExp(s.pattern).test(v)) invalid(`${path} in body should match '${s.pattern}'`);
    if (s.format === "date-time" && Number.isNaN(Date.parse(v))) invalid(`${path} in body must be of type date-time: ${quote(v)}`);
  }
  if (Array.isArray(v)) {
    if (s.maxItems !== undefined && v.length > s.maxItems) errors.push({ reason: "FieldValueTooMany", message: `Too many: ${v.length}: must have at most ${s.maxItems} items`, field: path });
    if (s.minItems !== undefined && v.length < s.minItems) invalid(`${path} in body should have at least ${s.minItems} items`);
    if (s.items !== undefined) v.forEach((el, i) => validateValue(el, s.items!, `${path}[${i}]`, errors));
    const listType = s["x-kubernetes-list-type"];
    if (listType === "set" || listType === "map") {
      const keys = s["x-kubernetes-list-map-keys"] ?? [];
      // As apiextensions' listtype validation: a map element is identified by the key fields it has (a missing
      // key is left out, not null), the message shows those keys as a Go map, and a value is reported once, at
      // its second occurrence.
      const seen: { id: Json; times: number }[] = [];
      v.forEach((el, i) => {
        const id: Json = listType === "set" ? el : isObject(el) ? Object.fromEntries(keys.filter((k) => el[k] !== undefined).map((k) => [k, el[k]!])) : {};
        const prev = seen.find((x) => deepEqual(x.id, id));
        if (prev === undefined) seen.push({ id, times: 1 });
        else if (prev.times++ === 1) errors.push({ reason: "FieldValueDuplicate", message: `Duplicate value: ${goValue(id)}`, field: `${path}[${i}]` });
      });
    }
  }
  if (isObject(v)) {
    for (const r of s.required ?? []) {
      if (!Object.hasOwn(v, r)) errors.push({ reason: "FieldValueRequired", message: "Required value", field: child(path, r) });
    }
    const n = Object.keys(v).length;
    if (s.maxProperties !== undefined && n > s.maxProperties) errors.push({ reason: "FieldValueTooMany", message: `Too many: ${n}: must have at most ${s.maxProperties} items`, field: path });
    if (s.minProperties !== undefined && n < s.minProperties) invalid(`${path} in body should have at least ${s.minProperties} properties`);
    for (const [k, val] of Object.entries(v)) {
      const cs = childSchema(s, k);
      if (cs !== undefined) validateValue(val, cs, child(path, k), errors);
    }
  }
  // Combinators (structural schemas use them for value constraints only).
  const passes = (sub: Schema): boolean => {
    const e: StatusCause[] = [];
    validateValue(v, sub, path, e);
    return e.length === 0;
  };
  if (s.oneOf !== undefined) {
    const n = s.oneOf.filter(passes).length;
    if (n !== 1) invalid(`${path} in body must match exactly one schema in oneOf`, typeName(v));
  }
  if (s.anyOf !== undefined && !s.anyOf.some(passes)) invalid(`${path} in body must match at least one schema in anyOf`, typeName(v));
  for (const sub of s.allOf ?? []) validateValue(v, sub, path, errors);
  if (s.not !== undefined && passes(s.not)) invalid(`${path} in body must not match the schema in not`, typeName(v));
}

/** Length in Unicode code points, as OpenAPI's (and Go's utf8.RuneCountInString) string lengths count. */
function runes(v: string): number {
  let n = 0;
  for (const _ of v) n += 1;
  return n;
}

const regexps = new Map<string, RegExp>();
function safeRegExp(pattern: string): RegExp {
  let r = regexps.get(pattern);
  if (r === undefined) {
    try {
      r = new RegExp(pattern, "u");
    } catch {
      r = /(?:)/; // a pattern JavaScript cannot compile is not enforced
    }
    regexps.set(pattern, r);
  }
  return r;
}

/**
 * Prunes and validates a custom resource against its CRD schema; `apiVersion`, `kind` and
 * `metadata` are the server's to check (the schema's root covers the rest).
 */
export function checkCustomResource(obj: JsonObject, schema: Schema): SchemaCheck {
  const pruned: string[] = [];
  const errors: StatusCause[] = [];
  const rootProps = Object.fromEntries(Object.entries(schema.properties ?? {}).filter(([k]) => k !== "apiVersion" && k !== "kind" && k !== "metadata"));
  const root: Schema = { ...schema, properties: rootProps };
  for (const [k, val] of Object.entries(obj)) {
    if (k === "apiVersion" || k === "kind" || k === "metadata") continue;
    const cs = root.properties?.[k];
    if (cs === undefined) {
      if (root["x-kubernetes-preserve-unknown-fields"] !== true) {
        dropKey(obj, k);
        pruned.push(k);
      }
      continue;
    }
    if (val === null && cs.nullable !== true) {
      dropKey(obj, k);
      continue;
    }
    prune(val, cs, k, pruned);
    validateValue(obj[k]!, cs, k, errors);
  }
  for (const r of root.required ?? []) {
    if (!Object.hasOwn(obj, r)) errors.push({ reason: "FieldValueRequired", message: "Required value", field: r });
  }
  return { errors, pruned };
}
