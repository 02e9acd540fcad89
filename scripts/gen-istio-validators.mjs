#!/usr/bin/env node
// Compiles the schemas of the Istio kinds gitmesh renders, taken from Istio's CRDs as its chart ships them
// (`crd-all-<version>.gen.yaml`), into standalone ajv validation code: src/translate/istio-schemas.gen.ts.
// A process validates without compiling anything (ajv compiles DestinationRule's schema alone in ~1.5 s).
//
//   node scripts/gen-istio-validators.mjs ../shared/reference/istio/crd-all-1.29.2.gen.yaml           write it
//   node scripts/gen-istio-validators.mjs ../shared/reference/istio/crd-all-1.29.2.gen.yaml --check   exit 1 when stale
//
// How a CRD's structural schema (the OpenAPI v3 subset Kubernetes uses) becomes a JSON Schema that judges an
// object as the API server does:
// - an optional property whose value is null is accepted (the API server prunes nulls of non-nullable
//   fields), a required one, an enum or an item that is null is not (as kubernetes-models, which gitmesh used
//   before, judged them: an enum is a proto enum, and Istio's webhook has no value for null);
// - `x-kubernetes-int-or-string` is an integer or a string; `x-kubernetes-preserve-unknown-fields` and unknown
//   fields elsewhere are accepted (the API server prunes unknown fields; it does not reject them);
// - `x-kubernetes-list-type: map` rejects two items with the same `x-kubernetes-list-map-keys` (the API
//   server's "Duplicate value"); `set` rejects two equal items;
// - `format`s are ajv-formats' (int32, double, date-time, byte);
// - `metadata` is Kubernetes' ObjectMeta (the fields a client may write, with their types);
// - CEL rules (`x-kubernetes-validations`) are not evaluated, and descriptions are dropped.
// Subschemas that occur more than once (DestinationRule's traffic policy, for one) are compiled once, as $defs.
import { readFileSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { _, Ajv } from "ajv";
import addFormatsModule from "ajv-formats";
import standaloneModule from "ajv/dist/standalone/index.js";
import { parseAllDocuments } from "yaml";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const target = join(root, "src", "translate", "istio-schemas.gen.ts");

/** The kinds gitmesh renders, by apiVersion/kind (EnvoyFilter is served as v1alpha3 only). */
const KINDS = [
  "networking.istio.io/v1/DestinationRule",
  "networking.istio.io/v1/Gateway",
  "networking.istio.io/v1/ServiceEntry",
  "networking.istio.io/v1/Sidecar",
  "networking.istio.io/v1/VirtualService",
  "networking.istio.io/v1/WorkloadEntry",
  "networking.istio.io/v1alpha3/EnvoyFilter",
  "security.istio.io/v1/AuthorizationPolicy",
  "security.istio.io/v1/PeerAuthentication",
  "security.istio.io/v1/RequestAuthentication",
];

const isNode = (v) => typeof v === "object" && v !== null && !Array.isArray(v);
const str = { type: "string" };
const strMap = { type: "object", additionalProperties: str };

/** Kubernetes' ObjectMeta (apimachinery meta/v1), the fields a client writes; server-set ones by type only. */
const OBJECT_META = {
  type: "object",
  properties: {
    name: str,
    generateName: str,
    namespace: str,
    uid: str,
    resourceVersion: str,
    generation: { type: "integer", format: "int64" },
    creationTimestamp: { type: "string", format: "date-time" },
    deletionTimestamp: { type: "string", format: "date-time" },
    deletionGracePeriodSeconds: { type: "integer", format: "int64" },
    labels: strMap,
    annotations: strMap,
    finalizers: { type: "array", items: str },
    ownerReferences: {
      type: "array",
      items: {
        type: "object",
        required: ["apiVersion", "kind", "name", "uid"],
        properties: { apiVersion: str, kind: str, name: str, uid: str, controller: { type: "boolean" }, blockOwnerDeletion: { type: "boolean" } },
      },
    },
    managedFields: { type: "array", items: { type: "object" } },
    selfLink: str,
  },
};

/** A structural schema node → JSON Schema (see the header); `property`: the node is an optional property of an object. */
function convert(node, property) {
  const required = new Set(node.required ?? []);
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === "description" || k === "x-kubernetes-validations" || k === "x-kubernetes-preserve-unknown-fields" || k === "x-kubernetes-int-or-string" || k === "x-kubernetes-list-type" || k === "nullable") continue;
    if (k === "properties") out[k] = Object.fromEntries(Object.entries(v).map(([p, s]) => [p, convert(s, !required.has(p))]));
    else if (k === "additionalProperties" && isNode(v)) out[k] = convert(v, false);
    else if (k === "items") out[k] = convert(v, false);
    else if (k === "oneOf" || k === "anyOf" || k === "allOf") out[k] = v.map((s) => convert(s, false));
    else if (k === "not") out[k] = convert(v, false);
    else out[k] = v;
  }
  if (node["x-kubernetes-int-or-string"] === true && out.type === undefined && out.anyOf === undefined) out.type = ["integer", "string"];
  const list = node["x-kubernetes-list-type"];
  if (list === "set") out.uniqueItems = true;
  if (list !== "map") delete out["x-kubernetes-list-map-keys"];
  if (property || node.nullable === true) {
    // ajv's `nullable` (OpenAPI's) keeps the type's message ("must be integer"); a type union would not.
    if (out.type !== undefined) out.nullable = true;
    else if (Array.isArray(out.anyOf)) out.anyOf = [...out.anyOf, { type: "null" }];
  }
  return out;
}

