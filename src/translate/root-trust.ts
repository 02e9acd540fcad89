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
 *
 * Identity comes from Git, never from discovery: a cluster's trust domain is the one its
 * KubernetesCluster assigns (annotation `gitmesh.io/trust-domain`, default the cluster name — the
 * trust domain Gloo's Istio installations give each cluster). Only clusters with a KubernetesCluster
 * get an intermediate. A mesh whose discovered trust domain differs from the assigned one gets NO
 * IssuedCertificate and an error (TRUST_DOMAIN_MISMATCH): an agent that reports another cluster's
 * trust domain must not obtain a CA for it. Discovery still decides which meshes exist (namespace,
 * revision, istiod's service account): those only name identities inside the assigned trust domain,
 * which the mesh CA's name constraints enforce (src/mesh-ca).
 */
import { Severity, type Diagnostic } from "../core/index.js";
import { reportUnsupported, type WorkspaceContext } from "./context.js";
import { DestinationCode, olderFirst, spiffe } from "./destination-common.js";
import type { InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { stableName } from "./names.js";
import { subsetValidator, type SubsetIssue } from "./subset-schema.js";
import { asArray, asNumber, asRecord, asString, labelsMatch } from "./selectors.js";
import { TranslateCode, type Emitted, type IstioResource, type TranslatorOutput } from "./types.js";

export const ISSUED_CERTIFICATE_API_VERSION = "internal.gitmesh.io/v1";
export const ISSUED_CERTIFICATE_KIND = "IssuedCertificate";
export const CERT_DEFAULTS = { ttlDays: 365, rsaKeySizeBytes: 4096, orgName: "gloo-mesh" } as const;
/** KubernetesCluster annotation that assigns a trust domain other than the cluster name. */
export const TRUST_DOMAIN_ANNOTATION = "gitmesh.io/trust-domain";

/** Diagnostic codes of this translator. */
export const RootTrustCode = {
  /** Discovery reports a trust domain other than the one Git assigns: no intermediate for that mesh. */
  TrustDomainMismatch: "TRUST_DOMAIN_MISMATCH",
  /** The assigned trust domain is not a valid SPIFFE trust domain. */
  InvalidTrustDomain: "INVALID_TRUST_DOMAIN",
  /** Two clusters are assigned the same trust domain: each one's intermediate can issue the other's identities. */
  TrustDomainShared: "TRUST_DOMAIN_SHARED",
} as const;

/** SPIFFE trust domain: lowercase letters, digits, dots, dashes, underscores (spiffe-id spec §2.1). */
const TRUST_DOMAIN_RE = /^[a-z0-9._-]{1,255}$/;

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
        passiveCas: {
          type: "array",
          items: {
            type: "object",
            additionalProperties: false,
            properties: {
              generated: { type: "object" },
              secretRef: { type: "object", required: ["name"], properties: { name: { type: "string" }, namespace: { type: "string" } } },
            },
            minProperties: 1,
            maxProperties: 1,
          },
        },
        rootTrustPolicy: { type: "object", required: ["name", "namespace"], properties: { name: { type: "string" }, namespace: { type: "string" } } },
        autoRestartPods: { type: "boolean" },
      },
    },
  },
} as const;

/** Schema issues of a rendered IssuedCertificate (compiled once, on first use). */
export const validateIssuedCertificate: (obj: unknown) => SubsetIssue[] = subsetValidator(SCHEMA);

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

/**
 * The trust domain Git assigns to each cluster that has a KubernetesCluster: its
 * `gitmesh.io/trust-domain` annotation, else the cluster name. Invalid ones are left out (error), and
 * a trust domain assigned to several clusters is reported (warning).
 */
function assignedTrustDomains(ctx: WorkspaceContext, diagnostics: Diagnostic[]): Map<string, string> {
  const out = new Map<string, string>();
  const byDomain = new Map<string, string[]>();
  const kcs = [...(ctx.index.byKind.get("KubernetesCluster") ?? [])].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
  for (const kc of kcs) {
    const annotated = kc.metadata.annotations?.[TRUST_DOMAIN_ANNOTATION];
    const td = annotated ?? kc.metadata.name;
    if (!TRUST_DOMAIN_RE.test(td)) {
      diagnostics.push(ctx.diag(kc, RootTrustCode.InvalidTrustDomain, Severity.Error, annotated !== undefined ? `/metadata/annotations/${TRUST_DOMAIN_ANNOTATION.replace("/", "~1")}` : "/metadata/name",
        `"${td}" is not a SPIFFE trust domain (lowercase letters, digits, ".", "-", "_"); no Istio intermediate CA is issued for cluster "${kc.metadata.name}". Set the annotation ${TRUST_DOMAIN_ANNOTATION} to its Istio trust domain.`));
      continue;
    }
    out.set(kc.metadata.name, td);
    byDomain.set(td, [...(byDomain.get(td) ?? []), kc.metadata.name]);
  }
  for (const [td, clusters] of byDomain) {
    if (clusters.length < 2) continue;
    for (const c of clusters.slice(1)) {
      const kc = kcs.find((k) => k.metadata.name === c)!;
      diagnostics.push(ctx.diag(kc, RootTrustCode.TrustDomainShared, Severity.Warning, "/metadata/annotations",
        `clusters ${clusters.map((x) => `"${x}"`).join(", ")} share the trust domain "${td}": each one's Istio intermediate CA can issue the others' workload identities. Give each cluster its own trust domain (annotation ${TRUST_DOMAIN_ANNOTATION}, default the cluster name).`));
    }
  }
  return out;
}

