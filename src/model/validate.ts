/**
 * Schema validation of configuration documents and discovery snapshots.
 *
 * The validators are ajv's standalone code, compiled from schemas/ by `npm run gen` into
 * generated/validators.gen.ts: nothing is compiled at run time, so the first document a process validates
 * costs what every other one does. ajv's raw errors are turned into SchemaIssues: one per actual problem,
 * pointing at the offending node, saying what to do.
 */
import type { ErrorObject, ValidateFunction } from "ajv";
import { VALIDATORS } from "./generated/validators.gen.js";
import { describeSupportedKinds, kindInfo, SUPPORTED_KINDS } from "./kinds.js";

/** One schema violation. */
export interface SchemaIssue {
  /** JSON pointer (RFC 6901) to the offending node, e.g. `/spec/http/0/forwardto`; "" is the document root. */
  readonly path: string;
  /** What was violated: the JSON Schema keyword (`additionalProperties`, `required`, `enum`, `type`, `pattern`, `oneOf`, …) or `kind` for an unsupported apiVersion/kind. */
  readonly keyword: string;
  /** What is wrong and what to do about it. */
  readonly message: string;
}

const DISCOVERY_FILE = "discovery-snapshot.schema.json";
const DURATION_REF_PATTERN = "^(0|([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$";

const validatorFor = (file: string): ValidateFunction | undefined => VALIDATORS[file];

/**
 * Checks that every schema has its generated validator. Kept from when validators compiled lazily at run
 * time (then it compiled them all up front); now they are compiled by `npm run gen`, so this only finds a
 * stale generated/ directory. Throws if one is missing (a bug: run npm run gen).
 */
