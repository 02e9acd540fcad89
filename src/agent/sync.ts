/**
 * Whether a live object still holds what the agent applied: used by drift repair (drift.ts) and by
 * the applier to skip unchanged objects (applier.ts).
 *
 * Maps may carry more keys than the agent applied (defaults, status, other managers' fields beside
 * ours); a LIST the agent applied is compared whole and exactly, element by element, so a key that
 * someone added inside a list element (an abort fault inside an owned route) is drift. Paths the
 * user left to other controllers (ignoreDifferences JSON pointers) are not compared.
 *
 * `foreignManagers` reads `metadata.managedFields` to name who else owns fields at or under the
 * agent's paths, for drift and fight reports.
 */
import type { KubeObject } from "./kube.js";

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => deepEqual(x, bb[i]));
  }
  const am = a as Record<string, unknown>;
  const bm = b as Record<string, unknown>;
  const ak = Object.keys(am).filter((k) => am[k] !== undefined);
  const bk = Object.keys(bm).filter((k) => bm[k] !== undefined);
  return ak.length === bk.length && ak.every((k) => deepEqual(am[k], bm[k]));
}

/**
 * true when every field of `want` is present in `have` with the same value (maps may hold more; lists
 * must be equal). With `defaultedLists`, a list item may hold more too: the API server defaults fields
 * inside list items of built-in kinds (a Service port's `protocol`, a container's
 * `terminationMessagePath`…), and those are not drift. Custom resources (Istio's CRDs declare no
 * defaults) keep exact lists, so a key another manager adds inside an owned list item is drift.
 */
export function containsFields(have: unknown, want: unknown, defaultedLists = false): boolean {
  if (want === null || typeof want !== "object") return have === want;
  if (Array.isArray(want)) {
    if (!defaultedLists) return deepEqual(have, want);
    return Array.isArray(have) && have.length === want.length && want.every((w, i) => containsFields(have[i], w, true));
  }
  if (have === null || typeof have !== "object" || Array.isArray(have)) return false;
  const h = have as Record<string, unknown>;
  return Object.entries(want as Record<string, unknown>).every(([k, v]) => v === undefined || containsFields(h[k], v, defaultedLists));
}

/** Kubernetes' own API groups: objects the API server defaults (unlike Istio's custom resources). */
const BUILT_IN_GROUPS: ReadonlySet<string> = new Set(["", "apps", "batch", "autoscaling", "policy", "rbac.authorization.k8s.io", "networking.k8s.io", "coordination.k8s.io"]);

export function isBuiltInKind(apiVersion: string): boolean {
  return BUILT_IN_GROUPS.has(apiVersion.includes("/") ? apiVersion.slice(0, apiVersion.lastIndexOf("/")) : "");
}

