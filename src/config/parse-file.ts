/**
 * Per-file stage: bytes → YAML documents → objects, with every problem that depends on this file
 * alone (syntax, metadata, unsupported kinds, schema violations). Its result is cached per file in
 * the desired state, so an update re-runs this only for changed files.
 */
import { createHash } from "node:crypto";
import type { Diagnostic } from "../core/index.js";
import { closest } from "../model/index.js";
import { CONFIG_CODES, ConfigCode } from "./codes.js";
import type { KindRegistry } from "./kinds.js";
import type { FileRecord, LoadedObject, ObjectMetadata, Position, SourceFile, SourceLocation, UnsupportedObject } from "./types.js";
import { parseYamlFast } from "./yaml-fast.js";
import { parseYamlDocuments, type ParsedDocument } from "./yaml-positions.js";

export const CLUSTER_ANNOTATION = "cluster.solo.io/cluster";

export function sha256(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

export function objectKey(kind: string, cluster: string | undefined, namespace: string, name: string): string {
  return `${kind}/${cluster ?? ""}/${namespace}/${name}`;
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/** Decodes a file's content; `undefined` when it is not valid UTF-8. */
export function decodeContent(content: string | Uint8Array): string | undefined {
  if (typeof content === "string") return content.replace(/^\uFEFF/, "");
  try {
    return decoder.decode(content).replace(/^\uFEFF/, "");
  } catch {
    return undefined;
  }
}

export function diag(code: ConfigCode, file: string, position: Position | undefined, message: string, path?: string): Diagnostic {
  return {
    code,
    severity: CONFIG_CODES[code].severity,
    file,
    ...(position ? { line: position[0], column: position[1] } : {}),
    ...(path !== undefined && path !== "" ? { path } : {}),
    message,
  };
}

/** Position of the node at `pointer`, or of its nearest ancestor that has one. */
export function positionOf(positions: Readonly<Record<string, Position>>, pointer: string): Position | undefined {
  let p = pointer;
  for (;;) {
    const hit = positions[p];
    if (hit) return hit;
    if (p === "") return undefined;
    p = p.slice(0, Math.max(0, p.lastIndexOf("/")));
  }
}

export function parseSourceFile(file: SourceFile, registry: KindRegistry, schemaValidation: boolean): FileRecord {
  try {
    return parseSourceFileUnguarded(file, registry, schemaValidation);
  } catch (err) {
    // Pathological input (nesting thousands of levels deep) overflows the stack somewhere in
    // parsing, validation or hashing; it must not take the process down. Anything else is a bug.
    if (!(err instanceof RangeError)) throw err;
    return {
      path: file.path,
      digest: sha256(file.content),
      objects: [],
      invalid: [],
      unsupported: [],
      diagnostics: [diag(ConfigCode.YAML_SYNTAX, file.path, [1, 1], `the file could not be processed (${err.message}); it is nested too deeply, simplify it (the file is skipped)`)],
    };
  }
}

function parseSourceFileUnguarded(file: SourceFile, registry: KindRegistry, schemaValidation: boolean): FileRecord {
  const digest = sha256(file.content);
  const diagnostics: Diagnostic[] = [];
  const objects: LoadedObject[] = [];
  const invalid: number[] = [];
  const unsupported: UnsupportedObject[] = [];
  const text = decodeContent(file.content);
  if (text === undefined) {
    diagnostics.push(diag(ConfigCode.FILE_ENCODING, file.path, [1, 1], "the file is not valid UTF-8; save it as UTF-8"));
    return { path: file.path, digest, objects, invalid, unsupported, diagnostics };
  }
  // The fast path declines whatever it cannot read exactly as the composer does (yaml-fast.ts).
  for (const doc of parseYamlFast(text) ?? parseYamlDocuments(text)) {
    for (const e of doc.errors) {
      diagnostics.push(diag(ConfigCode.YAML_SYNTAX, file.path, e.position, `${e.message}; fix the YAML (this document is skipped)`));
    }
    for (const w of doc.warnings) diagnostics.push(diag(ConfigCode.YAML_WARNING, file.path, w.position, w.message));
    if (doc.errors.length > 0 || doc.value === undefined || doc.value === null) continue;
    const result = documentToObject(file.path, doc, registry, diagnostics);
    if (result === undefined) continue;
    if ("unsupported" in result) {
      unsupported.push(result.unsupported);
      continue;
    }
    const obj = result.object;
    if (schemaValidation) {
      const issues = registry.validate(result.raw);
      for (const issue of issues) {
        const position = positionOf(obj.positions, issue.path);
        diagnostics.push({
          ...diag(ConfigCode.SCHEMA_VIOLATION, file.path, position, `${obj.kind} ${obj.metadata.namespace}/${obj.metadata.name}: ${issue.message}`, issue.path),
          object: objectRef(obj),
        });
      }
      if (issues.length > 0) invalid.push(objects.length);
    }
    objects.push(obj);
  }
  return { path: file.path, digest, objects, invalid, unsupported, diagnostics };
}

/**
 * JSON with object keys sorted at every depth, written directly (no sorted copy first): the input of
 * the content digest, so that reordering keys in YAML does not count as a change.
 */
export function stableJson(value: unknown): string {
  if (value === undefined) return "null";
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  const obj = value as Record<string, unknown>;
  const parts: string[] = [];
  for (const k of Object.keys(obj).sort()) {
    if (obj[k] !== undefined) parts.push(`${JSON.stringify(k)}:${stableJson(obj[k])}`);
  }
  return `{${parts.join(",")}}`;
}

export function objectRef(obj: LoadedObject): NonNullable<Diagnostic["object"]> {
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    name: obj.metadata.name,
    namespace: obj.metadata.namespace,
    ...(obj.cluster !== undefined ? { cluster: obj.cluster } : {}),
  };
}

type DocResult = { object: LoadedObject; raw: Record<string, unknown> } | { unsupported: UnsupportedObject } | undefined;

function documentToObject(file: string, doc: ParsedDocument, registry: KindRegistry, out: Diagnostic[]): DocResult {
  const at = (pointer: string): Position | undefined => positionOf(doc.positions, pointer);
  const source: SourceLocation = { file, line: doc.position[0], column: doc.position[1], docIndex: doc.docIndex };
  const value = doc.value;
  if (!isRecord(value)) {
    out.push(diag(ConfigCode.NOT_AN_OBJECT, file, doc.position, `document ${doc.docIndex + 1} is a ${describe(value)}, not a mapping; each document must be one object with apiVersion, kind, metadata and spec`));
    return undefined;
  }
  const { apiVersion, kind } = value;
  const hasString = (v: unknown) => typeof v === "string" && v !== "";
  if (!hasString(apiVersion) && !hasString(kind)) {
    // Neither: not a Kubernetes-style object at all (Helm values, CI settings) rather than a Gloo object with a gap.
    out.push(
      diag(
        ConfigCode.MISSING_API_VERSION,
        file,
        at("/apiVersion") ?? doc.position,
        "no `apiVersion` and no `kind`: this is not Gloo Mesh configuration (a Gloo object starts with e.g. `apiVersion: networking.gloo.solo.io/v2` and `kind: RouteTable`); if the file is something else (Helm values, CI settings), list it under `ignore:` in gitmesh.yaml",
        "/apiVersion",
      ),
    );
    return undefined;
  }
  let ok = true;
  if (typeof apiVersion !== "string" || apiVersion === "") {
    out.push(diag(ConfigCode.MISSING_API_VERSION, file, at("/apiVersion"), "add `apiVersion`, e.g. `networking.gloo.solo.io/v2`", "/apiVersion"));
    ok = false;
  }
  if (typeof kind !== "string" || kind === "") {
    out.push(diag(ConfigCode.MISSING_KIND, file, at("/kind"), "add `kind`, e.g. `RouteTable`", "/kind"));
    ok = false;
  }
  if (!ok || typeof apiVersion !== "string" || typeof kind !== "string") return undefined;
  const current = registry.currentApiVersion?.(apiVersion, kind);
  if (current !== undefined) {
    out.push(diag(ConfigCode.DEPRECATED_API_VERSION, file, at("/apiVersion"), `${kind}: \`${apiVersion}\` is a deprecated apiVersion of this kind and is read as \`${current}\`; update the apiVersion`, "/apiVersion"));
    return documentToObject(file, { ...doc, value: { ...value, apiVersion: current } }, registry, out);
  }
  const rawMeta = value.metadata;
  const metaRecord = isRecord(rawMeta) ? rawMeta : {};
  const name = typeof metaRecord.name === "string" ? metaRecord.name : undefined;
  const namespace = typeof metaRecord.namespace === "string" ? metaRecord.namespace : undefined;

  const info = registry.kindInfo(apiVersion, kind);
  if (!info) {
    // Its diagnostic depends on gitmesh.yaml (ignoreKinds), so it is made with the state (unsupported.ts);
    // the model's best hint (a wrong apiVersion for a known kind, a near-miss kind name) is kept here.
    const issue = registry.validate(value).find((i) => i.path === "/apiVersion" || i.path === "/kind");
    const position = issue ? at(issue.path) : undefined;
    checkSpecFields(registry.untranslatedSpecFields?.(apiVersion, kind), value.spec, kind, file, at, out);
    return {
      unsupported: {
        apiVersion,
        kind,
        ...(name !== undefined ? { name } : {}),
        ...(namespace !== undefined ? { namespace } : {}),
        source,
        ...(issue ? { hint: { pointer: issue.path, message: issue.message, ...(position ? { position } : {}) } } : {}),
      },
    };
  }

  if (rawMeta !== undefined && !isRecord(rawMeta)) {
    out.push(diag(ConfigCode.INVALID_METADATA, file, at("/metadata"), "`metadata` must be a mapping with name and namespace", "/metadata"));
    return undefined;
  }
  for (const field of ["name", "namespace"] as const) {
    const v = metaRecord[field];
    if (v !== undefined && v !== null && typeof v !== "string") {
      const p = `/metadata/${field}`;
      out.push(diag(ConfigCode.INVALID_METADATA, file, at(p), typeof v === "object" ? `metadata.${field} must be a string, not a ${Array.isArray(v) ? "list" : "mapping"}` : `metadata.${field} must be a string; quote it (e.g. "${JSON.stringify(v)}")`, p));
      return undefined;
    }
  }
  if (name === undefined || name === "") {
    out.push(diag(ConfigCode.MISSING_NAME, file, at("/metadata/name"), `${kind} has no metadata.name; add a name (DNS-1123 label, e.g. \`reviews\`)`, "/metadata/name"));
    ok = false;
  }
  if (namespace === undefined || namespace === "") {
    out.push(
      diag(
        ConfigCode.MISSING_NAMESPACE,
        file,
        at("/metadata/namespace"),
        `${kind}${name ? ` ${name}` : ""} has no metadata.namespace; every object names its namespace${info.adminScoped ? " (admin kinds live in the admin namespace, default `gloo-mesh`)" : ""}`,
        "/metadata/namespace",
      ),
    );
    ok = false;
  }
  const labels = stringMap(metaRecord.labels, "/metadata/labels", file, at, out);
  const annotations = stringMap(metaRecord.annotations, "/metadata/annotations", file, at, out);
  if (!ok || name === undefined || namespace === undefined || labels === undefined || annotations === undefined) return undefined;

  const creationTimestamp = metaRecord.creationTimestamp;
  const metadata: ObjectMetadata = {
    name,
    namespace,
    labels,
    annotations,
    ...(typeof creationTimestamp === "string" ? { creationTimestamp } : {}),
  };
  const clusterAnnotation = annotations[CLUSTER_ANNOTATION];
  const cluster = clusterAnnotation !== undefined && clusterAnnotation !== "" ? clusterAnnotation : undefined;
  const dropped: string[] = [];
  const meta = isRecord(rawMeta) ? dropNulls(rawMeta, "/metadata", dropped) : rawMeta;
  // No spec (or `spec:` with nothing under it) is an empty spec, as for any CRD: the schema then
  // judges the fields the kind needs, and translation reports what an empty object cannot render.
  const spec = value.spec === undefined || value.spec === null ? {} : dropNulls(value.spec, "/spec", dropped);
  for (const pointer of dropped) {
    out.push(diag(ConfigCode.NULL_FIELD_DROPPED, file, at(pointer), `${kind} ${namespace}/${name}: ${pointer} is null and is dropped (as Kubernetes does); remove the empty key or give it a value`, pointer));
  }
  // Validated as written: an object without spec is judged by its kind's schema (Gloo's CRDs do not
  // require spec), while translation sees `{}`.
  const { spec: _given, ...withoutSpec } = value;
  const raw = value.spec === undefined || value.spec === null ? { ...withoutSpec, metadata: meta } : spec === value.spec && meta === rawMeta ? value : { ...value, metadata: meta, spec };
  const object: LoadedObject = {
    key: objectKey(kind, cluster, namespace, name),
    apiVersion,
    kind,
    metadata,
    spec,
    ...(cluster !== undefined ? { cluster } : {}),
    source,
    digest: sha256(stableJson({ apiVersion, kind, metadata, spec })),
    positions: doc.positions,
  };
  return { object, raw };
}

/**
 * `value` without the map entries whose value is `null`, at any depth (list items are kept: a null
 * item is an error the schema reports). Kubernetes does the same for CRD fields that are not
 * nullable ("null values for fields that either don't specify the nullable flag, or give it a false
 * value, will be pruned before defaulting happens" — Kubernetes docs, CustomResourceDefinition
 * defaulting and nullable), so `labels:` with nothing after it means the field is not set.
 * Returns `value` itself when it has no null entry (no copy).
 */
function dropNulls(value: unknown, pointer: string, dropped: string[]): unknown {
  // Plain loops, no entries arrays or closures: this runs over every spec, and most have no null.
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (item === null || typeof item !== "object") continue;
      const v = dropNulls(item, `${pointer}/${i}`, dropped);
      if (v !== item) (out ??= [...(value as unknown[])])[i] = v;
    }
    return out ?? value;
  }
  if (!isRecord(value)) return value;
  const keys = Object.keys(value);
  // Copy only from the first changed entry on: most documents have no null and allocate nothing.
  let out: Record<string, unknown> | undefined;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const item = value[k];
    if (item === null) dropped.push(escapedChild(pointer, k));
    const v = item === null || typeof item !== "object" ? item : dropNulls(item, escapedChild(pointer, k), dropped);
    if (out === undefined && (item === null || v !== item)) out = Object.fromEntries(keys.slice(0, i).map((key) => [key, value[key]]));
    if (out !== undefined && item !== null) out[k] = v;
  }
  return out ?? value;
}

