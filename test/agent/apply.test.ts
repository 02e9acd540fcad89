// Apply, prune and drift against the emulator over real HTTP.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createApplier, createDriftWatcher, createInventory, createRunnableManager, type Applier, type KubeObject } from "../../src/agent/index.js";
import { eventually, startKube, type StartedKube } from "../helpers/kube.js";
import { dr, metricValue, output, parts, vs } from "./helpers.js";

let kube: StartedKube;
let p: ReturnType<typeof parts>;
let applier: Applier;

const NS = "bookinfo";
const seedNs = (k: StartedKube) => k.emulator.seed([{ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } }, { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } }]);
const live = (kind: string, name: string) => kube.emulator.get("networking.istio.io/v1", kind, NS, name);
const names = (kind: string) => kube.emulator.list("networking.istio.io/v1", kind, NS).map((o) => (o.metadata as { name: string }).name).sort();

beforeEach(async () => {
  kube = await startKube();
  seedNs(kube);
  p = parts(kube);
  applier = newApplier();
});
function newApplier(): Applier {
  const inventory = createInventory({ reader: p.client, writer: p.writer, namespace: "gitmesh", cluster: "cluster1" });
  return createApplier({ cluster: "cluster1", reader: p.client, writer: p.writer, inventory, metrics: p.metrics, logger: p.logger });
}
afterEach(async () => {
  await kube.stop();
});

const many = (n: number, prefix = "r") => Array.from({ length: n }, (_, i) => vs(`${prefix}-${i}`, NS, `h${i}.example.com`));

