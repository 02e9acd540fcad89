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
 *   - ClientTLSPolicy                                   # any apiVersion
 *   - security.policy.gloo.solo.io/v2/WAFPolicy       # this apiVersion only
 * ignoreDifferences:      # fields of owned objects the agents leave to other controllers (default none)
 *   - group: networking.istio.io   # optional (any group)
 *     kind: VirtualService
 *     namespace: bookinfo          # optional (any namespace)
 *     name: reviews                # optional (any name)
 *     jsonPointers: [/spec/http/0/route/0/weight]
 * allowMassDeletion: [cluster1]    # clusters whose outputs may delete any number of objects (`*` = all; default none)
 * suspend:                # a change freeze held in Git: nothing new is applied, pruned or repaired there (default none)
 *   clusters: [cluster1]  # cluster names, or ["*"] for the whole fleet
 *   reason: change freeze until 2026-12-01   # optional, shown with "suspended since … by …"
 * ```
 */
import type { Diagnostic } from "../core/index.js";
import { ConfigCode } from "./codes.js";
import { SETTINGS_FILE } from "./ignore.js";
import { decodeContent, diag, isRecord, positionOf } from "./parse-file.js";
import type { IgnoreDifferenceRule, RepoSettings, SuspendSetting } from "./types.js";
import { parseYamlDocuments } from "./yaml-positions.js";

export const DEFAULT_ADMIN_NAMESPACE = "gloo-mesh";
export const DEFAULT_AUDIT_BRANCH = "gitmesh/rendered";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** `Kind`, or `group/version/Kind`. */
const KIND_REF = /^(?:[a-z0-9.-]+\/[a-z0-9]+\/)?[A-Z][A-Za-z0-9]*$/;
const KEYS = "ignore, adminNamespace, auditBranch, ignoreKinds, ignoreDifferences, allowMassDeletion, suspend";
/** An RFC 6901 JSON pointer: empty, or `/` segments where `~` is only `~0` or `~1`. */
const JSON_POINTER = /^(\/([^~/]|~[01])*)+$/;
const GROUP = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;
const NAME = /^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/;

export interface SettingsDefaults {
  readonly adminNamespace: string;
  readonly auditBranch: string;
}

export function parseSettings(content: string | Uint8Array | undefined, defaults: SettingsDefaults): { settings: RepoSettings; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  let ignore: string[] = [];
  let ignoreKinds: string[] = [];
  let ignoreDifferences: IgnoreDifferenceRule[] = [];
  let allowMassDeletion: string[] = [];
  let suspend: SuspendSetting | undefined;
  let { adminNamespace, auditBranch } = defaults;
  const done = () => ({
    settings: Object.freeze({
      ignore: Object.freeze(ignore),
      adminNamespace,
      auditBranch,
      ignoreKinds: Object.freeze(ignoreKinds),
      ignoreDifferences: Object.freeze(ignoreDifferences),
      allowMassDeletion: Object.freeze(allowMassDeletion),
      ...(suspend === undefined ? {} : { suspend }),
    }),
    diagnostics,
  });
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
    bad("", `gitmesh.yaml must be a mapping with the keys ${KEYS}`, doc.positions);
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
          "`ignoreKinds` must be a list of kinds, each `Kind` or `apiVersion/Kind` (e.g. ClientTLSPolicy, security.policy.gloo.solo.io/v2/WAFPolicy); nothing is ignored",
          doc.positions,
        );
      }
    } else if (key === "ignoreDifferences") {
      ignoreDifferences = parseIgnoreDifferences(v, (p, m) => bad(p, m, doc.positions));
    } else if (key === "allowMassDeletion") {
      if (Array.isArray(v) && v.every((c) => typeof c === "string" && (c === "*" || DNS_LABEL.test(c)))) allowMassDeletion = [...new Set(v as string[])].sort();
      else bad(pointer, "`allowMassDeletion` must be a list of cluster names (or \"*\" for all), e.g. [cluster1]; none is allowed", doc.positions);
    } else if (key === "suspend") {
      suspend = parseSuspend(v, (p, m) => bad(p, m, doc.positions));
    } else {
      bad(pointer, `unknown key \`${key}\` in gitmesh.yaml; allowed: ${KEYS}`, doc.positions);
    }
  }
  return done();
}

/**
 * `suspend: {clusters: [...], reason?}`: a freeze held in Git. A bad value is an error diagnostic like every
 * mistake in gitmesh.yaml (the commit is rejected, so a typo never lifts a freeze in force).
 */
