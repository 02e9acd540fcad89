/**
 * RootTrustPolicy → per selected Istio mesh an `internal.gitmesh.io/v1 IssuedCertificate` in that
 * cluster's output: a request for an intermediate CA (target Secret `cacerts` in the istiod
 * namespace, SPIFFE id of istiod) that the relay and the agent act on. It is not an Istio kind, so
 * it is checked against its own small schema (`validateIssuedCertificate`) instead of Istio's.
 *
 * RootTrustPolicies are admin objects (admin namespace, no workspace). To render each cluster's
 * request exactly once, the first workspace (by name) with namespaces in a cluster renders it; the
 * policy's diagnostics are reported by the first workspace of the fleet. `applyToMeshes` empty =
 * every mesh; two policies selecting one mesh: the oldest wins (ROOT_TRUST_CONFLICT).
 */
import AjvModule from "ajv";
import { Severity, type Diagnostic } from "../core/index.js";
import { reportUnsupported, type WorkspaceContext } from "./context.js";
import { DestinationCode, olderFirst, spiffe } from "./destination-common.js";
import type { InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { stableName } from "./names.js";
import { asArray, asNumber, asRecord, asString, labelsMatch } from "./selectors.js";
import { TranslateCode, type Emitted, type IstioResource, type TranslatorOutput } from "./types.js";

export const ISSUED_CERTIFICATE_API_VERSION = "internal.gitmesh.io/v1";
export const ISSUED_CERTIFICATE_KIND = "IssuedCertificate";
export const CERT_DEFAULTS = { ttlDays: 365, rsaKeySizeBytes: 4096, orgName: "gloo-mesh" } as const;

const SCHEMA = {
  type: "object",
  required: ["apiVersion", "kind", "metadata", "spec"],
  properties: {
    apiVersion: { const: ISSUED_CERTIFICATE_API_VERSION },
    kind: { const: ISSUED_CERTIFICATE_KIND },
    metadata: { type: "object", required: ["name", "namespace", "labels"] },
    spec: {
      type: "object",
      additionalProperties: false,
      required: ["hosts", "secret", "certOptions", "ca", "mesh", "rootTrustPolicy"],
      properties: {
        hosts: { type: "array", minItems: 1, items: { type: "string", pattern: "^spiffe://[^/]+/ns/[^/]+/sa/[^/]+$" } },
        secret: {
          type: "object",
          additionalProperties: false,
          required: ["name", "namespace"],
          properties: { name: { type: "string", minLength: 1 }, namespace: { type: "string", minLength: 1 } },
        },
        certOptions: {
          type: "object",
          additionalProperties: false,
          required: ["ttlDays", "rsaKeySizeBytes", "orgName"],
          properties: {
            ttlDays: { type: "integer", minimum: 1 },
            rsaKeySizeBytes: { type: "integer", enum: [2048, 3072, 4096] },
            orgName: { type: "string", minLength: 1 },
            secretRotationGracePeriodRatio: { type: "number", exclusiveMinimum: 0, maximum: 1 },
          },
        },
        ca: {
          type: "object",
          additionalProperties: false,
          properties: {
            generated: { type: "object" },
            secretRef: { type: "object", required: ["name"], properties: { name: { type: "string" }, namespace: { type: "string" } } },
          },
          minProperties: 1,
          maxProperties: 1,
        },
        mesh: {
          type: "object",
          additionalProperties: false,
          required: ["cluster", "namespace", "revision", "trustDomain"],
          properties: { cluster: { type: "string" }, namespace: { type: "string" }, revision: { type: "string" }, trustDomain: { type: "string" } },
        },
        rootTrustPolicy: { type: "object", required: ["name", "namespace"], properties: { name: { type: "string" }, namespace: { type: "string" } } },
        autoRestartPods: { type: "boolean" },
      },
    },
  },
} as const;

type ValidateFn = ((data: unknown) => boolean) & { errors?: { instancePath: string; message?: string }[] | null };
let validator: ValidateFn | undefined;

/** Schema issues of a rendered IssuedCertificate (compiled once). */
export function validateIssuedCertificate(obj: unknown): { path: string; message: string }[] {
  if (validator === undefined) {
    const Ajv = AjvModule as unknown as new (opts: object) => { compile(s: object): ValidateFn };
    validator = new Ajv({ allErrors: true, strict: false }).compile(SCHEMA);
  }
  if (validator(obj)) return [];
  return (validator.errors ?? []).map((e) => ({ path: e.instancePath, message: e.message ?? "invalid" }));
}

interface MeshRef {
  readonly cluster: string;
  readonly namespace: string;
  readonly revision: string;
  readonly trustDomain: string;
  readonly istiodServiceAccount: string;
}

type Assignments = { byMesh: Map<string, { mesh: MeshRef; policy: InputObject }>; diagnostics: Diagnostic[] };
const assignmentMemo = new WeakMap<object, { policies: readonly InputObject[]; result: Assignments }>();

/**
 * Which policy issues for which mesh, over the whole fleet (the same for every workspace).
 * Depends on the RootTrustPolicies, clusters and discovery only: memoised per index structure
 * while the policy objects are the same.
 */
function assignments(ctx: WorkspaceContext): Assignments {
  const policies = ctx.index.byKind.get("RootTrustPolicy") ?? [];
  const hit = assignmentMemo.get(ctx.index.structure);
  if (hit !== undefined && hit.policies.length === policies.length && hit.policies.every((p, i) => p === policies[i])) return hit.result;
  const result = computeAssignments(ctx);
  assignmentMemo.set(ctx.index.structure, { policies, result });
  return result;
}

function computeAssignments(ctx: WorkspaceContext): Assignments {
  const diagnostics: Diagnostic[] = [];
  const byMesh = new Map<string, { mesh: MeshRef; policy: InputObject }>();
  const policies = [...(ctx.index.byKind.get("RootTrustPolicy") ?? [])].sort(olderFirst);
  for (const p of policies) {
    const selectors = asArray(asRecord(p.spec).applyToMeshes).map((m) => asRecord(asRecord(m).istio));
    let n = 0;
    for (const cluster of ctx.index.clusters) {
      const clusterLabels = ctx.index.clusterLabels.get(cluster) ?? {};
      for (const m of ctx.snapshot(cluster)?.meshes ?? []) {
        const mesh: MeshRef = { cluster, namespace: m.namespace, revision: m.revision ?? "", trustDomain: m.trustDomain, istiodServiceAccount: m.istiodServiceAccount ?? "istiod" };
        const ok =
          selectors.length === 0 ||
          selectors.some((s) => {
            const rev = asString(s.revision);
            const ns = asString(s.namespace);
            return (rev === undefined || rev === "" || safeRegex(rev).test(mesh.revision)) && (ns === undefined || ns === "" || ns === mesh.namespace) && labelsMatch(asRecord(s.clusterSelector) as Record<string, string>, clusterLabels);
          });
        if (!ok) continue;
        n++;
        const key = `${cluster}/${mesh.namespace}/${mesh.revision}`;
        const prev = byMesh.get(key);
        if (prev === undefined) byMesh.set(key, { mesh, policy: p });
        else {
          diagnostics.push(ctx.diag(p, DestinationCode.RootTrustConflict, Severity.Error, "/spec/applyToMeshes",
            `the mesh ${mesh.namespace} (revision "${mesh.revision}") in cluster "${cluster}" is already selected by the older RootTrustPolicy ${prev.policy.metadata.namespace ?? ""}/${prev.policy.metadata.name}, which wins. Narrow applyToMeshes.`));
        }
      }
    }
    if (n === 0) diagnostics.push(ctx.diag(p, TranslateCode.SelectsNothing, Severity.Warning, "/spec/applyToMeshes", "the RootTrustPolicy selects no discovered Istio mesh; check revision, namespace and clusterSelector."));
  }
  return { byMesh, diagnostics };
}

function safeRegex(s: string): RegExp {
  try {
    return new RegExp(`^(?:${s})$`);
  } catch {
    return /^$/;
  }
}

export function translateRootTrust(ctx: WorkspaceContext): TranslatorOutput {
  const index = ctx.index;
  const policies = index.byKind.get("RootTrustPolicy") ?? [];
  if (policies.length === 0) return { resources: [], diagnostics: [] };
  const ws = ctx.workspace.name;
  const { byMesh, diagnostics: selDiags } = assignments(ctx);
  const reporter = index.workspaceNames[0] === ws;
  const diagnostics: Diagnostic[] = reporter ? [...selDiags] : [];
  if (reporter) {
    for (const p of policies) {
      const config = asRecord(asRecord(p.spec).config);
      diagnostics.push(...reportUnsupported(ctx, p, config, "/spec/config", ["mgmtServerCa", "intermediateCertOptions", "autoRestartPods"]));
      if (config.mgmtServerCa === undefined) diagnostics.push(ctx.diag(p, TranslateCode.InvalidField, Severity.Warning, "/spec/config", "no mgmtServerCa given; a generated root CA (mgmtServerCa.generated) is assumed."));
    }
  }
  const resources: Emitted[] = [];
  for (const { mesh, policy } of [...byMesh.values()]) {
    // the first workspace (by name) with namespaces in the cluster renders its requests
    const emitter = index.workspaceNames.find((w) => index.workspaces.get(w)?.namespaces.has(mesh.cluster));
    if (emitter !== ws) continue;
    const config = asRecord(asRecord(policy.spec).config);
    const opts = asRecord(config.intermediateCertOptions);
    const ratio = asNumber(opts.secretRotationGracePeriodRatio);
    const ca = asRecord(config.mgmtServerCa);
    const secretRef = asRecord(ca.secretRef);
    const resource: IstioResource = {
      apiVersion: ISSUED_CERTIFICATE_API_VERSION,
      kind: ISSUED_CERTIFICATE_KIND,
      metadata: outputMetadata(stableName("istiod", mesh.revision, mesh.namespace, mesh.cluster), mesh.namespace, mesh.cluster, ws, ctx.parentOf(policy)),
      spec: {
        hosts: [spiffe(mesh.trustDomain, mesh.namespace, mesh.istiodServiceAccount)],
        secret: { name: "cacerts", namespace: mesh.namespace },
        certOptions: {
          ttlDays: asNumber(opts.ttlDays) || CERT_DEFAULTS.ttlDays,
          rsaKeySizeBytes: asNumber(opts.rsaKeySizeBytes) || CERT_DEFAULTS.rsaKeySizeBytes,
          orgName: asString(opts.orgName) || CERT_DEFAULTS.orgName,
          ...(ratio !== undefined && ratio > 0 ? { secretRotationGracePeriodRatio: ratio } : {}),
        },
        ca: ca.secretRef !== undefined ? { secretRef: { name: asString(secretRef.name) ?? "", namespace: asString(secretRef.namespace) ?? index.adminNamespace } } : { generated: asRecord(ca.generated) },
        mesh: { cluster: mesh.cluster, namespace: mesh.namespace, revision: mesh.revision, trustDomain: mesh.trustDomain },
        rootTrustPolicy: { name: policy.metadata.name, namespace: policy.metadata.namespace ?? index.adminNamespace },
        ...(config.autoRestartPods === true ? { autoRestartPods: true } : {}),
      },
    };
    const issues = validateIssuedCertificate(resource);
    for (const issue of issues) {
      diagnostics.push(ctx.diag(policy, TranslateCode.InvalidOutput, Severity.Error, "/spec/config/intermediateCertOptions",
        `the IssuedCertificate for mesh ${mesh.namespace} in cluster "${mesh.cluster}" is invalid at ${issue.path}: ${issue.message}. Fix intermediateCertOptions (rsaKeySizeBytes 2048/3072/4096, ttlDays ≥ 1).`));
    }
    if (issues.length === 0) resources.push({ cluster: mesh.cluster, resource });
  }
  return { resources, diagnostics };
}
