/**
 * Stable output names. The pattern is `<prefix>-<name>-<namespace>-<cluster>-<workspace>`, made
 * DNS-1123 safe with the rules of Solo's `SanitizeNameV2`: `* / . : _` and space become `-`,
 * `[ ] " '` and newlines are removed, everything is lower-cased; a name over 63 characters becomes
 * its first 31 characters + `-` + the md5 hex of the whole sanitised name, cut to 63.
 */
import { createHash } from "node:crypto";

export const MAX_NAME_LENGTH = 63;

/** Names that sanitising leaves as they are (most of them: lower-case DNS labels joined by `-`). */
const ALREADY_SANITISED = /^[a-z0-9-]{0,63}$/;

export function sanitizeName(raw: string): string {
  if (ALREADY_SANITISED.test(raw)) return raw;
  const s = raw
    .replace(/[*/.:_ ]/g, "-")
    .replace(/[[\]"'\n]/g, "")
    .toLowerCase();
  if (s.length <= MAX_NAME_LENGTH) return s;
  const hash = createHash("md5").update(s).digest("hex");
  return `${s.slice(0, 31)}-${hash}`.slice(0, MAX_NAME_LENGTH);
}

/** `<prefix>-<name>-<namespace>-<cluster>-<workspace>` sanitised. Empty parts are skipped. */
export function stableName(prefix: string, ...parts: readonly string[]): string {
  return sanitizeName([prefix, ...parts].filter((p) => p !== "").join("-"));
}

/** A label value (≤63 chars, alphanumeric at both ends) derived from any string. */
const VALID_LABEL_VALUE = /^(?:[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$/;

export function labelValue(raw: string): string {
  // Fast path: most values (names of clusters, workspaces, objects) are valid label values already.
  if (VALID_LABEL_VALUE.test(raw)) return raw;
  let s = raw.replace(/[^A-Za-z0-9._-]/g, "-");
  if (s.length > MAX_NAME_LENGTH) {
    const hash = createHash("md5").update(raw).digest("hex");
    s = `${s.slice(0, 30)}-${hash}`.slice(0, MAX_NAME_LENGTH);
  }
  return s.replace(/^[^A-Za-z0-9]+/, "").replace(/[^A-Za-z0-9]+$/, "");
}

/** Fully qualified in-mesh host of a Kubernetes Service. */
export function serviceHost(name: string, namespace: string, clusterDomain = "cluster.local"): string {
  return `${name}.${namespace}.svc.${clusterDomain}`;
}

/** DestinationRule subset name for a label map: `<key>-<value>` per label, sorted, joined by `-`. */
export function subsetName(labels: Readonly<Record<string, string>>): string {
  return sanitizeName(
    Object.keys(labels)
      .sort()
      .map((k) => `${k}-${labels[k] ?? ""}`)
      .join("-"),
  );
}
