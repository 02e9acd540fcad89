// `gitmesh cluster register/deregister` end to end through main(): two Kubernetes API emulators
// (management and remote) in one kubeconfig, a real Git server holding the configuration
// repository, a real relay server on loopback that accepts only clusters whose
// clusters/<name>.yaml is on the branch, and the agent's real relay link started when the helm
// stand-in (a recording script first on PATH) has been asked to install the chart.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { silentLogger } from "../../src/core/index.js";
import { createClusterIdentities, createRelayServer, generateKeyPem, generateRelayPki, relayPkiToSecrets, type RelayPki, type RelayServer } from "../../src/relay/index.js";
import { createKubernetesRecordStore } from "../../src/server/index.js";
import { createKubeClient, createRelayLinkFactory, withFieldOwner, type RelayLink } from "../../src/agent/index.js";
import { loadDesiredState } from "../../src/config/index.js";
import { main } from "../../src/cli/main.js";
import { createCapturingIo } from "../../src/cli/io.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";

const TOKEN = "bootstrap-token-5f1e0c9a7b3d42e8";
const GIT_TOKEN = "git-token-a8c1d0e7";
const b64 = (s: string) => Buffer.from(s).toString("base64");
const unb64 = (v: unknown) => Buffer.from(String(v), "base64").toString("utf8");

let pki: RelayPki;
let clientKey: string;
let mgmt: StartedKube;
let remote: StartedKube;
let git: GitServer;
let relay: RelayServer;
let relayAddress: string;
let dir: string;
let kubeconfig: string;
let helmRecord: string;
let stubBin: string;
let chart: string;
const originalPath = process.env.PATH;
const links: RelayLink[] = [];

beforeAll(async () => {
  pki = generateRelayPki();
  clientKey = generateKeyPem();
  dir = mkdtempSync(join(tmpdir(), "gitmesh-cluster-test-"));
  const secrets = relayPkiToSecrets(pki);
  mgmt = await startKube({
    seed: [
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } },
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "empty" } },
      ...Object.entries(secrets).map(([name, data]) => ({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name, namespace: "gitmesh" },
        data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
      })),
      { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-identity-token-secret", namespace: "gitmesh" }, data: { token: b64(TOKEN) } },
    ],
  });
  remote = await startKube();
  const m = mgmt.emulator.kubeconfigObject({ name: "mgmt" });
  const r = remote.emulator.kubeconfigObject({ name: "remote" });
  kubeconfig = join(dir, "kubeconfig");
  writeFileSync(
    kubeconfig,
    toYaml({
      apiVersion: "v1",
      kind: "Config",
      clusters: [...m.clusters, ...r.clusters, { name: "dead", cluster: { server: "http://127.0.0.1:9", "insecure-skip-tls-verify": true } }],
      users: [...m.users, ...r.users],
      contexts: [...m.contexts, ...r.contexts, { name: "dead", context: { cluster: "dead", user: "mgmt" } }],
      "current-context": "mgmt",
    }),
  );

  git = await startGitServer({ auth: { token: GIT_TOKEN } });
  await git.createRepo("config");
  await git.commitFiles("config", { "README.md": "mesh config\n", "gitmesh.yaml": "adminNamespace: gloo-mesh\n" }, "initial");

  // The relay accepts a cluster only when its KubernetesCluster is on main (as the server does from Git),
  // and registers it only with the credential `cluster register` minted in the management cluster's
  // identity store (the Secrets relay-identity-<cluster> the server reads in Kubernetes).
  relay = createRelayServer({
    pki,
    identities: createClusterIdentities(createKubernetesRecordStore(mgmt.newKubeConfig(), "gitmesh")),
    revalidateIntervalMs: 300,
    isClusterRegistered: (c) => git.git("config", ["cat-file", "-e", `main:clusters/${c}.yaml`]).then(() => true, () => false),
    logger: silentLogger,
    registry: new Registry(),
    host: "127.0.0.1",
    port: 0,
  });
  relayAddress = `127.0.0.1:${String(await relay.start())}`;

  stubBin = join(dir, "bin");
  helmRecord = join(dir, "helm-calls");
  mkdirSync(stubBin);
  writeFileSync(join(stubBin, "helm"), `#!/bin/sh\n{ for a in "$@"; do printf '%s\\n' "$a"; done; printf -- '--END--\\n'; } >> '${helmRecord}'\n`);
  chmodSync(join(stubBin, "helm"), 0o755);
  // The default chart: the one bundled with gitmesh.
  chart = fileURLToPath(new URL("../../charts/gitmesh-agent", import.meta.url));
}, 60_000);

