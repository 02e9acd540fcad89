/**
 * Structural schemas (the OpenAPI v3 subset Kubernetes uses for CRDs and for its own kinds) and the
 * list semantics every write path needs from them: `x-kubernetes-list-type` / `-list-map-keys`
 * for server-side apply, `x-kubernetes-patch-strategy` / `-patch-merge-key` for strategic merge patch.
 */
import { deepEqual, isObject, type Json, type JsonObject } from "./patch.js";

export interface Schema {
  readonly type?: string;
  readonly format?: string;
  readonly description?: string;
  readonly properties?: Readonly<Record<string, Schema>>;
  readonly additionalProperties?: Schema | boolean;
  readonly items?: Schema;
  readonly required?: readonly string[];
  readonly enum?: readonly Json[];
  readonly nullable?: boolean;
  readonly default?: Json;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly exclusiveMinimum?: boolean;
  readonly exclusiveMaximum?: boolean;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: string;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly minProperties?: number;
  readonly maxProperties?: number;
  readonly oneOf?: readonly Schema[];
  readonly anyOf?: readonly Schema[];
  readonly allOf?: readonly Schema[];
  readonly not?: Schema;
  readonly "x-kubernetes-preserve-unknown-fields"?: boolean;
  readonly "x-kubernetes-int-or-string"?: boolean;
  readonly "x-kubernetes-embedded-resource"?: boolean;
  readonly "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  readonly "x-kubernetes-list-map-keys"?: readonly string[];
  readonly "x-kubernetes-map-type"?: "atomic" | "granular";
  readonly "x-kubernetes-patch-strategy"?: string;
  readonly "x-kubernetes-patch-merge-key"?: string;
  /** Validation rules (CEL); not evaluated by the emulator (see README). */
  readonly "x-kubernetes-validations"?: readonly Json[];
}

/** The schema of `key` inside an object schema (a declared property or the additionalProperties schema). */
export function childSchema(s: Schema | undefined, key: string): Schema | undefined {
  if (s === undefined) return undefined;
  const p = s.properties?.[key];
  if (p !== undefined) return p;
  return typeof s.additionalProperties === "object" ? s.additionalProperties : undefined;
}

export type ListSemantics = { readonly type: "atomic" } | { readonly type: "set" } | { readonly type: "map"; readonly keys: readonly string[] };

/** How server-side apply treats a list (atomic unless the schema says otherwise, as in Kubernetes). */
export function listSemantics(s: Schema | undefined): ListSemantics {
  const t = s?.["x-kubernetes-list-type"];
  if (t === "map") return { type: "map", keys: s?.["x-kubernetes-list-map-keys"] ?? [] };
  if (t === "set") return { type: "set" };
  return { type: "atomic" };
}

/** A list-map element's key, with a schema default for a missing key field (as structured-merge-diff does). */
export function elementKey(element: Json, keys: readonly string[], items: Schema | undefined): JsonObject | undefined {
  if (!isObject(element)) return undefined;
  const out: JsonObject = {};
  for (const k of keys) {
    const v = element[k] ?? childSchema(items, k)?.default;
    if (v !== undefined && v !== null) out[k] = v;
  }
  return Object.keys(out).length === 0 ? undefined : out;
}

export function sameKey(a: JsonObject | undefined, b: JsonObject | undefined): boolean {
  return a !== undefined && b !== undefined && deepEqual(a, b);
}
