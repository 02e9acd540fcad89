/**
 * Both charts installed by the real helm (tools/helm) into a real API server (tools/kube-apiserver:
 * etcd + kube-apiserver, RBAC on, no kubelet, so nothing runs: the objects are checked):
 * - helm install creates every object `helm template` renders, accepted by the API server's own
 *   validation, with helm's ownership labels and annotations, and records the release;
 * - `kubectl auth can-i --as system:serviceaccount:<ns>:<agent>`: every call the agent makes
 *   (src/agent, listed in checks.ts agentCalls) is allowed, and calls it must not make are denied;
 *   the same for the server's ServiceAccount (checks.ts serverCalls);
 * - helm upgrade changes what changed values render and deletes what they no longer render;
 * - helm uninstall removes the release's objects, but keeps the server's `resource-policy: keep`
 *   Secrets, and `lookup` keeps generated secret values across upgrade, uninstall and reinstall
 *   (what `helm template` cannot show: it has no cluster to look up).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRealKube, type RealKube } from "../helpers/real-kube.js";
import { chartDir, helm, helmBinary, renderOk, type HelmResult, type Manifest } from "./helm.js";
import { agentCalls, DEFAULT_SECRETS, grant, kubectlCanI, serverCalls, type Grant } from "./checks.js";

const AGENT_NS = "gitmesh";
const AGENT_SA = `system:serviceaccount:${AGENT_NS}:gitmesh-agent`;
const AGENT_VALUES = ["--set", "relay.serverAddress=mgmt.example.com:9900", "--set", "relay.cluster=cluster1"];
const SERVER_NS = "gitmesh-mgmt";
const SERVER_VALUES = ["--set", "git.url=https://git.example.com/acme/mesh-config.git"];

let kube: RealKube;

beforeAll(async () => {
  helmBinary();
  kube = await startRealKube(); // with Istio's CRDs: the agent's grants name their resources
  // The namespaces the agent chart's Roles live in besides its own: they exist before install.
  await kube.apply(["istio-system", "gloo-mesh-addons"].map((name) => ({ apiVersion: "v1", kind: "Namespace", metadata: { name } })));
}, 180_000);
afterAll(async () => {
  await kube.stop();
});

/** helm against the real API server as its admin. */
function h(args: readonly string[]): Promise<HelmResult> {
  return helm(args, { env: { KUBECONFIG: kube.kubeconfigPath } });
}

async function hOk(args: readonly string[]): Promise<string> {
  const r = await h(args);
  if (r.code !== 0) throw new Error(`helm ${args.join(" ")} failed (${String(r.code)}):\n${r.stderr}\n${kube.logs().slice(-2000)}`);
  return r.stdout;
}

const PLURALS: Readonly<Record<string, string>> = {
  Deployment: "deployments", Service: "services", ServiceAccount: "serviceaccounts", Secret: "secrets", ConfigMap: "configmaps",
  Role: "roles", RoleBinding: "rolebindings", ClusterRole: "clusterroles", ClusterRoleBinding: "clusterrolebindings",
  PodDisruptionBudget: "poddisruptionbudgets", HorizontalPodAutoscaler: "horizontalpodautoscalers",
};

/** The API path of a rendered object (its namespace: its own, else the release's). */
function pathOf(o: Manifest["object"], releaseNs: string): string {
  const plural = PLURALS[o.kind];
  if (plural === undefined) throw new Error(`no API path known for ${o.kind}`);
  const base = o.apiVersion.includes("/") ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
  const clusterScoped = o.kind === "ClusterRole" || o.kind === "ClusterRoleBinding";
  return clusterScoped ? `${base}/${plural}/${o.metadata.name}` : `${base}/namespaces/${o.metadata.namespace ?? releaseNs}/${plural}/${o.metadata.name}`;
}

async function live(path: string): Promise<Record<string, unknown> | undefined> {
  const r = await kube.request("GET", path);
  if (r.status === 404) return undefined;
  if (r.status !== 200) throw new Error(`GET ${path}: ${String(r.status)} ${r.text}`);
  return r.body as Record<string, unknown>;
}