/** Replaces every subschema that occurs more than once (and is not tiny) by a $ref to one $defs entry. */
function dedupe(schemas) {
  const key = (n) => createHash("sha256").update(JSON.stringify(n)).digest("hex").slice(0, 12);
  const big = (n) => n.type !== undefined && JSON.stringify(n).length > 400;
  const count = new Map();
  const countTree = (n) => {
    if (Array.isArray(n)) return n.forEach(countTree);
    if (!isNode(n)) return;
    if (big(n)) count.set(key(n), (count.get(key(n)) ?? 0) + 1);
    for (const [k, v] of Object.entries(n)) {
      if (k === "properties") Object.values(v).forEach(countTree);
      else if (k !== "enum") countTree(v);
    }
  };
  Object.values(schemas).forEach(countTree);
  const defs = {};
  const children = (n) => Object.fromEntries(Object.entries(n).map(([k, v]) => [k, k === "properties" ? Object.fromEntries(Object.entries(v).map(([p, s]) => [p, replace(s)])) : k === "enum" ? v : replace(v)]));
  const replace = (n) => {
    if (Array.isArray(n)) return n.map(replace);
    if (!isNode(n)) return n;
    if (!big(n) || (count.get(key(n)) ?? 0) < 2) return children(n);
    const name = `s${key(n)}`;
    if (!(name in defs)) {
      defs[name] = {};
      defs[name] = children(n);
    }
    return { $ref: `https://gitmesh.io/istio/defs.json#/$defs/${name}` };
  };
  return { defs, schemas: Object.fromEntries(Object.entries(schemas).map(([id, s]) => [id, replace(s)])) };
}

/** `x-kubernetes-list-map-keys` on a `map` list: no two items with the same keys (standalone-safe inline code). */
function listMapKeyword(ajv) {
  ajv.addKeyword({
    keyword: "x-kubernetes-list-map-keys",
    type: "array",
    schemaType: "array",
    error: { message: (cxt) => _`"must not hold two items with the same " + ${cxt.schema.join(", ")} + " (x-kubernetes-list-type: map)"` },
    code(cxt) {
      cxt.fail(_`new Set(${cxt.data}.map((i) => JSON.stringify(${cxt.schemaCode}.map((k) => i?.[k])))).size !== ${cxt.data}.length`);
    },
  });
}

