/**
 * The resource kinds the emulator serves: a registry keyed by group/version/plural, seeded with the
 * core kinds the agent reads and writes and the Istio kinds gitmesh renders. More kinds can be
 * registered at any time (they appear in discovery at once).
 */
import { BUILT_IN_SCHEMAS } from "./builtin-schemas.js";
import type { Schema } from "./schema.js";
import { kindsOfCrd } from "./crds/crd.js";
import { ISTIO_CRDS } from "./crds/istio.gen.js";

/** One kind served by the emulator, as discovery describes it. */
export interface ResourceKind {
  /** API group; `""` for the core group (`/api/v1`). */
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  /** Lower-case plural used in URLs, e.g. `virtualservices`. */
  readonly plural: string;
  /** Lower-case singular, e.g. `virtualservice` (default: `kind` lower-cased). */
  readonly singular?: string;
  readonly namespaced: boolean;
  readonly shortNames?: readonly string[];
  /** Whether this is a built-in kind (list items then omit apiVersion/kind, like the real server). Default false. */
  readonly builtIn?: boolean;
  /**
   * The kind's schema: list semantics for server-side apply and strategic merge patch, and for
   * custom resources the CRD's structural schema (validation, pruning). Default: none (lists atomic,
   * fields unchecked).
   */
  readonly schema?: Schema;
  /** Discovery categories (`kubectl get istio-io`). */
  readonly categories?: readonly string[];
  /** Whether `/status` is a subresource (then the main resource ignores status changes, and `/status` only them). */
  readonly statusSubresource?: boolean;
}

export const DEFAULT_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"] as const;

export function apiVersionOf(k: Pick<ResourceKind, "group" | "version">): string {
  return k.group === "" ? k.version : `${k.group}/${k.version}`;
}

export function singularOf(k: ResourceKind): string {
  return k.singular ?? k.kind.toLowerCase();
}

/** Built-in kinds whose status is a subresource (written through `/status` only). */
const WITH_STATUS = new Set(["Pod", "Service", "Namespace", "Node", "Deployment", "StatefulSet", "DaemonSet", "HorizontalPodAutoscaler", "PodDisruptionBudget"]);

/** Built-in kinds in the `all` category (`kubectl get all`), as their REST storages declare it. */
const IN_ALL = new Set(["Pod", "Service", "Deployment", "StatefulSet", "DaemonSet", "HorizontalPodAutoscaler"]);

const core = (kind: string, plural: string, namespaced: boolean, shortNames: readonly string[] = []): ResourceKind => ({
  ...(WITH_STATUS.has(kind) ? { statusSubresource: true } : {}),
  ...(IN_ALL.has(kind) ? { categories: ["all"] } : {}),
  group: "",
  version: "v1",
  kind,
  plural,
  namespaced,
  shortNames,
  builtIn: true,
  schema: BUILT_IN_SCHEMAS[`/${kind}`]!,
});

const builtIn = (group: string, version: string, kind: string, plural: string, shortNames: readonly string[] = []): ResourceKind => ({
  ...(WITH_STATUS.has(kind) ? { statusSubresource: true } : {}),
  ...(IN_ALL.has(kind) ? { categories: ["all"] } : {}),
  group,
  version,
  kind,
  plural,
  namespaced: true,
  ...(shortNames.length > 0 ? { shortNames } : {}),
  builtIn: true,
  schema: BUILT_IN_SCHEMAS[`${group}/${kind}`]!,
});

