/**
 * The optional root `gitmesh.yaml`: repository settings, not a Kubernetes-style object.
 *
 * ```yaml
 * ignore:                 # glob patterns of paths the loader skips (see ignore.ts)
 *   - rendered/
 *   - "*.draft.yaml"
 * adminNamespace: gloo-mesh   # namespace of Workspace, KubernetesCluster, RootTrustPolicy (default gloo-mesh)
 * auditBranch: gitmesh/rendered   # branch that receives rendered Istio output (default gitmesh/rendered)
 * ignoreKinds:            # Gloo kinds another tool applies: ignored instead of rejecting the commit
 *   - ExtAuthPolicy                                   # any apiVersion
 *   - security.policy.gloo.solo.io/v2/WAFPolicy       # this apiVersion only
 * ```
 */
import type { Diagnostic } from "../core/index.js";
import { ConfigCode } from "./codes.js";
import { SETTINGS_FILE } from "./ignore.js";
import { decodeContent, diag, isRecord, positionOf } from "./parse-file.js";
import type { RepoSettings } from "./types.js";
import { parseYamlDocuments } from "./yaml-positions.js";

export const DEFAULT_ADMIN_NAMESPACE = "gloo-mesh";
export const DEFAULT_AUDIT_BRANCH = "gitmesh/rendered";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** `Kind`, or `group/version/Kind`. */
const KIND_REF = /^(?:[a-z0-9.-]+\/[a-z0-9]+\/)?[A-Z][A-Za-z0-9]*$/;

export interface SettingsDefaults {
  readonly adminNamespace: string;
  readonly auditBranch: string;
}

export function parseSettings(content: string | Uint8Array | undefined, defaults: SettingsDefaults): { settings: RepoSettings; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  let ignore: string[] = [];
  let ignoreKinds: string[] = [];
  let { adminNamespace, auditBranch } = defaults;
  const done = () => ({ settings: Object.freeze({ ignore: Object.freeze(ignore), adminNamespace, auditBranch, ignoreKinds: Object.freeze(ignoreKinds) }), diagnostics });
  if (content === undefined) return done();
  const text = decodeContent(content);
  if (text === undefined) {
    diagnostics.push(diag(ConfigCode.FILE_ENCODING, SETTINGS_FILE, [1, 1], "gitmesh.yaml is not valid UTF-8; save it as UTF-8"));
    return done();
  }
  const docs = parseYamlDocuments(text).filter((d) => d.errors.length > 0 || d.value !== undefined);
  const bad = (pointer: string, message: string, positions: Record<string, readonly [number, number]>) =>
    diagnostics.push(diag(ConfigCode.SETTINGS_INVALID, SETTINGS_FILE, positionOf(positions, pointer), message, pointer));
  for (const d of docs) {
    for (const e of d.errors) diagnostics.push(diag(ConfigCode.YAML_SYNTAX, SETTINGS_FILE, e.position, `${e.message}; fix the YAML (defaults are used)`));
  }
  if (docs.length > 1) bad("", "gitmesh.yaml must hold one YAML document; only the first is used", docs[1]!.positions);
  const doc = docs[0];
  if (!doc || doc.errors.length > 0 || doc.value === null) return done();
  const value = doc.value;
  if (!isRecord(value)) {
    bad("", "gitmesh.yaml must be a mapping with the keys ignore, adminNamespace, auditBranch, ignoreKinds", doc.positions);
    return done();
  }
  for (const [key, v] of Object.entries(value)) {
    const pointer = `/${key}`;
    if (key === "ignore") {
      if (Array.isArray(v) && v.every((p) => typeof p === "string")) ignore = v;
      else bad(pointer, "`ignore` must be a list of glob strings, e.g. [\"rendered/\", \"*.draft.yaml\"]", doc.positions);
    } else if (key === "adminNamespace") {
      if (typeof v === "string" && DNS_LABEL.test(v)) adminNamespace = v;
      else bad(pointer, `\`adminNamespace\` must be a namespace name (DNS-1123 label); using ${adminNamespace}`, doc.positions);
    } else if (key === "auditBranch") {
      if (typeof v === "string" && v !== "" && !/\s|\.\.|^\/|\/$/.test(v)) auditBranch = v;
      else bad(pointer, `\`auditBranch\` must be a branch name like gitmesh/rendered; using ${auditBranch}`, doc.positions);
    } else if (key === "ignoreKinds") {
      const list: unknown[] | undefined = Array.isArray(v) ? v : undefined;
      if (list?.every((k): k is string => typeof k === "string" && KIND_REF.test(k))) ignoreKinds = list;
      else {
        const i = list ? list.findIndex((k) => typeof k !== "string" || !KIND_REF.test(k)) : -1;
        bad(
          i >= 0 ? `${pointer}/${i}` : pointer,
          "`ignoreKinds` must be a list of kinds, each `Kind` or `apiVersion/Kind` (e.g. ExtAuthPolicy, security.policy.gloo.solo.io/v2/WAFPolicy); nothing is ignored",
          doc.positions,
        );
      }
    } else {
      bad(pointer, `unknown key \`${key}\` in gitmesh.yaml; allowed: ignore, adminNamespace, auditBranch, ignoreKinds`, doc.positions);
    }
  }
  return done();
}
