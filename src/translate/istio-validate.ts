/**
 * Every rendered object is validated against Istio's CRD schemas (Istio 1.29, via
 * @kubernetes-models/istio 3.0.1: networking.istio.io/v1 and security.istio.io/v1). A failure is a
 * gitmesh bug or an input value Istio would reject; either way it is reported, never shipped silently.
 *
 * The schemas hold types and enums, not Istio's semantic rules (weights, subset names, policy shapes,
 * durations under 1ms, port ranges: Go code and CEL in Istio), and they let unknown fields through.
 * test/istio-validate runs Istio's own webhook (tools/istio-validate) over every golden and the
 * corpus and records where the two disagree; translators check the semantic rules they can break.
 */
// One module per kind: a group's index (kubernetes-models/v1 above all) loads every kind of the group with
// its schemas at the start of every process that translates — `gitmesh diff` loaded 1,584 modules, 400 now.
import { DestinationRule } from "@kubernetes-models/istio/networking.istio.io/v1/DestinationRule";
import { Gateway } from "@kubernetes-models/istio/networking.istio.io/v1/Gateway";
import { ServiceEntry } from "@kubernetes-models/istio/networking.istio.io/v1/ServiceEntry";
import { Sidecar } from "@kubernetes-models/istio/networking.istio.io/v1/Sidecar";
import { VirtualService } from "@kubernetes-models/istio/networking.istio.io/v1/VirtualService";
import { WorkloadEntry } from "@kubernetes-models/istio/networking.istio.io/v1/WorkloadEntry";
import { EnvoyFilter } from "@kubernetes-models/istio/networking.istio.io/v1alpha3/EnvoyFilter";
import { AuthorizationPolicy } from "@kubernetes-models/istio/security.istio.io/v1/AuthorizationPolicy";
import { PeerAuthentication } from "@kubernetes-models/istio/security.istio.io/v1/PeerAuthentication";
import { RequestAuthentication } from "@kubernetes-models/istio/security.istio.io/v1/RequestAuthentication";
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
import { ANNOTATION_SOURCE_FILE } from "./labels.js";
import { validateSailResource } from "./lifecycle.js";
import { TranslateCode, type IstioResource } from "./types.js";

interface Validatable {
  validate(): void;
}
type ModelCtor = (new (data: never) => Validatable) & { readonly prototype: Validatable };

const MODELS: Readonly<Record<string, ModelCtor>> = {
  "networking.istio.io/v1/VirtualService": VirtualService,
  "networking.istio.io/v1/DestinationRule": DestinationRule,
  "networking.istio.io/v1/Gateway": Gateway,
  "networking.istio.io/v1/ServiceEntry": ServiceEntry,
  "networking.istio.io/v1/Sidecar": Sidecar,
  "networking.istio.io/v1/WorkloadEntry": WorkloadEntry,
  // Istio serves EnvoyFilter as v1alpha3 only; the Envoy config in its patches is checked by envoy-config.ts.
  "networking.istio.io/v1alpha3/EnvoyFilter": EnvoyFilter,
  "security.istio.io/v1/AuthorizationPolicy": AuthorizationPolicy,
  "security.istio.io/v1/PeerAuthentication": PeerAuthentication,
  "security.istio.io/v1/RequestAuthentication": RequestAuthentication,
  // Kubernetes kinds of a gateway installation (lifecycle.ts), validated with Kubernetes' own schemas.
  "apps/v1/Deployment": Deployment,
  "v1/ConfigMap": ConfigMap,
  "v1/Service": Service,
  "v1/ServiceAccount": ServiceAccount,
  "rbac.authorization.k8s.io/v1/Role": Role,
  "rbac.authorization.k8s.io/v1/RoleBinding": RoleBinding,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
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
  const Model = MODELS[`${r.apiVersion}/${r.kind}`];
  if (Model === undefined) {
    return isIstioKind(r) ? [{ path: "/kind", message: `no schema for ${r.apiVersion} ${r.kind}` }] : [];
  }
  return modelIssues(Model, r, plainMetadata(r.metadata));
}

function modelIssues(Model: ModelCtor, r: IstioResource, plain: boolean): IstioIssue[] {
  try {
    // The model's constructor deep-copies its input (filtering undefined members, which canonical
    // output never has); its validate() only runs the generated, non-mutating ajv function on
    // `this`. Calling it on the object itself validates the same data without the copy.
    Model.prototype.validate.call(plain ? { ...r, metadata: { name: r.metadata.name, namespace: r.metadata.namespace } } : r);
    return r.kind === "EnvoyFilter" ? validateEnvoyPatches(r.spec) : [];
  } catch (err) {
    const errors = (err as { errors?: readonly { instancePath?: string; message?: string }[] }).errors;
    if (errors === undefined) return [{ path: "", message: err instanceof Error ? err.message : String(err) }];
    return errors.map((e) => ({ path: e.instancePath ?? "", message: e.message ?? "invalid" }));
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
    const Model = MODELS[type];
    if (Model === undefined || !specOnly(r) || !plainMetadata(r.metadata)) return validateIstioResource(r);
    let kinds = bySpec.get(r.spec);
    if (kinds === undefined) bySpec.set(r.spec, (kinds = new Map<string, IstioIssue[]>()));
    let issues = kinds.get(type);
    if (issues === undefined) kinds.set(type, (issues = modelIssues(Model, r, true)));
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
