/**
 * JSON merge patch (RFC 7386) and JSON patch (RFC 6902) on plain JSON values. Strategic merge patch
 * is served as a merge patch (lists are replaced, never merged by key; `$patch` directives are not
 * understood) — see README.
 */
import { badRequest, KubeApiError, StatusReason } from "./status.js";

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Removes a key chosen at run time (JSON documents are dictionaries). */
export function dropKey(obj: JsonObject, key: string): void {
  Reflect.deleteProperty(obj, key);
}

export function clone<T>(v: T): T {
  return structuredClone(v);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

/** RFC 7386: objects merge recursively, `null` deletes, everything else replaces. */
export function mergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  const out: JsonObject = isObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) dropKey(out, k);
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

type Op = { op: string; path: string; value?: Json; from?: string };

function pointer(path: string): string[] {
  if (path === "") return [];
  if (!path.startsWith("/")) throw badRequest(`json patch: invalid path "${path}"`);
  return path
    .slice(1)
    .split("/")
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function unprocessable(message: string): KubeApiError {
  return new KubeApiError(422, StatusReason.Invalid, message);
}

function parentOf(doc: Json, parts: readonly string[], path: string): { parent: JsonObject | Json[]; key: string } {
  let cur: Json = doc;
  for (const p of parts.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(p)] ?? null;
    else if (isObject(cur)) cur = cur[p] ?? null;
    else cur = null;
    if (cur === null || typeof cur !== "object") throw unprocessable(`json patch: path "${path}" does not exist`);
  }
  if (cur === null || typeof cur !== "object") throw unprocessable(`json patch: path "${path}" does not exist`);
  return { parent: cur, key: parts[parts.length - 1]! };
}

function getAt(doc: Json, path: string): Json {
  let cur: Json | undefined = doc;
  for (const p of pointer(path)) {
    if (Array.isArray(cur)) cur = cur[Number(p)];
    else if (isObject(cur)) cur = Object.hasOwn(cur, p) ? cur[p] : undefined;
    else cur = undefined;
    if (cur === undefined) throw unprocessable(`json patch: path "${path}" does not exist`);
  }
  return cur;
}

function arrayIndex(arr: Json[], key: string, path: string, forAdd: boolean): number {
  if (forAdd && key === "-") return arr.length;
  if (!/^(0|[1-9][0-9]*)$/.test(key)) throw unprocessable(`json patch: bad array index in "${path}"`);
  const i = Number(key);
  if (i > arr.length || (!forAdd && i === arr.length)) throw unprocessable(`json patch: index out of range in "${path}"`);
  return i;
}

function remove(doc: Json, path: string): Json {
  const { parent, key } = parentOf(doc, pointer(path), path);
  if (Array.isArray(parent)) {
    const i = arrayIndex(parent, key, path, false);
    return parent.splice(i, 1)[0]!;
  }
  if (!Object.hasOwn(parent, key)) throw unprocessable(`json patch: path "${path}" does not exist`);
  const old = parent[key]!;
  dropKey(parent, key);
  return old;
}

function add(doc: Json, path: string, value: Json): Json {
  const parts = pointer(path);
  if (parts.length === 0) return clone(value);
  const { parent, key } = parentOf(doc, parts, path);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, path, true), 0, clone(value));
  else parent[key] = clone(value);
  return doc;
}

/** RFC 6902, all six operations. Throws 422 when a path is missing or a `test` fails. */
export function jsonPatch(target: Json, ops: unknown): Json {
  if (!Array.isArray(ops)) throw badRequest("json patch: body must be a JSON array of operations");
  let doc = clone(target);
  for (const raw of ops) {
    if (!isObject(raw) || typeof raw.op !== "string" || typeof raw.path !== "string") {
      throw badRequest("json patch: each operation needs string `op` and `path`");
    }
    const op = raw as unknown as Op;
    switch (op.op) {
      case "add":
        if (op.value === undefined) throw badRequest(`json patch: add at "${op.path}" needs a value`);
        doc = add(doc, op.path, op.value);
        break;
      case "remove":
        remove(doc, op.path);
        break;
      case "replace":
        if (op.value === undefined) throw badRequest(`json patch: replace at "${op.path}" needs a value`);
        if (pointer(op.path).length === 0) doc = clone(op.value);
        else {
          remove(doc, op.path);
          doc = add(doc, op.path, op.value);
        }
        break;
      case "move": {
        if (op.from === undefined) throw badRequest("json patch: move needs `from`");
        const v = remove(doc, op.from);
        doc = add(doc, op.path, v);
        break;
      }
      case "copy":
        if (op.from === undefined) throw badRequest("json patch: copy needs `from`");
        doc = add(doc, op.path, getAt(doc, op.from));
        break;
      case "test":
        if (!deepEqual(getAt(doc, op.path), op.value)) throw unprocessable(`json patch: test failed at "${op.path}"`);
        break;
      default:
        throw badRequest(`json patch: unknown op "${op.op}"`);
    }
  }
  return doc;
}
