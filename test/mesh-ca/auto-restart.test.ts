// RootTrustPolicy autoRestartPods: after the agent writes a new cacerts (createCacerts over the real
// relay and mesh CA), istiod of that mesh is restarted first, and only once its rollout is done the
// workloads of the namespaces that mesh injects — as `kubectl rollout restart` does it (the
// restartedAt annotation of the pod template), in the Kubernetes emulator over real HTTP. Restarts
// are rate-limited per mesh.
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgentMetrics, createCacerts, createKubeClient, withFieldOwner, type FieldOwnerWriter, type KubeObject } from "../../src/agent/index.js";
import { createWorkloadRestarter, RESTART_FIELD_MANAGER, RESTARTED_AT_ANNOTATION } from "../../src/agent/workload-restart.js";
import { createMemoryLogger } from "../../src/core/index.js";
import { generateMeshRoot } from "../../src/mesh-ca/index.js";
import { createRelayIntermediateSigner, type RelayClientCredentials } from "../../src/relay/index.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { newClient, testPki } from "../relay/helpers.js";
import { issuedCertificate, startMeshCaRelay } from "./helpers.js";

let kube: StartedKube;
let relay: Awaited<ReturnType<typeof startMeshCaRelay>>;
let creds: RelayClientCredentials;
const outputs = new Map<string, readonly unknown[]>();

const deployment = (name: string, namespace: string, labels: Record<string, string> = { app: name }) => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name, namespace, labels },
  spec: { replicas: 1, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: "c", image: "example/c:1" }] } } },
});
const workload = (kind: "StatefulSet" | "DaemonSet", name: string, namespace: string) => {
  const d = deployment(name, namespace);
  const spec = kind === "StatefulSet" ? { ...d.spec, serviceName: name } : { selector: d.spec.selector, template: d.spec.template };
  return { ...d, kind, spec };
};

const restartedAt = (apiVersion: string, kind: string, ns: string, name: string) =>
  ((kube.emulator.get(apiVersion, kind, ns, name)?.spec as { template?: { metadata?: { annotations?: Record<string, string> } } } | undefined)?.template?.metadata?.annotations ?? {})[RESTARTED_AT_ANNOTATION];

async function until<T>(what: string, probe: () => T | undefined, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  const ns = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: "v1", kind: "Namespace", metadata: { name, labels } });
  kube = await startKube({
    seed: [
      ns("istio-system"),
      ns("bookinfo", { "istio.io/rev": "1-29" }),
      ns("legacy", { "istio-injection": "enabled" }), // injected by the default revision, not by 1-29
      ns("plain"),
      deployment("istiod-1-29", "istio-system", { app: "istiod", "istio.io/rev": "1-29" }),
      deployment("istiod-1-28", "istio-system", { app: "istiod", "istio.io/rev": "1-28" }),
      deployment("reviews", "bookinfo"),
      workload("StatefulSet", "ratings-db", "bookinfo"),
      workload("DaemonSet", "node-agent", "bookinfo"),
      deployment("old-app", "legacy"),
      deployment("unmeshed", "plain"),
    ],
  });
  const root = await generateMeshRoot({ keyBits: 2048 });
  relay = await startMeshCaRelay(root, outputs, ["alpha"]);
  const client = newClient(relay.address, "alpha", { token: relay.token });
  creds = await client.register();
  await client.close();
}, 60_000);

afterAll(async () => {
  await relay.server.stop();
  await kube.stop();
});

