/**
 * `npm run bench -- agent`: an agent on an emulated cluster of 5,000 services and 20,000 pods
 * (100 namespaces, 50 nodes, one Deployment per service): time to the first full discovery
 * snapshot, heap held by the agent's informers, snapshot size, one change → pushed delta (incremental
 * discovery: a Node, Services, Pods moved to another node, a Node relabelled); then
 * apply of 2,000 output objects (server-side apply over HTTP, ownership recorded in the inventory
 * ConfigMap: intents before the creates, uids after), a re-apply of the same output, and a prune of 10%. The emulator runs in the same process; its heap is measured first and subtracted.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { Registry } from "prom-client";
import { silentLogger } from "../../src/core/index.js";
import { createApplier, createAgentMetrics, createInventory, createDiscovery, createKubeClient, createRunnableManager, withFieldOwner, type DiscoveryResult } from "../../src/agent/index.js";
import { createKubeEmulator } from "../../src/kube-emulator/index.js";
import { KubeConfig } from "@kubernetes/client-node";
import { heapAfterGc, MB, round, time, type Benchmark, type Figure } from "../harness.js";
import { outputObjects, outputVersion } from "./output.js";

const NAMESPACES = 100;
const SERVICES = 5_000;
const PODS_PER_SERVICE = 4;
const NODES = 50;
const OUTPUT = 2_000;

function cluster(): Record<string, unknown>[] {
  const objs: Record<string, unknown>[] = [];
  for (let n = 0; n < NODES; n++) {
    objs.push({ apiVersion: "v1", kind: "Node", metadata: { name: `node-${n}`, labels: { "topology.kubernetes.io/region": "us-east-1", "topology.kubernetes.io/zone": `us-east-1${"abc"[n % 3]!}` } } });
  }
  for (let i = 0; i < NAMESPACES; i++) objs.push({ apiVersion: "v1", kind: "Namespace", metadata: { name: `ns-${i}`, labels: { "istio-injection": "enabled" } } });
  for (let s = 0; s < SERVICES; s++) {
    const ns = `ns-${s % NAMESPACES}`;
    const app = `svc-${s}`;
    objs.push({ apiVersion: "v1", kind: "Service", metadata: { name: app, namespace: ns, labels: { app } }, spec: { selector: { app }, ports: [{ name: "http", port: 8080, targetPort: 8080 }], clusterIP: `10.0.${Math.floor(s / 250)}.${s % 250}` } });
    objs.push({ apiVersion: "apps/v1", kind: "Deployment", metadata: { name: app, namespace: ns, labels: { app } }, spec: { selector: { matchLabels: { app } }, template: { metadata: { labels: { app, version: "v1" } }, spec: { serviceAccountName: app, containers: [{ name: "app", image: "app:1" }] } } } });
    for (let p = 0; p < PODS_PER_SERVICE; p++) {
      objs.push({ apiVersion: "v1", kind: "Pod", metadata: { name: `${app}-${p}`, namespace: ns, labels: { app, version: "v1" } }, spec: { nodeName: `node-${(s + p) % NODES}`, serviceAccountName: app, containers: [{ name: "app", image: "app:1" }] }, status: { phase: "Running", podIP: `10.1.${p}.${s % 250}` } });
    }
  }
  return objs;
}

export const benchmark: Benchmark = {
  name: "agent",
  description: `agent on ${SERVICES.toLocaleString("en")} services / ${(SERVICES * PODS_PER_SERVICE).toLocaleString("en")} pods: first snapshot, memory, size; apply ${OUTPUT.toLocaleString("en")} objects`,
  async run({ log }) {
    const figures: Figure[] = [];
    const objects = cluster();
    const emulator = await createKubeEmulator({ port: 0, seed: objects, historySize: 100_000 });
    log(`seeded ${objects.length} objects`);
    objects.length = 0;
    const heapBefore = heapAfterGc();
    const kc = new KubeConfig();
    kc.loadFromString(emulator.kubeconfig());
    const client = createKubeClient(kc);
    const metrics = createAgentMetrics(new Registry());
    let onSnapshot: (r: DiscoveryResult) => void = () => undefined;
    const discovery = createDiscovery({ kc, reader: client, cluster: "bench", debounceMs: 50, onSnapshot: (r) => onSnapshot(r), metrics, logger: silentLogger });
    const manager = createRunnableManager([discovery], silentLogger);
    try {
      const first = await time(async () => {
        await manager.start();
        return discovery.firstSnapshot();
      });
      const snap = first.result;
      figures.push({ label: "time to first full snapshot (list of every kind + conversion)", value: round(first.ms), unit: "ms" });
      figures.push({ label: "snapshot entries", value: snap.state.size, unit: "entries" });
      figures.push({ label: "snapshot size (sum of entry JSON)", value: round(snap.bytes / MB, 2), unit: "MB" });
      figures.push({ label: "heap held by the agent's informers + snapshot (after GC)", value: round((heapAfterGc() - heapBefore) / MB), unit: "MB" });

      // One change at a time → the pushed delta (onSnapshot), median of several, with the longest
      // event-loop stall seen meanwhile (a flush is synchronous work).
      const changes: { label: string; apply: () => void; key: string }[] = [
        { label: "new Node in a new region", key: "locality/edge/edge-a/", apply: () => emulator.seed([{ apiVersion: "v1", kind: "Node", metadata: { name: "node-edge", labels: { "topology.kubernetes.io/region": "edge", "topology.kubernetes.io/zone": "edge-a" } } }]) },
      ];
      for (let i = 0; i < 5; i++) {
        changes.push({ label: "new Service", key: `service/ns-${i}/late-${i}`, apply: () => emulator.seed([{ apiVersion: "v1", kind: "Service", metadata: { name: `late-${i}`, namespace: `ns-${i}` }, spec: { ports: [{ port: 80 }] } }]) });
        changes.push({
          label: "Pod moved to the new region's node",
          key: `workload/ns-${i}/Deployment/svc-${i}`,
          apply: () => emulator.seed([{ apiVersion: "v1", kind: "Pod", metadata: { name: `svc-${i}-0`, namespace: `ns-${i}`, labels: { app: `svc-${i}`, version: "v1" } }, spec: { nodeName: "node-edge", serviceAccountName: `svc-${i}`, containers: [{ name: "app", image: "app:1" }] }, status: { phase: "Running" } }]),
        });
      }
      changes.push({ label: "Node in a new zone", key: "locality/eu-west-1/eu-west-1z/", apply: () => emulator.seed([{ apiVersion: "v1", kind: "Node", metadata: { name: "node-7", labels: { "topology.kubernetes.io/region": "eu-west-1", "topology.kubernetes.io/zone": "eu-west-1z" } } }]) });
      let waiter: ((r: DiscoveryResult) => void) | undefined;
      onSnapshot = (r) => waiter?.(r);
      const stall = monitorEventLoopDelay({ resolution: 5 });
      stall.enable();
      const latencies: number[] = [];
      let deltaEntries = 0;
      for (const c of changes) {
        const t = await time(
          () =>
            new Promise<void>((resolve, reject) => {
              const timeout = setTimeout(() => reject(new Error(`no delta with ${c.key} after ${c.label}`)), 30_000);
              waiter = (r) => {
                if (r.delta.added.some((e) => e.key === c.key) || r.delta.changed.some((e) => e.key === c.key)) {
                  deltaEntries += r.delta.added.length + r.delta.changed.length + r.delta.removed.length;
                  clearTimeout(timeout);
                  resolve();
                }
              };
              c.apply();
            }),
        );
        latencies.push(t.ms);
      }
      stall.disable();
      latencies.sort((a, b) => a - b);
      figures.push({ label: `one change → pushed delta, median of ${changes.length} (Node, Service add, Pod move; incl. 50 ms debounce)`, value: round(latencies[Math.floor(latencies.length / 2)]!), unit: "ms" });
      figures.push({ label: "one change → pushed delta, slowest", value: round(latencies[latencies.length - 1]!), unit: "ms" });
      figures.push({ label: "entries per delta (mean; the Node relabel changes the 400 workloads with pods on it)", value: round(deltaEntries / changes.length, 1), unit: "entries" });
      figures.push({ label: "longest event-loop stall during those changes", value: round(stall.max / 1e6), unit: "ms" });

      emulator.seed([{ apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } }]);
      const writer = withFieldOwner(client);
      const inventory = createInventory({ reader: client, writer, namespace: "gitmesh", cluster: "bench" });
      const applier = createApplier({ cluster: "bench", reader: client, writer, inventory, metrics, logger: silentLogger });
      const out = (n: number, version: number) => outputVersion(outputObjects(n, NAMESPACES), version);
      const apply1 = await time(() => applier.applyOutput(out(OUTPUT, 1)));
      if (!apply1.result.ack) throw new Error(`apply failed: ${JSON.stringify(apply1.result.errors.slice(0, 3))}`);
      figures.push({ label: `apply ${OUTPUT} output objects (SSA over HTTP, default 16 in flight)`, value: round(apply1.ms), unit: "ms" });
      figures.push({ label: "apply throughput", value: Math.round((OUTPUT / apply1.ms) * 1000), unit: "objects/s" });
      figures.push({ label: `inventory ConfigMap entries for ${OUTPUT} objects (gzip JSON; a ConfigMap holds 1 MiB)`, value: round(inventory.storedBytes / 1024, 1), unit: "KiB" });
      const apply2 = await time(() => applier.applyOutput(out(OUTPUT, 2)));
      figures.push({ label: `re-apply the same ${OUTPUT} objects (unchanged: skipped after one list)`, value: round(apply2.ms), unit: "ms" });
      const prune = await time(() => applier.applyOutput(out(OUTPUT * 0.9, 3)));
      if (prune.result.pruned !== OUTPUT * 0.1) throw new Error(`expected ${OUTPUT * 0.1} pruned, got ${prune.result.pruned}`);
      figures.push({ label: `output without 10% (${OUTPUT * 0.1} prunes, ${OUTPUT * 0.9} unchanged)`, value: round(prune.ms), unit: "ms" });
    } finally {
      await manager.stop();
      await emulator.stop();
    }
    return figures;
  },
};
