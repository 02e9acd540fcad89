/**
 * Whether a live object still holds what the agent applied: used by drift repair (drift.ts) and by
 * the applier to skip unchanged objects (applier.ts).
 */
import type { KubeObject } from "./kube.js";

/** true when every field of `want` is present in `have` with the same value (lists compared whole). */
export function containsFields(have: unknown, want: unknown): boolean {
  if (want === null || typeof want !== "object") return have === want;
  if (Array.isArray(want)) {
    return Array.isArray(have) && have.length === want.length && want.every((w, i) => containsFields(have[i], w));
  }
  if (have === null || typeof have !== "object" || Array.isArray(have)) return false;
  const h = have as Record<string, unknown>;
  return Object.entries(want as Record<string, unknown>).every(([k, v]) => v === undefined || containsFields(h[k], v));
}

/** Whether `live` still holds what the agent applied (`want`): labels, annotations, and every top-level field but metadata/status. */
export function inSync(live: KubeObject, want: KubeObject): boolean {
  if (!containsFields(live.metadata.labels ?? {}, want.metadata.labels ?? {})) return false;
  if (!containsFields(live.metadata.annotations ?? {}, want.metadata.annotations ?? {})) return false;
  for (const [k, v] of Object.entries(want)) {
    if (k === "metadata" || k === "status" || k === "apiVersion" || k === "kind") continue;
    if (!containsFields(live[k], v)) return false;
  }
  return true;
}
