/**
 * The stable diagnostic codes of the loader. Scripts may match on them; never rename one. Each
 * entry says what it means and the severity it is reported with, so `gitmesh validate --codes`
 * can print the catalog and src/config/README.md mirrors it.
 */
import { Severity } from "../core/index.js";

export interface CodeInfo {
  readonly severity: Severity;
  readonly description: string;
}

export const ConfigCode = {
  YAML_SYNTAX: "YAML_SYNTAX",
  YAML_WARNING: "YAML_WARNING",
  FILE_ENCODING: "FILE_ENCODING",
  NOT_AN_OBJECT: "NOT_AN_OBJECT",
  MISSING_API_VERSION: "MISSING_API_VERSION",
  MISSING_KIND: "MISSING_KIND",
  UNSUPPORTED_KIND: "UNSUPPORTED_KIND",
  UNKNOWN_GLOO_KIND: "UNKNOWN_GLOO_KIND",
  UNTRANSLATED_GLOO_KIND: "UNTRANSLATED_GLOO_KIND",
  NEEDS_GLOO_DATA_PLANE: "NEEDS_GLOO_DATA_PLANE",
  IGNORED_KIND: "IGNORED_KIND",
  DEPRECATED_API_VERSION: "DEPRECATED_API_VERSION",
  MISSING_NAME: "MISSING_NAME",
  MISSING_NAMESPACE: "MISSING_NAMESPACE",
  INVALID_METADATA: "INVALID_METADATA",
  SCHEMA_VIOLATION: "SCHEMA_VIOLATION",
  NULL_FIELD_DROPPED: "NULL_FIELD_DROPPED",
  DUPLICATE_OBJECT: "DUPLICATE_OBJECT",
  DUPLICATE_WORKSPACE_SETTINGS: "DUPLICATE_WORKSPACE_SETTINGS",
  ADMIN_NAMESPACE_REQUIRED: "ADMIN_NAMESPACE_REQUIRED",
  UNRESOLVED_REFERENCE: "UNRESOLVED_REFERENCE",
  NOT_OWNED: "NOT_OWNED",
  AMBIGUOUS_OWNER: "AMBIGUOUS_OWNER",
  OVERLAPPING_WORKSPACES: "OVERLAPPING_WORKSPACES",
  SETTINGS_INVALID: "SETTINGS_INVALID",
  RELOAD_REQUIRED: "RELOAD_REQUIRED",
} as const;
export type ConfigCode = (typeof ConfigCode)[keyof typeof ConfigCode];

