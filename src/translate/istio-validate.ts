/**
 * Every rendered object is validated against Istio's CRD schemas (Istio 1.29, via
 * @kubernetes-models/istio 3.0.1: networking.istio.io/v1 and security.istio.io/v1). A failure is a
 * gitmesh bug or an input value Istio would reject; either way it is reported, never shipped silently.
 */
import { DestinationRule, Gateway, ServiceEntry, Sidecar, VirtualService, WorkloadEntry } from "@kubernetes-models/istio/networking.istio.io/v1";
import { AuthorizationPolicy, PeerAuthentication } from "@kubernetes-models/istio/security.istio.io/v1";
import { Severity, type Diagnostic } from "../core/index.js";
import { TranslateCode, type IstioResource } from "./types.js";

interface Validatable {
  validate(): void;
}
type ModelCtor = new (data: never) => Validatable;

const MODELS: Readonly<Record<string, ModelCtor>> = {
  "networking.istio.io/v1/VirtualService": VirtualService,
  "networking.istio.io/v1/DestinationRule": DestinationRule,
  "networking.istio.io/v1/Gateway": Gateway,
  "networking.istio.io/v1/ServiceEntry": ServiceEntry,
  "networking.istio.io/v1/Sidecar": Sidecar,
  "networking.istio.io/v1/WorkloadEntry": WorkloadEntry,
  "security.istio.io/v1/AuthorizationPolicy": AuthorizationPolicy,
  "security.istio.io/v1/PeerAuthentication": PeerAuthentication,
};

export interface IstioIssue {
  readonly path: string;
  readonly message: string;
}

/** Whether a kind is one of Istio's (validated) or a gitmesh-internal kind (not validated here). */
export function isIstioKind(r: Pick<IstioResource, "apiVersion">): boolean {
  return r.apiVersion.endsWith(".istio.io/v1");
}

/** Schema issues of one rendered object; an Istio apiVersion/kind gitmesh does not know is itself an issue. */
export function validateIstioResource(r: IstioResource): IstioIssue[] {
  const Model = MODELS[`${r.apiVersion}/${r.kind}`];
  if (Model === undefined) {
    return isIstioKind(r) ? [{ path: "/kind", message: `no schema for ${r.apiVersion} ${r.kind}` }] : [];
  }
  try {
    // The model copies top-level fields and validation does not mutate: no deep clone needed.
    new Model(r as never).validate();
    return [];
  } catch (err) {
    const errors = (err as { errors?: readonly { instancePath?: string; message?: string }[] }).errors;
    if (errors === undefined) return [{ path: "", message: err instanceof Error ? err.message : String(err) }];
    return errors.map((e) => ({ path: e.instancePath ?? "", message: e.message ?? "invalid" }));
  }
}

/** INVALID_OUTPUT diagnostics for every object that fails its schema. */
export function validateOutputs(cluster: string, resources: readonly IstioResource[]): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const r of resources) {
    for (const issue of validateIstioResource(r)) {
      out.push({
        code: TranslateCode.InvalidOutput,
        severity: Severity.Error,
        path: issue.path,
        message: `rendered ${r.kind} ${r.metadata.namespace}/${r.metadata.name} for cluster "${cluster}" fails Istio's schema: ${issue.message}. Fix the value in the parent ${r.metadata.labels["gitmesh.io/parent-kind"] ?? "object"} or report a gitmesh bug.`,
        object: { apiVersion: r.apiVersion, kind: r.kind, name: r.metadata.name, namespace: r.metadata.namespace, cluster },
      });
    }
  }
  return out;
}