describe("applier", () => {
  it("applies only kinds it owns (and, for a kind given some namespaces, only there): anything else is refused, never written once and orphaned", async () => {
    const configMap = (name: string, ns: string, parent?: string): KubeObject => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: ns, labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": "cluster1", ...(parent ? { "gitmesh.io/parent-kind": parent } : {}) } },
      data: { k: "v" },
    });
    kube.emulator.seed([{ apiVersion: "v1", kind: "Namespace", metadata: { name: "limits" } }]);
    // OPA-Envoy's policy modules (glooAuth opaAuth): the same ConfigMap grant, a message that says so.
    const opaModules = configMap("opa", "gloo-mesh-addons", "ExtAuthPolicy");
    opaModules.metadata.labels = { ...opaModules.metadata.labels, "openpolicyagent.org/policy": "rego" };
    const objs = [vs("reviews", NS, "reviews"), configMap("plain", NS), configMap("limits", "limits", "RateLimitServerConfig"), opaModules];
    const r = await applier.applyOutput(output(1, objs));
    expect(r.ack).toBe(false);
    expect(r.errors.find((e) => e.key === "ConfigMap/gloo-mesh-addons/opa")?.message).toMatch(/is OPA-Envoy's policy modules .* add the namespace to the agent's rateLimit.configNamespaces/);
    expect(r.errors.map((e) => e.message).join("\n")).toMatch(/ConfigMap bookinfo\/plain: this agent does not write ConfigMap \(v1\) in namespace "bookinfo"/);
    expect(r.errors.map((e) => e.message).join("\n")).toContain("rateLimit.configNamespaces");
    expect(live("VirtualService", "reviews")).toBeDefined();
    expect(kube.emulator.list("v1", "ConfigMap", NS).map((o) => (o.metadata as { name: string }).name)).not.toContain("plain");
    expect(kube.emulator.get("v1", "ConfigMap", "limits", "limits")).toBeUndefined();

    // Given the rate limiter's namespace, the agent writes its configuration there (and only there).
    const inventory = createInventory({ reader: p.client, writer: p.writer, namespace: "gitmesh", cluster: "cluster1" });
    const limited = createApplier({ cluster: "cluster1", reader: p.client, writer: p.writer, inventory, rateLimitConfigNamespaces: ["limits"], metrics: p.metrics, logger: p.logger });
    const r2 = await limited.applyOutput(output(2, [vs("reviews", NS, "reviews"), configMap("limits", "limits", "RateLimitServerConfig"), configMap("elsewhere", NS, "RateLimitServerConfig")]));
    expect(r2.errors.map((e) => e.key)).toEqual(["ConfigMap/bookinfo/elsewhere"]);
    expect(kube.emulator.get("v1", "ConfigMap", "limits", "limits")?.data).toEqual({ k: "v" });
  });

  it("applies with field manager gitmesh-agent, in dependency order, updates and prunes", async () => {
    const order: string[] = [];
    kube.emulator.onChange((e) => order.push(String(e.object.kind)));
    const r1 = await applier.applyOutput(output(1, [vs("reviews", NS, "reviews"), dr("reviews", NS, "reviews"), vs("ratings", NS, "ratings")]));
    expect(r1).toMatchObject({ ack: true, errors: [], applied: 3, pruned: 0 });
    expect(order.indexOf("DestinationRule")).toBeLessThan(order.indexOf("VirtualService"));
    const o = live("VirtualService", "reviews")!;
    const mf = (o.metadata as { managedFields: { manager: string; operation: string }[] }).managedFields;
    expect(mf.map((m) => [m.manager, m.operation])).toEqual([["gitmesh-agent", "Apply"]]);

    // update one, drop one
    const changed = vs("reviews", NS, "reviews");
    (changed.spec as { http: unknown[] }).http = [{ route: [{ destination: { host: "reviews", subset: "v2" } }] }];
    const r2 = await applier.applyOutput(output(2, [changed, dr("reviews", NS, "reviews"), vs("extra", NS, "extra")]));
    expect(r2).toMatchObject({ ack: true, applied: 3, unchanged: 1, pruned: 1 });
    expect(JSON.stringify(live("VirtualService", "reviews")!.spec)).toContain("v2");
    expect(names("VirtualService")).toEqual(["extra", "reviews"]);
    expect(await metricValue(p.registry, "gitmesh_agent_prunes_total", { result: "ok" })).toBe(1);
    // the unchanged DestinationRule was not applied again
    expect(await metricValue(p.registry, "gitmesh_agent_applies_total", { result: "ok" })).toBe(5);
  });

  it("skips objects unchanged since it applied them, and re-applies what the cluster no longer holds", async () => {
    const objs = [vs("a", NS, "a"), vs("b", NS, "b"), dr("a", NS, "a")];
    const writes = () => metricValue(p.registry, "gitmesh_agent_applies_total", { result: "ok" });
    expect(await applier.applyOutput(output(1, objs))).toMatchObject({ ack: true, applied: 3, unchanged: 0 });
    expect(await applier.applyOutput(output(2, objs))).toMatchObject({ ack: true, applied: 3, unchanged: 3, pruned: 0 });
    expect(await writes()).toBe(3);

    // someone else edits one and deletes another; no drift watcher runs here: the next output repairs both
    const edited = live("VirtualService", "a")!;
    kube.emulator.seed([{ ...edited, apiVersion: "networking.istio.io/v1", kind: "VirtualService", spec: { hosts: ["elsewhere"] } }]);
    kube.emulator.remove("networking.istio.io/v1", "DestinationRule", NS, "a");
    expect(await applier.applyOutput(output(3, objs))).toMatchObject({ ack: true, applied: 3, unchanged: 1 });
    expect(await writes()).toBe(5);
    expect((live("VirtualService", "a")!.spec as { hosts: string[] }).hosts).toEqual(["a"]);
    expect(live("DestinationRule", "a")).toBeDefined();

    // a changed manifest is applied even if the live object happens to contain it
    const more = vs("b", NS, "b");
    more.metadata.annotations = { note: "x" };
    expect(await applier.applyOutput(output(4, [objs[0]!, more, objs[2]!]))).toMatchObject({ ack: true, applied: 3, unchanged: 2 });
    expect(live("VirtualService", "b")!.metadata).toMatchObject({ annotations: { note: "x" } });
  });

  it("never prunes against an incomplete output, nor objects it does not own", async () => {
    await applier.applyOutput(output(1, [vs("a", NS, "a"), vs("b", NS, "b")]));
    // someone else's object, and one labelled for another cluster
    kube.emulator.seed([
      { apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: "user", namespace: NS }, spec: { hosts: ["u"] } },
      vs("other-cluster", NS, "o", "cluster2"),
    ]);
    const r = await applier.applyOutput(output(2, [vs("a", NS, "a")], { complete: false }));
    expect(r).toMatchObject({ ack: true, pruned: 0, pruneSkipped: "incomplete" });
    expect(names("VirtualService")).toEqual(["a", "b", "other-cluster", "user"]);
    const r2 = await applier.applyOutput(output(3, [vs("a", NS, "a")]));
    expect(r2).toMatchObject({ ack: true, pruned: 1 });
    expect(names("VirtualService")).toEqual(["a", "other-cluster", "user"]);
  });

  it("retries transient API answers (500s here; a real server answers 429 while a kind's storage initializes) within the delivery: applied and pruned, no NACK", async () => {
    await applier.applyOutput(output(1, [vs("a", NS, "a"), vs("b", NS, "b")]));
    kube.emulator.faults.failRequests(2, { methods: ["GET"], path: "/virtualservices" });
    const r = await applier.applyOutput(output(2, [vs("a", NS, "a")]));
    expect(r).toMatchObject({ ack: true, errors: [], pruned: 1 });
    kube.emulator.faults.failRequests(1, { methods: ["PATCH"], path: "/virtualservices/c" });
    const r2 = await applier.applyOutput(output(3, [vs("a", NS, "a"), vs("c", NS, "c")]));
    expect(r2).toMatchObject({ ack: true, errors: [], applied: 2 });
    expect(names("VirtualService")).toEqual(["a", "c"]);
  });

  it("ends its transient retries once it may no longer write (a stopped or deposed agent's delivery must not outlive it)", async () => {
    await applier.applyOutput(output(1, [vs("a", NS, "a"), vs("b", NS, "b")]));
    // Every read and write fails as a transient 500 from now on; the retry budget is far longer than the test.
    kube.emulator.faults.failRequests(undefined, { path: "/virtualservices" });
    let leading = true;
    let calls = 0;
    const counted = new Proxy(p.client, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === "function" && (prop === "get" || prop === "list") ? (...args: unknown[]) => (calls++, (v as (...a: unknown[]) => unknown).apply(target, args)) : v;
      },
    });
    const inventory = createInventory({ reader: p.client, writer: p.writer, namespace: "gitmesh", cluster: "cluster1" });
    const deposed = createApplier({ cluster: "cluster1", reader: counted, writer: p.writer, inventory, canWrite: () => leading, retry: { attempts: 1000, initialDelayMs: 5, maxDelayMs: 5 }, metrics: p.metrics, logger: p.logger });
    const delivery = deposed.applyOutput(output(2, [vs("a", NS, "a"), vs("b", NS, "b"), vs("c", NS, "c")]));
    await eventually("a few failed attempts", () => calls > 3);
    leading = false;
    const atStop = calls;
    const r = await delivery;
    expect(r.ack).toBe(false);
    // At most the requests already in flight when leadership ended; no new attempt after it.
    expect(calls - atStop).toBeLessThanOrEqual(3);
    kube.emulator.faults.clear();
  });

  it("refuses a mass deletion loudly (log, metric, NACK) unless the output allows it", async () => {
    await applier.applyOutput(output(1, many(10)));
    const r = await applier.applyOutput(output(2, many(3)));
    expect(r.ack).toBe(false);
    expect(r.pruneSkipped).toBe("mass_deletion");
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]!.key).toBe("prune");
    expect(r.errors[0]!.message).toMatch(/refusing to delete 7 of 10 owned objects/);
    expect(names("VirtualService")).toHaveLength(10);
    expect(await metricValue(p.registry, "gitmesh_agent_prune_refused_total", { reason: "mass_deletion" })).toBe(1);
    expect(await metricValue(p.registry, "gitmesh_agent_output_results_total", { result: "nack" })).toBe(1);
    expect(p.mem.records.some((x) => x.level === "error" && x.msg === "mass deletion refused")).toBe(true);
    // an empty complete output is a mass deletion too ("to zero")
    expect((await applier.applyOutput(output(3, []))).pruneSkipped).toBe("mass_deletion");
    expect(names("VirtualService")).toHaveLength(10);

    const allowed = await applier.applyOutput(output(4, many(3), { extra: { "gitmesh.io/output-options": { allowMassDeletion: true } } }));
    expect(allowed).toMatchObject({ ack: true, pruned: 7 });
    expect(names("VirtualService")).toHaveLength(3);
  });

  it("NACKs per resource: bad JSON, objects for another cluster, rejected applies; applies the rest", async () => {
    const good = vs("good", NS, "good");
    const out = output(1, [good, vs("wrong", NS, "w", "cluster9"), vs("no-ns", "missing-namespace", "x")]);
    const resources = new Map(out.resources);
    resources.set("broken", new TextEncoder().encode("{not json"));
    const r = await applier.applyOutput({ ...out, resources });
    expect(r.ack).toBe(false);
    expect(r.errors.map((e) => e.key).sort()).toEqual(["VirtualService/missing-namespace/no-ns", "VirtualService/bookinfo/wrong", "broken"].sort());
    expect(r.errors.find((e) => e.key === "VirtualService/missing-namespace/no-ns")!.message).toMatch(/404/);
    expect(live("VirtualService", "good")).toBeDefined();
  });

  it("hands IssuedCertificate requests back instead of applying them", async () => {
    const req: KubeObject = { apiVersion: "internal.gitmesh.io/v1", kind: "IssuedCertificate", metadata: { name: "istiod", namespace: "istio-system" }, spec: {} };
    const r = await applier.applyOutput(output(1, [req, vs("a", NS, "a")]));
    expect(r).toMatchObject({ ack: true, applied: 1 });
    expect(r.certificateRequests).toHaveLength(1);
  });
});