/** The release's history Secrets (helm's default storage driver). */
async function releaseSecrets(ns: string, release: string): Promise<{ name: string; labels: Record<string, string> }[]> {
  const r = await kube.request("GET", `/api/v1/namespaces/${ns}/secrets`, { query: { labelSelector: `owner=helm,name=${release}` } });
  const items = (r.body as { items: { metadata: { name: string; labels: Record<string, string> } }[] }).items;
  return items.map((i) => ({ name: i.metadata.name, labels: i.metadata.labels })).sort((a, b) => a.name.localeCompare(b.name));
}

/** Every rendered object is in the cluster: each field as rendered (the server only adds defaults), owned by the release. */
async function expectInstalled(manifests: readonly Manifest[], release: string, ns: string, skip: (m: Manifest) => boolean = () => false): Promise<void> {
  for (const m of manifests) {
    const obj = await live(pathOf(m.object, ns));
    expect(obj, `${m.object.kind} ${m.object.metadata.name}`).toBeDefined();
    const meta = obj!.metadata as { labels: Record<string, string>; annotations: Record<string, string> };
    expect(meta.labels["app.kubernetes.io/managed-by"]).toBe("Helm");
    expect(meta.annotations).toMatchObject({ "meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": ns });
    if (skip(m)) continue;
    const expected = withoutEmptyStrings(m.object) as Manifest["object"];
    if (!clusterScoped(m)) expected.metadata.namespace ??= ns;
    expect(obj, `${m.object.kind} ${m.object.metadata.name} as rendered`).toMatchObject(expected);
  }
}

const clusterScoped = (m: Manifest) => m.object.kind === "ClusterRole" || m.object.kind === "ClusterRoleBinding";

/** A copy without the fields holding "": the API server's JSON omits empty strings (omitempty), e.g. an env var's `value: ""`. */
function withoutEmptyStrings(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutEmptyStrings);
  if (v === null || typeof v !== "object") return v;
  return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== "").map(([k, x]) => [k, withoutEmptyStrings(x)]));
}

/** `kubectl auth can-i <verb> <resource>[.<group>][/<name>]` for a grant, as `user`; true for "yes". */
const canI = (g: Grant, user: string) => kubectlCanI(kube.kubeconfigPath, g, user);

/** can-i for many grants, a few kubectl processes at a time; returns the grants whose answer differs from `want`. */
async function wrongAnswers(grants: readonly Grant[], user: string, want: boolean): Promise<Grant[]> {
  const wrong: Grant[] = [];
  const queue = [...grants];
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let g = queue.shift(); g !== undefined; g = queue.shift()) if ((await canI(g, user)) !== want) wrong.push(g);
    }),
  );
  return wrong.sort();
}

