// No repair is lost to a watch gap (gitmesh issue #35 item 5), against the emulator over real HTTP:
// the periodic full resync repairs an owned object deleted or edited while every watch is silently
// dead (held by a stalling proxy: no event, no error, no reconnect), and a watch reconnect relists.
// The real API server with watches cut every 2 s is test/agent-real/resync.test.ts.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createApplier, createDriftWatcher, createInventory, createKubeClient, createRunnableManager, parseAgentConfig, withFieldOwner, type Applier, type KindRef, type KubeObject } from "../../src/agent/index.js";
import { eventually, startKube, type StartedKube } from "../helpers/kube.js";
import { dr, output, parts, vs } from "./helpers.js";
import { startFaultProxy } from "../helpers/fault-proxy.js";
import { startStallProxy, type StallProxy } from "./stall-proxy.js";

const NS = "bookinfo";
const VS: KindRef = { apiVersion: "networking.istio.io/v1", kind: "VirtualService", plural: "virtualservices", namespaced: true };
let kube: StartedKube;
let proxy: StallProxy;
let p: ReturnType<typeof parts>;
let applier: Applier;

beforeEach(async () => {
  kube = await startKube({ seed: [{ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } }, { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } }] });
  proxy = await startStallProxy(kube.url);
  p = parts(kube);
  const inventory = createInventory({ reader: p.client, writer: p.writer, namespace: "gitmesh", cluster: "cluster1" });
  applier = createApplier({ cluster: "cluster1", reader: p.client, writer: p.writer, inventory, metrics: p.metrics, logger: p.logger });
});
afterEach(async () => {
  proxy.release();
  await proxy.stop();
  await kube.stop();
});

/** The emulator's KubeConfig with its server replaced by a proxy's address (default the stalling proxy). */
function viaProxy(url = proxy.url) {
  const kc = kube.newKubeConfig();
  const c = kc.getCurrentCluster()!;
  kc.clusters = kc.clusters.map((x) => (x.name === c.name ? { ...x, server: url } : x));
  return kc;
}
const live = (name: string) => kube.emulator.get(VS.apiVersion, VS.kind, NS, name) as KubeObject | undefined;
const hosts = (name: string) => (live(name)?.spec as { hosts?: string[] } | undefined)?.hosts;
/** Another client: a user's kubectl. */
const someone = () => createKubeClient(kube.newKubeConfig());
const isWatch = (r: { path: string }) => /[?&]watch=(true|1)/.test(r.path);

