// Drift through field ownership (gitmesh issue #12, point 6): another field manager writing inside an
// owned object, fights with a controller, and paths left to other controllers (ignoreDifferences).
// The applier and the drift watcher against the emulator over real HTTP; "other managers" are
// client-node clients with their own field manager.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createApplier, createDriftWatcher, createInventory, createKubeClient, createRunnableManager, OUTPUT_OPTIONS_KEY, type Applier, type KubeObject } from "../../src/agent/index.js";
import { eventually, startKube, type StartedKube } from "../helpers/kube.js";
import { metricValue, output, parts } from "./helpers.js";

const NS = "bookinfo";
const VS = "networking.istio.io/v1";
let kube: StartedKube;
let p: ReturnType<typeof parts>;
let applier: Applier;

beforeEach(async () => {
  kube = await startKube({ seed: [{ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } }, { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } }] });
  p = parts(kube);
  const inventory = createInventory({ reader: p.client, writer: p.writer, namespace: "gitmesh", cluster: "cluster1" });
  applier = createApplier({ cluster: "cluster1", reader: p.client, writer: p.writer, inventory, metrics: p.metrics, logger: p.logger });
});
afterEach(async () => {
  await kube.stop();
});

function weighted(w1 = 90, w2 = 10): KubeObject {
  return {
    apiVersion: VS,
    kind: "VirtualService",
    metadata: { name: "reviews", namespace: NS, labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": "cluster1" } },
    spec: {
      hosts: ["reviews"],
      http: [{ route: [{ destination: { host: "reviews", subset: "v1" }, weight: w1 }, { destination: { host: "reviews", subset: "v2" }, weight: w2 }] }],
    },
  };
}
const live = () => kube.emulator.get(VS, "VirtualService", NS, "reviews") as KubeObject;
const http = () => (live().spec as { http: Record<string, unknown>[] }).http;
const managers = () => (live().metadata.managedFields as { manager: string }[]).map((m) => m.manager).sort();

/** Another controller: force-applies (like `kubectl apply --server-side --force-conflicts`). */
function other(fieldManager: string) {
  const c = createKubeClient(kube.newKubeConfig());
  return (spec: unknown) => c.apply({ apiVersion: VS, kind: "VirtualService", metadata: { name: "reviews", namespace: NS }, spec }, { fieldManager, force: true });
}

const faulted = () => ({ hosts: ["reviews"], http: [{ ...(weighted().spec as { http: object[] }).http[0], fault: { abort: { percentage: { value: 100 }, httpStatus: 503 } } }] });

describe("drift through field ownership", () => {
  it("a key another manager added inside an owned list element is drift: the next output repairs it instead of skipping the object", async () => {
    expect((await applier.applyOutput(output(1, [weighted()]))).ack).toBe(true);
    await other("chaos-tool")(faulted());
    expect(http()[0]!.fault).toBeDefined();
    expect(managers()).toContain("chaos-tool");
    // same output again, no drift watcher: not skipped as unchanged
    const r = await applier.applyOutput(output(2, [weighted()]));
    expect(r).toMatchObject({ ack: true, unchanged: 0 });
    expect(http()[0]!.fault).toBeUndefined();
    expect(p.mem.records.some((x) => x.msg.startsWith("drift: fields of an owned object were set by another manager") && JSON.stringify(x).includes("chaos-tool"))).toBe(true);
    // in sync now: the next one is skipped
    expect(await applier.applyOutput(output(3, [weighted()]))).toMatchObject({ unchanged: 1 });
  });

  it("the drift watcher repairs it at once and names the other manager", async () => {
    const drift = createDriftWatcher({ kc: kube.newKubeConfig(), reader: p.client, cluster: "cluster1", applier, metrics: p.metrics, backoff: { initialMs: 20 }, logger: p.logger });
    const m = createRunnableManager([drift], p.logger);
    await m.start();
    try {
      await applier.applyOutput(output(1, [weighted()]));
      await Promise.all(drift.informers.map((i) => i.whenSynced()));
      await other("chaos-tool")(faulted());
      await eventually("fault removed", () => http()[0]!.fault === undefined);
      await eventually("repair counted", () => drift.repairs === 1);
      expect(p.mem.records.find((x) => x.msg.startsWith("drift repaired"))?.fields).toMatchObject({ managers: "chaos-tool" });
      expect(await metricValue(p.registry, "gitmesh_agent_drift_repairs_total")).toBe(1);
    } finally {
      await m.stop();
    }
  });

  it("a fight backs off and is reported with the other manager's name (log, metric, NACK)", async () => {
    const drift = createDriftWatcher({ kc: kube.newKubeConfig(), reader: p.client, cluster: "cluster1", applier, metrics: p.metrics, backoff: { initialMs: 20 }, fightRepairs: 3, fightWindowMs: 60_000, fightBackoffMs: 60_000, logger: p.logger });
    const m = createRunnableManager([drift], p.logger);
    await m.start();
    const rollouts = other("argo-rollouts");
    let writes = 0;
    try {
      await applier.applyOutput(output(1, [weighted()]));
      await Promise.all(drift.informers.map((i) => i.whenSynced()));
      // a progressive-delivery controller that sets its weights whenever they are not its own
      const stop = kube.emulator.onChange((e) => {
        const o = e.object as KubeObject;
        if (e.type !== "MODIFIED" || o.metadata.name !== "reviews") return;
        const route = ((o.spec as { http: { route: { weight: number }[] }[] }).http[0]!.route);
        if (route[0]!.weight !== 50 && writes < 10) {
          writes += 1;
          setImmediate(() => void rollouts(weighted(50, 50).spec));
        }
      });
      await rollouts(weighted(50, 50).spec);
      writes += 1;
      await eventually("fight detected", () => drift.fights.size === 1);
      // the controller keeps writing; the agent stops answering every time
      await new Promise((r) => setTimeout(r, 500));
      stop();
      expect(drift.repairs).toBe(3);
      expect([...drift.fights.values()][0]).toEqual(["argo-rollouts"]);
      expect(await metricValue(p.registry, "gitmesh_agent_drift_fights_total", { kind: "VirtualService" })).toBe(1);
      const logged = p.mem.records.find((x) => x.msg.startsWith("fight:"));
      expect(logged?.fields).toMatchObject({ managers: "argo-rollouts", repairs: 3 });
      // reported with the next output
      const r = await applier.applyOutput(output(2, [weighted()]));
      const fight = r.errors.find((e) => e.key.startsWith("fight/"));
      expect(fight?.message).toContain("with argo-rollouts");
      expect(fight?.message).toContain("ignoreDifferences");
    } finally {
      await m.stop();
    }
  });

  it("paths left to other controllers (ignoreDifferences) are neither applied nor repaired", async () => {
    const drift = createDriftWatcher({ kc: kube.newKubeConfig(), reader: p.client, cluster: "cluster1", applier, metrics: p.metrics, backoff: { initialMs: 20 }, logger: p.logger });
    const m = createRunnableManager([drift], p.logger);
    await m.start();
    const ignore = { [OUTPUT_OPTIONS_KEY]: { ignoreDifferences: [{ group: "networking.istio.io", kind: "VirtualService", jsonPointers: ["/spec/http/0/route/0/weight", "/spec/http/0/route/1/weight", "/metadata/annotations/rollout"] }] } };
    try {
      expect((await applier.applyOutput(output(1, [weighted()], { extra: ignore }))).ack).toBe(true);
      await Promise.all(drift.informers.map((i) => i.whenSynced()));
      // the rollout controller moves the weights (an update, like most controllers)
      const c = createKubeClient(kube.newKubeConfig());
      const cur = live();
      await c.replace({ ...cur, spec: weighted(30, 70).spec, metadata: { ...cur.metadata, annotations: { rollout: "step-2" } } }, { fieldManager: "argo-rollouts" });
      await new Promise((r) => setTimeout(r, 300));
      expect(drift.repairs).toBe(0);
      // a new output version (same manifest) keeps them too: applied with the live weights
      const r = await applier.applyOutput(output(2, [weighted(80, 20)], { extra: ignore }));
      expect(r.ack).toBe(true);
      const route = (http()[0]!.route as { weight: number }[]).map((x) => x.weight);
      expect(route).toEqual([30, 70]);
      expect(live().metadata.annotations).toMatchObject({ rollout: "step-2" });
      expect(drift.repairs).toBe(0);
      // other fields are still gitmesh's: a change to the hosts is repaired
      const now = live();
      await c.replace({ ...now, spec: { ...(now.spec as object), hosts: ["hijacked"] } }, { fieldManager: "someone" });
      await eventually("hosts repaired", () => (live().spec as { hosts: string[] }).hosts[0] === "reviews");
      expect((http()[0]!.route as { weight: number }[]).map((x) => x.weight)).toEqual([30, 70]);
    } finally {
      await m.stop();
    }
  });
});