/** Kubernetes kinds served by default. */
export const BUILT_IN_KINDS: readonly ResourceKind[] = [
  core("Namespace", "namespaces", false, ["ns"]),
  core("Node", "nodes", false, ["no"]),
  core("Service", "services", true, ["svc"]),
  core("Pod", "pods", true, ["po"]),
  core("Secret", "secrets", true),
  core("ConfigMap", "configmaps", true, ["cm"]),
  core("Endpoints", "endpoints", true, ["ep"]),
  core("ServiceAccount", "serviceaccounts", true, ["sa"]),
  builtIn("apps", "v1", "Deployment", "deployments", ["deploy"]),
  builtIn("apps", "v1", "StatefulSet", "statefulsets", ["sts"]),
  builtIn("apps", "v1", "DaemonSet", "daemonsets", ["ds"]),
  builtIn("coordination.k8s.io", "v1", "Lease", "leases"),
  builtIn("rbac.authorization.k8s.io", "v1", "Role", "roles"),
  builtIn("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
  builtIn("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", ["hpa"]),
  builtIn("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", ["pdb"]),
];

/**
 * The Sail operator's cluster-scoped kinds (sailoperator.io/v1), as if its CRDs were installed. Not
 * registered by default (most clusters have no Sail operator); pass them in `kinds`.
 */
export const SAIL_KINDS: readonly ResourceKind[] = [
  { group: "sailoperator.io", version: "v1", kind: "Istio", plural: "istios", namespaced: false },
  { group: "sailoperator.io", version: "v1", kind: "IstioRevisionTag", plural: "istiorevisiontags", namespaced: false },
  { group: "sailoperator.io", version: "v1", kind: "IstioCNI", plural: "istiocnis", namespaced: false },
];

/**
 * Istio's custom resource kinds, as if its CRDs were installed (the default): every CRD Istio's chart
 * ships, every served version (v1 first: the storage version, preferred in discovery; v1beta1,
 * v1alpha3 share its objects), short names, categories (`kubectl get istio-io`), the status
 * subresource and the structural schema used for validation, pruning and list semantics.
 */
export const ISTIO_KINDS: readonly ResourceKind[] = ISTIO_CRDS.flatMap(kindsOfCrd);

/** A mutable registry of kinds, looked up by URL parts or by apiVersion/kind. */
export class KindRegistry {
  private readonly byPath = new Map<string, ResourceKind>();
  private readonly byKind = new Map<string, ResourceKind>();

  constructor(kinds: readonly ResourceKind[]) {
    for (const k of kinds) this.register(k);
  }

  /** Adds (or replaces) a kind. Throws on a malformed definition (a bug in the caller). */
  register(kind: ResourceKind): void {
    if (!/^[a-z0-9]+$/.test(kind.plural)) throw new Error(`kube-emulator: plural "${kind.plural}" must be lower-case letters/digits`);
    if (!/^v[0-9]+((alpha|beta)[0-9]+)?$/.test(kind.version)) throw new Error(`kube-emulator: version "${kind.version}" is not a Kubernetes version`);
    if (kind.kind === "") throw new Error("kube-emulator: kind must not be empty");
    this.byPath.set(`${kind.group}/${kind.version}/${kind.plural}`, kind);
    this.byKind.set(`${apiVersionOf(kind)}/${kind.kind}`, kind);
  }

  byResource(group: string, version: string, plural: string): ResourceKind | undefined {
    return this.byPath.get(`${group}/${version}/${plural}`);
  }

  /** The version a kind's objects are stored in: the first registered for its group and resource. */
  storageOf(kind: ResourceKind): ResourceKind {
    for (const k of this.byPath.values()) if (k.group === kind.group && k.plural === kind.plural) return k;
    return kind;
  }

  byApiVersionKind(apiVersion: string, kind: string): ResourceKind | undefined {
    return this.byKind.get(`${apiVersion}/${kind}`);
  }

  all(): ResourceKind[] {
    return [...this.byPath.values()];
  }

  /** Group → versions served, in registration order. */
  groups(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const k of this.byPath.values()) {
      const vs = out.get(k.group) ?? [];
      if (!vs.includes(k.version)) vs.push(k.version);
      out.set(k.group, vs);
    }
    return out;
  }

  inGroupVersion(group: string, version: string): ResourceKind[] {
    return this.all().filter((k) => k.group === group && k.version === version);
  }
}
