/**
 * Shared checks for chart tests: Kubernetes schema validation (kubernetes-models), golden renders
 * (UPDATE_GOLDEN=1 rewrites them), RBAC expansion into comparable grants, pod hardening.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { Deployment } from "kubernetes-models/apps/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { ConfigMap, Secret, Service, ServiceAccount } from "kubernetes-models/v1";
import { promisify } from "node:util";
import type { KubeObject } from "../../src/agent/index.js";
import { loadCase, runCase } from "../translate/golden.js";
import type { Manifest } from "./helm.js";

const run = promisify(execFile);

interface Validatable {
  validate(): void;
}
type ModelClass = new (data: never) => Validatable;

const MODELS: Readonly<Record<string, ModelClass>> = {
  "apps/v1/Deployment": Deployment,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "v1/Service": Service,
  "v1/ServiceAccount": ServiceAccount,
  "v1/ConfigMap": ConfigMap,
  "v1/Secret": Secret,
  "rbac.authorization.k8s.io/v1/ClusterRole": ClusterRole,
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": ClusterRoleBinding,
  "rbac.authorization.k8s.io/v1/Role": Role,
  "rbac.authorization.k8s.io/v1/RoleBinding": RoleBinding,
};

/** Validates every manifest against the Kubernetes OpenAPI schema of its kind; unknown kinds fail. */
export function validateAll(manifests: readonly Manifest[]): void {
  expect(manifests.length).toBeGreaterThan(0);
  for (const m of manifests) {
    const key = `${m.object.apiVersion}/${m.object.kind}`;
    const Model = MODELS[key];
    if (Model === undefined) throw new Error(`${m.source}: no schema registered for ${key}`);
    try {
      new Model(m.object as never).validate();
    } catch (err) {
      throw new Error(`${m.source}: ${key} ${m.object.metadata.name} is not a valid Kubernetes object: ${String(err)}`);
    }
  }
}

export function find(manifests: readonly Manifest[], kind: string, name: string): Record<string, unknown> {
  const m = manifests.find((x) => x.object.kind === kind && x.object.metadata.name === name);
  if (m === undefined) throw new Error(`no ${kind} ${name} in render (have: ${manifests.map((x) => `${x.object.kind}/${x.object.metadata.name}`).join(", ")})`);
  return m.object;
}

export function ofKind(manifests: readonly Manifest[], kind: string): Record<string, unknown>[] {
  return manifests.filter((m) => m.object.kind === kind).map((m) => m.object);
}

const GOLDEN_DIR = join(dirname(fileURLToPath(import.meta.url)), "golden");

/** Compares text with golden/<name>.yaml; UPDATE_GOLDEN=1 rewrites the file instead. */
export function expectGolden(name: string, text: string): void {
  const file = join(GOLDEN_DIR, `${name}.yaml`);
  if (process.env.UPDATE_GOLDEN === "1") {
    mkdirSync(GOLDEN_DIR, { recursive: true });
    writeFileSync(file, text);
    return;
  }
  // A missing golden fails everywhere (locally too, CI or not): a reviewer must see every golden written.
  expect(existsSync(file), `golden file ${file} is missing: run UPDATE_GOLDEN=1 vitest run test/charts and review it`).toBe(true);
  expect(text, `render differs from ${file} (UPDATE_GOLDEN=1 rewrites it)`).toBe(readFileSync(file, "utf8"));
}

/** One permission: "<scope> <group>/<resource> <verb> <name>", scope "cluster" or "ns:<namespace>", name "*" for any. */
export type Grant = string;

export function grant(scope: string, group: string, resource: string, verb: string, name = "*"): Grant {
  return `${scope} ${group}/${resource} ${verb} ${name}`;
}

/** The parts of a Grant. */
export function parseGrant(g: Grant): { scope: string; group: string; resource: string; verb: string; name: string } {
  const [scope, groupResource, verb, name] = g.split(" ") as [string, string, string, string];
  const [group, resource] = groupResource.split("/") as [string, string];
  return { scope, group, resource, verb, name };
}

/** `kubectl auth can-i` against a real API server as `user` (e.g. system:serviceaccount:ns:sa); true for "yes". */
export async function kubectlCanI(kubeconfigPath: string, g: Grant, user: string): Promise<boolean> {
  const p = parseGrant(g);
  const target = `${p.resource}${p.group === "" ? "" : `.${p.group}`}${p.name === "*" ? "" : `/${p.name}`}`;
  const where = p.scope === "cluster" ? ["--all-namespaces"] : ["--namespace", p.scope.slice("ns:".length)];
  const args = ["auth", "can-i", p.verb, target, ...where, "--as", user, "--kubeconfig", kubeconfigPath];
  try {
    const { stdout } = await run("kubectl", args);
    if (stdout.trim() !== "yes") throw new Error(`kubectl ${args.join(" ")}: ${stdout}`);
    return true;
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    // can-i exits 1 with "no" (and sometimes a reason on stderr) when denied; anything else is an error.
    if (e.code === 1 && (e.stdout ?? "").trim().startsWith("no")) return false;
    throw new Error(`kubectl ${args.join(" ")} failed: ${e.stderr ?? String(err)}`);
  }
}