const [source] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const check = process.argv.includes("--check");
if (source === undefined) {
  console.error("usage: gen-istio-validators.mjs <crd-all.gen.yaml> [--check]");
  process.exit(2);
}
const crds = parseAllDocuments(readFileSync(source, "utf8"))
  .map((d) => d.toJS())
  .filter((d) => isNode(d) && d.kind === "CustomResourceDefinition");
const converted = {};
for (const type of KINDS) {
  const [group, version, kind] = type.split("/");
  const crd = crds.find((c) => c.spec.group === group && c.spec.names.kind === kind);
  const v = crd?.spec.versions.find((x) => x.name === version && x.served === true);
  if (v === undefined) throw new Error(`gen-istio-validators: ${basename(source)} serves no ${type}`);
  const schema = convert(v.schema.openAPIV3Schema, false);
  schema.required = [...new Set(["apiVersion", "kind", ...(schema.required ?? [])])];
  schema.properties = { apiVersion: str, kind: str, metadata: { $ref: "https://gitmesh.io/istio/defs.json#/$defs/ObjectMeta" }, ...schema.properties };
  converted[type] = schema;
}
const { defs, schemas } = dedupe(converted);
const addFormats = addFormatsModule.default ?? addFormatsModule;
const standaloneCode = standaloneModule.default ?? standaloneModule;
const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false, strictTypes: false, allowUnionTypes: true, code: { source: true, esm: true, lines: false, formats: _`require("ajv-formats/dist/formats").fullFormats` } });
addFormats(ajv);
listMapKeyword(ajv);
ajv.addSchema({ $id: "https://gitmesh.io/istio/defs.json", $defs: { ObjectMeta: OBJECT_META, ...defs } });
const refs = {};
KINDS.forEach((type, i) => {
  ajv.addSchema({ $id: `https://gitmesh.io/istio/${type}.json`, ...schemas[type] });
  refs[`v${i}`] = `https://gitmesh.io/istio/${type}.json`;
});
let code = standaloneCode(ajv, refs);
const fnByName = new Map();
code = code.replace(/export const (v\d+) = (validate\d+);/g, (_m, name, fn) => {
  fnByName.set(name, fn);
  return "";
});
code = code.replace(/^"use strict";/, "");
if (/\bself\./.test(code)) throw new Error("gen-istio-validators: ajv's standalone code uses its instance (self.…)");
const entries = KINDS.map((type, i) => `  ${JSON.stringify(type)}: ${fnByName.get(`v${i}`)},`);
const text =
  `/* eslint-disable */\n// GENERATED by scripts/gen-istio-validators.mjs from ${basename(source)} (Istio's CRDs as its chart ships them) — do not edit.\n` +
  "// @ts-nocheck — ajv's standalone output (validation code compiled at generation time), not written for the type checker.\n" +
  'import { createRequire } from "node:module";\nimport type { ValidateFunction } from "ajv";\n' +
  "// ajv writes its run-time helpers (ajv/dist/runtime/*) and the formats as CommonJS `require(…)`.\n" +
  "const require = createRequire(import.meta.url);\n\n" +
  "/** The schema validator of each Istio kind gitmesh renders, keyed by apiVersion/kind (istio-validate.ts). */\n" +
  `export const ISTIO_VALIDATORS: Readonly<Record<string, ValidateFunction>> = {\n${entries.join("\n")}\n};\n\n` +
  `${code.trim()}\n`;
if (check) {
  let current = "";
  try {
    current = readFileSync(target, "utf8");
  } catch {
    // missing: stale
  }
  if (current !== text) {
    console.error("gen-istio-validators: src/translate/istio-schemas.gen.ts is stale — regenerate it and commit");
    process.exit(1);
  }
} else {
  writeFileSync(target, text);
  console.log(`gen-istio-validators: wrote ${target} (${(text.length / 1024).toFixed(0)} KiB, ${KINDS.length} kinds, ${Object.keys(defs).length} shared subschemas)`);
}
