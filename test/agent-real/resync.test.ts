// The agent's apply and drift repair on a real kube-apiserver reached through a fault-injecting
// proxy (gitmesh issue #35 items 5 and 9c), next to a CPU hog (four busy processes per core): 5 % of
// the requests are answered 429 (Retry-After) or 500, and every watch is cut every 2 s and held off
// for 400 ms after each cut. Another client (the admin, straight to the API server) deletes or edits
// an owned object right after a cut, inside the watch gap: it is repaired in 6 of 6 runs, and every
// output applies with no NACK. The agent authenticates as its ServiceAccount with the chart's RBAC.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KubeConfig } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { createMemoryLogger } from "../../src/core/index.js";
import { createAgentMetrics, createApplier, createDriftWatcher, createInventory, createKubeClient, createRunnableManager, withFieldOwner, type Applier, type DriftWatcher, type RunnableManager } from "../../src/agent/index.js";
import { startCpuHog, type CpuHog } from "../helpers/cpu-hog.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { dr, output, vs } from "../agent/helpers.js";
import { AGENT_NAMESPACE, getObject, startAgentCluster, until, type AgentCluster } from "./cluster.js";

/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are untyped JSON here */
type Obj = Record<string, any>;

const NS = "resync";
const RUNS = 6;
let cluster: AgentCluster | undefined;
let proxy: FaultProxy | undefined;
let hog: CpuHog | undefined;
let manager: RunnableManager | undefined;
let applier: Applier;
let drift: DriftWatcher;
const mem = createMemoryLogger("agent");

/** The agent's ServiceAccount token, against the proxy (plain HTTP on loopback; the proxy speaks TLS to the API server). */
function viaProxy(token: string, url: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "faulty", server: url, skipTLSVerify: true }],
    users: [{ name: "gitmesh-agent", token }],
    contexts: [{ name: "faulty", cluster: "faulty", user: "gitmesh-agent" }],
    currentContext: "faulty",
  });
  return kc;
}

const objects = () => [
  ...["reviews", "ratings", "details", "productpage"].map((n) => vs(n, NS, n)),
  ...["reviews", "ratings", "details", "productpage"].map((n) => dr(n, NS, n)),
];
const vsPath = (name: string) => `/apis/networking.istio.io/v1/namespaces/${NS}/virtualservices/${name}`;

beforeAll(async () => {
  hog = await startCpuHog();
  cluster = await startAgentCluster();
  const kube = cluster.kube;
  await kube.apply([{ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } }]);
  proxy = await startFaultProxy({ target: kube.url, caPem: kube.caPem, errorRate: 0.05, cutWatchesEveryMs: 2000, gapMs: 400 });
  const kc = viaProxy(cluster.agent.token, proxy.url);
  const client = createKubeClient(kc);
  const writer = withFieldOwner(client);
  const metrics = createAgentMetrics(new Registry());
  const inventory = createInventory({ reader: client, writer, namespace: AGENT_NAMESPACE, cluster: "cluster1" });
  applier = createApplier({ cluster: "cluster1", reader: client, writer, inventory, metrics, logger: mem.logger });
  // The default resync period (5 min): within this test, only the watches and their reconnects repair.
  drift = createDriftWatcher({ kc, reader: client, cluster: "cluster1", applier, metrics, logger: mem.logger });
  manager = createRunnableManager([drift], mem.logger);
  await manager.start();
}, 300_000);
afterAll(async () => {
  await manager?.stop();
  await proxy?.stop();
  await cluster?.stop();
  await hog?.stop();
});

describe("the agent on a real API server that answers 5 % 429/500 and cuts watches every 2 s, under a CPU hog", () => {
  it("applies every output with no NACK, and repairs a deletion or an edit made in a watch gap in 6 of 6 runs", async () => {
    const kube = cluster!.kube;
    const p = proxy!;
    const first = await applier.applyOutput(output(1, objects()));
    expect(first.errors).toEqual([]);
    expect(first.ack).toBe(true);
    await until("informers listed", async () => (await Promise.all(drift.informers.map((i) => i.whenSynced()))).length > 0, 60_000);

    const repaired: string[] = [];
    for (let run = 0; run < RUNS; run++) {
      const name = ["reviews", "ratings", "details", "productpage"][run % 4]!;
      const before = (await getObject(kube, vsPath(name)))!;
      await p.nextCut();
      // inside the gap: the watches are down for 400 ms from the cut
      if (run % 2 === 0) {
        const r = await kube.request("DELETE", vsPath(name));
        expect(r.status).toBe(200);
        await until(`run ${String(run)}: deleted ${name} re-created`, async () => {
          const o = await getObject(kube, vsPath(name));
          return o !== undefined && o.metadata.uid !== before.metadata.uid;
        }, 30_000);
      } else {
        const edited: Obj = { ...before, spec: { ...before.spec, hosts: ["hijacked"] } };
        const r = await kube.request("PUT", vsPath(name), { body: edited, query: { fieldManager: "kubectl-edit" } });
        expect(r.status).toBe(200);
        await until(`run ${String(run)}: edited ${name} repaired`, async () => (await getObject(kube, vsPath(name)))?.spec.hosts[0] === name, 30_000);
      }
      repaired.push(name);
      // the agent goes on applying outputs through the same faults: never a NACK
      const next = await applier.applyOutput(output(2 + run, objects()));
      expect(next.errors).toEqual([]);
      expect(next.ack).toBe(true);
    }
    expect(repaired).toHaveLength(RUNS);
    // the faults really happened
    expect(p.cuts).toBeGreaterThanOrEqual(RUNS);
    expect(p.injected[429] + p.injected[500]).toBeGreaterThan(0);
    expect(drift.relists).toBeGreaterThan(0);
  }, 400_000);
});
