// Discovery against the emulator over real HTTP: the snapshot equals the pure conversion of the
// cluster's state, deltas follow changes, and informers survive the emulator's faults.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { snapshotChecksum, snapshotFromKubernetesObjects } from "../../src/discovery/index.js";
const same = (r: { snapshot: Parameters<typeof snapshotChecksum>[0] } | undefined) => (r === undefined ? "" : snapshotChecksum(r.snapshot));
import { createDiscovery, createRunnableManager, type Discovery, type DiscoveryResult } from "../../src/agent/index.js";
import { eventually, startKube, type StartedKube } from "../helpers/kube.js";
import { emulatorObjects, exampleObjects, metricValue, parts } from "./helpers.js";

let kube: StartedKube;
let discovery: Discovery;
let results: DiscoveryResult[];
let p: ReturnType<typeof parts>;
let stop: () => Promise<void>;

beforeEach(async () => {
  kube = await startKube({ seed: await exampleObjects("cluster1") });
  p = parts(kube);
  results = [];
  discovery = createDiscovery({
    kc: kube.newKubeConfig(),
    reader: p.client,
    cluster: "cluster1",
    debounceMs: 20,
    onSnapshot: (r) => results.push(r),
    backoff: { initialMs: 20, maxMs: 200 },
    metrics: p.metrics,
    logger: p.logger,
  });
  const m = createRunnableManager([discovery], p.logger);
  await m.start();
  stop = () => m.stop();
});

afterEach(async () => {
  await stop();
  await kube.stop();
});

const expected = () => snapshotFromKubernetesObjects("cluster1", emulatorObjects(kube)).snapshot;

describe("agent discovery", () => {
  it("builds the same snapshot as the pure conversion of the cluster's state", async () => {
    const first = await discovery.firstSnapshot();
    expect(same(first)).toBe(snapshotChecksum(expected()));
    // and it is the example cluster, not an empty one
    expect(first.snapshot.meshes.map((m) => m.revision)).toEqual(["1-29"]);
    expect(first.snapshot.services.some((s) => s.name === "productpage" && s.namespace === "bookinfo-frontends")).toBe(true);
    expect(first.snapshot.gateways.length).toBeGreaterThan(0);
    expect(first.state.get("snapshot")).toBeDefined();
    expect(await metricValue(p.registry, "gitmesh_agent_discovery_snapshot_entries")).toBe(first.state.size);
  });

  it("follows additions, changes and deletions with new snapshots", async () => {
    await discovery.firstSnapshot();
    kube.emulator.seed([{ apiVersion: "v1", kind: "Service", metadata: { name: "ratings-v9", namespace: "bookinfo-backends", labels: { app: "ratings" } }, spec: { selector: { app: "ratings" }, ports: [{ name: "http", port: 9080 }] } }]);
    const added = await eventually("service in snapshot", () => discovery.current()?.state.get("service/bookinfo-backends/ratings-v9") && discovery.current());
    expect(same(added)).toBe(snapshotChecksum(expected()));
    kube.emulator.seed([{ apiVersion: "v1", kind: "Service", metadata: { name: "ratings-v9", namespace: "bookinfo-backends", labels: { app: "ratings" } }, spec: { selector: { app: "ratings" }, ports: [{ name: "http", port: 9081 }] } }]);
    await eventually("changed port", () => new TextDecoder().decode(discovery.current()?.state.get("service/bookinfo-backends/ratings-v9")).includes("9081"));
    kube.emulator.remove("v1", "Service", "bookinfo-backends", "ratings-v9");
    await eventually("service removed", () => discovery.current()?.state.has("service/bookinfo-backends/ratings-v9") === false);
    expect(same(discovery.current())).toBe(snapshotChecksum(expected()));
  });

  it("does not report a new snapshot when nothing translation needs changed", async () => {
    await discovery.firstSnapshot();
    const n = results.length;
    // a pod annotation is not in the compact snapshot
    const pod = kube.emulator.list("v1", "Pod", "bookinfo-backends")[0]!;
    const meta = pod.metadata as Record<string, unknown>;
    kube.emulator.seed([{ ...pod, apiVersion: "v1", kind: "Pod", metadata: { ...meta, annotations: { touched: "yes" } } }]);
    kube.emulator.seed([{ apiVersion: "v1", kind: "Namespace", metadata: { name: "marker" } }]);
    await eventually("marker namespace", () => discovery.current()?.state.has("namespace/marker"));
    expect(results.length).toBe(n + 1);
  });

  it("survives closed watches, 500s and the API server going away, then catches up", async () => {
    await discovery.firstSnapshot();
    kube.emulator.faults.closeWatches();
    kube.emulator.seed([{ apiVersion: "v1", kind: "Namespace", metadata: { name: "after-close" } }]);
    await eventually("after-close seen", () => discovery.current()?.state.has("namespace/after-close"), 15_000);

    await kube.emulator.faults.goAway();
    kube.emulator.seed([{ apiVersion: "v1", kind: "Namespace", metadata: { name: "while-away" } }]);
    await new Promise((r) => setTimeout(r, 300));
    kube.emulator.faults.failRequests(5);
    await kube.emulator.faults.comeBack();
    await eventually("while-away seen", () => discovery.current()?.state.has("namespace/while-away"), 20_000);
    kube.emulator.remove("v1", "Namespace", undefined, "after-close");
    await eventually("deletion seen", () => discovery.current()?.state.has("namespace/after-close") === false, 15_000);
    expect(same(discovery.current())).toBe(snapshotChecksum(expected()));
    expect(await metricValue(p.registry, "gitmesh_agent_informer_restarts_total")).toBeGreaterThan(0);
    expect(discovery.informers.every((i) => i.synced)).toBe(true);
  });
});
