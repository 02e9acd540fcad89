// `gitmesh cluster register/deregister` end to end with the real helm (tools/helm, first on PATH)
// against a real API server (tools/kube-apiserver): the management side (the server's relay PKI and
// identity records, namespace gitmesh-mgmt) and the workload side (the agent, namespace gitmesh) in
// one cluster reached through two kubeconfig contexts, a real Git server, a real relay server. helm
// really installs, upgrades and uninstalls the agent chart; with no kubelet, the agent the chart would
// run is played by the agent's real relay link, configured from the Deployment helm created and
// running as the chart's ServiceAccount (a token of it: the chart's RBAC decides what it may do).
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { silentLogger } from "../../src/core/index.js";
import { createClusterIdentities, createRelayServer, generateKeyPem, generateRelayPki, relayPkiToSecrets, type RelayPki, type RelayServer } from "../../src/relay/index.js";
import { createKubernetesRecordStore } from "../../src/server/index.js";
import { createKubeClient, createRelayLinkFactory, withFieldOwner, type RelayLink } from "../../src/agent/index.js";
import { main } from "../../src/cli/main.js";
import { createCapturingIo } from "../../src/cli/io.js";
import { startRealKube, type RealKube } from "../helpers/real-kube.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { chartDir, helm, helmBinary } from "../charts/helm.js";

const GIT_TOKEN = "git-token-real-helm-5c2e";
const MGMT_NS = "gitmesh-mgmt";
const AGENT_NS = "gitmesh";
const b64 = (s: string) => Buffer.from(s).toString("base64");

let kube: RealKube;
let git: GitServer;
let relay: RelayServer;
let relayAddress: string;
let pki: RelayPki;
let dir: string;
let kubeconfig: string;
const links: RelayLink[] = [];
const saved = { PATH: process.env.PATH, HELM_CACHE_HOME: process.env.HELM_CACHE_HOME, HELM_CONFIG_HOME: process.env.HELM_CONFIG_HOME, HELM_DATA_HOME: process.env.HELM_DATA_HOME };

beforeAll(async () => {
  const helmBin = helmBinary();
  kube = await startRealKube();
  dir = mkdtempSync(join(tmpdir(), "gitmesh-cluster-real-"));
  pki = generateRelayPki();
  // The management cluster: the server's relay PKI in its namespace. The workload cluster: Istio's namespace.
  await kube.apply([
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "istio-system" } },
    ...Object.entries(relayPkiToSecrets(pki)).map(([name, data]) => ({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, namespace: MGMT_NS },
      data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
    })),
  ]);
  // One kubeconfig, two contexts on the same API server (as the admin).
  const admin = JSON.parse(kube.kubeconfig()) as { clusters: unknown[]; users: unknown[] };
  kubeconfig = join(dir, "kubeconfig");
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: admin.clusters,
      users: admin.users,
      contexts: ["mgmt", "remote"].map((name) => ({ name, context: { cluster: "real", user: "gitmesh-admin" } })),
      "current-context": "mgmt",
    }),
    { mode: 0o600 },
  );

  git = await startGitServer({ auth: { token: GIT_TOKEN } });
  await git.createRepo("config");
  await git.commitFiles("config", { "README.md": "mesh config\n" }, "initial");
  relay = createRelayServer({
    pki,
    identities: createClusterIdentities(createKubernetesRecordStore(kube.newKubeConfig(), MGMT_NS)),
    revalidateIntervalMs: 300,
    isClusterRegistered: (c) => git.git("config", ["cat-file", "-e", `main:clusters/${c}.yaml`]).then(() => true, () => false),
    logger: silentLogger,
    registry: new Registry(),
    host: "127.0.0.1",
    port: 0,
  });
  relayAddress = `127.0.0.1:${String(await relay.start())}`;

  // The real helm first on PATH (register finds it there), with its homes in the temp dir.
  const bin = join(dir, "bin");
  mkdirSync(bin);
  symlinkSync(helmBin, join(bin, "helm"));
  process.env.PATH = `${bin}${delimiter}${saved.PATH ?? ""}`;
  process.env.HELM_CACHE_HOME = join(dir, "helm-cache");
  process.env.HELM_CONFIG_HOME = join(dir, "helm-config");
  process.env.HELM_DATA_HOME = join(dir, "helm-data");
  process.env.GITMESH_GIT_PASSWORD = GIT_TOKEN;
}, 180_000);

afterAll(async () => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) Reflect.deleteProperty(process.env, k);
    else process.env[k] = v;
  }
  delete process.env.GITMESH_GIT_PASSWORD;
  for (const l of links) await l.close();
  await relay.stop();
  await git.stop();
  await kube.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function get(path: string): Promise<Record<string, unknown> | undefined> {
  const r = await kube.request("GET", path);
  if (r.status === 404) return undefined;
  if (r.status !== 200) throw new Error(`GET ${path}: ${String(r.status)} ${r.text}`);
  return r.body as Record<string, unknown>;
}
const secret = (name: string) => get(`/api/v1/namespaces/${AGENT_NS}/secrets/${name}`) as Promise<{ data?: Record<string, string> } | undefined>;
const deployment = () => get(`/apis/apps/v1/namespaces/${AGENT_NS}/deployments/gitmesh-agent`);

