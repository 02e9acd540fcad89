/**
 * Every rendered object is validated against Istio's CRD schemas (Istio 1.29.2: networking.istio.io/v1,
 * EnvoyFilter's v1alpha3 and security.istio.io/v1), compiled by ajv at generation time into
 * istio-schemas.gen.ts (scripts/gen-istio-validators.mjs, which says how a structural schema is judged:
 * nulls, int-or-string, list-map keys, formats). A failure is a gitmesh bug or an input value Istio would
 * reject; either way it is reported, never shipped silently.
 *
 * The schemas hold types and enums, not Istio's semantic rules (weights, subset names, policy shapes,
 * durations under 1ms, port ranges: Go code and CEL in Istio), and they let unknown fields through.
 * test/istio-validate runs Istio's own webhook (tools/istio-validate) over every golden and the
 * corpus and records where the two disagree; translators check the semantic rules they can break.
 */
// One module per Kubernetes kind: a group's index (kubernetes-models/v1 above all) loads every kind of the
// group with its schemas at the start of every process that translates.
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { Role } from "kubernetes-models/rbac.authorization.k8s.io/v1/Role";
import { RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { Severity, type Diagnostic } from "../core/index.js";
import { validateEnvoyPatches } from "./envoy-config.js";
import { ISTIO_VALIDATORS } from "./istio-schemas.gen.js";
import { ANNOTATION_SOURCE_FILE } from "./labels.js";
import { validateSailResource } from "./lifecycle.js";
import { TranslateCode, type IstioResource } from "./types.js";

interface SchemaError {
  readonly instancePath?: string;
  readonly message?: string;
}

/** Schema issues of one object (a kind of MODELS); [] when it is valid. */
type Check = (o: unknown) => IstioIssue[];

const issuesOf = (errors: readonly SchemaError[] | null | undefined): IstioIssue[] => (errors ?? []).map((e) => ({ path: e.instancePath ?? "", message: e.message ?? "invalid" }));

/** An Istio kind: its generated ajv function, which does not modify the object it judges. */
function istioCheck(type: string): Check {
  const fn = ISTIO_VALIDATORS[type];
  if (fn === undefined) throw new Error(`istio-schemas.gen.ts has no validator for ${type}; regenerate it (scripts/gen-istio-validators.mjs)`);
  return (o) => (fn(o) ? [] : issuesOf(fn.errors));
}

interface Validatable {
  validate(): void;
}
type ModelCtor = (new (data: never) => Validatable) & { readonly prototype: Validatable };

/**
 * A Kubernetes kind (kubernetes-models). The model's constructor deep-copies its input (filtering undefined
 * members, which canonical output never has); its validate() only runs the generated, non-mutating ajv
 * function on `this`. Calling it on the object itself validates the same data without the copy.
 */
function modelCheck(Model: ModelCtor): Check {
  return (o) => {
    try {
      Model.prototype.validate.call(o);
      return [];
    } catch (err) {
      const errors = (err as { errors?: readonly SchemaError[] }).errors;
      if (errors === undefined) return [{ path: "", message: err instanceof Error ? err.message : String(err) }];
      return issuesOf(errors);
    }
  };
}

const MODELS: Readonly<Record<string, Check>> = {
  "networking.istio.io/v1/VirtualService": istioCheck("networking.istio.io/v1/VirtualService"),
  "networking.istio.io/v1/DestinationRule": istioCheck("networking.istio.io/v1/DestinationRule"),
  "networking.istio.io/v1/Gateway": istioCheck("networking.istio.io/v1/Gateway"),
  "networking.istio.io/v1/ServiceEntry": istioCheck("networking.istio.io/v1/ServiceEntry"),
  "networking.istio.io/v1/Sidecar": istioCheck("networking.istio.io/v1/Sidecar"),
  "networking.istio.io/v1/WorkloadEntry": istioCheck("networking.istio.io/v1/WorkloadEntry"),
  // Istio serves EnvoyFilter as v1alpha3 only; the Envoy config in its patches is checked by envoy-config.ts.
  "networking.istio.io/v1alpha3/EnvoyFilter": istioCheck("networking.istio.io/v1alpha3/EnvoyFilter"),
  "security.istio.io/v1/AuthorizationPolicy": istioCheck("security.istio.io/v1/AuthorizationPolicy"),
  "security.istio.io/v1/PeerAuthentication": istioCheck("security.istio.io/v1/PeerAuthentication"),
  "security.istio.io/v1/RequestAuthentication": istioCheck("security.istio.io/v1/RequestAuthentication"),
  // Kubernetes kinds of a gateway installation (lifecycle.ts), validated with Kubernetes' own schemas.
  "apps/v1/Deployment": modelCheck(Deployment),
  "v1/ConfigMap": modelCheck(ConfigMap),
  "v1/Service": modelCheck(Service),
  "v1/ServiceAccount": modelCheck(ServiceAccount),
  "rbac.authorization.k8s.io/v1/Role": modelCheck(Role),
  "rbac.authorization.k8s.io/v1/RoleBinding": modelCheck(RoleBinding),
  "autoscaling/v2/HorizontalPodAutoscaler": modelCheck(HorizontalPodAutoscaler),
  "policy/v1/PodDisruptionBudget": modelCheck(PodDisruptionBudget),
};

export interface IstioIssue {
  readonly path: string;
  readonly message: string;
}

/** Whether a kind is one of Istio's (validated) or a gitmesh-internal kind (not validated here). */
export function isIstioKind(r: Pick<IstioResource, "apiVersion">): boolean {
  return r.apiVersion.endsWith(".istio.io/v1") || r.apiVersion === "networking.istio.io/v1alpha3";
}

const METADATA_KEYS: ReadonlySet<string> = new Set(["name", "namespace", "labels", "annotations"]);

function stringMap(v: unknown): boolean {
  if (v === undefined) return true;
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  for (const k in v) if (typeof (v as Record<string, unknown>)[k] !== "string") return false;
  return true;
}

/**
 * Whether metadata holds only string name/namespace and string→string labels/annotations. For
 * such metadata Kubernetes' ObjectMeta schema checks exactly that (types only), so it is checked
 * here without ajv (whose per-key error-path strings made ObjectMeta the most expensive part of
 * validating a large fleet) and the schema validates the rest. Anything else takes the full path.
 */
function plainMetadata(m: IstioResource["metadata"]): boolean {
  for (const k in m) if (!METADATA_KEYS.has(k)) return false;
  return typeof m.name === "string" && typeof m.namespace === "string" && stringMap(m.labels) && stringMap(m.annotations);
}

/** Schema issues of one rendered object; an Istio apiVersion/kind gitmesh does not know is itself an issue. */
export function validateIstioResource(r: IstioResource): IstioIssue[] {
  const sail = validateSailResource(r);
  if (sail !== undefined) return sail;
  const check = MODELS[`${r.apiVersion}/${r.kind}`];
  if (check === undefined) {
    return isIstioKind(r) ? [{ path: "/kind", message: `no schema for ${r.apiVersion} ${r.kind}` }] : [];
  }
  return modelIssues(check, r, plainMetadata(r.metadata));
}

function modelIssues(check: Check, r: IstioResource, plain: boolean): IstioIssue[] {
  const issues = check(plain ? { ...r, metadata: { name: r.metadata.name, namespace: r.metadata.namespace } } : r);
  if (issues.length > 0 || r.kind !== "EnvoyFilter") return issues;
  try {
    return validateEnvoyPatches(r.spec);
  } catch (err) {
    // A shape the schema lets through (a null spec) that the Envoy checks do not expect: reported, never a crash.
    return [{ path: "", message: err instanceof Error ? err.message : String(err) }];
  }
}

const RESOURCE_KEYS = ["apiVersion", "kind", "metadata", "spec"] as const;

/** Whether an object's own keys are apiVersion, kind, metadata and spec, in that (canonical) order, none undefined, and no other. */
export function specOnly(r: IstioResource): boolean {
  let i = 0;
  for (const k in r) {
    if (k !== RESOURCE_KEYS[i] || (r as unknown as Record<string, unknown>)[k] === undefined) return false;
    i++;
  }
  return i === RESOURCE_KEYS.length;
}

/**
 * `validateIstioResource` that validates a spec object once per kind: the result of every later object
 * with the same kind, the same spec object (identity) and plain metadata (see plainMetadata: checked on
 * each object, not remembered) is the first one's. Translators render one spec into many clusters
 * (the large fleet's 218,100 objects hold 14,920 different specs), so the workspace stage, which
 * validates every object it renders, uses one of these per workspace. Objects are immutable once
 * rendered, which is what makes the spec's identity stand for its content.
 */
export function createIstioValidator(): (r: IstioResource) => IstioIssue[] {
  const bySpec = new Map<unknown, Map<string, IstioIssue[]>>();
  return (r) => {
    const sail = validateSailResource(r);
    if (sail !== undefined) return sail;
    const type = `${r.apiVersion}/${r.kind}`;
    const check = MODELS[type];
    if (check === undefined || !specOnly(r) || !plainMetadata(r.metadata)) return validateIstioResource(r);
    let kinds = bySpec.get(r.spec);
    if (kinds === undefined) bySpec.set(r.spec, (kinds = new Map<string, IstioIssue[]>()));
    let issues = kinds.get(type);
    if (issues === undefined) kinds.set(type, (issues = modelIssues(check, r, true)));
    return issues;
  };
}

/**
 * INVALID_OUTPUT diagnostics for every object of one cluster's output that fails its schema.
 * `issuesOf` gives an object's issues (default: validate it now); the workspace stage validates each
 * object once, when it brings it to canonical form, and passes what it found.
 */
export function validateOutputs(cluster: string, resources: readonly IstioResource[], issuesOf: (r: IstioResource) => readonly IstioIssue[] = validateIstioResource): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const r of resources) {
    for (const issue of issuesOf(r)) {
      const file = r.metadata.annotations?.[ANNOTATION_SOURCE_FILE];
      out.push({
        code: TranslateCode.InvalidOutput,
        severity: Severity.Error,
        ...(file === undefined ? {} : { file }),
        path: issue.path,
        message: `rendered ${r.kind} ${r.metadata.namespace === "" ? "" : `${r.metadata.namespace}/`}${r.metadata.name} for cluster "${cluster}" fails ${isIstioKind(r) ? "Istio's" : "its"} schema at ${issue.path}: ${issue.message}. Fix the value in the parent ${r.metadata.labels["gitmesh.io/parent-kind"] ?? "object"} or report a gitmesh bug.`,
        object: { apiVersion: r.apiVersion, kind: r.kind, name: r.metadata.name, namespace: r.metadata.namespace, cluster },
      });
    }
  }
  return out;
}