describe("autoRestartPods", () => {
  it("restarts istiod first, waits for its rollout, then the workloads of the namespaces the mesh injects; nothing else", async () => {
    const client = createKubeClient(kube.newKubeConfig());
    const real = withFieldOwner(client, RESTART_FIELD_MANAGER);
    const order: string[] = [];
    const recording: FieldOwnerWriter = { ...real, apply: (obj, o) => (order.push(`${obj.kind}/${obj.metadata.namespace ?? ""}/${obj.metadata.name}`), real.apply(obj, o)) };
    const mem = createMemoryLogger("restart");
    const restarter = createWorkloadRestarter({ reader: client, writer: recording, minIntervalMs: 3_600_000, istiodRolloutTimeoutMs: 60_000, pollMs: 50, logger: mem.logger });
    const signer = createRelayIntermediateSigner({ address: relay.address, credentials: () => creds, rootCaPem: testPki().rootCaCertPem, logger: createMemoryLogger("signer").logger });
    const cacerts = createCacerts({ cluster: "alpha", reader: client, writer: withFieldOwner(client), signer, restarter, metrics: createAgentMetrics(new Registry()), logger: createMemoryLogger("cacerts").logger });
    const base = issuedCertificate("alpha");
    const issued = { ...base, spec: { ...base.spec, autoRestartPods: true } };
    outputs.set("alpha", [issued]);
    try {
      expect(await cacerts.reconcile([issued as unknown as KubeObject])).toEqual([]);
      expect(kube.emulator.get("v1", "Secret", "istio-system", "cacerts")).toBeDefined();
      // istiod is restarted (pod template annotation, as kubectl rollout restart)...
      await until("istiod restarted", () => restartedAt("apps/v1", "Deployment", "istio-system", "istiod-1-29"));
      // ...and nothing else until its rollout is done (the test plays the Deployment controller)
      expect(order).toEqual(["Deployment/istio-system/istiod-1-29"]);
      const istiod = kube.emulator.get("apps/v1", "Deployment", "istio-system", "istiod-1-29")!;
      const generation = (istiod.metadata as { generation: number }).generation;
      expect(generation).toBeGreaterThan(1);
      kube.emulator.seed([{ ...istiod, status: { observedGeneration: generation, replicas: 1, updatedReplicas: 1, availableReplicas: 1 } }]);
      await until("workloads restarted", () => restartedAt("apps/v1", "DaemonSet", "bookinfo", "node-agent"));
      expect(order).toEqual(["Deployment/istio-system/istiod-1-29", "Deployment/bookinfo/reviews", "StatefulSet/bookinfo/ratings-db", "DaemonSet/bookinfo/node-agent"]);
      for (const [kind, ns, name] of [["Deployment", "bookinfo", "reviews"], ["StatefulSet", "bookinfo", "ratings-db"]] as const) expect(restartedAt("apps/v1", kind, ns, name)).toBeDefined();
      // another revision's istiod, and namespaces this mesh does not inject, are left alone
      for (const [ns, name] of [["istio-system", "istiod-1-28"], ["legacy", "old-app"], ["plain", "unmeshed"]] as const) expect(restartedAt("apps/v1", "Deployment", ns, name), name).toBeUndefined();
      // only the annotation was written: the restart field manager owns nothing else of the workload
      const reviews = kube.emulator.get("apps/v1", "Deployment", "bookinfo", "reviews")!;
      expect((reviews.spec as { template: { spec: { containers: { image: string }[] } } }).template.spec.containers[0]!.image).toBe("example/c:1");

      // A new cacerts within the rate-limit interval: written, the restart is deferred, not repeated now.
      const rotated = { ...issued, spec: { ...issued.spec, passiveCas: [{ generated: {} }] } };
      outputs.set("alpha", [rotated]);
      const firstAt = restartedAt("apps/v1", "Deployment", "istio-system", "istiod-1-29");
      expect(await cacerts.reconcile([rotated as unknown as KubeObject])).toEqual([]);
      await until("deferral logged", () => (mem.records.some((r) => r.msg.includes("deferred by the rate limit")) ? true : undefined));
      expect(order).toHaveLength(4);
      expect(restartedAt("apps/v1", "Deployment", "istio-system", "istiod-1-29")).toBe(firstAt);
    } finally {
      restarter.stop();
    }
  }, 60_000);

  it("without a restarter (chart autoRestartPods off) nothing is restarted and the agent says so", async () => {
    const client = createKubeClient(kube.newKubeConfig());
    kube.emulator.seed([{ apiVersion: "v1", kind: "Namespace", metadata: { name: "istio-b" } }, deployment("istiod", "istio-b", { app: "istiod" })]);
    const mem = createMemoryLogger("cacerts");
    const signer = createRelayIntermediateSigner({ address: relay.address, credentials: () => creds, rootCaPem: testPki().rootCaCertPem, logger: createMemoryLogger("signer").logger });
    const cacerts = createCacerts({ cluster: "alpha", reader: client, writer: withFieldOwner(client), signer, logger: mem.logger });
    const base = issuedCertificate("alpha");
    const issued = { ...base, spec: { ...base.spec, secret: { name: "cacerts", namespace: "istio-b" }, mesh: { ...base.spec.mesh, namespace: "istio-b", revision: "" }, autoRestartPods: true } };
    outputs.set("alpha", [issued]);
    expect(await cacerts.reconcile([issued as unknown as KubeObject])).toEqual([]);
    expect(kube.emulator.get("v1", "Secret", "istio-b", "cacerts")).toBeDefined();
    expect(restartedAt("apps/v1", "Deployment", "istio-b", "istiod")).toBeUndefined();
    expect(mem.records.some((r) => r.level === "warn" && /autoRestartPods is set but this agent was installed without it/.test(r.msg))).toBe(true);
  });
});