export function precompileValidators(): void {
  for (const info of SUPPORTED_KINDS) if (!validatorFor(info.schemaFile)) throw new Error(`model: no validator for ${info.schemaFile} (run npm run gen)`);
  if (!validatorFor(DISCOVERY_FILE)) throw new Error(`model: no validator for ${DISCOVERY_FILE} (run npm run gen)`);
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Validates one configuration document (apiVersion, kind, metadata, spec) against the schema of its kind.
 * Returns [] when valid. An unsupported apiVersion/kind gives one issue with keyword `kind` naming the supported kinds.
 */
export function validateResource(obj: unknown): SchemaIssue[] {
  if (!isRecord(obj)) {
    return [{ path: "", keyword: "type", message: `a configuration document must be a mapping with apiVersion, kind, metadata and spec; got ${describeType(obj)}` }];
  }
  const { apiVersion, kind } = obj;
  if (typeof apiVersion !== "string" || typeof kind !== "string") {
    const missing = typeof apiVersion !== "string" ? "apiVersion" : "kind";
    return [{ path: "", keyword: "required", message: `missing or non-string \`${missing}\`; every document needs apiVersion and kind (supported: ${describeSupportedKinds()})` }];
  }
  const info = kindInfo(apiVersion, kind);
  if (!info) return [unsupportedKind(apiVersion, kind)];
  const validate = validatorFor(info.schemaFile);
  if (!validate) throw new Error(`model: no schema ${info.schemaFile} for ${kind} (run npm run gen)`);
  if (validate(obj)) return [];
  return toIssues(validate.errors ?? []);
}

/** Validates a discovery snapshot against schemas/discovery-snapshot.schema.json. Returns [] when valid. */
export function validateDiscoverySnapshot(obj: unknown): SchemaIssue[] {
  const validate = validatorFor(DISCOVERY_FILE);
  if (!validate) throw new Error(`model: ${DISCOVERY_FILE} is not embedded (run npm run gen)`);
  if (validate(obj)) return [];
  return toIssues(validate.errors ?? []);
}

function unsupportedKind(apiVersion: string, kind: string): SchemaIssue {
  const sameKind = SUPPORTED_KINDS.find((k) => k.kind === kind);
  if (sameKind) {
    return { path: "/apiVersion", keyword: "kind", message: `${kind} is supported as apiVersion \`${sameKind.apiVersion}\`, not \`${apiVersion}\`; change apiVersion` };
  }
  const kindNames = SUPPORTED_KINDS.map((k) => k.kind);
  const guess = closest(kind, kindNames);
  const hint = guess ? `did you mean \`${guess}\`? ` : "";
  return { path: "/kind", keyword: "kind", message: `unsupported kind \`${kind}\` (${apiVersion}); ${hint}supported kinds: ${describeSupportedKinds()}` };
}

// ajv errors → SchemaIssues

const escapePointer = (key: string): string => key.replace(/~/g, "~0").replace(/\//g, "~1");

/** An error reported by an alternative of a oneOf/anyOf (or inside a not); the combinator's own error says it better. */
const isAlternativeError = (e: ErrorObject): boolean => /\/(oneOf|anyOf|not)\/\d+\/[A-Za-z$]+$/.test(e.schemaPath) || /\/not\/[A-Za-z$]+$/.test(e.schemaPath);

function toIssues(errors: readonly ErrorObject[]): SchemaIssue[] {
  const out = new Map<string, SchemaIssue>();
  // A value of the wrong type also fails the keywords that constrain that type; report only the type.
  const typeFailures = new Set(errors.filter((e) => e.keyword === "type").map((e) => e.instancePath));
  for (const e of errors) {
    if (isAlternativeError(e)) continue;
    if ((e.keyword === "oneOf" || e.keyword === "required") && isExplainedByTypo(e, errors)) continue;
    if (e.keyword !== "type" && typeFailures.has(e.instancePath) && e.keyword !== "required") continue;
    const issue = toIssue(e);
    if (!issue) continue;
    out.set(`${issue.path}\u0000${issue.keyword}\u0000${issue.message}`, issue);
  }
  return [...out.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.keyword < b.keyword ? -1 : a.keyword > b.keyword ? 1 : 0));
}

function toIssue(e: ErrorObject): SchemaIssue | undefined {
  const at = e.instancePath;
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case "additionalProperties": {
      const key = String(params.additionalProperty);
      const allowed = isRecord(e.parentSchema) && isRecord(e.parentSchema.properties) ? Object.keys(e.parentSchema.properties) : [];
      const guess = closest(key, allowed);
      const hint = guess ? `did you mean \`${guess}\`?` : allowed.length ? `allowed fields: ${allowed.map((k) => `\`${k}\``).join(", ")}` : "this object takes no fields";
      return { path: `${at}/${escapePointer(key)}`, keyword: e.keyword, message: `unknown field \`${key}\`; ${hint}` };
    }
    case "required": {
      const field = String(params.missingProperty);
      return { path: at, keyword: e.keyword, message: `missing required field \`${field}\`; add it${at ? ` under ${at}` : " at the top level"}` };
    }
    case "enum": {
      const allowed = (params.allowedValues as unknown[]).map((v) => JSON.stringify(v));
      const guess = typeof e.data === "string" ? closest(e.data, (params.allowedValues as unknown[]).filter((v): v is string => typeof v === "string"), true) : undefined;
      const hint = guess ? ` (did you mean ${JSON.stringify(guess)}?)` : "";
      return { path: at, keyword: e.keyword, message: `${JSON.stringify(e.data)} is not allowed${hint}; use one of ${allowed.join(", ")}` };
    }
    case "const":
      return { path: at, keyword: e.keyword, message: `${JSON.stringify(e.data)} is not allowed; use ${JSON.stringify(params.allowedValue)}` };
    case "type": {
      const expected = Array.isArray(params.type) ? (params.type as string[]).join(" or ") : String(params.type);
      return { path: at, keyword: e.keyword, message: `expected ${article(expected)}, got ${describeType(e.data)}${typeHint(expected, e.data)}` };
    }
    case "pattern": {
      const value = JSON.stringify(e.data);
      if (e.schema === DURATION_REF_PATTERN) {
        return { path: at, keyword: e.keyword, message: `${value} is not a duration; write it like "10s", "1m30s", "500ms" or "1h" (units ns, us, ms, s, m, h; no spaces)` };
      }
      if (at.endsWith("/metadata/name") || at.endsWith("/metadata/namespace")) {
        return { path: at, keyword: e.keyword, message: `${value} is not a valid Kubernetes name; use lower-case letters, digits and '-'${at.endsWith("/name") ? " (and '.')" : ""}, starting and ending with a letter or digit` };
      }
      return { path: at, keyword: e.keyword, message: `${value} does not match the pattern ${String(e.schema)}` };
    }
    case "x-gloo-rules": {
      // A forbidden field is reported at the field itself; a missing one at the object that lacks it.
      const field = typeof params.field === "string" ? params.field : undefined;
      return { path: field === undefined ? at : `${at}/${escapePointer(field)}`, keyword: "rule", message: `${e.message ?? "violates a rule of Gloo's CRD"} (Gloo's CRD rule)` };
    }
    case "oneOf":
      return oneOfIssue(e);
    case "not":
      return notIssue(e);
    case "minProperties":
      if (e.params.limit === 1 && isRecord(e.parentSchema) && isRecord(e.parentSchema.properties)) {
        const fields = Object.keys(e.parentSchema.properties).map((k) => `\`${k}\``);
        return { path: at, keyword: e.keyword, message: `empty; set at least one of ${fields.join(", ")}` };
      }
      return { path: at, keyword: e.keyword, message: `${JSON.stringify(e.data)} is invalid: ${e.message ?? e.keyword}` };
    case "minimum":
    case "maximum":
    case "exclusiveMinimum":
    case "exclusiveMaximum":
    case "minLength":
    case "maxLength":
    case "minItems":
    case "maxItems":
    case "maxProperties":
    case "uniqueItems":
    case "format":
      return { path: at, keyword: e.keyword, message: `${JSON.stringify(e.data)} is invalid: ${e.message ?? e.keyword}` };
    case "if":
    case "anyOf":
    case "allOf":
      // the failing branch's own errors are reported; this summary adds nothing
      if (e.keyword !== "anyOf") return undefined;
      {
        // Alternatives that each require one field: "set at least one of …" (e.g. a VirtualDestination's backing).
        const alts = Array.isArray(e.schema) ? (e.schema as unknown[]) : [];
        const fields = alts.map((a) => (isRecord(a) && Array.isArray(a.required) && a.required.length === 1 ? String(a.required[0]) : undefined));
        if (fields.length > 0 && fields.every((f) => f !== undefined)) return { path: at, keyword: e.keyword, message: `set at least one of ${fields.map((f) => `\`${f}\``).join(", ")} (a list must not be empty)` };
        return { path: at, keyword: e.keyword, message: `must match at least one of the allowed forms; see the schema description of this field` };
      }
    default:
      return { path: at, keyword: e.keyword, message: e.message ?? e.keyword };
  }
}

/**
 * "set exactly one of forwardTo, …" or "missing required field spec" next to "unknown field forwardto / sepc;
 * did you mean …?" is one problem, not two: the misspelt field is the one the user meant to set.
 */
function isExplainedByTypo(e: ErrorObject, errors: readonly ErrorObject[]): boolean {
  const fields = e.keyword === "required" ? [String((e.params as { missingProperty?: unknown }).missingProperty)] : requiredAlternatives(e.schema);
  if (!fields || (e.params as { passingSchemas?: unknown }).passingSchemas) return false;
  return errors.some((o) => {
    if (o.keyword !== "additionalProperties" || o.instancePath !== e.instancePath) return false;
    const guess = closest(String((o.params as { additionalProperty?: unknown }).additionalProperty), fields);
    return guess !== undefined;
  });
}

/** oneOf alternatives that only say which field is required: a proto oneof that needs exactly one field set. */
function requiredAlternatives(schema: unknown): string[] | undefined {
  if (!Array.isArray(schema)) return undefined;
  const fields: string[] = [];
  for (const alt of schema) {
    if (!isRecord(alt) || Object.keys(alt).length !== 1 || !Array.isArray(alt.required) || alt.required.length !== 1) return undefined;
    fields.push(String(alt.required[0]));
  }
  return fields;
}

function oneOfIssue(e: ErrorObject): SchemaIssue {
  const fields = requiredAlternatives(e.schema);
  const passing = (e.params as { passingSchemas?: number[] | null }).passingSchemas;
  if (fields) {
    const list = fields.map((f) => `\`${f}\``).join(", ");
    if (passing && passing.length > 1) {
      const set = passing.map((i) => `\`${fields[i] ?? "?"}\``).join(" and ");
      return { path: e.instancePath, keyword: "oneOf", message: `${set} are both set; set only one of ${list}` };
    }
    return { path: e.instancePath, keyword: "oneOf", message: `set exactly one of ${list}` };
  }
  if (passing && passing.length > 1) {
    return { path: e.instancePath, keyword: "oneOf", message: `matches more than one of the ${String((e.schema as unknown[]).length)} allowed forms (alternatives ${passing.join(", ")}); make it match exactly one` };
  }
  return { path: e.instancePath, keyword: "oneOf", message: `matches none of the ${String((e.schema as unknown[]).length)} allowed forms; see the schema description of this field` };
}