describe("drift repair across watch gaps", () => {
  it("the periodic resync repairs a deletion and an edit while every watch is silently dead", async () => {
    const drift = createDriftWatcher({ kc: viaProxy(), reader: p.client, cluster: "cluster1", applier, resyncPeriodMs: 1000, backoff: { initialMs: 20 }, metrics: p.metrics, logger: p.logger });
    const m = createRunnableManager([drift], p.logger);
    await m.start();
    try {
      expect((await applier.applyOutput(output(1, [vs("reviews", NS, "reviews"), vs("ratings", NS, "ratings"), dr("reviews", NS, "reviews")]))).ack).toBe(true);
      await Promise.all(drift.informers.map((i) => i.whenSynced()));
      // every watch goes silent: open, never delivering, never failing (a black-holed path)
      proxy.stall(isWatch);
      const uid = live("reviews")!.metadata.uid;
      await someone().delete(VS, NS, "reviews");
      const cur = live("ratings")!;
      await someone().replace({ ...cur, spec: { ...(cur.spec as object), hosts: ["hijacked"] } }, { fieldManager: "kubectl-edit" });
      await eventually("deleted VirtualService re-created", () => live("reviews") !== undefined && live("reviews")!.metadata.uid !== uid, 15_000);
      await eventually("edited VirtualService repaired", () => hosts("ratings")?.[0] === "ratings", 15_000);
      await eventually("two repairs counted", () => drift.repairs === 2);
      expect(drift.relists).toBeGreaterThan(0);
      // the watches never failed nor reconnected: the repairs came from the resync's lists
      expect(drift.informers.reduce((n, i) => n + i.restarts, 0)).toBe(0);
      expect(p.mem.records.filter((r) => r.msg.startsWith("drift repaired")).map((r) => r.fields.why).sort()).toEqual(["changed", "deleted"]);
    } finally {
      await m.stop();
    }
  });

  it("a watch reconnect relists the kind; a deletion during the reconnect, seen by both the replayed event and the relist, is repaired once", async () => {
    const drift = createDriftWatcher({ kc: kube.newKubeConfig(), reader: p.client, cluster: "cluster1", applier, resyncPeriodMs: 0, backoff: { initialMs: 20 }, metrics: p.metrics, logger: p.logger });
    const m = createRunnableManager([drift], p.logger);
    await m.start();
    try {
      expect((await applier.applyOutput(output(1, [vs("reviews", NS, "reviews")]))).ack).toBe(true);
      await Promise.all(drift.informers.map((i) => i.whenSynced()));
      const before = drift.relists;
      kube.emulator.faults.closeWatches();
      await eventually("relisted after the reconnect", () => drift.relists > before);
      const uid = live("reviews")!.metadata.uid;
      kube.emulator.faults.closeWatches();
      await someone().delete(VS, NS, "reviews");
      await eventually("deleted VirtualService re-created", () => live("reviews") !== undefined && live("reviews")!.metadata.uid !== uid, 15_000);
      await eventually("the repair counted", () => drift.repairs === 1);
    } finally {
      await m.stop();
    }
  });

  it("watches cut again and again reconnect at once each time (the backoff resets once a watch re-opened): a deletion after the 12th cut is repaired", async () => {
    const cutter = await startFaultProxy({ target: kube.url, cutWatchesEveryMs: 250, gapMs: 50 });
    const kc = viaProxy(cutter.url);
    // the default informer backoff (200 ms doubling to 30 s) and no periodic resync
    const drift = createDriftWatcher({ kc, reader: p.client, cluster: "cluster1", applier, resyncPeriodMs: 0, metrics: p.metrics, logger: p.logger });
    const m = createRunnableManager([drift], p.logger);
    await m.start();
    try {
      expect((await applier.applyOutput(output(1, [vs("reviews", NS, "reviews")]))).ack).toBe(true);
      await Promise.all(drift.informers.map((i) => i.whenSynced()));
      const vsInformer = drift.informers.find((i) => i.ref.kind === "VirtualService")!;
      await eventually("the VirtualService watch cut 12 times", () => vsInformer.restarts >= 12, 30_000);
      const uid = live("reviews")!.metadata.uid;
      await someone().delete(VS, NS, "reviews");
      await eventually("deleted VirtualService re-created", () => live("reviews") !== undefined && live("reviews")!.metadata.uid !== uid, 10_000);
    } finally {
      await m.stop();
      await cutter.stop();
    }
  });

  it("through an API that answers 5 % of requests 429 (Retry-After) or 500, every output applies with no NACK", async () => {
    const faulty = await startFaultProxy({ target: kube.url, errorRate: 0.05, seed: 9 });
    const client = createKubeClient(viaProxy(faulty.url));
    const writer = withFieldOwner(client);
    const inventory = createInventory({ reader: client, writer, namespace: "gitmesh", cluster: "cluster1" });
    const flaky = createApplier({ cluster: "cluster1", reader: client, writer, inventory, metrics: p.metrics, logger: p.logger });
    try {
      const names = Array.from({ length: 12 }, (_, i) => `svc${String(i)}`);
      for (let v = 1; v <= 5; v++) {
        const r = await flaky.applyOutput(output(v, names.slice(0, 6 + v).map((n) => vs(n, NS, `${n}-v${String(v)}`))));
        expect(r.errors, `v${String(v)}`).toEqual([]);
        expect(r.ack).toBe(true);
      }
      expect(faulty.injected[429] + faulty.injected[500]).toBeGreaterThan(0);
      expect(kube.emulator.list(VS.apiVersion, VS.kind, NS)).toHaveLength(11);
    } finally {
      await faulty.stop();
    }
  });

  it("a repair that failed (the API refused its writes beyond the applier's retries) is retried until it succeeds, with no new event", async () => {
    const drift = createDriftWatcher({ kc: kube.newKubeConfig(), reader: p.client, cluster: "cluster1", applier, resyncPeriodMs: 0, backoff: { initialMs: 50, maxMs: 500 }, metrics: p.metrics, logger: p.logger });
    const m = createRunnableManager([drift], p.logger);
    await m.start();
    try {
      expect((await applier.applyOutput(output(1, [vs("reviews", NS, "reviews")]))).ack).toBe(true);
      await Promise.all(drift.informers.map((i) => i.whenSynced()));
      // the agent's writes of VirtualServices fail (500) until cleared; a user's edit (PUT) goes through
      kube.emulator.faults.failRequests(undefined, { methods: ["PATCH", "POST"], path: "/virtualservices" });
      const cur = live("reviews")!;
      await someone().replace({ ...cur, spec: { ...(cur.spec as object), hosts: ["hijacked"] } }, { fieldManager: "kubectl-edit" });
      await eventually("the repair failed and is retried", () => p.mem.records.some((r) => r.msg === "drift repair failed; retrying"), 30_000);
      expect(hosts("reviews")).toEqual(["hijacked"]);
      kube.emulator.faults.clear();
      await eventually("edited VirtualService repaired", () => hosts("reviews")?.[0] === "reviews", 15_000);
      await eventually("the repair counted", () => drift.repairs === 1);
    } finally {
      await m.stop();
    }
  });

  it("the agent configuration takes the resync period as a duration (default 5 min, 0 turns it off)", () => {
    const base = { relayAddress: "127.0.0.1:9900", cluster: "cluster1" };
    const at = (resyncPeriod?: string) => parseAgentConfig({ ...base, ...(resyncPeriod === undefined ? {} : { resyncPeriod }) }, { identity: "a" });
    expect(at().config?.resyncPeriodMs).toBe(300_000);
    expect(at("90s").config?.resyncPeriodMs).toBe(90_000);
    expect(at("1h30m").config?.resyncPeriodMs).toBe(5_400_000);
    expect(at("0").config?.resyncPeriodMs).toBe(0);
    for (const bad of ["fast", "5", "10ms", "-1m"]) expect(at(bad).problems.join("\n")).toMatch(/resync period .*GITMESH_RESYNC_PERIOD; chart resyncPeriod/);
  });
});