function computeAssignments(ctx: WorkspaceContext): Assignments {
  const diagnostics: Diagnostic[] = [];
  const byMesh = new Map<string, { mesh: MeshRef; policy: InputObject }>();
  const policies = [...(ctx.index.byKind.get("RootTrustPolicy") ?? [])].sort(olderFirst);
  const assigned = policies.length > 0 ? assignedTrustDomains(ctx, diagnostics) : new Map<string, string>();
  const reported = new Set<string>();
  for (const p of policies) {
    const selectors = asArray(asRecord(p.spec).applyToMeshes).map((m) => asRecord(asRecord(m).istio));
    let n = 0;
    for (const cluster of ctx.index.clusters) {
      const clusterLabels = ctx.index.clusterLabels.get(cluster) ?? {};
      const trustDomain = assigned.get(cluster);
      // Not registered in Git (discovery only), or an invalid assignment (reported above): nothing to issue.
      if (trustDomain === undefined) continue;
      for (const m of ctx.snapshot(cluster)?.meshes ?? []) {
        const mesh: MeshRef = { cluster, namespace: m.namespace, revision: m.revision ?? "", trustDomain, istiodServiceAccount: m.istiodServiceAccount ?? "istiod" };
        const ok =
          selectors.length === 0 ||
          selectors.some((s) => {
            const rev = asString(s.revision);
            const ns = asString(s.namespace);
            return (rev === undefined || rev === "" || safeRegex(rev).test(mesh.revision)) && (ns === undefined || ns === "" || ns === mesh.namespace) && labelsMatch(asRecord(s.clusterSelector) as Record<string, string>, clusterLabels);
          });
        if (!ok) continue;
        n++;
        if (m.trustDomain !== trustDomain) {
          const key = `${cluster}/${m.namespace}/${mesh.revision}`;
          if (!reported.has(key)) {
            reported.add(key);
            diagnostics.push(ctx.diag(p, RootTrustCode.TrustDomainMismatch, Severity.Error, "/spec/applyToMeshes",
              `cluster "${cluster}" reports the trust domain "${m.trustDomain}" for its mesh ${m.namespace} (revision "${mesh.revision}"), but Git assigns it "${trustDomain}" (KubernetesCluster ${cluster}: annotation ${TRUST_DOMAIN_ANNOTATION}, default the cluster name); no Istio intermediate CA is issued for that mesh. Set meshConfig.trustDomain to "${trustDomain}" in that cluster's Istio, or assign its real trust domain with the annotation.`));
          }
          continue;
        }
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

/** A MgmtServerCertificateAuthority as the IssuedCertificate names it (secretRef namespace: the policy's, as Gloo). */
function caRef(ca: Record<string, unknown>, policyNamespace: string): Record<string, unknown> {
  if (ca.secretRef === undefined) return { generated: asRecord(ca.generated) };
  const ref = asRecord(ca.secretRef);
  return { secretRef: { name: asString(ref.name) ?? "", namespace: asString(ref.namespace) || policyNamespace } };
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
      diagnostics.push(...reportUnsupported(ctx, p, config, "/spec/config", ["mgmtServerCa", "intermediateCertOptions", "autoRestartPods", "passiveCertificateAuthorities"]));
      // selectors.proto MeshSelector.Istio.selector: "select via the labels of the istiod deployment";
      // discovery reports no istiod labels, so the meshes are selected by revision, namespace and
      // cluster labels only: the policy may cover more meshes than Gloo's.
      asArray(asRecord(p.spec).applyToMeshes).forEach((m, i) => {
        if (Object.keys(asRecord(asRecord(asRecord(m).istio).selector)).length > 0) {
          diagnostics.push(ctx.diag(p, TranslateCode.UnsupportedField, Severity.Warning, `/spec/applyToMeshes/${String(i)}/istio/selector`, "istiod's deployment labels are not discovered, so selector is not used: the meshes are selected by revision, namespace and clusterSelector, which may cover more meshes than Gloo selects; narrow those instead"));
        }
      });
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
    const policyNamespace = policy.metadata.namespace ?? index.adminNamespace;
    const passiveCas = asArray(config.passiveCertificateAuthorities).map((p) => caRef(asRecord(p), policyNamespace));
    const resource: IstioResource = {
      apiVersion: ISSUED_CERTIFICATE_API_VERSION,
      kind: ISSUED_CERTIFICATE_KIND,
      metadata: outputMetadata(stableName("istiod", mesh.revision, mesh.namespace, mesh.cluster), mesh.namespace, mesh.cluster, ws, ctx.parentOf(policy)),
      spec: {
        // Keys in canonical (code-unit) order: the canonical form is this object, not a copy.
        ...(config.autoRestartPods === true ? { autoRestartPods: true } : {}),
        ca: caRef(asRecord(config.mgmtServerCa), policyNamespace),
        certOptions: {
          orgName: asString(opts.orgName) || CERT_DEFAULTS.orgName,
          rsaKeySizeBytes: asNumber(opts.rsaKeySizeBytes) || CERT_DEFAULTS.rsaKeySizeBytes,
          ...(ratio !== undefined && ratio > 0 ? { secretRotationGracePeriodRatio: ratio } : {}),
          ttlDays: asNumber(opts.ttlDays) || CERT_DEFAULTS.ttlDays,
        },
        hosts: [spiffe(mesh.trustDomain, mesh.namespace, mesh.istiodServiceAccount)],
        mesh: { cluster: mesh.cluster, namespace: mesh.namespace, revision: mesh.revision, trustDomain: mesh.trustDomain },
        ...(passiveCas.length > 0 ? { passiveCas } : {}),
        rootTrustPolicy: { name: policy.metadata.name, namespace: policyNamespace },
        secret: { name: "cacerts", namespace: mesh.namespace },
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
