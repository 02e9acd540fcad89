/**
 * Shared set-up of the agent tests on a real API server (etcd + kube-apiserver, test/helpers/real-kube.ts):
 * the agent authenticates as its ServiceAccount `gitmesh/gitmesh-agent`, bound by the RBAC the agent
 * chart renders with its default values — never as the admin. The admin seeds what a cluster holds
 * before the agent starts (namespaces, the example discovery objects, the relay secrets) and plays the
 * other actors (a user's kubectl, another controller).
 *
 *   const c = await startAgentCluster();          // in beforeAll (~30 s)
 *   c.agentKc                                      // the agent's KubeConfig (ServiceAccount token)
 *   c.agent.kubeconfigPath                         // the same for a `gitmesh agent` process
 *   await c.stop();
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { KubeConfig } from "@kubernetes/client-node";
import { renderOk, ROOT } from "../charts/helm.js";
import { startRealKube, type RealKube, type ServiceAccountAccess } from "../helpers/real-kube.js";

/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are untyped JSON here */
type Obj = Record<string, any>;

export const AGENT_NAMESPACE = "gitmesh";
export const AGENT_SERVICE_ACCOUNT = "gitmesh-agent";
const RBAC_KINDS = new Set(["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"]);

/**
 * The agent chart's RBAC with its default values (release `gitmesh-agent` in namespace `gitmesh`,
 * ServiceAccount `gitmesh-agent`), rendered by the real `helm template` (tools/helm). The one place
 * that renders the chart for these tests.
 */
export async function agentChartRbac(extraArgs: readonly string[] = []): Promise<Obj[]> {
  const { manifests } = await renderOk("gitmesh-agent", [
    "--name", "gitmesh-agent", "--namespace", AGENT_NAMESPACE,
    "--set", "relay.serverAddress=127.0.0.1:9900", "--set", "relay.cluster=cluster1",
    ...extraArgs,
  ]);
  const sa = manifests.find((m) => m.object.kind === "ServiceAccount");
  if (sa?.object.metadata.name !== AGENT_SERVICE_ACCOUNT) throw new Error(`the agent chart's ServiceAccount is ${String(sa?.object.metadata.name)}, not ${AGENT_SERVICE_ACCOUNT}`);
  return manifests.map((m) => m.object as Obj).filter((o) => RBAC_KINDS.has(String(o.kind)));
}

const b64 = (s: string) => Buffer.from(s).toString("base64");

/** What `kubectl get -o yaml` printed, made creatable on another server: no server-set metadata, no status, no cluster IPs of the other cluster's range. */
function creatable(o: Obj): Obj {
  const { status: _status, ...rest } = o;
  const { uid: _u, resourceVersion: _rv, creationTimestamp: _ct, generation: _g, managedFields: _mf, ownerReferences: _or, ...metadata } = (o.metadata ?? {}) as Obj;
  const out: Obj = { ...rest, metadata };
  if (o.kind === "Service") {
    const { clusterIP: _ip, clusterIPs: _ips, ...spec } = o.spec as Obj;
    out.spec = spec;
  }
  return out;
}

/**
 * examples/discovery/<dir>: Namespaces, Nodes, Services, Deployments, Pods, the mesh ConfigMaps, as the
 * admin, with the status the example shows (load balancer addresses, pod IPs) written to the status
 * subresource. Istio objects of the example are left out (the agent creates the Istio objects).
 */
