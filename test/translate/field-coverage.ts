/**
 * Every field of every supported Gloo kind, from the generated schemas (schemas/*.schema.json), and
 * where the golden cases use it or report it (issue #36 item 3: "no silent difference, as a rule").
 *
 * Field paths: `<Kind>.spec.<a>.<b>`, `[]` after an array, `.*` for the values of a map whose values
 * are objects (`JWTPolicy.spec.config.providers.*.issuer`). A leaf is a field with no sub-fields (a
 * string, number, boolean, string map, or an object the schema leaves open).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SUPPORTED_KINDS } from "../../src/model/index.js";

const SCHEMAS = join(import.meta.dirname, "../../schemas");

type Schema = Record<string, unknown>;

const files = new Map<string, Schema>();
function schemaFile(name: string): Schema {
  let s = files.get(name);
  if (s === undefined) {
    s = JSON.parse(readFileSync(join(SCHEMAS, name), "utf8")) as Schema;
    files.set(name, s);
  }
  return s;
}

/** `route-table.schema.json` for `RouteTable`. */
export function schemaFileOf(kind: string): string {
  return `${kind.replace(/([a-z0-9])([A-Z])/g, "$1-$2").replace(/([A-Z])([A-Z][a-z])/g, "$1-$2").toLowerCase()}.schema.json`;
}

interface Node {
  readonly schema: Schema;
  readonly file: string;
}

function isSchema(v: unknown): v is Schema {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Follows `$ref`s (local `#/$defs/X` or `common.schema.json#/$defs/X`). */
function deref(n: Node): Node {
  let cur = n;
  for (let i = 0; i < 20 && typeof cur.schema.$ref === "string"; i++) {
    const ref = cur.schema.$ref;
    const [f, pointer] = ref.split("#");
    const file = f === undefined || f === "" ? cur.file : f;
    let s: unknown = schemaFile(file);
    for (const part of (pointer ?? "").split("/").filter((p) => p !== "")) s = isSchema(s) ? s[part] : undefined;
    if (!isSchema(s)) throw new Error(`unresolvable $ref ${ref} in ${cur.file}`);
    cur = { schema: s, file };
  }
  return cur;
}

/** The named sub-fields of an object schema (its `properties`, and those of its oneOf/anyOf/allOf branches). */
function properties(n: Node): Map<string, Node> {
  const out = new Map<string, Node>();
  const visit = (x: Node) => {
    const d = deref(x);
    if (isSchema(d.schema.properties)) for (const [k, v] of Object.entries(d.schema.properties)) if (isSchema(v) && !out.has(k)) out.set(k, { schema: v, file: d.file });
    for (const key of ["oneOf", "anyOf", "allOf"]) {
      const list = d.schema[key];
      if (Array.isArray(list)) for (const b of list) if (isSchema(b)) visit({ schema: b, file: d.file });
    }
  };
  visit(n);
  return out;
}

/** The element schema of an array, or the value schema of an object-valued map; undefined otherwise. */
function child(n: Node): { node: Node; segment: "[]" | ".*" } | undefined {
  const d = deref(n);
  if (isSchema(d.schema.items)) return { node: { schema: d.schema.items, file: d.file }, segment: "[]" };
  const ap = d.schema.additionalProperties;
  if (isSchema(ap) && (properties({ schema: ap, file: d.file }).size > 0 || child({ schema: ap, file: d.file }) !== undefined)) return { node: { schema: ap, file: d.file }, segment: ".*" };
  return undefined;
}

/** Every leaf field path of a kind's spec. Recursive types stop where they repeat (the repeat is a leaf). */
export function leafFields(kind: string): string[] {
  const file = schemaFileOf(kind);
  const top = properties({ schema: schemaFile(file), file }).get("spec");
  if (top === undefined) return [];
  const out: string[] = [];
  const walk = (n: Node, path: string, seen: ReadonlySet<unknown>) => {
    const d = deref(n);
    if (seen.has(d.schema)) {
      out.push(path);
      return;
    }
    const next = new Set(seen).add(d.schema);
    const c = child(d);
    if (c !== undefined) return walk(c.node, path + c.segment, next);
    const props = properties(d);
    if (props.size === 0) {
      out.push(path);
      return;
    }
    for (const [k, v] of [...props].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) walk(v, `${path}.${k}`, next);
  };
  walk(top, `${kind}.spec`, new Set());
  return out;
}

export function supportedKinds(): string[] {
  return SUPPORTED_KINDS.map((k) => k.kind).sort();
}

/**
 * The field path of a JSON pointer into an object of `kind` (`/spec/http/0/forwardTo` →
 * `RouteTable.spec.http[].forwardTo`); undefined when the pointer leaves the schema.
 */
export function fieldOfPointer(kind: string, pointer: string): string | undefined {
  const file = schemaFileOf(kind);
  let n: Node = { schema: schemaFile(file), file };
  let path = kind;
  const parts = pointer.split("/").slice(1).map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  for (const part of parts) {
    const props = properties(n);
    const named = props.get(part);
    if (named !== undefined) {
      n = named;
      path += `.${part}`;
      continue;
    }
    const c = child(n);
    if (c === undefined) return path; // inside a leaf (a string map's key, an open object)
    n = c.node;
    path += c.segment;
  }
  return path;
}

/** Every field path (leaf or not) an object's spec sets, e.g. `RouteTable.spec.http[].name`. */
export function fieldsUsed(kind: string, spec: unknown): Set<string> {
  const out = new Set<string>();
  const visit = (v: unknown, pointer: string) => {
    const f = fieldOfPointer(kind, pointer);
    if (f === undefined) return;
    out.add(f);
    if (Array.isArray(v)) v.forEach((x, i) => visit(x, `${pointer}/${String(i)}`));
    else if (isSchema(v)) for (const [k, x] of Object.entries(v)) visit(x, `${pointer}/${k.replace(/~/g, "~0").replace(/\//g, "~1")}`);
  };
  visit(spec, "/spec");
  return out;
}

/** Whether `field` is `ancestor` or lies under it. */
export function under(field: string, ancestor: string): boolean {
  return field === ancestor || field.startsWith(`${ancestor}.`) || field.startsWith(`${ancestor}[]`);
}

/** `spec` without the field (every occurrence: through arrays and map values); a trailing `[]` removes the list. */
export function withoutField(spec: unknown, field: string): unknown {
  const segs = field.replace(/\[\]/g, ".[]").split(".").slice(2).filter((x) => x !== "");
  while (segs[segs.length - 1] === "[]") segs.pop();
  const drop = (v: unknown, rest: readonly string[]): unknown => {
    const [head, ...tail] = rest;
    if (head === undefined) return v;
    if (head === "[]") return Array.isArray(v) ? v.map((x) => drop(x, tail)) : v;
    if (!isSchema(v)) return v;
    if (head === "*") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, drop(x, tail)]));
    if (!(head in v)) return v;
    if (tail.length === 0) return Object.fromEntries(Object.entries(v).filter(([k]) => k !== head));
    return { ...v, [head]: drop(v[head], tail) };
  };
  return drop(spec, segs);
}
