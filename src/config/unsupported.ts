/**
 * Diagnostics for documents gitmesh does not translate. They depend on the repository's settings
 * (gitmesh.yaml `ignoreKinds`), so they are made from the state, not kept per file:
 *
 * - a kind listed in `ignoreKinds`: IGNORED_KIND (info) — another tool applies it;
 * - a Gloo kind that needs Gloo's own data plane: NEEDS_GLOO_DATA_PLANE (error); its spec's top-level
 *   fields are checked against the kind's (SCHEMA_VIOLATION, parse-file.ts);
 * - a real Gloo kind gitmesh does not translate: UNTRANSLATED_GLOO_KIND (error) — its policy would not
 *   be enforced, so the commit is rejected;
 * - any other apiVersion/kind of Gloo's API groups: UNKNOWN_GLOO_KIND (error), with "did you mean";
 * - anything else (ConfigMap, Istio objects…): UNSUPPORTED_KIND (warning) — not applied anywhere.
 */
import type { Diagnostic } from "../core/index.js";
import { editDistance, isGlooApiVersion, SUPPORTED_KINDS, UNTRANSLATED_GLOO_KINDS, untranslatedGlooKind } from "../model/index.js";
import { ConfigCode } from "./codes.js";
import { diag } from "./parse-file.js";
import type { RepoSettings, UnsupportedObject } from "./types.js";

interface KnownKind {
  readonly apiVersion: string;
  readonly kind: string;
}
const KNOWN: readonly KnownKind[] = [...SUPPORTED_KINDS, ...UNTRANSLATED_GLOO_KINDS];

/** Whether gitmesh.yaml's `ignoreKinds` names this kind (`Kind` or `apiVersion/Kind`). */
export function isIgnoredKind(settings: RepoSettings, apiVersion: string, kind: string): boolean {
  return settings.ignoreKinds.some((k) => k === kind || k === `${apiVersion}/${kind}`);
}

export function unsupportedDiagnostic(u: UnsupportedObject, settings: RepoSettings): Diagnostic {
  const who = u.name !== undefined ? ` ${u.namespace !== undefined ? `${u.namespace}/` : ""}${u.name}` : "";
  const object = u.name !== undefined ? { object: { apiVersion: u.apiVersion, kind: u.kind, name: u.name, ...(u.namespace !== undefined ? { namespace: u.namespace } : {}) } } : {};
  const kindAt = u.hint?.pointer === "/kind" ? u.hint.position : undefined;
  const versionAt = u.hint?.pointer === "/apiVersion" ? u.hint.position : undefined;
  const at = (pointer: string) => (pointer === "/apiVersion" ? versionAt : kindAt) ?? u.hint?.position ?? ([u.source.line, u.source.column] as const);
  const make = (code: ConfigCode, pointer: string, message: string): Diagnostic => ({ ...diag(code, u.source.file, at(pointer), message, pointer), ...object });

  if (isIgnoredKind(settings, u.apiVersion, u.kind)) {
    return make(ConfigCode.IGNORED_KIND, "/kind", `${u.kind}${who} (${u.apiVersion}): ignored by configuration (gitmesh.yaml ignoreKinds); gitmesh does not translate it, another tool must apply it`);
  }
  if (isGlooApiVersion(u.apiVersion)) {
    const entry = untranslatedGlooKind(u.apiVersion, u.kind);
    if (entry?.reason === "gloo-data-plane") {
      return make(
        ConfigCode.NEEDS_GLOO_DATA_PLANE,
        "/kind",
        `${u.kind}${who} (${u.apiVersion}) needs Gloo's own data plane (Solo's Envoy build or its add-on services), which upstream Istio does not have: its policy would not be in force, so the commit is rejected. ` +
          `Remove it, or add \`${u.kind}\` to ignoreKinds in gitmesh.yaml if Gloo's data plane applies it`,
      );
    }
    if (entry) {
      const why = entry.reason === "lifecycle" ? " (it installs ambient waypoints, which gitmesh does not render)" : " yet";
      return make(
        ConfigCode.UNTRANSLATED_GLOO_KIND,
        "/kind",
        `${u.kind}${who} (${u.apiVersion}) is a Gloo kind gitmesh does not translate${why}: its policy would not be in force, so the commit is rejected. ` +
          `Remove it, or add \`${u.kind}\` to ignoreKinds in gitmesh.yaml if another tool applies it`,
      );
    }
    const sameKind = KNOWN.find((k) => k.kind === u.kind);
    if (sameKind) {
      return make(
        ConfigCode.UNKNOWN_GLOO_KIND,
        "/apiVersion",
        `${u.kind}${who}: \`${u.apiVersion}\` has no ${u.kind}; did you mean apiVersion \`${sameKind.apiVersion}\`? The commit is rejected so that this policy is not silently dropped`,
      );
    }
    const near = nearestKinds(u.kind);
    const suggestion = near.length > 0 ? `did you mean ${near.map((k) => `\`${k.kind}\` (${k.apiVersion})`).join(" or ")}? ` : "";
    return make(
      ConfigCode.UNKNOWN_GLOO_KIND,
      "/kind",
      `${u.kind}${who}: \`${u.kind}\` is not a Gloo kind of ${u.apiVersion}; ${suggestion}The commit is rejected so that this policy is not silently dropped (\`gitmesh validate --help\` lists the kinds gitmesh translates)`,
    );
  }
  const near = nearestKinds(u.kind).filter((k) => SUPPORTED_KINDS.some((s) => s.kind === k.kind));
  const suggestion = near.length > 0 ? ` (did you mean ${near.map((k) => `\`${k.kind}\` (${k.apiVersion})`).join(" or ")}?)` : "";
  return make(ConfigCode.UNSUPPORTED_KIND, "/kind", `${u.kind}${who} (${u.apiVersion}) is not Gloo Mesh configuration; gitmesh does not apply it anywhere${suggestion}`);
}

/** Up to two known kinds whose names are close to `kind` (case-insensitive edit distance ≤ a third of its length). */
function nearestKinds(kind: string): KnownKind[] {
  const limit = Math.max(1, Math.floor(kind.length / 3));
  const scored = KNOWN.map((k) => ({ k, d: editDistance(kind.toLowerCase(), k.kind.toLowerCase()) }))
    .filter((s) => s.d <= limit)
    .sort((a, b) => a.d - b.d || a.k.kind.localeCompare(b.k.kind));
  const seen = new Set<string>();
  const out: KnownKind[] = [];
  for (const { k } of scored) {
    if (seen.has(k.kind)) continue;
    seen.add(k.kind);
    out.push(k);
    if (out.length === 2) break;
  }
  return out;
}