/**
 * The Kubernetes API calls the agent makes, as (scope, group/resource, verb, name). Where each
 * comes from in src/agent (kept here while the agent exports no such list):
 * - discovery.ts informers over kube.ts KINDS Namespace, Node, Service, Pod, Deployment,
 *   StatefulSet, DaemonSet in all namespaces: list + watch (informer.ts), get through KubeReader.
 * - discovery.ts ConfigMap informer only in the Istio namespace (mesh config).
 * - kube.ts ISTIO_KINDS: discovery/drift informers (list, watch, get), applier.ts server-side apply
 *   (PATCH; an apply that creates the object also needs create) and prune (delete). No update.
 * - leader.ts LEASE_KIND: get, create, and replace (update) of one Lease in the agent's namespace.
 * - relay-link.ts RELAY_SECRETS: get the root CA and the bootstrap token; server-side apply
 *   (get, patch, create) of the client certificate secret.
 * - cacerts.ts: get and server-side apply of the Istio `cacerts` secret in the Istio namespace.
 */
export function agentCalls(opts: { ns: string; istioNs: string; lease: string; inventory: string; secrets: { root: string; token: string; client: string }; cacerts: boolean }): Set<Grant> {
  const g = new Set<Grant>();
  const read = ["get", "list", "watch"];
  for (const r of ["namespaces", "nodes", "services", "pods"]) for (const v of read) g.add(grant("cluster", "", r, v));
  for (const r of ["deployments", "statefulsets", "daemonsets"]) for (const v of read) g.add(grant("cluster", "apps", r, v));
  const istio: [string, string][] = [
    ["networking.istio.io", "gateways"], ["networking.istio.io", "serviceentries"], ["networking.istio.io", "workloadentries"],
    ["networking.istio.io", "destinationrules"], ["networking.istio.io", "envoyfilters"], ["networking.istio.io", "sidecars"], ["networking.istio.io", "virtualservices"],
    ["security.istio.io", "peerauthentications"], ["security.istio.io", "requestauthentications"], ["security.istio.io", "authorizationpolicies"],
  ];
  for (const [grp, r] of istio) for (const v of [...read, "create", "patch", "delete"]) g.add(grant("cluster", grp, r, v));
  for (const v of read) g.add(grant(`ns:${opts.istioNs}`, "", "configmaps", v));
  const own = `ns:${opts.ns}`;
  g.add(grant(own, "coordination.k8s.io", "leases", "create"));
  g.add(grant(own, "coordination.k8s.io", "leases", "get", opts.lease));
  g.add(grant(own, "coordination.k8s.io", "leases", "update", opts.lease));
  g.add(grant(own, "", "secrets", "get", opts.secrets.root));
  g.add(grant(own, "", "secrets", "get", opts.secrets.token));
  g.add(grant(own, "", "secrets", "create")); // create cannot be limited by name in Kubernetes RBAC
  // inventory.ts: the inventory ConfigMap (get, create, replace)
  g.add(grant(own, "", "configmaps", "create"));
  for (const v of ["get", "update"]) g.add(grant(own, "", "configmaps", v, opts.inventory));
  for (const v of ["get", "patch"]) g.add(grant(own, "", "secrets", v, opts.secrets.client));
  if (opts.cacerts) {
    g.add(grant(`ns:${opts.istioNs}`, "", "secrets", "create"));
    for (const v of ["get", "patch"]) g.add(grant(`ns:${opts.istioNs}`, "", "secrets", v, "cacerts"));
  }
  return g;
}

export const DEFAULT_SECRETS = { root: "relay-root-tls-secret", token: "relay-identity-token-secret", client: "relay-client-tls-secret" };

/** Relay secret names (DESIGN.md "Relay protocol"; src/relay/constants.ts RELAY_SECRETS). */
export const RELAY = { root: "relay-root-tls-secret", server: "relay-server-tls-secret", signing: "relay-tls-signing-secret", token: "relay-identity-token-secret" };

/**
 * What the server calls (DESIGN.md "Management server"/"Relay protocol"): get/watch its relay
 * secrets by name; when it generates the CA (the default) also create them and update them by name.
 */