/** `not: {anyOf: [{required: [a, b]}, …]}` — a proto oneof where at most one field may be set. */
function notIssue(e: ErrorObject): SchemaIssue {
  const schema = e.schema;
  if (isRecord(schema) && Array.isArray(schema.anyOf)) {
    const fields = new Set<string>();
    for (const alt of schema.anyOf) if (isRecord(alt) && Array.isArray(alt.required)) for (const f of alt.required) fields.add(String(f));
    const data = isRecord(e.data) ? e.data : {};
    const set = [...fields].filter((f) => data[f] !== undefined);
    const list = [...fields].map((f) => `\`${f}\``).join(", ");
    return { path: e.instancePath, keyword: "oneOf", message: `${set.map((f) => `\`${f}\``).join(" and ")} are set together; set at most one of ${list}` };
  }
  return { path: e.instancePath, keyword: "not", message: e.message ?? "must not match the forbidden form" };
}

function describeType(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "object") return "a mapping";
  if (typeof v === "string") return `a string (${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)})`;
  if (typeof v === "number") return Number.isInteger(v) ? `an integer (${String(v)})` : `a number (${String(v)})`;
  if (typeof v === "boolean") return `a boolean (${String(v)})`;
  return typeof v;
}

const article = (t: string): string => {
  const word = t.replace(/^object$/, "mapping").replace(/^array$/, "list");
  return /^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`;
};