/** Every loader code with its severity and meaning, in the order a user meets them. */
export const CONFIG_CODES: Readonly<Record<ConfigCode, CodeInfo>> = {
  YAML_SYNTAX: {
    severity: Severity.Error,
    description: "The file is not valid YAML (bad indentation, unclosed quote or bracket, duplicate map key…). The document is skipped.",
  },
  YAML_WARNING: {
    severity: Severity.Warning,
    description: "The YAML parser accepted the document but flagged something suspicious (e.g. an unknown tag).",
  },
  FILE_ENCODING: { severity: Severity.Error, description: "The file is not valid UTF-8. Save it as UTF-8." },
  NOT_AN_OBJECT: {
    severity: Severity.Error,
    description: "A YAML document is not a mapping (e.g. a list or a bare string); every document must be one Kubernetes-style object.",
  },
  MISSING_API_VERSION: { severity: Severity.Error, description: "A document has no string `apiVersion`." },
  MISSING_KIND: { severity: Severity.Error, description: "A document has no string `kind`." },
  UNSUPPORTED_KIND: {
    severity: Severity.Warning,
    description:
      "The object is not Gloo Mesh configuration (e.g. a ConfigMap or an Istio object). gitmesh does not apply it anywhere; it is listed as unsupported, never silently dropped.",
  },
  UNKNOWN_GLOO_KIND: {
    severity: Severity.Error,
    description:
      "The apiVersion or kind belongs to Gloo's API but names no kind that exists there (a typo such as `/v1` for `/v2`, or `RouteTabel`). The commit is rejected: the policy would otherwise silently not apply. The message says what it probably means.",
  },
  UNTRANSLATED_GLOO_KIND: {
    severity: Severity.Error,
    description:
      "A real Gloo kind that gitmesh does not translate (e.g. ClientTLSPolicy, AccessLogPolicy, ActiveHealthCheckPolicy): its policy would not be enforced, so the commit is rejected. If another tool applies it, list the kind under `ignoreKinds` in gitmesh.yaml.",
  },
  NEEDS_GLOO_DATA_PLANE: {
    severity: Severity.Error,
    description:
      "A Gloo kind that only Gloo's own data plane can enforce (WAFPolicy, DLPPolicy, TransformationPolicy, GraphQL and portal kinds, CloudProvider/CloudResources, Dashboard…): upstream Istio has no equivalent, so the commit is rejected rather than the policy silently not applied. Its spec's top-level fields are still checked. If Gloo's data plane applies it, list the kind under `ignoreKinds` in gitmesh.yaml.",
  },
  DEPRECATED_API_VERSION: {
    severity: Severity.Warning,
    description:
      "An apiVersion Gloo used before the kind settled in its current group (e.g. `security.gloo.solo.io/v2` AccessPolicy): the object is read as the current apiVersion. Update the apiVersion.",
  },
  IGNORED_KIND: {
    severity: Severity.Info,
    description: "An object of a kind that gitmesh.yaml `ignoreKinds` leaves to another tool: not translated, shown as ignored by configuration.",
  },
  MISSING_NAME: { severity: Severity.Error, description: "`metadata.name` is missing or empty. The object is skipped." },
  MISSING_NAMESPACE: {
    severity: Severity.Error,
    description: "`metadata.namespace` is missing or empty; every object names its namespace. The object is skipped.",
  },
  INVALID_METADATA: {
    severity: Severity.Error,
    description: "`metadata` (or its labels/annotations) has the wrong shape: labels and annotations are maps of strings.",
  },
  SCHEMA_VIOLATION: {
    severity: Severity.Error,
    description: "The object does not match the JSON Schema of its kind (one diagnostic per violation, at the offending line). The object is not loaded.",
  },
  NULL_FIELD_DROPPED: {
    severity: Severity.Warning,
    description:
      "A field of `spec` is `null` (e.g. `labels:` or `matchers:` with nothing after it). It is dropped before validation, as the Kubernetes API server prunes null values of non-nullable fields, so it means the same as leaving the field out.",
  },
  DUPLICATE_OBJECT: {
    severity: Severity.Error,
    description: "Two objects have the same kind, namespace, name and cluster. The first (by file path, then position) is kept.",
  },
  DUPLICATE_WORKSPACE_SETTINGS: {
    severity: Severity.Error,
    description: "More than one WorkspaceSettings belongs to the same workspace; a workspace has exactly one.",
  },
  ADMIN_NAMESPACE_REQUIRED: {
    severity: Severity.Error,
    description: "Workspace, KubernetesCluster and RootTrustPolicy live in the admin namespace (default `gloo-mesh`, see gitmesh.yaml).",
  },
  UNRESOLVED_REFERENCE: {
    severity: Severity.Error,
    description:
      "A reference names an object that does not exist: a RouteTable's virtualGateways, a delegate's routeTables by name, a destination of kind VIRTUAL_DESTINATION/EXTERNAL_SERVICE by name, a listener's virtualGateway by name.",
  },
  NOT_OWNED: {
    severity: Severity.Error,
    description: "No Workspace's workloadClusters include the object's (cluster, namespace), so it belongs to no workspace and is not translated.",
  },
  AMBIGUOUS_OWNER: {
    severity: Severity.Error,
    description:
      "Several workspaces own the object's namespace in different clusters; add the annotation `cluster.solo.io/cluster: <cluster>` to say which one.",
  },
  OVERLAPPING_WORKSPACES: {
    severity: Severity.Error,
    description: "Several workspaces own the same namespace in the same cluster; narrow their workloadClusters so each (cluster, namespace) has one owner.",
  },
  SETTINGS_INVALID: {
    severity: Severity.Error,
    description: "The root gitmesh.yaml is malformed (allowed keys: ignore, adminNamespace, auditBranch, ignoreDifferences, allowMassDeletion). Defaults are used for the bad fields.",
  },
  RELOAD_REQUIRED: {
    severity: Severity.Error,
    description:
      "An incremental update changed gitmesh.yaml so that previously ignored files now count, but their contents were not handed in. Load the whole tree again.",
  },
};