export function serverCalls(ns: string, generate: boolean): Set<Grant> {
  const g = new Set<Grant>();
  const scope = `ns:${ns}`;
  for (const n of Object.values(RELAY)) for (const v of ["get", "watch"]) g.add(grant(scope, "", "secrets", v, n));
  // Cluster identity records relay-identity-<cluster> (compare-and-swap; no name-prefix RBAC for Secrets).
  for (const v of ["get", "list", "create", "update", "delete"]) g.add(grant(scope, "", "secrets", v));
  // the mesh root (src/server/mesh-root-storage.ts): read, created once (meshCa.generateRoot, default true)
  g.add(grant(scope, "", "secrets", "get", "gitmesh-mesh-root-ca"));
  if (generate) {
    for (const n of [RELAY.root, RELAY.server, RELAY.signing]) g.add(grant(scope, "", "secrets", "update", n));
  }
  return g;
}

interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
}

/**
 * Expands the RBAC in a render into the grants a ServiceAccount gets: ClusterRoles through
 * ClusterRoleBindings (scope cluster), Roles through RoleBindings (scope ns:<namespace>).
 * Rejects wildcards outright: a least-privilege chart never needs them.
 */
export function grantsOf(manifests: readonly Manifest[], serviceAccount: { name: string; namespace: string }): Set<Grant> {
  const out = new Set<Grant>();
  const bound = (b: Record<string, unknown>): boolean =>
    ((b.subjects ?? []) as { kind: string; name: string; namespace?: string }[]).some(
      (s) => s.kind === "ServiceAccount" && s.name === serviceAccount.name && s.namespace === serviceAccount.namespace,
    );
  const expand = (scope: string, rules: PolicyRule[]): void => {
    for (const r of rules) {
      for (const g of r.apiGroups ?? []) for (const res of r.resources ?? []) for (const v of r.verbs ?? []) {
        if (g === "*" || res === "*" || v === "*") throw new Error(`wildcard in RBAC rule ${JSON.stringify(r)}`);
        const names = r.resourceNames ?? ["*"];
        for (const n of names) out.add(grant(scope, g, res, v, n));
      }
    }
  };
  for (const b of ofKind(manifests, "ClusterRoleBinding").filter(bound)) {
    const ref = b.roleRef as { kind: string; name: string };
    expect(ref.kind).toBe("ClusterRole");
    const role = find(manifests, "ClusterRole", ref.name);
    expand("cluster", (role.rules ?? []) as PolicyRule[]);
  }
  for (const b of ofKind(manifests, "RoleBinding").filter(bound)) {
    const ns = (b.metadata as { namespace: string }).namespace;
    const ref = b.roleRef as { kind: string; name: string };
    expect(ref.kind, "RoleBindings refer to Roles in their namespace, never to ClusterRoles").toBe("Role");
    const role = ofKind(manifests, "Role").find((r) => (r.metadata as { name: string; namespace: string }).name === ref.name && (r.metadata as { namespace: string }).namespace === ns);
    if (role === undefined) throw new Error(`RoleBinding ${ns}/${ref.name} refers to a missing Role`);
    expand(`ns:${ns}`, (role.rules ?? []) as PolicyRule[]);
  }
  return out;
}

interface Container {
  name: string;
  securityContext?: Record<string, unknown>;
  startupProbe?: { httpGet?: { path: string; port: string | number; scheme?: string } };
  livenessProbe?: { httpGet?: { path: string; port: string | number; scheme?: string } };
  readinessProbe?: { httpGet?: { path: string; port: string | number; scheme?: string } };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  ports?: { name: string; containerPort: number }[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
}

interface PodSpec {
  securityContext?: Record<string, unknown>;
  containers: Container[];
  serviceAccountName?: string;
  volumes?: { name: string; [source: string]: unknown }[];
}

export function podSpec(deployment: Record<string, unknown>): PodSpec {
  return (deployment.spec as { template: { spec: PodSpec } }).template.spec;
}

/** Non-root, read-only root filesystem, no capabilities, no privilege escalation, RuntimeDefault seccomp. */
export function expectHardened(deployment: Record<string, unknown>): void {
  const pod = podSpec(deployment);
  expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
  for (const c of pod.containers) {
    expect(c.securityContext, c.name).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
    expect(c.resources?.requests, `${c.name} has resource requests`).toBeDefined();
    expect(c.resources?.limits?.memory, `${c.name} has a memory limit`).toBeDefined();
  }
}

export function envOf(c: Container): Record<string, unknown> {
  return Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));
}

/** What the real translation renders for cluster1 in the lifecycle golden case (a canary installation and its gateways). */
export function lifecycleOutput(): KubeObject[] {
  const { result } = runCase(loadCase("lifecycle"));
  return (result.clusters.get("cluster1")?.resources ?? []).map((r) => JSON.parse(JSON.stringify(r)) as KubeObject);
}