/** helm's own view of the release (`helm list`), as the admin. */
async function releases(): Promise<{ name: string; status: string; revision: string; chart: string }[]> {
  const r = await helm(["list", "--namespace", AGENT_NS, "--output", "json"], { env: { KUBECONFIG: kube.kubeconfigPath } });
  if (r.code !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as { name: string; status: string; revision: string; chart: string }[];
}

/**
 * The agent the installed chart would run: once helm has created the Deployment, its relay link with
 * the relay address and cluster name from the Deployment's environment, as the chart's ServiceAccount.
 */
async function agentFromDeployment(): Promise<void> {
  const deadline = Date.now() + 60_000;
  let dep = await deployment();
  while (dep === undefined) {
    if (Date.now() > deadline) throw new Error("helm did not create the agent Deployment");
    await new Promise((r) => setTimeout(r, 100));
    dep = await deployment();
  }
  const pod = (dep.spec as { template: { spec: { serviceAccountName: string; containers: { env: { name: string; value?: string }[] }[] } } }).template.spec;
  const env = Object.fromEntries(pod.containers[0]!.env.map((e) => [e.name, e.value]));
  const sa = await kube.serviceAccountKubeConfig(AGENT_NS, pod.serviceAccountName);
  const client = createKubeClient(sa.kc);
  const link = await createRelayLinkFactory({
    reader: client,
    writer: withFieldOwner(client),
    namespace: AGENT_NS,
    address: env.GITMESH_RELAY_SERVER_ADDRESS!,
    cluster: env.GITMESH_RELAY_CLUSTER!,
    client: { backoff: { initialMs: 50, maxMs: 300 }, keyPem: generateKeyPem() },
    logger: silentLogger,
  })({ onOutput: () => Promise.resolve({ ack: true, errors: [] }) });
  links.push(link);
}

async function run(args: readonly string[]) {
  const io = createCapturingIo();
  const code = await main(args, io);
  return { code, out: io.stdout(), err: io.stderr() };
}

function register(): Promise<{ code: number; out: string; err: string }> {
  return run([
    "cluster", "register", "cluster1", "--kubeconfig", kubeconfig, "--mgmt-context", "mgmt", "--mgmt-namespace", MGMT_NS,
    "--remote-context", "remote", "--relay-server-address", relayAddress, "--timeout", "60s", "--repo", git.url("config"),
  ]);
}

describe("gitmesh cluster register / deregister with the real helm and a real API server", () => {
  it("register: secrets, KubernetesCluster, helm install of the agent chart, agent certificate, credential removed", async () => {
    const agent = agentFromDeployment();
    const r = await register();
    await agent;
    expect(r.err).toBe("");
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain(`✓ agent chart ${chartDir("gitmesh-agent")} installed as release ${AGENT_NS}/gitmesh-agent in context remote (helm upgrade --install)`);
    expect(r.out).toContain("Cluster cluster1 is registered.");
    expect(r.out.split("\n").filter((l) => l.startsWith("✗"))).toEqual([]);
    // helm really installed the chart: the release, and the Deployment configured with register's values.
    expect(await releases()).toMatchObject([{ name: "gitmesh-agent", status: "deployed", revision: "1", chart: "gitmesh-agent-0.1.0" }]);
    const env = Object.fromEntries(((await deployment())!.spec as { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } }).template.spec.containers[0]!.env.map((e) => [e.name, e.value]));
    expect(env).toMatchObject({ GITMESH_RELAY_SERVER_ADDRESS: relayAddress, GITMESH_RELAY_CLUSTER: "cluster1" });
    // The agent (as its ServiceAccount) stored its certificate; register removed the credential.
    expect(Object.keys((await secret("relay-root-tls-secret"))?.data ?? {})).toEqual(["ca.crt"]);
    expect(Buffer.from((await secret("relay-client-tls-secret"))!.data!["tls.crt"]!, "base64").toString()).toContain("BEGIN CERTIFICATE");
    expect(await secret("relay-identity-token-secret")).toBeUndefined();
    expect(await get(`/api/v1/namespaces/${MGMT_NS}/secrets/relay-identity-cluster1`)).toBeDefined();
    expect(await git.git("config", ["log", "--format=%s", "main"])).toBe("Register cluster cluster1\ninitial\n");
  }, 120_000);

  it("register again: helm upgrade --install makes revision 2 of the same release, nothing else changes", async () => {
    const tip = await git.revParse("config", "refs/heads/main");
    const cert = await secret("relay-client-tls-secret");
    const r = await register();
    expect(r.code, r.out).toBe(0);
    expect(await releases()).toMatchObject([{ name: "gitmesh-agent", status: "deployed", revision: "2" }]);
    expect(await secret("relay-client-tls-secret")).toEqual(cert);
    expect(await git.revParse("config", "refs/heads/main")).toBe(tip);
  }, 120_000);

  it("deregister: helm uninstall removes the agent's objects and release; the secrets and the KubernetesCluster go", async () => {
    for (const l of links.splice(0)) await l.close();
    const r = await run(["cluster", "deregister", "cluster1", "--kubeconfig", kubeconfig, "--mgmt-context", "mgmt", "--mgmt-namespace", MGMT_NS, "--remote-context", "remote", "--repo", git.url("config")]);
    expect(r.err).toBe("");
    expect(r.code, r.out).toBe(0);
    expect(await releases()).toEqual([]);
    expect(await deployment()).toBeUndefined();
    expect(await get("/apis/rbac.authorization.k8s.io/v1/clusterroles/gitmesh-agent")).toBeUndefined();
    expect(await get(`/apis/rbac.authorization.k8s.io/v1/namespaces/istio-system/roles/gitmesh-agent-istio`)).toBeUndefined();
    for (const s of ["relay-client-tls-secret", "relay-identity-token-secret", "relay-root-tls-secret"]) expect(await secret(s), s).toBeUndefined();
    expect(await git.git("config", ["log", "-1", "--format=%s", "main"])).toBe("Deregister cluster cluster1\n");
  }, 120_000);
});