describe("gitmesh-agent chart installed by helm into a real API server", () => {
  const install = ["--namespace", AGENT_NS, ...AGENT_VALUES];
  let rendered: Manifest[] = [];

  it("helm install creates every rendered object as rendered, owned by the release, and records it", async () => {
    rendered = (await renderOk("gitmesh-agent", ["--name", "gitmesh-agent", ...install])).manifests;
    const out = await hOk(["install", "gitmesh-agent", chartDir("gitmesh-agent"), "--create-namespace", ...install]);
    expect(out).toContain("STATUS: deployed");
    expect(out).toContain("REVISION: 1");
    expect(out).toContain("kubectl -n gitmesh delete secret relay-identity-token-secret"); // the NOTES
    await expectInstalled(rendered, "gitmesh-agent", AGENT_NS);
    expect(await releaseSecrets(AGENT_NS, "gitmesh-agent")).toEqual([{ name: "sh.helm.release.v1.gitmesh-agent.v1", labels: expect.objectContaining({ status: "deployed", version: "1" }) as Record<string, string> }]);
    const list = JSON.parse(await hOk(["list", "--namespace", AGENT_NS, "--output", "json"])) as { name: string; status: string; revision: string }[];
    expect(list).toMatchObject([{ name: "gitmesh-agent", status: "deployed", revision: "1" }]);
  }, 60_000);

  it("kubectl auth can-i as the agent's ServiceAccount: every call the agent makes is allowed", async () => {
    const calls = agentCalls({ ns: AGENT_NS, istioNs: "istio-system", lease: "gitmesh-agent", inventory: "gitmesh-agent-inventory", secrets: DEFAULT_SECRETS, cacerts: true });
    expect(calls.size).toBeGreaterThan(80);
    expect(await wrongAnswers([...calls], AGENT_SA, true)).toEqual([]);
  }, 120_000);

  it("kubectl auth can-i as the agent's ServiceAccount: what it must not do is denied", async () => {
    const denied = [
      grant(`ns:${AGENT_NS}`, "", "secrets", "list"), // its relay secrets by name only
      grant(`ns:${AGENT_NS}`, "", "secrets", "get", "someone-elses-secret"),
      grant("ns:kube-system", "", "secrets", "get"), // never Secrets outside its own and the Istio namespace
      grant("cluster", "", "secrets", "list"),
      grant("ns:istio-system", "", "secrets", "get", "istio-ca-secret"), // only cacerts there
      grant("cluster", "networking.istio.io", "virtualservices", "update"), // server-side apply (patch), never update
      grant(`ns:${AGENT_NS}`, "coordination.k8s.io", "leases", "delete", "gitmesh-agent"),
      grant(`ns:${AGENT_NS}`, "coordination.k8s.io", "leases", "update", "another-lease"),
      grant(`ns:${AGENT_NS}`, "", "configmaps", "update", "another-configmap"),
      grant("cluster", "apps", "deployments", "patch"), // istio.autoRestartPods is off
      grant("cluster", "", "configmaps", "list"), // ConfigMaps only in the Istio namespace (rate limits: off)
      grant("ns:gloo-mesh-addons", "", "configmaps", "create"),
      grant("cluster", "sailoperator.io", "istios", "create"), // lifecycle is off
      grant("cluster", "rbac.authorization.k8s.io", "clusterroles", "create"),
      grant("cluster", "", "serviceaccounts", "impersonate"),
    ];
    expect(await wrongAnswers(denied, AGENT_SA, false)).toEqual([]);
  }, 120_000);

  it("helm upgrade: new values change the objects; what is no longer rendered is deleted", async () => {
    const changed = [...install, "--set", "replicas=2", "--set", "leaderElection.leaseName=agent-leader", "--set", "rateLimit.configNamespaces={gloo-mesh-addons}"];
    const out = await hOk(["upgrade", "gitmesh-agent", chartDir("gitmesh-agent"), ...changed]);
    expect(out).toContain("REVISION: 2");
    const now = (await renderOk("gitmesh-agent", ["--name", "gitmesh-agent", ...changed])).manifests;
    await expectInstalled(now, "gitmesh-agent", AGENT_NS);
    expect(((await live("/apis/apps/v1/namespaces/gitmesh/deployments/gitmesh-agent"))?.spec as { replicas: number }).replicas).toBe(2);
    expect(await canI(grant(`ns:${AGENT_NS}`, "coordination.k8s.io", "leases", "update", "agent-leader"), AGENT_SA)).toBe(true);
    expect(await canI(grant(`ns:${AGENT_NS}`, "coordination.k8s.io", "leases", "update", "gitmesh-agent"), AGENT_SA)).toBe(false);
    expect(await canI(grant("ns:gloo-mesh-addons", "", "configmaps", "patch"), AGENT_SA)).toBe(true);

    // Back to the first values: the rate-limit Role and its binding are deleted, not left behind.
    expect(await hOk(["upgrade", "gitmesh-agent", chartDir("gitmesh-agent"), ...install])).toContain("REVISION: 3");
    expect(await live("/apis/rbac.authorization.k8s.io/v1/namespaces/gloo-mesh-addons/roles/gitmesh-agent-ratelimit")).toBeUndefined();
    expect(await live("/apis/rbac.authorization.k8s.io/v1/namespaces/gloo-mesh-addons/rolebindings/gitmesh-agent-ratelimit")).toBeUndefined();
    expect(await canI(grant("ns:gloo-mesh-addons", "", "configmaps", "patch"), AGENT_SA)).toBe(false);
    await expectInstalled(rendered, "gitmesh-agent", AGENT_NS);
    expect((await releaseSecrets(AGENT_NS, "gitmesh-agent")).map((s) => [s.name, s.labels.status])).toEqual([
      ["sh.helm.release.v1.gitmesh-agent.v1", "superseded"],
      ["sh.helm.release.v1.gitmesh-agent.v2", "superseded"],
      ["sh.helm.release.v1.gitmesh-agent.v3", "deployed"],
    ]);
  }, 90_000);

  it("helm uninstall removes every object of the release and its history", async () => {
    const out = await hOk(["uninstall", "gitmesh-agent", "--namespace", AGENT_NS]);
    expect(out).toContain('release "gitmesh-agent" uninstalled');
    for (const m of rendered) expect(await live(pathOf(m.object, AGENT_NS)), `${m.object.kind} ${m.object.metadata.name}`).toBeUndefined();
    expect(await releaseSecrets(AGENT_NS, "gitmesh-agent")).toEqual([]);
    expect(await canI(grant("cluster", "networking.istio.io", "virtualservices", "patch"), AGENT_SA)).toBe(false);
  }, 60_000);

  it("the Istio namespace must exist before install: helm refuses, naming it", async () => {
    const r = await h(["install", "agent-x", chartDir("gitmesh-agent"), "--namespace", "agent-x", "--create-namespace", ...AGENT_VALUES, "--set", "istio.namespace=istio-absent"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('namespaces "istio-absent" not found');
    await hOk(["uninstall", "agent-x", "--namespace", "agent-x"]);
  }, 60_000);
});

describe("gitmesh-server chart installed by helm into a real API server", () => {
  const install = ["--namespace", SERVER_NS, ...SERVER_VALUES];
  const KEPT = ["relay-identity-token-secret", "gitmesh-server-webhook", "gitmesh-api-tokens"];
  let rendered: Manifest[] = [];

  async function secretValues(): Promise<Record<string, Record<string, string>>> {
    const out: Record<string, Record<string, string>> = {};
    for (const name of KEPT) {
      const s = await live(`/api/v1/namespaces/${SERVER_NS}/secrets/${name}`);
      expect(s, name).toBeDefined();
      out[name] = s!.data as Record<string, string>;
    }
    return out;
  }

  it("helm install creates every rendered object; generated secrets hold fresh values", async () => {
    rendered = (await renderOk("gitmesh-server", ["--name", "gitmesh-server", ...install])).manifests;
    const out = await hOk(["install", "gitmesh-server", chartDir("gitmesh-server"), "--create-namespace", ...install]);
    expect(out).toContain("STATUS: deployed");
    // Generated values differ from one render to the next: Secrets are compared by their keys.
    await expectInstalled(rendered, "gitmesh-server", SERVER_NS, (m) => m.object.kind === "Secret");
    const values = await secretValues();
    expect(Object.keys(values["gitmesh-api-tokens"]!).sort()).toEqual(["admin", "read"]);
    expect(Buffer.from(values["relay-identity-token-secret"]!.token!, "base64").toString()).toMatch(/^[A-Za-z0-9]{48}$/);
  }, 60_000);

  it("kubectl auth can-i as the server's ServiceAccount: its Secret calls are allowed, nothing outside them", async () => {
    const user = `system:serviceaccount:${SERVER_NS}:gitmesh-server`;
    expect(await wrongAnswers([...serverCalls(SERVER_NS, true)], user, true)).toEqual([]);
    const denied = [
      grant("ns:kube-system", "", "secrets", "get"),
      grant("cluster", "", "secrets", "list"),
      grant(`ns:${SERVER_NS}`, "", "secrets", "patch"),
      grant(`ns:${SERVER_NS}`, "", "configmaps", "get"),
      grant(`ns:${SERVER_NS}`, "apps", "deployments", "get"),
      grant("cluster", "", "namespaces", "list"),
      grant("cluster", "networking.istio.io", "virtualservices", "list"),
      grant("ns:gloo-mesh", "", "secrets", "get", "mesh-root"), // meshCa.secretRefs is empty
    ];
    expect(await wrongAnswers(denied, user, false)).toEqual([]);
  }, 120_000);

  it("helm upgrade keeps the generated secret values (lookup finds them) and applies the new values", async () => {
    const before = await secretValues();
    expect(await hOk(["upgrade", "gitmesh-server", chartDir("gitmesh-server"), ...install, "--set", "replicas=1", "--set", "logLevel=debug"])).toContain("REVISION: 2");
    expect(await secretValues()).toEqual(before);
  }, 60_000);

  it("helm uninstall keeps exactly the resource-policy keep Secrets; a reinstall adopts them with their values", async () => {
    const before = await secretValues();
    const r = await hOk(["uninstall", "gitmesh-server", "--namespace", SERVER_NS]);
    expect(r).toContain("These resources were kept due to the resource policy");
    for (const m of rendered) {
      const obj = await live(pathOf(m.object, SERVER_NS));
      if (m.object.kind === "Secret" && KEPT.includes(m.object.metadata.name)) expect(obj, m.object.metadata.name).toBeDefined();
      else expect(obj, `${m.object.kind} ${m.object.metadata.name}`).toBeUndefined();
    }
    expect(await releaseSecrets(SERVER_NS, "gitmesh-server")).toEqual([]);
    // They stay owned by the release name: another release in the namespace cannot take them over.
    const other = await h(["install", "other", chartDir("gitmesh-server"), ...install]);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('Secret "relay-identity-token-secret" in namespace "gitmesh-mgmt" exists and cannot be imported into the current release');
    expect(other.stderr).toContain('key "meta.helm.sh/release-name" must equal "other": current value is "gitmesh-server"');
    // Refused before anything was created.
    expect(await releaseSecrets(SERVER_NS, "other")).toEqual([]);
    expect(await live(`/apis/apps/v1/namespaces/${SERVER_NS}/deployments/other-gitmesh-server`)).toBeUndefined();
    // The same release installed again finds the kept Secrets (its ownership annotations) and keeps their values.
    expect(await hOk(["install", "gitmesh-server", chartDir("gitmesh-server"), ...install])).toContain("STATUS: deployed");
    expect(await secretValues()).toEqual(before);
    await hOk(["uninstall", "gitmesh-server", "--namespace", SERVER_NS]);
  }, 90_000);

  it("workers with autoscaling and disruption budgets: the API server accepts the HPA and PDBs as rendered", async () => {
    // Its own namespace: the kept Secrets of the release above have fixed names, owned by that release.
    const values = ["--namespace", "gitmesh-workers", ...SERVER_VALUES, "--set", "workers.enabled=true,workers.autoscaling.enabled=true", "--set", "replicas=2"];
    const manifests = (await renderOk("gitmesh-server", ["--name", "gm", ...values])).manifests;
    expect(manifests.map((m) => m.object.kind)).toEqual(expect.arrayContaining(["HorizontalPodAutoscaler", "PodDisruptionBudget"]));
    await hOk(["install", "gm", chartDir("gitmesh-server"), "--create-namespace", ...values]);
    await expectInstalled(manifests, "gm", "gitmesh-workers", (m) => m.object.kind === "Secret");
    await hOk(["uninstall", "gm", "--namespace", "gitmesh-workers"]);
  }, 90_000);
});