afterAll(async () => {
  process.env.PATH = originalPath;
  delete process.env.GITMESH_GIT_PASSWORD;
  for (const l of links) await l.close();
  await relay.stop();
  await mgmt.stop();
  await remote.stop();
  await git.stop();
  rmSync(dir, { recursive: true, force: true });
});

function helmCalls(): string[][] {
  if (!existsSync(helmRecord)) return [];
  return readFileSync(helmRecord, "utf8")
    .split("--END--\n")
    .filter((c) => c !== "")
    .map((c) => c.replace(/\n$/, "").split("\n"));
}

const setValue = (args: readonly string[], key: string) => args.find((a) => a.startsWith(`${key}=`))?.slice(key.length + 1);

/**
 * Plays the agent the chart would start: once helm was asked to install `cluster`, run the agent's
 * relay link in the remote cluster with the values helm got (root CA and token from the secrets
 * that register copied); it registers with the real relay and stores relay-client-tls-secret.
 */
async function agentAfterHelm(cluster: string, tokenSeen: { present: boolean; value?: string }): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const call = helmCalls().find((c) => c[0] === "upgrade" && setValue(c, "relay.cluster") === cluster);
    if (call) {
      const ns = call[call.indexOf("--namespace") + 1]!;
      const tokenSecret = remote.emulator.get("v1", "Secret", ns, "relay-identity-token-secret") as { data?: Record<string, string> } | undefined;
      tokenSeen.present = tokenSecret !== undefined;
      if (tokenSecret?.data?.token !== undefined) tokenSeen.value = unb64(tokenSecret.data.token);
      await startLink(ns, setValue(call, "relay.cluster")!, setValue(call, "relay.serverAddress")!);
      return;
    }
    if (Date.now() > deadline) throw new Error(`helm was not asked to install ${cluster}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The agent's real relay link for `cluster` in namespace `ns` of the remote cluster (what the installed chart runs). */
async function startLink(ns: string, cluster: string, address: string): Promise<void> {
  const client = createKubeClient(remote.newKubeConfig());
  const link = await createRelayLinkFactory({
    reader: client,
    writer: withFieldOwner(client),
    namespace: ns,
    address,
    cluster,
    client: { backoff: { initialMs: 50, maxMs: 300 }, keyPem: clientKey },
    logger: silentLogger,
  })({ onOutput: () => Promise.resolve({ ack: true, errors: [] }) });
  links.push(link);
}

const clusterYaml = (name: string) => `apiVersion: admin.gloo.solo.io/v2\nkind: KubernetesCluster\nmetadata:\n  name: ${name}\n  namespace: gloo-mesh\nspec:\n  clusterDomain: cluster.local\n`;

async function run(args: readonly string[]) {
  const io = createCapturingIo();
  const code = await main(args, io);
  return { code, out: io.stdout(), err: io.stderr(), all: io.stdout() + io.stderr() };
}

const secret = (ns: string, name: string) => remote.emulator.get("v1", "Secret", ns, name) as { data?: Record<string, string> } | undefined;
const repoFile = async (path: string) => git.git("config", ["show", `main:${path}`]).catch(() => undefined);

function expectNoSecrets(text: string): void {
  expect(text).not.toContain(TOKEN);
  expect(text).not.toContain(b64(TOKEN));
  expect(text).not.toContain(GIT_TOKEN);
  expect(text).not.toContain("PRIVATE KEY");
}

const registerArgs = (name: string, extra: readonly string[] = []) => [
  "cluster",
  "register",
  name,
  "--kubeconfig",
  kubeconfig,
  "--mgmt-context",
  "mgmt",
  "--remote-context",
  "remote",
  "--relay-server-address",
  relayAddress,
  ...extra,
];

describe("gitmesh cluster register / deregister", () => {
  it("registers a cluster end to end: secrets, KubernetesCluster pushed, helm, agent certificate, token removed", async () => {
    process.env.PATH = `${stubBin}${delimiter}${originalPath ?? ""}`;
    process.env.GITMESH_GIT_PASSWORD = GIT_TOKEN;
    const tokenSeen: { present: boolean; value?: string } = { present: false };
    const agent = agentAfterHelm("cluster1", tokenSeen);
    const r = await run(registerArgs("cluster1", ["--repo", git.url("config"), "--timeout", "30s"]));
    await agent;
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    const lines = r.out.split("\n").filter((l) => l.startsWith("✓") || l.startsWith("✗"));
    expect(lines.every((l) => l.startsWith("✓"))).toBe(true);
    expect(lines.map((l) => l.slice(2, 30))).toEqual([
      "read root CA relay-root-tls-",
      "namespace gitmesh created in",
      "root CA relay-root-tls-secre",
      "single-use bootstrap credent",
      "bootstrap credential relay-i",
      "KubernetesCluster cluster1 c",
      `agent chart ${chart.slice(0, 16)}`,
      "agent registered: client cer",
      "bootstrap credential relay-i",
    ]);
    expect(r.out).toContain("Cluster cluster1 is registered.");
    expectNoSecrets(r.all);
    // A credential bound to cluster1 was minted in the management cluster: only its hash is stored there.
    expect(tokenSeen.value).toMatch(/^gmbc_/);
    expect(r.all).not.toContain(tokenSeen.value);
    const record = mgmt.emulator.get("v1", "Secret", "gitmesh", "relay-identity-cluster1") as { data: { record: string } };
    expect(unb64(record.data.record)).not.toContain(tokenSeen.value);
    expect(JSON.parse(unb64(record.data.record))).toMatchObject({ issued: { issuedAtMs: expect.any(Number) } });
    expect(JSON.parse(unb64(record.data.record)).credential).toBeUndefined();

    // Remote cluster: namespace, root CA without the CA key, client certificate; the token is gone.
    expect(remote.emulator.get("v1", "Namespace", undefined, "gitmesh")).toBeDefined();
    const root = secret("gitmesh", "relay-root-tls-secret");
    expect(Object.keys(root?.data ?? {})).toEqual(["ca.crt"]);
    expect(unb64(root?.data?.["ca.crt"])).toBe(pki.rootCaCertPem);
    expect(tokenSeen.present).toBe(true);
    expect(secret("gitmesh", "relay-identity-token-secret")).toBeUndefined();
    expect(unb64(secret("gitmesh", "relay-client-tls-secret")?.data?.["tls.crt"])).toContain("BEGIN CERTIFICATE");

    // The exact helm invocation.
    expect(helmCalls()).toEqual([
      [
        "upgrade",
        "--install",
        "gitmesh-agent",
        chart,
        "--namespace",
        "gitmesh",
        "--kube-context",
        "remote",
        "--kubeconfig",
        kubeconfig,
        "--set",
        `relay.serverAddress=${relayAddress}`,
        "--set",
        "relay.cluster=cluster1",
      ],
    ]);

    // The repository: one commit adding a valid KubernetesCluster, pushed with the token.
    const file = await repoFile("clusters/cluster1.yaml");
    expect(file).toBeDefined();
    expect(parseYaml(file!)).toEqual({ apiVersion: "admin.gloo.solo.io/v2", kind: "KubernetesCluster", metadata: { name: "cluster1", namespace: "gloo-mesh" }, spec: { clusterDomain: "cluster.local" } });
    const loaded = loadDesiredState([{ path: "clusters/cluster1.yaml", content: file! }]);
    expect(loaded.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expect(await git.git("config", ["log", "--format=%s", "main"])).toBe("Register cluster cluster1\ninitial\n");
    expect(await git.git("config", ["log", "-1", "--name-status", "--format=", "main"])).toBe("A\tclusters/cluster1.yaml\n");
    expect(git.requests.some((q) => q.service === "git-receive-pack" && q.authorization !== undefined)).toBe(true);
  }, 60_000);

  it("re-running register changes nothing and succeeds", async () => {
    const tip = await git.revParse("config", "refs/heads/main");
    const clientCert = secret("gitmesh", "relay-client-tls-secret");
    const r = await run(registerArgs("cluster1", ["--repo", git.url("config"), "--timeout", "30s"]));
    expect(r.code).toBe(0);
    expect(r.out).toContain("namespace gitmesh exists in the remote cluster (context remote): unchanged");
    expect(r.out).toContain("root CA relay-root-tls-secret in gitmesh (context remote): unchanged");
    expect(r.out).toMatch(/bootstrap credential not needed: the agent already holds a client certificate/);
    expect(r.out).toContain("clusters/cluster1.yaml in");
    expect(r.out).toContain("exists, kept as is: unchanged");
    expect(r.out).toContain("bootstrap credential relay-identity-token-secret already absent in gitmesh (context remote)");
    expectNoSecrets(r.all);
    expect(await git.revParse("config", "refs/heads/main")).toBe(tip);
    expect(secret("gitmesh", "relay-identity-token-secret")).toBeUndefined();
    expect(secret("gitmesh", "relay-client-tls-secret")).toEqual(clientCert);
    // helm upgrade --install is itself idempotent: the same call again.
    const calls = helmCalls();
    expect(calls).toHaveLength(2);
    expect(calls[1]).toEqual(calls[0]);
  }, 60_000);

  it("reissue revokes the certificate, the running agent registers with the new credential, which is then removed", async () => {
    const before = secret("gitmesh", "relay-client-tls-secret");
    const r = await run(["cluster", "reissue", "cluster1", "--kubeconfig", kubeconfig, "--remote-context", "remote", "--timeout", "30s"]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/✓ certificates of cluster1 revoked; single-use bootstrap credential for cluster1 minted in gitmesh \(context mgmt\)/);
    expect(r.out).toContain("✓ agent registered again: new client certificate for cluster1");
    expect(r.out).toContain("Cluster cluster1 holds a new identity");
    expectNoSecrets(r.all);
    expect(secret("gitmesh", "relay-client-tls-secret")).not.toEqual(before);
    expect(secret("gitmesh", "relay-identity-token-secret")).toBeUndefined();
  }, 60_000);

  it("register refuses to mint a credential while the cluster holds a live certificate, naming reissue", async () => {
    const kept = secret("gitmesh", "relay-client-tls-secret");
    remote.emulator.remove("v1", "Secret", "gitmesh", "relay-client-tls-secret");
    try {
      const r = await run(registerArgs("cluster1", ["--repo", git.url("config"), "--timeout", "5s"]));
      expect(r.code).toBe(1);
      expect(r.out).toMatch(/✗ cluster "cluster1" holds a valid client certificate \(until .*gitmesh cluster reissue cluster1/);
      expect(secret("gitmesh", "relay-identity-token-secret")).toBeUndefined();
    } finally {
      remote.emulator.seed([{ apiVersion: "v1", kind: "Secret", metadata: { name: "relay-client-tls-secret", namespace: "gitmesh" }, type: "kubernetes.io/tls", data: kept!.data }]);
    }
  }, 60_000);

  it("deregister uninstalls, deletes the secrets and commits the removal; again is a no-op", async () => {
    const r = await run(["cluster", "deregister", "cluster1", "--kubeconfig", kubeconfig, "--remote-context", "remote", "--repo", git.url("config")]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expectNoSecrets(r.all);
    expect(helmCalls()[2]).toEqual(["uninstall", "gitmesh-agent", "--namespace", "gitmesh", "--kube-context", "remote", "--kubeconfig", kubeconfig]);
    for (const s of ["relay-client-tls-secret", "relay-identity-token-secret", "relay-root-tls-secret"]) expect(secret("gitmesh", s)).toBeUndefined();
    expect(r.out).toContain("secret relay-client-tls-secret deleted from gitmesh (context remote)");
    expect(r.out).toContain("certificates of cluster1 revoked in gitmesh (context mgmt)");
    expect(await repoFile("clusters/cluster1.yaml")).toBeUndefined();
    expect(await git.git("config", ["log", "-1", "--format=%s", "main"])).toBe("Deregister cluster cluster1\n");
    expect(await git.git("config", ["log", "-1", "--name-status", "--format=", "main"])).toBe("D\tclusters/cluster1.yaml\n");
    expect(await git.git("config", ["ls-tree", "--name-only", "main"])).toBe("README.md\ngitmesh.yaml\n");

    const tip = await git.revParse("config", "refs/heads/main");
    const again = await run(["cluster", "deregister", "cluster1", "--kubeconfig", kubeconfig, "--remote-context", "remote", "--repo", git.url("config")]);
    expect(again.code).toBe(0);
    expect(again.out).toContain("secret relay-root-tls-secret already absent in gitmesh (context remote)");
    expect(again.out).toContain("clusters/cluster1.yaml in");
    expect(again.out).toContain("already absent");
    expect(await git.revParse("config", "refs/heads/main")).toBe(tip);
  }, 60_000);

  it("without helm on PATH and without --repo, prints the exact helm command and the KubernetesCluster for a pull request", async () => {
    process.env.PATH = originalPath;
    const callsBefore = helmCalls().length;
    const r = await run(registerArgs("cluster2", ["--agent-namespace", "gm2", "--relay-authority", "relay.example.com"]));
    expect(r.code).toBe(0);
    expectNoSecrets(r.all);
    expect(r.out).toContain("helm is not on PATH; install the agent with:");
    expect(r.out).toContain(
      `    helm upgrade --install gitmesh-agent ${chart} --namespace gm2 --kube-context remote --kubeconfig ${kubeconfig} --set relay.serverAddress=${relayAddress} --set relay.cluster=cluster2 --set relay.authority=relay.example.com\n`,
    );
    expect(r.out).toContain("add this file as clusters/cluster2.yaml");
    expect(r.out).toContain("      name: cluster2\n");
    expect(r.out).toContain("Cluster cluster2 is not registered yet");
    expect(helmCalls()).toHaveLength(callsBefore);
    // Secrets are in place for the agent; the token stays until it has registered.
    expect(unb64(secret("gm2", "relay-identity-token-secret")?.data?.token)).toMatch(/^gmbc_[A-Za-z0-9_-]{43}$/);
    expect(secret("gm2", "relay-root-tls-secret")).toBeDefined();
    expect(r.out).toContain('pending step "agent chart" (done: secrets)');

    // The operator runs the printed helm command by hand and merges the file; running register again
    // (still no helm) finds the agent, waits for its certificate and removes the credential.
    await git.commitFiles("config", { "clusters/cluster2.yaml": clusterYaml("cluster2") }, "add cluster2");
    remote.emulator.seed([{ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "gitmesh-agent", namespace: "gm2" }, spec: { selector: { matchLabels: { app: "gitmesh-agent" } }, template: { metadata: { labels: { app: "gitmesh-agent" } }, spec: { containers: [{ name: "agent", image: "gitmesh" }] } } } }]);
    await startLink("gm2", "cluster2", relayAddress);
    for (let i = 0; i < 200 && secret("gm2", "relay-client-tls-secret") === undefined; i++) await new Promise((r) => setTimeout(r, 50));
    const again = await run(registerArgs("cluster2", ["--agent-namespace", "gm2", "--timeout", "30s"]));
    expect(again.code, again.all).toBe(0);
    expect(again.out).toContain("agent chart: helm is not on PATH; Deployment gm2/gitmesh-agent found (installed by hand)");
    expect(again.out).toContain("Cluster cluster2 is registered.");
    expect(secret("gm2", "relay-identity-token-secret")).toBeUndefined();
    expect(helmCalls()).toHaveLength(callsBefore);
  }, 90_000);

  it("times out with what to check when no certificate appears, leaving the token; commits to a local bare repository", async () => {
    process.env.PATH = `${stubBin}${delimiter}${originalPath ?? ""}`;
    const r = await run(registerArgs("cluster3", ["--agent-namespace", "gm3", "--repo", git.repoPath("config"), "--timeout", "1s"]));
    expect(r.code).toBe(1);
    expectNoSecrets(r.all);
    expect(r.out).toContain("✗ no client certificate from the agent after 1s; the bootstrap credential is left in place");
    expect(r.out).toMatch(/\(a local repository: committed, not pushed; push it to the remote the server reads, e\.g\. git -C \S+ push\)/);
    expect(r.out).toContain("kubectl --context remote -n gm3 get pods");
    expect(r.out).toContain(`check that ${relayAddress} is reachable`);
    expect(secret("gm3", "relay-identity-token-secret")).toBeDefined();
    expect(await repoFile("clusters/cluster3.yaml")).toContain("name: cluster3");
    expect(await git.git("config", ["log", "-1", "--format=%s", "main"])).toBe("Register cluster cluster3\n");
  }, 60_000);

  it("a local work tree gets the commit on its checked-out branch with a clean status; deregister removes it the same way", async () => {
    process.env.PATH = originalPath;
    const wt = join(dir, "worktree");
    await git.git("config", ["clone", "--quiet", "--branch", "main", git.repoPath("config"), wt]);
    const inTree = (args: readonly string[]) => git.git("config", ["--git-dir", join(wt, ".git"), "--work-tree", wt, ...args]);
    const r = await run(registerArgs("cluster7", ["--agent-namespace", "gm7", "--repo", wt]));
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/KubernetesCluster cluster7 committed as clusters\/cluster7.yaml to .*worktree \(branch main\): [0-9a-f]{12} \(a local repository: committed, not pushed; push it to the remote the server reads, e\.g\. git -C \S+worktree push\)\n/);
    expect(readFileSync(join(wt, "clusters", "cluster7.yaml"), "utf8")).toContain("name: cluster7");
    expect(await inTree(["log", "-1", "--format=%s"])).toBe("Register cluster cluster7\n");
    expect(await inTree(["status", "--porcelain"])).toBe("");

    const d = await run(["cluster", "deregister", "cluster7", "--kubeconfig", kubeconfig, "--remote-context", "remote", "--agent-namespace", "gm7", "--repo", wt]);
    expect(d.code).toBe(0);
    expect(d.out).toContain("helm is not on PATH; uninstall the agent with:\n    helm uninstall gitmesh-agent --namespace gm7 --kube-context remote --kubeconfig");
    expect(existsSync(join(wt, "clusters", "cluster7.yaml"))).toBe(false);
    expect(await inTree(["log", "-1", "--format=%s"])).toBe("Deregister cluster cluster7\n");
    expect(await inTree(["status", "--porcelain"])).toBe("");
  }, 60_000);

  it("dry run reports and changes nothing", async () => {
    const tip = await git.revParse("config", "refs/heads/main");
    const before = helmCalls().length;
    const r = await run(registerArgs("cluster4", ["--agent-namespace", "gm4", "--repo", git.repoPath("config"), "--dry-run"]));
    expect(r.code).toBe(0);
    expect(r.out).toContain("namespace gm4 would be created");
    expect(r.out).toContain("would be committed");
    expect(r.out).toContain("agent chart: would run helm upgrade --install");
    expect(remote.emulator.get("v1", "Namespace", undefined, "gm4")).toBeUndefined();
    expect(await git.revParse("config", "refs/heads/main")).toBe(tip);
    expect(helmCalls()).toHaveLength(before);
  }, 30_000);

  it("missing management secrets: a clear error with the command to fix it, exit 1, nothing done remotely", async () => {
    const r = await run(registerArgs("cluster5", ["--mgmt-namespace", "empty", "--agent-namespace", "gm5"]));
    expect(r.code).toBe(1);
    expect(r.out).toContain("✗ secret empty/relay-root-tls-secret not found in the management cluster (context mgmt)");
    expect(r.out).toContain("kubectl --context mgmt -n empty create secret generic relay-root-tls-secret --from-file=ca.crt=<root CA file>");
    expect(remote.emulator.get("v1", "Namespace", undefined, "gm5")).toBeUndefined();
  });

  it("Git credentials refused: a clear error naming the variables, exit 1, no secret printed", async () => {
    process.env.GITMESH_GIT_PASSWORD = "wrong-password";
    try {
      const r = await run(registerArgs("cluster8", ["--agent-namespace", "gm8", "--repo", git.url("config")]));
      expect(r.code).toBe(1);
      expectNoSecrets(r.all);
      expect(r.all).not.toContain("wrong-password");
      expect(r.out).toMatch(/✗ configuration repository http:\/\/127\.0\.0\.1:\d+\/config\.git \(branch main\): fetching branch main: the Git server refused the credentials.*GITMESH_GIT_PASSWORD/);
    } finally {
      process.env.GITMESH_GIT_PASSWORD = GIT_TOKEN;
    }
  }, 30_000);

  it("missing or unreachable contexts are errors (exit 1); bad flags are usage errors (exit 2)", async () => {
    const missing = await run(registerArgs("cluster6").map((a) => (a === "remote" ? "nope" : a)));
    expect(missing.code).toBe(1);
    expect(missing.out).toContain('✗ the remote context "nope" is not in the kubeconfig (contexts: mgmt, remote, dead)');

    const dead = await run(["cluster", "deregister", "cluster6", "--kubeconfig", kubeconfig, "--remote-context", "dead"]);
    expect(dead.code).toBe(1);
    expect(dead.out).toContain("✗ cannot reach the remote cluster (context dead, http://127.0.0.1:9)");

    expect((await run(registerArgs("Bad_Name"))).code).toBe(2);
    expect((await run(["cluster", "register", "c7", "--remote-context", "remote"])).code).toBe(2);
    expect((await run(registerArgs("c7", ["--timeout", "soon"]))).code).toBe(2);
    const badAddress = await run(registerArgs("c7").map((a) => (a === relayAddress ? "no-port" : a)));
    expect(badAddress.code).toBe(2);
    expect(badAddress.err).toContain("--relay-server-address must be host:port");
  });
});