function typeHint(expected: string, data: unknown): string {
  if (data === null) return "; a YAML key with nothing after it is null: give it a value, write `{}` / `[]`, or remove the key";
  if (expected === "string" && (typeof data === "number" || typeof data === "boolean")) return `; quote it in YAML ("${String(data)}")`;
  if ((expected === "integer" || expected === "number") && typeof data === "string" && /^\d+(\.\d+)?$/.test(data)) return "; remove the quotes";
  if (expected === "boolean" && typeof data === "string" && /^(true|false)$/i.test(data)) return "; write true or false without quotes";
  if (expected === "array" && typeof data !== "object") return "; write it as a list (`- item`)";
  return "";
}

// ---------------------------------------------------------------------------------------------------
// suggestions

/** Optimal string alignment distance (Levenshtein with adjacent transpositions). */
export function editDistance(a: string, b: string): number {
  const m = a.length;
  const n = b.length;
  const d: number[][] = Array.from({ length: m + 1 }, (_, i) => Array.from({ length: n + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= m; i++) {
    for (let j = 1; j <= n; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const row = d[i]!;
      const prev = d[i - 1]!;
      let v = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      row[j] = v;
    }
  }
  return d[m]![n]!;
}

/** The candidate closest to `word` (case-insensitive first), if close enough to be a plausible typo. */
export function closest(word: string, candidates: readonly string[], caseInsensitiveOnly = false): string | undefined {
  const lower = word.toLowerCase();
  const same = candidates.find((c) => c.toLowerCase() === lower || c.toLowerCase().replace(/[-_]/g, "") === lower.replace(/[-_]/g, ""));
  if (same) return same;
  if (caseInsensitiveOnly && word.length < 3) return undefined;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const dist = editDistance(lower, c.toLowerCase());
    if (dist < bestDistance) {
      best = c;
      bestDistance = dist;
    }
  }
  const limit = Math.max(1, Math.min(3, Math.floor(word.length / 3)));
  return bestDistance <= limit ? best : undefined;
}