describe("inventory", () => {
  it("prune's DELETE carries the uid: an object recreated by someone else between the list and the delete survives", async () => {
    await applier.applyOutput(output(1, [vs("a", NS, "a"), vs("b", NS, "b")]));
    let arm = true;
    const racing = {
      get: p.client.get.bind(p.client),
      list: async (ref: Parameters<typeof p.client.list>[0], o?: Parameters<typeof p.client.list>[1]) => {
        const r = await p.client.list(ref, o);
        if (arm && ref.kind === "VirtualService") {
          arm = false;
          kube.emulator.remove("networking.istio.io/v1", "VirtualService", NS, "a");
          kube.emulator.seed([{ apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: "a", namespace: NS }, spec: { hosts: ["someone-else"] } }]);
        }
        return r;
      },
    };
    const inventory = createInventory({ reader: p.client, writer: p.writer, namespace: "gitmesh", cluster: "cluster1" });
    const second = createApplier({ cluster: "cluster1", reader: racing, writer: p.writer, inventory, metrics: p.metrics, logger: p.logger });
    const r = await second.applyOutput(output(2, [vs("b", NS, "b")]));
    expect(r).toMatchObject({ ack: true, pruned: 0 });
    expect((live("VirtualService", "a")!.spec as { hosts: string[] }).hosts).toEqual(["someone-else"]);
    expect(await metricValue(p.registry, "gitmesh_agent_prune_skipped_total", { reason: "recreated" })).toBe(1);
    // and it is not the agent's any more
    expect((await second.applyOutput(output(3, [vs("a", NS, "a"), vs("b", NS, "b")]))).errors.map((e) => e.key)).toEqual(["VirtualService/bookinfo/a"]);
  });

  it("an intent left by a crash is confirmed only when the object carries the agent's field manager", async () => {
    // the crash: intents written, one object created by the agent, the other by someone else meanwhile
    const inventory = createInventory({ reader: p.client, writer: p.writer, namespace: "gitmesh", cluster: "cluster1" });
    await inventory.load();
    for (const n of ["mine", "theirs"]) inventory.set({ apiVersion: "networking.istio.io/v1", kind: "VirtualService", namespace: NS, name: n });
    await inventory.flush();
    await p.writer.apply(vs("mine", NS, "mine"), { force: false });
    await p.client.apply({ ...vs("theirs", NS, "theirs"), spec: { hosts: ["x"] } }, { fieldManager: "kubectl", force: false });

    const restarted = newApplier();
    const r = await restarted.applyOutput(output(1, [vs("mine", NS, "mine"), vs("theirs", NS, "theirs")]));
    expect(r.errors.map((e) => e.key)).toEqual(["VirtualService/bookinfo/theirs"]);
    expect((live("VirtualService", "theirs")!.spec as { hosts: string[] }).hosts).toEqual(["x"]);
    const after = createInventory({ reader: p.client, writer: p.writer, namespace: "gitmesh", cluster: "cluster1" });
    await after.load();
    expect(after.entries().map((e) => [e.name, e.uid])).toEqual([["mine", (live("VirtualService", "mine")!.metadata as { uid: string }).uid]]);
    // confirmed: pruned when it leaves the output; the other one stays
    expect(await restarted.applyOutput(output(2, []))).toMatchObject({ pruned: 1 });
    expect(names("VirtualService")).toEqual(["theirs"]);
  });

  it("keeps 2,000 objects in one ConfigMap well under its 1 MiB limit", async () => {
    const inventory = createInventory({ reader: p.client, writer: p.writer, namespace: "gitmesh", cluster: "cluster1" });
    await inventory.load();
    for (let i = 0; i < 2000; i++) inventory.set({ apiVersion: "networking.istio.io/v1", kind: i % 2 ? "VirtualService" : "DestinationRule", namespace: `team-${i % 97}`, name: `route-${i}-of-a-longish-service-name`, uid: crypto.randomUUID() });
    await inventory.flush();
    expect(inventory.storedBytes).toBeLessThan(200 * 1024);
    const again = createInventory({ reader: p.client, writer: p.writer, namespace: "gitmesh", cluster: "cluster1" });
    await again.load();
    expect(again.entries()).toHaveLength(2000);
  });
});

