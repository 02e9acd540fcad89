/**
 * Envoy configuration embedded in rendered EnvoyFilters, checked against a documented subset of
 * Envoy's API: every `typed_config` / `typed_per_filter_config` entry must name an `@type` gitmesh
 * knows, and match that message's JSON form (field names, types, enums), as Envoy's proto JSON
 * parser would. Istio's EnvoyFilter schema itself does not look inside `patch.value` (it is a
 * free-form Struct), so a mistake there would only surface as an Envoy NACK in the cluster.
 *
 * Covered messages (envoyproxy/envoy api/, v3): `envoy.extensions.filters.http.csrf.v3.CsrfPolicy`
 * (filter_enabled, shadow_enabled: RuntimeFractionalPercent; additional_origins: StringMatcher).
 */
import { subsetValidator } from "./subset-schema.js";

const fractionalPercent = {
  type: "object",
  additionalProperties: false,
  required: ["numerator"],
  properties: { numerator: { type: "integer", minimum: 0 }, denominator: { enum: ["HUNDRED", "TEN_THOUSAND", "MILLION"] } },
};
const runtimeFractionalPercent = {
  type: "object",
  additionalProperties: false,
  required: ["default_value"],
  properties: { default_value: fractionalPercent, runtime_key: { type: "string" } },
};
const stringMatcher = {
  type: "object",
  additionalProperties: false,
  properties: {
    exact: { type: "string" },
    prefix: { type: "string", minLength: 1 },
    suffix: { type: "string", minLength: 1 },
    contains: { type: "string", minLength: 1 },
    safe_regex: { type: "object", additionalProperties: false, required: ["regex"], properties: { regex: { type: "string", minLength: 1 } } },
    ignore_case: { type: "boolean" },
  },
  oneOf: ["exact", "prefix", "suffix", "contains", "safe_regex"].map((k) => ({ required: [k] })),
};

export const CSRF_TYPE = "type.googleapis.com/envoy.extensions.filters.http.csrf.v3.CsrfPolicy";

const MESSAGES: Readonly<Record<string, object>> = {
  [CSRF_TYPE]: {
    type: "object",
    additionalProperties: false,
    required: ["@type", "filter_enabled"],
    properties: {
      "@type": { const: CSRF_TYPE },
      filter_enabled: runtimeFractionalPercent,
      shadow_enabled: runtimeFractionalPercent,
      additional_origins: { type: "array", items: stringMatcher },
    },
  },
};
const validators = new Map(Object.entries(MESSAGES).map(([k, s]) => [k, subsetValidator(s)]));

export interface EnvoyIssue {
  readonly path: string;
  readonly message: string;
}

function typed(v: unknown, path: string, out: EnvoyIssue[]): void {
  if (typeof v !== "object" || v === null) return void out.push({ path, message: "must be an object with @type" });
  const type = (v as Record<string, unknown>)["@type"];
  const validate = typeof type === "string" ? validators.get(type) : undefined;
  if (validate === undefined) return void out.push({ path: `${path}/@type`, message: `no schema for Envoy type ${JSON.stringify(type)}` });
  for (const issue of validate(v)) out.push({ path: `${path}${issue.path}`, message: issue.message });
}

/** Issues of the Envoy configuration inside an EnvoyFilter's patches (`[]` when every embedded message is valid). */
export function validateEnvoyPatches(spec: Record<string, unknown>): EnvoyIssue[] {
  const out: EnvoyIssue[] = [];
  const patches = Array.isArray(spec.configPatches) ? spec.configPatches : [];
  patches.forEach((p: unknown, i) => {
    const value = (p as { patch?: { value?: Record<string, unknown> } } | null)?.patch?.value;
    if (value === undefined) return;
    const base = `/spec/configPatches/${String(i)}/patch/value`;
    if (value.typed_config !== undefined) typed(value.typed_config, `${base}/typed_config`, out);
    const perFilter = value.typed_per_filter_config;
    if (typeof perFilter === "object" && perFilter !== null) {
      for (const [name, v] of Object.entries(perFilter)) typed(v, `${base}/typed_per_filter_config/${name}`, out);
    }
  });
  return out;
}