function parseSuspend(v: unknown, bad: (pointer: string, message: string) => void): SuspendSetting | undefined {
  const shape = "`suspend` must be a mapping {clusters: [cluster1, ...] (or [\"*\"] for the whole fleet), reason: <text>}";
  if (v === null) return undefined;
  if (!isRecord(v)) {
    bad("/suspend", `${shape}; nothing is suspended`);
    return undefined;
  }
  for (const k of Object.keys(v)) if (k !== "clusters" && k !== "reason") bad(`/suspend/${k}`, `unknown key \`${k}\` in suspend; allowed: clusters, reason`);
  const clusters: unknown = v["clusters"];
  if (!Array.isArray(clusters) || !clusters.every((c) => typeof c === "string" && (c === "*" || DNS_LABEL.test(c)))) {
    bad("/suspend/clusters", `${shape}; nothing is suspended`);
    return undefined;
  }
  const reason: unknown = v["reason"];
  if (reason !== undefined && (typeof reason !== "string" || reason.length > 500)) bad("/suspend/reason", "`suspend.reason` must be text of at most 500 characters; it is left out");
  const list = [...new Set(clusters as string[])].sort();
  if (list.length === 0) return undefined;
  return Object.freeze({ clusters: Object.freeze(list), ...(typeof reason === "string" && reason.length <= 500 && reason.trim() !== "" ? { reason: reason.trim() } : {}) });
}

/** `ignoreDifferences`: a list of {group?, kind, namespace?, name?, jsonPointers}; a bad entry is reported and left out. */
function parseIgnoreDifferences(v: unknown, bad: (pointer: string, message: string) => void): IgnoreDifferenceRule[] {
  const rules: IgnoreDifferenceRule[] = [];
  if (!Array.isArray(v)) {
    bad("/ignoreDifferences", "`ignoreDifferences` must be a list of {group?, kind, namespace?, name?, jsonPointers: [...]}");
    return rules;
  }
  v.forEach((entry: unknown, i) => {
    const at = `/ignoreDifferences/${String(i)}`;
    if (!isRecord(entry)) {
      bad(at, "an ignoreDifferences entry must be a mapping {group?, kind, namespace?, name?, jsonPointers: [...]}");
      return;
    }
    const problems = { count: 0 };
    const fail = (field: string, message: string) => {
      problems.count += 1;
      bad(field === "" ? at : `${at}/${field}`, message);
    };
    for (const k of Object.keys(entry)) if (!["group", "kind", "namespace", "name", "jsonPointers"].includes(k)) fail(k, `unknown field \`${k}\`; allowed: group, kind, namespace, name, jsonPointers`);
    const { group, kind, namespace, name, jsonPointers } = entry;
    if (group !== undefined && (typeof group !== "string" || !GROUP.test(group))) fail("group", "`group` must be an API group such as networking.istio.io");
    if (typeof kind !== "string" || !KIND.test(kind)) fail(kind === undefined ? "" : "kind", "`kind` is required: a Kubernetes kind such as VirtualService");
    if (namespace !== undefined && (typeof namespace !== "string" || !DNS_LABEL.test(namespace))) fail("namespace", "`namespace` must be a namespace name (DNS-1123 label)");
    if (name !== undefined && (typeof name !== "string" || !NAME.test(name))) fail("name", "`name` must be an object name (DNS-1123 subdomain)");
    if (!Array.isArray(jsonPointers) || jsonPointers.length === 0) fail(jsonPointers === undefined ? "" : "jsonPointers", "`jsonPointers` is required: a non-empty list of JSON pointers such as /spec/http/0/route/0/weight");
    else
      jsonPointers.forEach((p: unknown, j) => {
        if (typeof p !== "string" || !JSON_POINTER.test(p) || p === "/metadata" || p.startsWith("/metadata/name") || p.startsWith("/metadata/namespace"))
          fail(`jsonPointers/${String(j)}`, "each JSON pointer must start with `/` (RFC 6901, `~0` for ~ and `~1` for /) and must not point at the object's identity");
      });
    if (problems.count > 0) return;
    rules.push({
      ...(group === undefined ? {} : { group: group as string }),
      kind: kind as string,
      ...(namespace === undefined ? {} : { namespace: namespace as string }),
      ...(name === undefined ? {} : { name: name as string }),
      jsonPointers: Object.freeze([...new Set(jsonPointers as string[])]),
    });
  });
  return rules;
}