function escapedChild(pointer: string, key: string): string {
  return `${pointer}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
}

function stringMap(
  value: unknown,
  pointer: string,
  file: string,
  at: (p: string) => Position | undefined,
  out: Diagnostic[],
): Record<string, string> | undefined {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) {
    out.push(diag(ConfigCode.INVALID_METADATA, file, at(pointer), `${pointer.slice(10)} must be a map of strings`, pointer));
    return undefined;
  }
  const result: Record<string, string> = {};
  let ok = true;
  for (const [k, v] of Object.entries(value)) {
    if (typeof v === "string") result[k] = v;
    else {
      const p = `${pointer}/${k.replace(/~/g, "~0").replace(/\//g, "~1")}`;
      out.push(diag(ConfigCode.INVALID_METADATA, file, at(p), typeof v === "object" && v !== null ? `value of ${k} must be a string, not a ${Array.isArray(v) ? "list" : "mapping"}` : `value of ${k} must be a string; quote it (e.g. "${JSON.stringify(v)}")`, p));
      ok = false;
    }
  }
  return ok ? result : undefined;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (Array.isArray(v)) return "list";
  return typeof v;
}

/**
 * The top-level spec fields of a Gloo kind gitmesh does not translate, checked against the kind's
 * (`fields`, from its proto): an unknown one is a SCHEMA_VIOLATION with "did you mean", as for a
 * translated kind. Nested fields are left to Gloo.
 */
function checkSpecFields(fields: readonly string[] | undefined, spec: unknown, kind: string, file: string, at: (pointer: string) => Position | undefined, out: Diagnostic[]): void {
  if (fields === undefined || spec === undefined || spec === null) return;
  if (!isRecord(spec)) {
    out.push(diag(ConfigCode.SCHEMA_VIOLATION, file, at("/spec"), `${kind}: spec must be a mapping`, "/spec"));
    return;
  }
  for (const key of Object.keys(spec)) {
    if (fields.includes(key)) continue;
    const guess = closest(key, fields);
    const hint = guess !== undefined ? `did you mean \`${guess}\`?` : `allowed fields: ${fields.map((f) => `\`${f}\``).join(", ")}`;
    out.push(diag(ConfigCode.SCHEMA_VIOLATION, file, at(`/spec/${key}`), `${kind}: unknown field \`${key}\`; ${hint}`, `/spec/${key}`));
  }
}
