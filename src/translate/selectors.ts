/** Matching of Gloo selectors (ObjectSelector, WorkspaceSelector, label maps, globs). Pure helpers. */
import { matchesLabels, type Labels } from "../core/index.js";

export type { Labels };

/** Glob with `*` wildcards (Gloo's cluster / namespace / workspace name globs). Empty or missing = match all. */
export function globMatch(pattern: string | undefined, value: string): boolean {
  if (pattern === undefined || pattern === "" || pattern === "*") return true;
  if (!pattern.includes("*")) return pattern === value;
  let re = globs.get(pattern);
  if (re === undefined) {
    if (globs.size >= MAX_GLOBS) globs.clear();
    re = new RegExp("^" + pattern.split("*").map(escapeRegExp).join(".*") + "$");
    globs.set(pattern, re);
  }
  return re.test(value);
}

// Compiled globs by pattern: the same few patterns (workspace namespace and cluster globs) are matched
// against every namespace and Service of a fleet, and compiling one was most of a match (#20). A memo
// of the configuration's patterns; cleared if a run ever brings more than MAX_GLOBS of them.
const MAX_GLOBS = 1000;
const globs = new Map<string, RegExp>();

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Every selector label is present with the same value (empty selector matches everything). */
export function labelsMatch(selector: Labels | undefined, labels: Labels | undefined): boolean {
  return selector === undefined || matchesLabels(selector, labels ?? {});
}

/** Anything an ObjectSelector can be evaluated against. */
export interface Selectable {
  readonly kind: string;
  readonly name: string;
  readonly namespace: string;
  /** '' when not bound to a cluster. */
  readonly cluster: string;
  readonly labels: Labels;
  readonly workspace: string;
}

/** `common.gloo.solo.io.ObjectSelector`. */
export interface ObjectSelectorSpec {
  readonly labels?: Labels | undefined;
  readonly name?: string | undefined;
  readonly namespace?: string | undefined;
  readonly cluster?: string | undefined;
  readonly workspace?: string | undefined;
}

/** An ObjectSelector matches when every set field matches; `cluster` matches objects not bound to a cluster too. */
export function objectSelectorMatches(sel: ObjectSelectorSpec, obj: Selectable): boolean {
  return (
    globMatch(sel.name, obj.name) &&
    globMatch(sel.namespace, obj.namespace) &&
    (sel.cluster === undefined || sel.cluster === "" || obj.cluster === "" || globMatch(sel.cluster, obj.cluster)) &&
    globMatch(sel.workspace, obj.workspace) &&
    labelsMatch(sel.labels, obj.labels)
  );
}

/** `common.gloo.solo.io.ObjectReference`: missing namespace / cluster default to the parent's. */
export interface ObjectReferenceSpec {
  readonly name?: string;
  readonly namespace?: string;
  readonly cluster?: string;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function asArray(v: unknown): readonly unknown[] {
  return Array.isArray(v) ? v : [];
}

export function asRecord(v: unknown): Record<string, unknown> {
  return isRecord(v) ? v : {};
}

export function asString(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

export function asNumber(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

export function asLabels(v: unknown): Labels | undefined {
  if (!isRecord(v)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v)) out[k] = typeof val === "string" ? val : JSON.stringify(val);
  return out;
}