/** JSON pointer (RFC 6901) → path segments. */
export function pointerPath(pointer: string): string[] {
  if (pointer === "" || pointer === "/") return [];
  return pointer
    .replace(/^\//, "")
    .split("/")
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function getAt(o: unknown, path: readonly string[]): { found: boolean; value: unknown; throughList: boolean } {
  let cur = o;
  let throughList = false;
  for (const seg of path) {
    if (Array.isArray(cur)) {
      throughList = true;
      const i = Number(seg);
      if (!Number.isInteger(i) || i < 0 || i >= cur.length) return { found: false, value: undefined, throughList };
      cur = cur[i];
    } else if (cur !== null && typeof cur === "object" && Object.hasOwn(cur, seg)) {
      cur = (cur as Record<string, unknown>)[seg];
    } else return { found: false, value: undefined, throughList };
  }
  return { found: true, value: cur, throughList };
}

/** Removes (or, with `value`, sets) the field at `path` in place; lists keep their length. */
function putAt(o: unknown, path: readonly string[], value?: { v: unknown }): void {
  if (path.length === 0) return;
  let cur = o;
  for (const seg of path.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(seg)];
    else if (cur !== null && typeof cur === "object") cur = (cur as Record<string, unknown>)[seg];
    else return;
  }
  const last = path[path.length - 1]!;
  if (cur === null || typeof cur !== "object") return;
  if (Array.isArray(cur)) {
    const i = Number(last);
    if (!Number.isInteger(i) || i < 0 || i >= cur.length) return;
    if (value) cur[i] = value.v;
    else cur.splice(i, 1);
    return;
  }
  const m = cur as Record<string, unknown>;
  if (value) m[last] = value.v;
  else Reflect.deleteProperty(m, last);
}

/** Whether the pointer goes through a list in `o` (lists are applied whole: the field cannot just be left out). */
export function pointerThroughList(o: unknown, path: readonly string[]): boolean {
  let cur = o;
  for (const seg of path.slice(0, -1)) {
    if (Array.isArray(cur)) return true;
    if (cur === null || typeof cur !== "object") return false;
    cur = (cur as Record<string, unknown>)[seg];
  }
  return Array.isArray(cur);
}

/**
 * The manifest to apply when `ignored` paths are left to other controllers: a path inside a map is
 * left out (the agent then does not own it); a path inside a list (applied whole) takes the live
 * value, so the agent neither owns a different value nor removes it.
 */
export function withIgnoredPaths(want: KubeObject, live: KubeObject | undefined, ignored: readonly (readonly string[])[]): KubeObject {
  if (ignored.length === 0) return want;
  const out = structuredClone(want);
  for (const p of ignored) {
    if (!getAt(out, p).found) continue;
    const have = live === undefined ? undefined : getAt(live, p);
    if (pointerThroughList(out, p) && have?.found) putAt(out, p, { v: structuredClone(have.value) });
    else putAt(out, p);
  }
  return out;
}

function without(o: KubeObject, ignored: readonly (readonly string[])[]): KubeObject {
  if (ignored.length === 0) return o;
  const c = structuredClone(o);
  for (const p of ignored) putAt(c, p);
  return c;
}

/** Whether `live` still holds what the agent applied (`want`): labels, annotations, and every top-level field but metadata/status. */
export function inSync(live: KubeObject, want: KubeObject, ignored: readonly (readonly string[])[] = []): boolean {
  const l = without(live, ignored);
  const w = without(want, ignored);
  if (!containsFields(l.metadata.labels ?? {}, w.metadata.labels ?? {})) return false;
  if (!containsFields(l.metadata.annotations ?? {}, w.metadata.annotations ?? {})) return false;
  const defaulted = isBuiltInKind(want.apiVersion);
  for (const [k, v] of Object.entries(w)) {
    if (k === "metadata" || k === "status" || k === "apiVersion" || k === "kind") continue;
    if (!containsFields(l[k], v, defaulted)) return false;
  }
  return true;
}

/**
 * What a forced server-side apply of `applied` could not restore in `live`: fields (lists whole) that
 * still differ, as a JSON merge patch body (undefined: none). Server-side apply never removes a field
 * another manager owns, even with force — an element another manager added to a list the CRD merges
 * by key (ServiceEntry `ports`, `x-kubernetes-list-type: map`) stays — so such drift is removed with
 * a merge patch of these fields. Labels and annotations are left to the apply (maps: extra keys are
 * not drift).
 */
export function leftoverPatch(live: KubeObject, applied: KubeObject): Record<string, unknown> | undefined {
  const defaulted = isBuiltInKind(applied.apiVersion);
  const diff = (have: unknown, want: unknown): { v: unknown } | undefined => {
    if (containsFields(have, want, defaulted)) return undefined;
    if (want === null || typeof want !== "object" || Array.isArray(want) || have === null || typeof have !== "object" || Array.isArray(have)) return { v: want };
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(want as Record<string, unknown>)) {
      const d = diff((have as Record<string, unknown>)[k], v);
      if (d) out[k] = d.v;
    }
    return { v: out };
  };
  const patch: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(applied)) {
    if (k === "metadata" || k === "status" || k === "apiVersion" || k === "kind") continue;
    const d = diff(live[k], v);
    if (d) patch[k] = d.v;
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** Leaf paths of an applied object (lists are leaves), as fieldsV1 would name them. */
function leafPaths(o: unknown, prefix: string[] = [], out: string[][] = []): string[][] {
  if (o !== null && typeof o === "object" && !Array.isArray(o) && Object.keys(o).length > 0) {
    for (const [k, v] of Object.entries(o)) {
      if (prefix.length === 0 && (k === "apiVersion" || k === "kind" || k === "status")) continue;
      if (prefix.length === 1 && prefix[0] === "metadata" && k !== "labels" && k !== "annotations") continue;
      leafPaths(v, [...prefix, k], out);
    }
  } else if (prefix.length > 0) out.push(prefix);
  return out;
}

/** Paths of a fieldsV1 set; `k:`/`v:`/`i:` list-element segments are kept as they are. */
function fieldsV1Paths(f: unknown, prefix: string[] = [], out: string[][] = []): string[][] {
  const keys = f !== null && typeof f === "object" ? Object.keys(f) : [];
  if (keys.length === 0 || keys.includes(".")) if (prefix.length > 0) out.push(prefix);
  for (const k of keys) {
    if (k === ".") continue;
    const seg = k.startsWith("f:") ? k.slice(2) : k;
    fieldsV1Paths((f as Record<string, unknown>)[k], [...prefix, seg], out);
  }
  return out;
}

const prefixOf = (a: readonly string[], b: readonly string[]) => a.length <= b.length && a.every((s, i) => s === b[i]);

/**
 * Managers other than `fieldManager` that own a field at or under one of the agent's paths whose
 * live value differs from the agent's (a co-owner of an equal value is not a rival).
 */
export function foreignManagers(live: KubeObject, want: KubeObject, fieldManager: string, ignored: readonly (readonly string[])[] = []): string[] {
  const entries = Array.isArray(live.metadata.managedFields) ? (live.metadata.managedFields as { manager?: unknown; fieldsV1?: unknown }[]) : [];
  const w = without(want, ignored);
  const mine = leafPaths(w);
  const out = new Set<string>();
  for (const e of entries) {
    const manager = typeof e.manager === "string" ? e.manager : "";
    if (manager === fieldManager || manager === "") continue;
    for (const p of fieldsV1Paths(e.fieldsV1)) {
      const ours = mine.find((m) => prefixOf(m, p));
      if (ours === undefined) continue;
      if (ignored.some((i) => prefixOf(i, p) || prefixOf(p, i))) continue;
      if (!deepEqual(getAt(live, ours).value, getAt(w, ours).value)) out.add(manager);
    }
  }
  return [...out].sort();
}
