/**
 * Byte-stable serialisation of Kubernetes-style objects: `apiVersion`, `kind`, `metadata` first at the
 * top level, every other key sorted in code-unit order (locale independent, like Go's), at every depth,
 * `undefined` members dropped. Used for rendered output, the audit branch, discovery snapshots and
 * content hashes, so that the same input always gives the same bytes. The one key order of the project.
 *
 * Two ways to get there:
 * - `canonicalize` / `sortKeysDeep`: a deep copy (the caller may mutate it);
 * - `canonicalObject`: structure-sharing — a subtree that is already canonical is returned as is (the
 *   same reference), only objects whose keys are out of order get a sorted copy. For immutable data
 *   (rendered output shared between clusters, frozen input objects) it removes most of the allocation
 *   that dominated large translations. `JSON.stringify(canonicalObject(x)) === canonicalJson(x)`.
 */
import { createHash } from "node:crypto";
import { stringify } from "yaml";
import { emitYaml } from "./yaml-emit.js";

const FIRST_KEYS: Readonly<Record<string, number>> = { apiVersion: 0, kind: 1, metadata: 2 };

/** Code-unit order of object keys (and of any strings that must sort the same on every machine). */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function topOrder(a: string, b: string): number {
  const ia = FIRST_KEYS[a] ?? 99;
  const ib = FIRST_KEYS[b] ?? 99;
  return ia !== ib ? ia - ib : compareCodeUnits(a, b);
}

function copySorted(value: unknown, top: boolean): unknown {
  if (Array.isArray(value)) return value.map((v) => copySorted(v, false));
  if (value === null || typeof value !== "object") return value;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).filter((k) => obj[k] !== undefined);
  keys.sort(top ? topOrder : compareCodeUnits);
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = copySorted(obj[k], false);
  return out;
}

/** Deep copy with keys in canonical order; `undefined` members dropped. */
export function canonicalize<T>(value: T): T {
  return copySorted(value, true) as T;
}

/** Deep copy with keys in code-unit order at every depth (no top-level `apiVersion`/`kind`/`metadata` rule). */
export function sortKeysDeep<T>(value: T): T {
  return copySorted(value, false) as T;
}

function shareSorted(value: unknown, top: boolean): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      const c = shareSorted(v, false);
      if (out === undefined && c !== v) out = value.slice(0, i) as unknown[];
      if (out !== undefined) out.push(c);
    }
    return out ?? value;
  }
  // Fast path allocates nothing: one pass checks key order, undefined members and children.
  const obj = value as Record<string, unknown>;
  let prev: string | undefined;
  let sorted = true;
  let dropped = false;
  let replaced: Map<string, unknown> | undefined;
  for (const k in obj) {
    const v = obj[k];
    if (v === undefined) {
      dropped = true;
      continue;
    }
    if (prev !== undefined && (top ? topOrder(prev, k) > 0 : prev > k)) sorted = false;
    prev = k;
    const c = shareSorted(v, false);
    if (c !== v) (replaced ??= new Map()).set(k, c);
  }
  if (sorted && !dropped && replaced === undefined) return value;
  return sortedCopy(obj, top, sorted, dropped, replaced);
}

// Apart from shareSorted on purpose: a closure over `obj` there (the filter below) made V8 allocate a
// context on every call, the fast path's too — 380 MB per translation of the large fleet (#20).
function sortedCopy(obj: Record<string, unknown>, top: boolean, sorted: boolean, dropped: boolean, replaced: Map<string, unknown> | undefined): Record<string, unknown> {
  let keys = Object.keys(obj);
  if (dropped) keys = keys.filter((k) => obj[k] !== undefined);
  if (!sorted) keys.sort(top ? topOrder : compareCodeUnits);
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = replaced?.has(k) === true ? replaced.get(k) : obj[k];
  return out;
}

/**
 * One level of canonical form: `value` itself when its own keys are in code-unit order with no
 * `undefined` member, otherwise a shallow copy that is (members shared, not visited). For objects
 * that are built field by field by several hands (an HTTP route that route policies extend), so that
 * `canonicalObject` over the whole output later finds them canonical and copies no parent.
 */
export function sortedKeys<T extends object>(value: T): T {
  const obj = value as Record<string, unknown>;
  let prev: string | undefined;
  let sorted = true;
  let dropped = false;
  for (const k in obj) {
    if (obj[k] === undefined) {
      dropped = true;
      continue;
    }
    if (prev !== undefined && prev > k) sorted = false;
    prev = k;
  }
  return sorted && !dropped ? value : (sortedCopy(obj, false, sorted, dropped, undefined) as T);
}

/** Canonical form sharing structure with the input (see above); the input itself when it already is canonical. */
export function canonicalObject<T>(value: T): T {
  return shareSorted(value, true) as T;
}

/**
 * Canonical form of a value below the top level of an object (a resource's `spec`, `metadata`): keys in
 * code-unit order at every depth, structure shared as `canonicalObject` shares it.
 */
export function canonicalMember<T>(value: T): T {
  return shareSorted(value, false) as T;
}

const hashes = new WeakMap<object, string>();

/** sha256 (base64url) of the JSON of an object already in canonical form; computed once per object (cached by identity). */
export function contentHash(value: object): string {
  let h = hashes.get(value);
  if (h === undefined) {
    h = createHash("sha256").update(JSON.stringify(value)).digest("base64url");
    hashes.set(value, h);
  }
  return h;
}

/** Canonical JSON (no whitespace). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(canonicalObject(value));
}

/**
 * Canonical YAML document, as written to the audit branch and printed by `render`: the bytes of the
 * `yaml` package's `stringify(…, { lineWidth: 0, aliasDuplicateObjects: false })`. A hand-written
 * emitter (yaml-emit.ts, byte-identical, proven by test/core/yaml-emit.test.ts) writes the documents
 * it can prove identical — the rendered fleet's, all of them — and the `yaml` package writes the rest
 * (multi-line strings, document markers, odd keys). Why and how much faster: src/core/README.md.
 */
export function canonicalYaml(value: unknown): string {
  const c = canonicalObject(value);
  return emitYaml(c) ?? yamlPackageStringify(c);
}

/** The `yaml` package's serialisation with canonicalYaml's options (the reference of yaml-emit.ts). */
export function yamlPackageStringify(value: unknown): string {
  return stringify(value, { lineWidth: 0, aliasDuplicateObjects: false });
}