describe("drift", () => {
  it("repairs an element another manager added to a list the CRD merges by key (ServiceEntry ports), which a forced apply keeps: removed with a merge patch", async () => {
    const se: KubeObject = {
      apiVersion: "networking.istio.io/v1",
      kind: "ServiceEntry",
      metadata: { name: "httpbin", namespace: NS },
      spec: { hosts: ["httpbin.org"], location: "MESH_EXTERNAL", resolution: "DNS", ports: [{ name: "https", number: 443, protocol: "TLS" }] },
    };
    const drift = createDriftWatcher({ kc: kube.newKubeConfig(), reader: p.client, cluster: "cluster1", applier, metrics: p.metrics, backoff: { initialMs: 20 }, logger: p.logger });
    const m = createRunnableManager([drift], p.logger);
    await m.start();
    try {
      await applier.applyOutput(output(1, [se]));
      await Promise.all(drift.informers.map((i) => i.whenSynced()));
      // kubectl edit: an Update that adds a port; field manager kubectl-edit owns the new element.
      const o = (await p.client.get({ apiVersion: "networking.istio.io/v1", kind: "ServiceEntry", plural: "serviceentries", namespaced: true }, NS, "httpbin"))!;
      (o.spec as { ports: unknown[] }).ports.push({ name: "http", number: 80, protocol: "HTTP" });
      await p.client.replace(o, { fieldManager: "kubectl-edit" });
      await eventually("port removed", () => (live("ServiceEntry", "httpbin")?.spec as { ports: unknown[] }).ports.length === 1);
      expect((live("ServiceEntry", "httpbin")!.spec as { ports: unknown[] }).ports).toEqual([{ name: "https", number: 443, protocol: "TLS" }]);
      // (The emulator runs in this process: its state changes before the agent has the answer and logs.)
      await eventually("removal logged", () => p.mem.records.some((x) => x.msg.startsWith("removed fields other managers added") && JSON.stringify(x).includes("kubectl-edit")));
      // Nothing left to do: the next output finds it unchanged.
      expect(await applier.applyOutput(output(2, [se]))).toMatchObject({ ack: true, unchanged: 1 });
    } finally {
      await m.stop();
    }
  });

  it("repairs owned objects changed or deleted by someone else, and counts the repairs", async () => {
    const drift = createDriftWatcher({ kc: kube.newKubeConfig(), reader: p.client, cluster: "cluster1", applier, metrics: p.metrics, backoff: { initialMs: 20 }, logger: p.logger });
    const m = createRunnableManager([drift], p.logger);
    await m.start();
    try {
      await applier.applyOutput(output(1, [vs("reviews", NS, "reviews"), dr("reviews", NS, "reviews")]));
      await Promise.all(drift.informers.map((i) => i.whenSynced()));
      expect(drift.repairs).toBe(0);
      // kubectl edit by a human (a merge patch through the emulator's HTTP API would be the same)
      const o = live("VirtualService", "reviews")!;
      kube.emulator.seed([{ ...o, spec: { hosts: ["hijacked"] } }]);
      await eventually("spec repaired", () => JSON.stringify(live("VirtualService", "reviews")?.spec).includes('"reviews"'));
      kube.emulator.remove("networking.istio.io/v1", "DestinationRule", NS, "reviews");
      await eventually("recreated", () => live("DestinationRule", "reviews"));
      await eventually("two repairs counted", () => drift.repairs === 2);
      expect(await metricValue(p.registry, "gitmesh_agent_drift_repairs_total")).toBe(2);
      // a label added by someone else is not drift (we only compare what we own)
      const o2 = live("VirtualService", "reviews")!;
      kube.emulator.seed([{ ...o2, metadata: { ...(o2.metadata as object), labels: { ...((o2.metadata as { labels: object }).labels), extra: "x" } } }]);
      // our own new version is not drift either
      await applier.applyOutput(output(2, [vs("reviews", NS, "reviews"), dr("reviews", NS, "reviews2")]));
      await new Promise((r) => setTimeout(r, 300));
      expect(drift.repairs).toBe(2);
    } finally {
      await m.stop();
    }
  });
});