export async function seedDiscovery(kube: RealKube, dir: string, rewrite: (text: string) => string = (t) => t): Promise<void> {
  const objects: Obj[] = [];
  for (const f of readdirSync(join(ROOT, "examples", "discovery", dir)).filter((n) => n.endsWith(".yaml")).sort()) {
    for (const doc of parseAllDocuments(rewrite(readFileSync(join(ROOT, "examples", "discovery", dir, f), "utf8")))) {
      const o = doc.toJS() as Obj | null;
      if (!o) continue;
      for (const i of o.kind === "List" ? (o.items as Obj[]) : [o]) if (!String(i.apiVersion).includes("istio.io")) objects.push(i);
    }
  }
  const rank = (o: Obj) => ["Namespace", "Node", "ServiceAccount", "ConfigMap", "Service", "Deployment", "Pod"].indexOf(String(o.kind));
  objects.sort((a, b) => rank(a) - rank(b));
  // Pods name ServiceAccounts that must exist (the ServiceAccount admission plugin).
  const accounts = new Map<string, Obj>();
  for (const p of objects.filter((o) => o.kind === "Pod")) {
    const ns = String(p.metadata.namespace);
    const name = String(p.spec.serviceAccountName ?? "default");
    accounts.set(`${ns}/${name}`, { apiVersion: "v1", kind: "ServiceAccount", metadata: { name, namespace: ns } });
  }
  await kube.apply([...objects.filter((o) => o.kind === "Namespace" || o.kind === "Node").map(creatable), ...accounts.values()]);
  await kube.apply(objects.filter((o) => o.kind !== "Namespace" && o.kind !== "Node").map(creatable));
  for (const o of objects) {
    if (o.status === undefined || !["Service", "Pod", "Node"].includes(String(o.kind))) continue;
    const ns = o.metadata.namespace === undefined ? "" : `/namespaces/${String(o.metadata.namespace)}`;
    const plural = `${String(o.kind).toLowerCase()}s`;
    const body = { apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.metadata.name, ...(o.metadata.namespace === undefined ? {} : { namespace: o.metadata.namespace }) }, status: o.status };
    const r = await kube.request("PATCH", `/api/v1${ns}/${plural}/${String(o.metadata.name)}/status`, { body: JSON.stringify(body), contentType: "application/apply-patch+yaml", query: { fieldManager: "gitmesh-test", force: "true" } });
    if (r.status !== 200) throw new Error(`status of ${String(o.kind)} ${String(o.metadata.name)}: HTTP ${r.status}: ${r.text}`);
  }
}

export interface AgentCluster {
  readonly kube: RealKube;
  /** The agent's ServiceAccount access (token, kubeconfig file). */
  readonly agent: ServiceAccountAccess;
  /** A fresh KubeConfig of the agent's ServiceAccount (one per agent replica). */
  agentKc(): KubeConfig;
  /** The chart's RBAC objects as applied. */
  readonly rbac: readonly Obj[];
  stop(): Promise<void>;
}

/**
 * A real API server with Istio's CRDs, the agent's namespace and the Istio namespace, the relay
 * secrets (when given), and the agent's ServiceAccount bound by the chart's rendered RBAC.
 */
export async function startAgentCluster(options: { relay?: { rootCaPem: string; token: string }; discovery?: string } = {}): Promise<AgentCluster> {
  const [kube, rbac] = await Promise.all([startRealKube(), agentChartRbac()]);
  try {
    await kube.apply([
      { apiVersion: "v1", kind: "Namespace", metadata: { name: AGENT_NAMESPACE } },
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "istio-system" } },
    ]);
    if (options.discovery !== undefined) await seedDiscovery(kube, options.discovery);
    if (options.relay !== undefined) {
      await kube.apply([
        { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-root-tls-secret", namespace: AGENT_NAMESPACE }, data: { "ca.crt": b64(options.relay.rootCaPem) } },
        { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-identity-token-secret", namespace: AGENT_NAMESPACE }, data: { token: b64(options.relay.token) } },
      ]);
    }
    const agent = await kube.serviceAccountKubeConfig(AGENT_NAMESPACE, AGENT_SERVICE_ACCOUNT, rbac);
    return {
      kube,
      agent,
      rbac,
      agentKc: () => {
        const kc = new KubeConfig();
        kc.loadFromFile(agent.kubeconfigPath);
        return kc;
      },
      stop: () => kube.stop(),
    };
  } catch (err) {
    await kube.stop();
    throw err;
  }
}

/** GET as the admin; undefined on 404. */
export async function getObject(kube: RealKube, path: string): Promise<Obj | undefined> {
  const r = await kube.request("GET", path);
  if (r.status === 404) return undefined;
  if (r.status !== 200) throw new Error(`GET ${path}: HTTP ${r.status}: ${r.text}`);
  return r.body as Obj;
}

/** Names of the objects at a collection path, sorted. */
export async function namesAt(kube: RealKube, collection: string): Promise<string[]> {
  const r = await kube.request("GET", collection);
  if (r.status !== 200) throw new Error(`GET ${collection}: HTTP ${r.status}: ${r.text}`);
  return ((r.body as Obj).items as Obj[]).map((o) => String(o.metadata.name)).sort();
}

/** Resolves with the first value `probe` gives that is not undefined/false, polling every 50 ms; rejects with `what` after `timeoutMs`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}${last instanceof Error ? ` (last error: ${last.message})` : ""}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
