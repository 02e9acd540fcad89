/**
 * Byte-stable serialisation of Kubernetes-style objects: `apiVersion`, `kind`, `metadata` first,
 * every other key sorted, at every depth. Used for rendered output, the audit branch and hashes,
 * so that the same input always gives the same bytes.
 */
import { stringify } from "yaml";

const FIRST_KEYS = ["apiVersion", "kind", "metadata"];

/** Deep copy with keys in canonical order; `undefined` members dropped. */
export function canonicalize<T>(value: T): T {
  return sortValue(value, 0) as T;
}

function sortValue(value: unknown, depth: number): unknown {
  if (Array.isArray(value)) return value.map((v) => sortValue(v, depth + 1));
  if (value === null || typeof value !== "object") return value;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).filter((k) => obj[k] !== undefined);
  keys.sort((a, b) => {
    const ia = depth === 0 ? FIRST_KEYS.indexOf(a) : -1;
    const ib = depth === 0 ? FIRST_KEYS.indexOf(b) : -1;
    if (ia !== -1 || ib !== -1) return (ia === -1 ? 99 : ia) - (ib === -1 ? 99 : ib);
    return a < b ? -1 : a > b ? 1 : 0;
  });
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = sortValue(obj[k], depth + 1);
  return out;
}

/** Canonical JSON (no whitespace). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(canonicalize(value));
}

/** Canonical YAML document, as written to the audit branch and printed by `render`. */
export function canonicalYaml(value: unknown): string {
  return stringify(canonicalize(value), { lineWidth: 0, aliasDuplicateObjects: false });
}
