/**
 * charts/gitmesh-agent rendered like `helm template`: Kubernetes schema validity, hardening,
 * probes, least-privilege RBAC (exactly what the agent calls), values checks and golden renders.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { createMemoryLogger } from "../../src/core/index.js";
import { createRelayServer, generateRelayPki, type OutputAckEvent, type OutputNackEvent } from "../../src/relay/index.js";
import { AGENT_ENV, OUTPUT_OPTIONS_KEY, type KubeObject } from "../../src/agent/index.js";
import { eventually, startKube } from "../helpers/kube.js";
import { exampleObjects } from "../agent/helpers.js";
import { loadCase, runCase } from "../translate/golden.js";
import { GATEWAY_SECRETS_CLUSTER_ROLE } from "../../src/translate/index.js";
import { SAIL_KINDS } from "../../src/kube-emulator/index.js";
import { helmBinary, notes, render, renderOk } from "./helm.js";
import { agentCalls, DEFAULT_SECRETS, envOf, expectGolden, expectHardened, find, grantsOf, lifecycleOutput, podSpec, validateAll } from "./checks.js";

const CHART = "gitmesh-agent";
const BIN = fileURLToPath(new URL("../../bin/gitmesh.js", import.meta.url));
const REQUIRED = ["--set", "relay.serverAddress=mgmt.example.com:9900", "--set", "relay.cluster=cluster1"];
const BASE = ["--name", "gitmesh-agent", "--namespace", "gitmesh", ...REQUIRED];


// The real helm (tools/helm): missing, every test here fails with the command that builds it.
beforeAll(() => {
  helmBinary();
});

describe("gitmesh-agent chart", () => {
  it("renders valid, hardened manifests with the required values (golden)", async () => {
    const { text, manifests } = await renderOk(CHART, BASE);
    validateAll(manifests);
    expect(manifests.map((m) => `${m.object.kind}/${m.object.metadata.name}`).sort()).toEqual([
      "ClusterRole/gitmesh-agent", "ClusterRoleBinding/gitmesh-agent", "Deployment/gitmesh-agent",
      "Role/gitmesh-agent", "Role/gitmesh-agent-istio", "RoleBinding/gitmesh-agent", "RoleBinding/gitmesh-agent-istio",
      "Service/gitmesh-agent", "ServiceAccount/gitmesh-agent",
    ]);
    const dep = find(manifests, "Deployment", "gitmesh-agent");
    expectHardened(dep);
    const [c] = podSpec(dep).containers;
    expect(c?.livenessProbe?.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(c?.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "http" });
    expect(c?.ports).toEqual([{ name: "http", containerPort: 9977, protocol: "TCP" }]);
    expect(envOf(c!)).toMatchObject({
      GITMESH_RELAY_SERVER_ADDRESS: "mgmt.example.com:9900",
      GITMESH_RELAY_CLUSTER: "cluster1",
      GITMESH_RELAY_AUTHORITY: "gitmesh-server.gitmesh",
      GITMESH_DISCOVERY_SELECTORS: "[]",
      POD_NAMESPACE: { fieldRef: { fieldPath: "metadata.namespace" } },
    });
    // one source of truth: every variable the chart sets is one the agent reads (src/agent/config.ts AGENT_ENV)
    expect(Object.keys(envOf(c!)).filter((k) => !(Object.values(AGENT_ENV) as string[]).includes(k))).toEqual([]);
    expect(find(manifests, "Service", "gitmesh-agent").spec).toMatchObject({ type: "ClusterIP", ports: [{ port: 9977, targetPort: "http" }] });
    expectGolden("agent-defaults", text);
  });

  it("grants exactly what the agent calls, nothing more (default values)", async () => {
    const { manifests } = await renderOk(CHART, BASE);
    const grants = grantsOf(manifests, { name: "gitmesh-agent", namespace: "gitmesh" });
    const expected = agentCalls({ ns: "gitmesh", istioNs: "istio-system", lease: "gitmesh-agent", inventory: "gitmesh-agent-inventory", secrets: DEFAULT_SECRETS, cacerts: true });
    expect([...grants].sort()).toEqual([...expected].sort());
    // Secrets are never readable cluster-wide nor in arbitrary namespaces.
    expect([...grants].filter((g) => g.includes("/secrets ") && (g.startsWith("cluster") || g.endsWith(" *")) && !g.includes(" create "))).toEqual([]);
  });

  it("lifecycle.enabled adds the installation rights, writing only in the gateway namespaces", async () => {
    const { manifests } = await renderOk(CHART, [...BASE, "--set", "lifecycle.enabled=true", "--set", "lifecycle.gatewayNamespaces={istio-ingress}"]);
    const grants = [...grantsOf(manifests, { name: "gitmesh-agent", namespace: "gitmesh" })];
    const base = grantsOf((await renderOk(CHART, BASE)).manifests, { name: "gitmesh-agent", namespace: "gitmesh" });
    const added = grants.filter((g) => !base.has(g));
    const writes = added.filter((g) => / (create|delete|patch|update) /.test(g));
    // Cluster-wide writes: the Sail operator's cluster-scoped control planes only.
    expect(writes.filter((g) => g.startsWith("cluster ")).map((g) => g.split(" ")[1]).sort()).toEqual([...new Set(["sailoperator.io/istiocnis", "sailoperator.io/istiorevisiontags", "sailoperator.io/istios"])].flatMap((r) => [r, r, r]).sort());
    // Namespaced writes: in the gateway namespace only. No Secret reads: the agent only binds the gateway ClusterRole there.
    expect(new Set(writes.filter((g) => !g.startsWith("cluster ")).map((g) => g.split(" ")[0]))).toEqual(new Set(["ns:istio-ingress"]));
    expect(added.filter((g) => g.includes("/secrets "))).toEqual([]);
    expect(added.filter((g) => g.includes("clusterroles"))).toEqual([`ns:istio-ingress rbac.authorization.k8s.io/clusterroles bind ${GATEWAY_SECRETS_CLUSTER_ROLE}`]);
    expect(envOf(podSpec(find(manifests, "Deployment", "gitmesh-agent")).containers[0]!)).toMatchObject({ GITMESH_MANAGE_ISTIO_INSTALL: "true" });
  });

  it("rateLimit.configNamespaces adds ConfigMap rights in those namespaces only", async () => {
    const { manifests } = await renderOk(CHART, [...BASE, "--set", "rateLimit.configNamespaces={gloo-mesh-addons,rate-limit}"]);
    const base = grantsOf((await renderOk(CHART, BASE)).manifests, { name: "gitmesh-agent", namespace: "gitmesh" });
    const added = [...grantsOf(manifests, { name: "gitmesh-agent", namespace: "gitmesh" })].filter((g) => !base.has(g));
    const verbs = ["create", "delete", "get", "list", "patch", "watch"];
    expect(added.sort()).toEqual(["gloo-mesh-addons", "rate-limit"].flatMap((ns) => verbs.map((v) => `ns:${ns} /configmaps ${v} *`)).sort());
    expect(envOf(podSpec(find(manifests, "Deployment", "gitmesh-agent")).containers[0]!)).toMatchObject({ GITMESH_RATE_LIMIT_CONFIG_NAMESPACES: "gloo-mesh-addons,rate-limit" });
    const bad = await render(CHART, [...BASE, "--set", "rateLimit.configNamespaces={Not_A_Namespace}"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("at '/rateLimit/configNamespaces/0': 'Not_A_Namespace' does not match pattern");
  });

  it("follows representative values: replicas, selectors, secret names, Istio namespace, no cacerts (golden)", async () => {
    const { text, manifests } = await renderOk(CHART, [
      "--name", "agent", "--namespace", "mesh-agent", ...REQUIRED,
      "--set", "replicas=3",
      "--set", "relay.authority=gitmesh.mgmt.internal",
      "--set", "relay.rootTlsSecret=my-root,relay.tokenSecret=my-token,relay.clientTlsSecret=my-client",
      "--set", "istio.namespace=istio-1-29,istio.writeCacerts=false",
      "--set", "discovery.selectors[0].matchLabels.istio-injection=enabled",
      "--set", "discovery.selectors[1].matchExpressions[0].key=team",
      "--set", "discovery.selectors[1].matchExpressions[0].operator=In",
      "--set", "discovery.selectors[1].matchExpressions[0].values={payments,checkout}",
      "--set", "leaderElection.leaseName=agent-leader",
      "--set", "image.tag=1.2.3",
    ]);
    validateAll(manifests);
    const dep = find(manifests, "Deployment", "agent-gitmesh-agent");
    expect((dep.spec as { replicas: number }).replicas).toBe(3);
    expectHardened(dep);
    const [c] = podSpec(dep).containers;
    const env = envOf(c!);
    expect(JSON.parse(env.GITMESH_DISCOVERY_SELECTORS as string)).toEqual([
      { matchLabels: { "istio-injection": "enabled" } },
      { matchExpressions: [{ key: "team", operator: "In", values: ["payments", "checkout"] }] },
    ]);
    expect(env).toMatchObject({ GITMESH_RELAY_AUTHORITY: "gitmesh.mgmt.internal", GITMESH_ISTIO_NAMESPACE: "istio-1-29", GITMESH_LEADER_ELECTION_LEASE: "agent-leader" });
    expect((c as unknown as { image: string }).image).toBe("ghcr.io/gitmesh/gitmesh:1.2.3");
    const grants = grantsOf(manifests, { name: "agent-gitmesh-agent", namespace: "mesh-agent" });
    const expected = agentCalls({ ns: "mesh-agent", istioNs: "istio-1-29", lease: "agent-leader", inventory: "gitmesh-agent-inventory", secrets: { root: "my-root", token: "my-token", client: "my-client" }, cacerts: false });
    expect([...grants].sort()).toEqual([...expected].sort());
    expectGolden("agent-representative", text);
  });

  it("NOTES tell the user what to do next", async () => {
    const r = await notes(CHART, [...BASE, "--set", "replicas=2"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("kubectl -n gitmesh delete secret relay-identity-token-secret");
    expect(r.stdout).toContain('KubernetesCluster named "cluster1"');
    expect(r.stdout).toContain("2 replicas: one leader (Lease gitmesh/gitmesh-agent)");
  });

  it("rejects a missing relay.serverAddress or relay.cluster with a message naming the value", async () => {
    const noAddress = await render(CHART, ["--set", "relay.cluster=cluster1"]);
    expect(noAddress.code).toBe(1);
    expect(noAddress.stdout).toBe("");
    expect(noAddress.stderr).toContain("relay.serverAddress is required");
    expect(noAddress.stderr).toContain("gitmesh-agent/templates/deployment.yaml");
    const noCluster = await render(CHART, ["--set", "relay.serverAddress=mgmt:9900"]);
    expect(noCluster.code).toBe(1);
    expect(noCluster.stderr).toContain("relay.cluster is required");
  });

  it.each([
    [["--set", "replicas=two"], "at '/replicas': got string, want integer"],
    [["--set", "replicas=0"], "at '/replicas': minimum: got 0, want 1"],
    [["--set", "relay.serverAdress=mgmt:9900"], "at '/relay': additional properties 'serverAdress' not allowed"],
    [["--set", "relay.serverAddress=https://mgmt"], "at '/relay/serverAddress': 'https://mgmt' does not match pattern"],
    [["--set", "relay.cluster=Cluster_1"], "at '/relay/cluster': 'Cluster_1' does not match pattern"],
    [["--set", "resyncPeriod=fast"], "at '/resyncPeriod': 'fast' does not match pattern"],
    [["--set", "discovery.selectors[0].matchExpressions[0].key=a,discovery.selectors[0].matchExpressions[0].operator=Equals"], "at '/discovery/selectors/0/matchExpressions/0/operator': value must be one of 'In', 'NotIn', 'Exists', 'DoesNotExist'"],
  ])("rejects values failing values.schema.json: %j", async (args, message) => {
    const r = await render(CHART, [...BASE, ...args]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("values don't meet the specifications of the schema(s) in the following chart(s):\ngitmesh-agent:");
    expect(r.stderr).toContain(message);
  });
});

/**
 * One source of truth: the REAL agent process (`gitmesh agent`, configured only by the env of the
 * rendered Deployment) against the emulator with RBAC enforced from the rendered Role/ClusterRole
 * objects, through a full cycle: leader Lease, registration (relay secrets), discovery, apply,
 * update, prune, inventory, graceful stop. Any 403 fails the test.
 */
