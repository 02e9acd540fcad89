/**
 * Canonical form of rendered objects, computed once per object at the end of the workspace stage.
 *
 * Same order as src/core `canonicalize` (`apiVersion`, `kind`, `metadata` first at the top level,
 * every other key sorted, `undefined` members dropped), so `JSON.stringify` of the result equals
 * `canonicalJson` of the input. Unlike the core function it does not deep-copy: a subtree that is
 * already canonical is returned as is (the same reference), and only objects whose keys are out
 * of order get a sorted copy. Rendered output is immutable data, so sharing subtrees (between
 * clusters, or with the frozen input objects a translator copied a value from) is safe, and it
 * removes most of the allocation that dominated large translations (GC pressure).
 *
 * `contentHash` is the digest of an object's canonical JSON, computed at most once per object
 * (cached by identity): the cluster stage and `retranslate` compare fragments by hash instead of
 * serialising them again.
 */
import { createHash } from "node:crypto";

const FIRST_KEYS: Readonly<Record<string, number>> = { apiVersion: 0, kind: 1, metadata: 2 };

function topOrder(a: string, b: string): number {
  const ia = FIRST_KEYS[a] ?? 99;
  const ib = FIRST_KEYS[b] ?? 99;
  if (ia !== ib) return ia - ib;
  return a < b ? -1 : a > b ? 1 : 0;
}

function canon(value: unknown, top: boolean): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      const c = canon(v, false);
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
    const c = canon(v, false);
    if (c !== v) (replaced ??= new Map()).set(k, c);
  }
  if (sorted && !dropped && replaced === undefined) return value;
  let keys = Object.keys(obj);
  if (dropped) keys = keys.filter((k) => obj[k] !== undefined);
  if (!sorted) keys.sort(top ? topOrder : undefined);
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = replaced?.has(k) === true ? replaced.get(k) : obj[k];
  return out;
}

/** Canonical form of a rendered object (see the module comment); the input itself when it already is. */
export function canonicalObject<T>(value: T): T {
  return canon(value, true) as T;
}

const hashes = new WeakMap<object, string>();

/** sha256 (base64url) of the canonical JSON of an object in canonical form; computed once per object. */
export function contentHash(value: object): string {
  let h = hashes.get(value);
  if (h === undefined) {
    h = createHash("sha256").update(JSON.stringify(value)).digest("base64url");
    hashes.set(value, h);
  }
  return h;
}