describe("gitmesh-agent chart RBAC against the requests the agent really makes", () => {
  const TOKEN = "bootstrap-token-chart-0123456789abcdef";
  const SA_TOKEN = "agent-service-account-token";
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const enc = new TextEncoder();
  const resources = (objs: readonly KubeObject[]) => new Map(objs.map((o) => [`${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`, enc.encode(JSON.stringify(o))]));

  async function cycle(
    args: readonly string[],
    v: { release: string; ns: string; istioNs: string; secrets: { root: string; token: string; client: string }; lease: string; inventory: string; lifecycle?: "enabled" | "refused"; rateLimit?: "enabled" | "refused" },
  ) {
    const pki = generateRelayPki({ additionalSans: ["127.0.0.1"] });
    const acks: OutputAckEvent[] = [];
    const nacks: OutputNackEvent[] = [];
    const server = createRelayServer({ pki, token: TOKEN, isClusterRegistered: (c) => c === "cluster1", logger: createMemoryLogger("relay").logger, registry: new Registry(), host: "127.0.0.1", port: 0, onAck: (e) => acks.push(e), onNack: (e) => nacks.push(e) });
    const port = await server.start();
    const { manifests } = await renderOk(CHART, ["--name", v.release, "--namespace", v.ns, "--set", `relay.serverAddress=127.0.0.1:${String(port)}`, "--set", "relay.cluster=cluster1", ...args]);
    const rbacObjects = manifests.map((m) => m.object).filter((o) => ["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"].includes(o.kind));
    const sa = find(manifests, "ServiceAccount", v.release === "gitmesh-agent" ? "gitmesh-agent" : `${v.release}-gitmesh-agent`).metadata as { name: string };
    const kube = await startKube({
      ...(v.lifecycle ? { kinds: SAIL_KINDS } : {}),
      seed: [
        { apiVersion: "v1", kind: "Namespace", metadata: { name: "istio-gateways" } },
        // The example cluster runs a Helm-installed ingress gateway in istio-gateways; a lifecycle run
        // installs its own there instead (an existing object would be refused, never taken over).
        ...(await exampleObjects("cluster1")).filter((o) => !v.lifecycle || (o as { metadata: { namespace?: string } }).metadata.namespace !== "istio-gateways"),
        { apiVersion: "v1", kind: "Namespace", metadata: { name: v.ns } },
        { apiVersion: "v1", kind: "Namespace", metadata: { name: v.istioNs } },
        { apiVersion: "v1", kind: "Namespace", metadata: { name: "bookinfo" } },
        { apiVersion: "v1", kind: "Namespace", metadata: { name: "gloo-mesh-addons" } },
        { apiVersion: "v1", kind: "Secret", metadata: { name: v.secrets.root, namespace: v.ns }, data: { "ca.crt": b64(pki.rootCaCertPem) } },
        { apiVersion: "v1", kind: "Secret", metadata: { name: v.secrets.token, namespace: v.ns }, data: { token: b64(TOKEN) } },
      ],
      rbac: { tokens: { [SA_TOKEN]: `system:serviceaccount:${v.ns}:${sa.name}` }, objects: rbacObjects },
    });
    const tmp = await mkdtemp(join(tmpdir(), "gitmesh-agent-rbac-"));
    const kubeconfig = join(tmp, "kubeconfig");
    await writeFile(kubeconfig, kube.emulator.kubeconfig({ token: SA_TOKEN }));
    // The environment of the rendered Deployment, as the kubelet would set it.
    const [container] = podSpec(find(manifests, "Deployment", sa.name)).containers;
    const env: Record<string, string> = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => !e[0].startsWith("GITMESH_") && e[1] !== undefined));
    for (const e of container!.env ?? []) {
      if (e.value !== undefined) env[e.name] = e.value;
      else if (JSON.stringify(e.valueFrom).includes("metadata.namespace")) env[e.name] = v.ns;
      else if (JSON.stringify(e.valueFrom).includes("metadata.name")) env[e.name] = `${sa.name}-abc12`;
    }
    env.GITMESH_AGENT_HTTP_PORT = "0";
    env.KUBECONFIG = kubeconfig;
    let out = "";
    const child = spawn(process.execPath, [BIN, ...(container as unknown as { args: string[] }).args], { env, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const why = () => `403s: ${JSON.stringify(kube.emulator.forbidden(), null, 1)}\nagent output:\n${out.slice(-3000)}`;
    try {
      const publish = async (version: number, objs: readonly KubeObject[]) => {
        server.publishOutput("cluster1", { version, sourceCommit: `c${String(version)}`, complete: true, resources: resources(objs) });
        await eventually(`v${String(version)} acked`, () => acks.find((a) => a.version === version) ?? (nacks.find((n) => n.version === version) ? (() => { throw new Error(`v${String(version)} NACKed: ${JSON.stringify(nacks)}\n${why()}`); })() : undefined), 30_000).catch((e: unknown) => {
          throw new Error(`${String(e)}\n${why()}`);
        });
      };
      await publish(1, [agentVs("reviews"), agentVs("ratings"), agentDr("reviews")]);
      await publish(2, [agentVs("reviews", "v2"), agentDr("reviews")]);
      expect(kube.emulator.get("networking.istio.io/v1", "VirtualService", "bookinfo", "ratings")).toBeUndefined();
      expect(kube.emulator.get("v1", "Secret", v.ns, v.secrets.client), why()).toBeDefined();
      expect(kube.emulator.get("v1", "ConfigMap", v.ns, v.inventory), why()).toBeDefined();
      expect((kube.emulator.get("coordination.k8s.io/v1", "Lease", v.ns, v.lease)?.spec as { holderIdentity?: string } | undefined)?.holderIdentity).toBe(`${sa.name}-abc12`);
      if (v.lifecycle === "enabled") {
        // The real translation of a canary installation (test/fixtures/translate/lifecycle), applied
        // under the chart's RBAC: Sail control planes at cluster scope, gateways in their namespace.
        const install = lifecycleOutput();
        await publish(3, [agentVs("reviews", "v2"), agentDr("reviews"), ...install]);
        expect(kube.emulator.get("sailoperator.io/v1", "Istio", undefined, "1-28"), why()).toBeDefined();
        expect(kube.emulator.get("sailoperator.io/v1", "IstioRevisionTag", undefined, "default")?.spec).toEqual({ targetRef: { kind: "Istio", name: "1-28" } });
        expect(kube.emulator.list("apps/v1", "Deployment", "istio-gateways").map((d) => (d.metadata as { name: string }).name).sort()).toEqual(["istio-egressgateway-1-28", "istio-ingressgateway-1-28", "istio-ingressgateway-1-29"]);
        expect(kube.emulator.get("rbac.authorization.k8s.io/v1", "RoleBinding", "istio-gateways", "istio-ingressgateway-1-29-secrets")?.roleRef).toEqual({ apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: GATEWAY_SECRETS_CLUSTER_ROLE });
        // The canary is finished: revision 1-29's gateway goes, and only it.
        const kept = install.filter((o) => !o.metadata.name.endsWith("-1-29") || o.apiVersion.startsWith("sailoperator.io/"));
        await publish(4, [agentVs("reviews", "v2"), agentDr("reviews"), ...kept]);
        expect(kube.emulator.get("apps/v1", "Deployment", "istio-gateways", "istio-ingressgateway-1-29")).toBeUndefined();
        expect(kube.emulator.get("v1", "ServiceAccount", "istio-gateways", "istio-ingressgateway-1-29")).toBeUndefined();
        expect(kube.emulator.get("apps/v1", "Deployment", "istio-gateways", "istio-ingressgateway-1-28")).toBeDefined();
        expect(kube.emulator.get("sailoperator.io/v1", "Istio", undefined, "1-29")).toBeDefined();
        // Removing revision 1-29's control plane uninstalls it: refused without the commit's
        // allowance (a typo in a cluster name must not take a mesh down), applied with it.
        const without129 = kept.filter((o) => !(o.kind === "Istio" && o.metadata.name === "1-29"));
        server.publishOutput("cluster1", { version: 5, sourceCommit: "c5", complete: true, resources: resources([agentVs("reviews", "v2"), agentDr("reviews"), ...without129]) });
        const refusal = await eventually("v5 NACKed", () => nacks.find((n) => n.version === 5), 30_000);
        expect(JSON.stringify(refusal)).toContain("Gitmesh-Allow-Deletion: cluster1");
        expect(kube.emulator.get("sailoperator.io/v1", "Istio", undefined, "1-29")).toBeDefined();
        const allowed = resources([agentVs("reviews", "v2"), agentDr("reviews"), ...without129]);
        allowed.set(OUTPUT_OPTIONS_KEY, enc.encode(JSON.stringify({ allowMassDeletion: true })));
        server.publishOutput("cluster1", { version: 6, sourceCommit: "c6", complete: true, resources: allowed });
        await eventually("v6 acked", () => acks.find((a) => a.version === 6), 30_000);
        expect(kube.emulator.get("sailoperator.io/v1", "Istio", undefined, "1-29")).toBeUndefined();
        expect(kube.emulator.get("sailoperator.io/v1", "Istio", undefined, "1-28")).toBeDefined();
      }
      if (v.rateLimit === "enabled") {
        // The real translation of a RateLimitServerConfig (test/fixtures/translate/rate-limit): the
        // rate limiter's configuration, written beside it under the namespace's Role only.
        const config = rateLimitConfig();
        await publish(3, [agentVs("reviews", "v2"), agentDr("reviews"), config]);
        const live = kube.emulator.get("v1", "ConfigMap", "gloo-mesh-addons", config.metadata.name);
        expect(live?.data, why()).toEqual(config.data);
        // Someone edits it: drift repair (a watch in that namespace only) puts the rendered limits back.
        kube.emulator.seed([{ ...live!, data: { "limits.gloo-mesh-addons.yaml": "domain: x\n" } }]);
        await eventually("ConfigMap repaired", () => (JSON.stringify(kube.emulator.get("v1", "ConfigMap", "gloo-mesh-addons", config.metadata.name)?.data) === JSON.stringify(config.data) ? true : undefined), 30_000);
        // The server config is gone from Git: its ConfigMap is pruned.
        await publish(4, [agentVs("reviews", "v2"), agentDr("reviews")]);
        expect(kube.emulator.get("v1", "ConfigMap", "gloo-mesh-addons", config.metadata.name), why()).toBeUndefined();
      }
      if (v.rateLimit === "refused") {
        server.publishOutput("cluster1", { version: 3, sourceCommit: "c3", complete: true, resources: resources([agentVs("reviews", "v3"), agentDr("reviews"), rateLimitConfig()]) });
        const nack = await eventually("v3 NACKed", () => nacks.find((n) => n.version === 3), 30_000);
        expect(JSON.stringify(nack)).toContain("rateLimit.configNamespaces");
        expect(JSON.stringify(kube.emulator.get("networking.istio.io/v1", "VirtualService", "bookinfo", "reviews")?.spec)).toContain("v3");
        expect(kube.emulator.list("v1", "ConfigMap", "gloo-mesh-addons")).toEqual([]);
      }
      if (v.lifecycle === "refused") {
        // An agent installed for configuration only refuses installation objects (it has no right to
        // write them either), while the rest of the output applies.
        server.publishOutput("cluster1", { version: 3, sourceCommit: "c3", complete: true, resources: resources([agentVs("reviews", "v3"), agentDr("reviews"), ...lifecycleOutput()]) });
        const nack = await eventually("v3 NACKed", () => nacks.find((n) => n.version === 3), 30_000);
        expect(JSON.stringify(nack)).toContain("lifecycle.enabled=true");
        expect(JSON.stringify(kube.emulator.get("networking.istio.io/v1", "VirtualService", "bookinfo", "reviews")?.spec)).toContain("v3");
        expect(kube.emulator.list("apps/v1", "Deployment", "istio-gateways")).toEqual([]);
      }
      const code = new Promise<number | null>((resolve) => child.once("exit", (n) => resolve(n)));
      child.kill("SIGTERM");
      expect(await code, why()).toBe(0);
      // released on the way out (an update of the Lease)
      expect((kube.emulator.get("coordination.k8s.io/v1", "Lease", v.ns, v.lease)?.spec as { holderIdentity?: string }).holderIdentity).toBe("");
      expect(kube.emulator.forbidden(), why()).toEqual([]);
      expect(out).not.toMatch(/HTTP 403|forbidden/i);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await server.stop();
      await kube.stop();
      await rm(tmp, { recursive: true, force: true });
    }
  }

  it("default values: no request is forbidden", async () => {
    await cycle([], { release: "gitmesh-agent", ns: "gitmesh", istioNs: "istio-system", secrets: DEFAULT_SECRETS, lease: "gitmesh-agent", inventory: "gitmesh-agent-inventory" });
  }, 120_000);

  it("lifecycle.enabled: the agent installs Istio (Sail resources, gateways) and prunes a finished canary; no request is forbidden", async () => {
    await cycle(["--set", "lifecycle.enabled=true"], { release: "gitmesh-agent", ns: "gitmesh", istioNs: "istio-system", secrets: DEFAULT_SECRETS, lease: "gitmesh-agent", inventory: "gitmesh-agent-inventory", lifecycle: "enabled" });
  }, 120_000);

  it("lifecycle off (default): installation objects are refused with the value to set, the rest applies; no request is forbidden", async () => {
    await cycle([], { release: "gitmesh-agent", ns: "gitmesh", istioNs: "istio-system", secrets: DEFAULT_SECRETS, lease: "gitmesh-agent", inventory: "gitmesh-agent-inventory", lifecycle: "refused" });
  }, 120_000);

  it("rateLimit.configNamespaces: the agent writes, repairs and prunes the rate limiter's configuration there; no request is forbidden", async () => {
    await cycle(["--set", "rateLimit.configNamespaces={gloo-mesh-addons}"], { release: "gitmesh-agent", ns: "gitmesh", istioNs: "istio-system", secrets: DEFAULT_SECRETS, lease: "gitmesh-agent", inventory: "gitmesh-agent-inventory", rateLimit: "enabled" });
  }, 120_000);

  it("rateLimit.configNamespaces empty (default): the rate limiter's configuration is refused with the value to set, the rest applies", async () => {
    await cycle([], { release: "gitmesh-agent", ns: "gitmesh", istioNs: "istio-system", secrets: DEFAULT_SECRETS, lease: "gitmesh-agent", inventory: "gitmesh-agent-inventory", rateLimit: "refused" });
  }, 120_000);

  it("non-default namespace, secret names, Lease, inventory, Istio namespace, selectors, log level, no cacerts: no request is forbidden", async () => {
    await cycle(
      [
        "--set", "relay.rootTlsSecret=my-root,relay.tokenSecret=my-token,relay.clientTlsSecret=my-client",
        "--set", "istio.namespace=istio-1-29,istio.writeCacerts=false",
        "--set", "discovery.selectors[0].matchExpressions[0].key=kubernetes.io/metadata.name",
        "--set", "discovery.selectors[0].matchExpressions[0].operator=Exists",
        "--set", "leaderElection.leaseName=agent-leader",
        "--set", "inventory.configMapName=agent-owned",
        "--set", "logLevel=debug",
      ],
      { release: "agent", ns: "mesh-agent", istioNs: "istio-1-29", secrets: { root: "my-root", token: "my-token", client: "my-client" }, lease: "agent-leader", inventory: "agent-owned" },
    );
  }, 120_000);
});

/** The Istio installation the lifecycle golden case renders for cluster1, as the relay carries it. */
/** The rate limiter's configuration the rate-limit golden case renders for cluster1. */
function rateLimitConfig(): KubeObject {
  const { result } = runCase(loadCase("rate-limit"));
  const cm = (result.clusters.get("cluster1")?.resources ?? []).find((r) => r.kind === "ConfigMap");
  return JSON.parse(JSON.stringify(cm)) as KubeObject;
}

function agentVs(name: string, subset = "v1"): KubeObject {
  return { apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name, namespace: "bookinfo", labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": "cluster1" } }, spec: { hosts: [name], http: [{ route: [{ destination: { host: name, subset } }] }] } };
}
function agentDr(name: string): KubeObject {
  return { apiVersion: "networking.istio.io/v1", kind: "DestinationRule", metadata: { name, namespace: "bookinfo", labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": "cluster1" } }, spec: { host: name, trafficPolicy: { tls: { mode: "ISTIO_MUTUAL" } } } };
}
