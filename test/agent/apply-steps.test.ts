// The apply path's named steps (src/agent/apply/), each on its own, against the emulator over real
// HTTP where a step talks to the cluster; and the classification of errors through the applier.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiException } from "@kubernetes/client-node";
import { NotLeaderError, resourceError } from "../../src/agent/apply/errors.js";
import { createApplyContext, type ApplierOptions } from "../../src/agent/applier.js";
import { createApplier, createInventory, type Inventory, type KubeObject, type KubeReader, type OutputVersion } from "../../src/agent/index.js";
import { ISTIO_KINDS as EMULATED_ISTIO_KINDS } from "../../src/kube-emulator/index.js";
import { observeCluster } from "../../src/agent/apply/observe.js";
import { guardOwnership, proveEntry } from "../../src/agent/apply/ownership.js";
import { planOutput } from "../../src/agent/apply/parse.js";
import { APPLY_STEPS, reconcileOutput } from "../../src/agent/apply/pipeline.js";
import { massDeletionLimit, pruneObjects } from "../../src/agent/apply/prune.js";
import { report } from "../../src/agent/apply/report.js";
import { newDelivery } from "../../src/agent/apply/types.js";
import { applyObjects } from "../../src/agent/apply/write.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { dr, metricValue, output, parts, racingReader, vs } from "./helpers.js";

const NS = "bookinfo";
const VS_KEY = (name: string) => `networking.istio.io/v1/VirtualService/${NS}/${name}`;
const enc = new TextEncoder();
const FAST_RETRY = { attempts: 2, initialDelayMs: 1, maxDelayMs: 5 };

let kube: StartedKube;
let p: ReturnType<typeof parts>;
let inventory: Inventory;

async function start(options: Parameters<typeof startKube>[0] = {}): Promise<void> {
  kube = await startKube(options);
  kube.emulator.seed([{ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } }, { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } }]);
  p = parts(kube);
  inventory = createInventory({ reader: p.client, writer: p.writer, namespace: "gitmesh", cluster: "cluster1" });
}
const opts = (extra: Partial<ApplierOptions> = {}): ApplierOptions => ({ cluster: "cluster1", reader: p.client, writer: p.writer, inventory, metrics: p.metrics, logger: p.logger, retry: FAST_RETRY, ...extra });
const live = (kind: string, name: string) => kube.emulator.get("networking.istio.io/v1", kind, NS, name);
const uid = (kind: string, name: string) => (live(kind, name)!.metadata as { uid: string }).uid;

afterEach(async () => {
  await (kube as StartedKube | undefined)?.stop();
});

describe("step plan", () => {
  beforeEach(() => start());

  it("turns every entry it cannot use into an error for that entry (never a throw) and makes the rest the desired state", () => {
    const ctx = createApplyContext(opts());
    const resources = new Map<string, Uint8Array>([
      ["good", enc.encode(JSON.stringify(vs("good", NS, "good")))],
      ["json", enc.encode("{not json")],
      ["null", enc.encode("null")],
      ["meta-null", enc.encode(JSON.stringify({ apiVersion: "v1", kind: "X", metadata: null }))],
      ["other", enc.encode(JSON.stringify(vs("other", NS, "o", "cluster9")))],
      ["gitmesh.io/output-options", enc.encode(JSON.stringify({ allowMassDeletion: true, ignoreDifferences: "nope" }))],
    ]);
    const d = newDelivery({ version: 1, complete: false, sourceCommit: "c", resources });
    ctx.desired.set("kept/by/incomplete", vs("kept", NS, "kept"));
    expect(planOutput(ctx, d)).toEqual({ reaction: "done" });
    expect(d.errors.map((e) => e.key).sort()).toEqual(["gitmesh.io/output-options", "json", "meta-null", "null", "other"]);
    expect(d.errors.every((e) => e.transient === undefined)).toBe(true);
    expect([...d.wanted.keys()]).toEqual([VS_KEY("good")]);
    expect(d.allowMassDeletion).toBe(true);
    // An incomplete output adds to what is desired; gitmesh's labels are on the manifest.
    expect([...ctx.desired.keys()].sort()).toEqual(["kept/by/incomplete", VS_KEY("good")]);
    expect(ctx.desired.get(VS_KEY("good"))!.metadata.labels).toMatchObject({ "gitmesh.io/managed": "true", "gitmesh.io/cluster": "cluster1" });
  });
});

describe("step observe", () => {
  it("without an inventory: needs a person, says so, nothing listed is written — through the applier, no throw while building its own message", async () => {
    await start();
    const applier = createApplier({ ...opts(), inventory: undefined as unknown as Inventory });
    const r = await applier.applyOutput(output(1, [vs("a", NS, "a")]));
    expect(r.ack).toBe(false);
    expect(r.errors).toEqual([{ key: "inventory", message: expect.stringMatching(/given no inventory.*nothing was applied or pruned/) }]);
    expect(live("VirtualService", "a")).toBeUndefined();
    // drift repair without an inventory owns nothing
    expect(await applier.reapply(VS_KEY("a"))).toBe("not_owned");
    expect(applier.owns(vs("a", NS, "a"))).toBe(false);
  });

  it("a kind the API server does not serve (CRD missing) is noted missing by its CRD's name; other kinds are listed", async () => {
    await start({ istioKinds: false, kinds: EMULATED_ISTIO_KINDS.filter((k) => k.kind !== "VirtualService") });
    kube.emulator.seed([dr("r", NS, "r")]);
    const ctx = createApplyContext(opts());
    const d = newDelivery(output(1, []));
    expect(await observeCluster(ctx, d)).toEqual({ reaction: "done" });
    expect([...d.missingKinds.values()]).toEqual(["virtualservices.networking.istio.io"]);
    expect(d.failedKinds.size).toBe(0);
    expect([...d.live.keys()]).toContain(`networking.istio.io/v1/DestinationRule/${NS}/r`);
  });

  it("through the applier: the missing kind is reported naming its CRD, not transient; other kinds apply; once the CRD is served the next delivery applies it", async () => {
    await start({ istioKinds: false, kinds: EMULATED_ISTIO_KINDS.filter((k) => k.kind !== "VirtualService") });
    const applier = createApplier(opts());
    const r = await applier.applyOutput(output(1, [vs("a", NS, "a"), dr("a", NS, "a")]));
    expect(r).toMatchObject({ ack: false, applied: 1 });
    expect(r.errors).toEqual([{ key: "VirtualService/bookinfo/a", message: expect.stringContaining("virtualservices.networking.istio.io is not installed") }]);
    // An output without the missing kind is ACKed.
    expect(await applier.applyOutput(output(2, [dr("a", NS, "a")]))).toMatchObject({ ack: true, errors: [] });
    for (const k of EMULATED_ISTIO_KINDS.filter((x) => x.kind === "VirtualService")) kube.emulator.registerKind(k);
    expect(await applier.applyOutput(output(3, [vs("a", NS, "a"), dr("a", NS, "a")]))).toMatchObject({ ack: true, errors: [] });
    expect(live("VirtualService", "a")).toBeDefined();
  });

  it("a list that keeps failing (500 after the retries) notes the kind failed and transient; an unreadable inventory needs a person", async () => {
    await start();
    kube.emulator.faults.failRequests(undefined, { methods: ["GET"], path: "/destinationrules" });
    const ctx = createApplyContext(opts());
    const d = newDelivery(output(1, []));
    await observeCluster(ctx, d);
    expect(d.failedKinds.get("networking.istio.io/v1/DestinationRule")).toMatchObject({ transient: true, message: expect.stringMatching(/500/) });
    kube.emulator.faults.clear();

    kube.emulator.seed([{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "gitmesh-agent-inventory", namespace: "gitmesh" }, binaryData: { "entries.json.gz": Buffer.from("not gzip").toString("base64") } }]);
    const d2 = newDelivery(output(2, []));
    const fresh = createInventory({ reader: p.client, writer: p.writer, namespace: "gitmesh", cluster: "cluster1" });
    const r = await observeCluster(createApplyContext(opts({ inventory: fresh })), d2);
    expect(r).toMatchObject({ reaction: "needs-person", reason: expect.stringMatching(/gitmesh\/gitmesh-agent-inventory is unreadable/) });
    expect(d2.errors[0]).not.toHaveProperty("transient");
  });
});

describe("step guard (ownership) and the inventory's proof", () => {
  beforeEach(() => start());
  const mf = (manager: string, operation = "Apply") => ({ manager, operation });
  const obj = (uid: string, managers: { manager: string; operation: string }[]): KubeObject => ({ ...vs("a", NS, "a"), metadata: { name: "a", namespace: NS, uid, managedFields: managers } });
  const entry = (uid?: string) => ({ apiVersion: "networking.istio.io/v1", kind: "VirtualService", namespace: NS, name: "a", ...(uid === undefined ? {} : { uid }) });

  it("proveEntry: the recorded uid AND gitmesh's own server-side apply, else why not", () => {
    expect(proveEntry(entry("u1"), obj("u1", [mf("gitmesh-agent")]), "gitmesh-agent")).toBe("proven");
    expect(proveEntry(entry(), obj("u1", [mf("gitmesh-agent")]), "gitmesh-agent")).toBe("intent_confirmed");
    expect(proveEntry(entry("u0"), obj("u1", [mf("gitmesh-agent")]), "gitmesh-agent")).toBe("recreated");
    expect(proveEntry(entry("u1"), obj("u1", [mf("kubectl-client-side-apply", "Update")]), "gitmesh-agent")).toBe("not_applied_by_gitmesh");
    expect(proveEntry(entry("u1"), obj("u1", [mf("gitmesh-agent", "Update")]), "gitmesh-agent")).toBe("not_applied_by_gitmesh");
    expect(proveEntry(entry("u1"), obj("u1", []), "gitmesh-agent")).toBe("not_applied_by_gitmesh");
  });

  it("a forged entry (the right uid, an object gitmesh never applied) is dropped with a warning naming it, counted, and the object refused, not changed", async () => {
    await p.client.apply({ ...vs("a", NS, "a"), spec: { hosts: ["theirs"] } }, { fieldManager: "kubectl", force: false });
    await inventory.load();
    inventory.set(entry(uid("VirtualService", "a")));
    await inventory.flush();
    const ctx = createApplyContext(opts());
    const d = newDelivery(output(1, [vs("a", NS, "a")]));
    planOutput(ctx, d);
    await observeCluster(ctx, d);
    expect(await guardOwnership(ctx, d)).toEqual({ reaction: "done" });
    expect(d.work).toEqual([]);
    expect(d.refused).toBe(1);
    expect(d.errors[0]!.message).toMatch(/gitmesh's field manager never applied it/);
    expect(inventory.get(VS_KEY("a"))).toBeUndefined();
    expect(p.mem.records.some((r) => r.level === "warn" && r.msg.includes("inventory entry dropped") && r.msg.includes(`VirtualService ${NS}/a`))).toBe(true);
    expect(await metricValue(p.registry, "gitmesh_agent_inventory_entries_rejected_total", { reason: "not_applied_by_gitmesh" })).toBe(1);
  });

  it("an object of a kind whose CRD is missing is an error naming the CRD, not transient, and no intent is written for it", async () => {
    const ctx = createApplyContext(opts());
    const d = newDelivery(output(1, [vs("a", NS, "a"), dr("a", NS, "a")]));
    planOutput(ctx, d);
    await observeCluster(ctx, d);
    d.missingKinds.set("networking.istio.io/v1/VirtualService", "virtualservices.networking.istio.io");
    await guardOwnership(ctx, d);
    expect(d.errors).toEqual([{ key: "VirtualService/bookinfo/a", message: expect.stringContaining("virtualservices.networking.istio.io is not installed") }]);
    expect(d.work.map((w) => w.obj.kind)).toEqual(["DestinationRule"]);
    expect(inventory.get(VS_KEY("a"))).toBeUndefined();
  });
});

describe("step apply (with retry): what is transient and what needs a person", () => {
  beforeEach(() => start());

  it("500s past the retries: transient; an invalid object (a real server's 500 'failed to create typed patch object'): not transient; the rest is applied", async () => {
    const applier = createApplier(opts());
    kube.emulator.faults.failRequests(undefined, { methods: ["PATCH"], path: "/virtualservices/flaky" });
    const invalid = { ...dr("bad", NS, "bad"), spec: { host: 42 } } as KubeObject;
    const r = await applier.applyOutput(output(1, [vs("ok", NS, "ok"), vs("flaky", NS, "flaky"), invalid]));
    kube.emulator.faults.clear();
    const byKey = new Map(r.errors.map((e) => [e.key, e]));
    expect(byKey.get("VirtualService/bookinfo/flaky")).toMatchObject({ transient: true, message: expect.stringMatching(/500/) });
    expect(byKey.get("DestinationRule/bookinfo/bad")?.message).toMatch(/failed to create typed patch object/);
    expect(byKey.get("DestinationRule/bookinfo/bad")).not.toHaveProperty("transient");
    expect(live("VirtualService", "ok")).toBeDefined();
    // once the server answers again, the next delivery applies it: nothing needed a person
    expect((await applier.applyOutput(output(2, [vs("ok", NS, "ok"), vs("flaky", NS, "flaky")]))).ack).toBe(true);
  });

  it("leadership lost while applying: one transient error, nothing more written, prune not run", async () => {
    let leader = true;
    const applier = createApplier(opts({ canWrite: () => leader }));
    await applier.applyOutput(output(1, [vs("old", NS, "old"), vs("keep", NS, "keep")]));
    leader = false;
    const r = await applier.applyOutput(output(2, [vs("keep", NS, "keep"), vs("new", NS, "new"), dr("new", NS, "new")]));
    expect(r.ack).toBe(false);
    expect(r.errors.every((e) => e.transient === true)).toBe(true);
    expect(r.errors.find((e) => e.key === "leader")?.message).toMatch(/no longer the leader/);
    expect(r.errors.filter((e) => e.key !== "leader").map((e) => e.key)).toEqual(["DestinationRule/bookinfo/new"]); // the first rank only: later ranks are not tried
    expect(live("VirtualService", "old")).toBeDefined();
    expect(live("VirtualService", "new")).toBeUndefined();
  });

  const racing = (race: () => void): KubeReader => racingReader(p.client, race);
  const theirs = (name: string): KubeObject => ({ apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name, namespace: NS }, spec: { hosts: ["someone-else"] } });

  it("a change to an owned object is a forced apply carrying the listed uid: an object recreated by someone else since the list is not taken over", async () => {
    await createApplier(opts()).applyOutput(output(1, [vs("a", NS, "a")]));
    const reader = racing(() => {
      kube.emulator.remove("networking.istio.io/v1", "VirtualService", NS, "a");
      kube.emulator.seed([theirs("a")]);
    });
    const changed = vs("a", NS, "a");
    changed.spec = { hosts: ["a"], http: [{ route: [{ destination: { host: "a", subset: "v2" } }] }] };
    const r = await createApplier(opts({ reader, inventory: createInventory({ reader: p.client, writer: p.writer, namespace: "gitmesh", cluster: "cluster1" }) })).applyOutput(output(2, [changed]));
    expect(r.errors.map((e) => e.key)).toEqual(["VirtualService/bookinfo/a"]);
    expect(r.errors[0]!.message).toMatch(/deleted and recreated by someone else/);
    expect(live("VirtualService", "a")!.spec).toEqual({ hosts: ["someone-else"] });
  });

  it("a create is a non-forced apply: an object someone else created between the list and the create is refused and left as they wrote it", async () => {
    const reader = racing(() => kube.emulator.seed([theirs("a")]));
    const r = await createApplier(opts({ reader })).applyOutput(output(1, [vs("a", NS, "a")]));
    expect(r).toMatchObject({ ack: false, refused: 1 });
    expect(r.errors[0]!.message).toMatch(/someone else created it while gitmesh was creating it/);
    expect(r.errors[0]).not.toHaveProperty("transient");
    expect(live("VirtualService", "a")!.spec).toEqual({ hosts: ["someone-else"] });
    expect(inventory.get(VS_KEY("a"))).toBeUndefined();
  });

  it("applyObjects on its own writes in dependency order and counts what it applied", async () => {
    const ctx = createApplyContext(opts());
    const d = newDelivery(output(1, [vs("a", NS, "a"), dr("a", NS, "a")]));
    const order: string[] = [];
    kube.emulator.onChange((e) => order.push(String(e.object.kind)));
    planOutput(ctx, d);
    await observeCluster(ctx, d);
    await guardOwnership(ctx, d);
    expect(await applyObjects(ctx, d)).toEqual({ reaction: "done" });
    expect(d.applied).toBe(2);
    expect(order.filter((k) => k !== "ConfigMap")).toEqual(["DestinationRule", "VirtualService"]);
  });
});

describe("step prune (with preconditions)", () => {
  beforeEach(() => start());

  it("massDeletionLimit: floor(fraction × owned), at least the always-allowed count", () => {
    expect(massDeletionLimit(10, 0.5, 2)).toBe(5);
    expect(massDeletionLimit(11, 0.5, 2)).toBe(5);
    expect(massDeletionLimit(3, 0.5, 2)).toBe(2);
    expect(massDeletionLimit(0, 0.5, 2)).toBe(2);
  });

  it("the mass-deletion limit exactly: 5 of 10 owned are pruned, 6 of 10 are refused", async () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => vs(`r-${i}`, NS, `h${i}`));
    const applier = createApplier(opts());
    await applier.applyOutput(output(1, many(10)));
    const refused = await applier.applyOutput(output(2, many(4)));
    expect(refused).toMatchObject({ ack: false, pruned: 0, pruneSkipped: "mass_deletion" });
    expect(refused.errors[0]!.message).toMatch(/refusing to delete 6 of 10 owned objects \(limit 5/);
    expect(refused.errors[0]).not.toHaveProperty("transient");
    const allowed = await applier.applyOutput(output(3, many(5)));
    expect(allowed).toMatchObject({ ack: true, pruned: 5 });
  });

  it("holds the entries of a kind that failed to list (never 'already gone') and prunes them once it lists again; every deletion is logged by name", async () => {
    const applier = createApplier(opts());
    await applier.applyOutput(output(1, [vs("a", NS, "a"), vs("b", NS, "b"), dr("gone", NS, "gone"), dr("b", NS, "b")]));
    kube.emulator.faults.failRequests(undefined, { methods: ["GET"], path: "/destinationrules" });
    const r = await applier.applyOutput(output(2, [vs("a", NS, "a"), dr("b", NS, "b")]));
    kube.emulator.faults.clear();
    expect(r).toMatchObject({ ack: false, pruneSkipped: "list_failed", pruned: 1 }); // VirtualService b, of a listed kind, was pruned
    expect(r.errors.find((e) => e.key === "prune")).toMatchObject({ transient: true, message: expect.stringMatching(/cannot list networking.istio.io\/v1\/DestinationRule/) });
    expect(live("DestinationRule", "gone")).toBeDefined();
    const again = await applier.applyOutput(output(3, [vs("a", NS, "a"), dr("b", NS, "b")]));
    expect(again).toMatchObject({ ack: true, pruned: 1 });
    expect(live("DestinationRule", "gone")).toBeUndefined();
    const pruneLines = p.mem.records.filter((x) => x.msg.startsWith("pruned ") && x.msg.endsWith(": no longer in the output")).map((x) => x.msg);
    expect(pruneLines).toEqual([`pruned VirtualService ${NS}/b: no longer in the output`, `pruned DestinationRule ${NS}/gone: no longer in the output`]);
  });

  it("pruneObjects on its own: an incomplete output prunes nothing", async () => {
    const ctx = createApplyContext(opts());
    const d = newDelivery(output(1, [], { complete: false }));
    planOutput(ctx, d);
    await observeCluster(ctx, d);
    expect(await pruneObjects(ctx, d)).toEqual({ reaction: "done" });
    expect(d.pruneSkipped).toBe("incomplete");
  });
});

describe("report and the pipeline", () => {
  beforeEach(() => start());

  it("report always answers: a stopped delivery is a NACK whose prune was skipped; fights over wanted objects are errors", () => {
    const ctx = createApplyContext(opts());
    const d = newDelivery(output(1, [vs("a", NS, "a")]));
    planOutput(ctx, d);
    ctx.fights.set(VS_KEY("a"), "fighting with kubectl");
    d.halted = { reaction: "retry-later", reason: "x" };
    const r = report(ctx, d);
    expect(r).toMatchObject({ ack: false, pruneSkipped: "list_failed", applied: 0 });
    expect(r.errors.map((e) => e.key)).toEqual([`fight/${VS_KEY("a")}`]);
  });

  it("a step that throws (a bug) stops the list and is reported under its name; the steps are the documented ones, in order", async () => {
    expect(APPLY_STEPS.map((s) => s.name)).toEqual(["plan", "observe", "guard", "apply", "prune", "record"]);
    const ctx = createApplyContext(opts());
    const boom = { name: "boom", run: () => Promise.reject(new Error("unexpected")) };
    const r = await reconcileOutput(ctx, output(1, [vs("a", NS, "a")]), [APPLY_STEPS[0]!, boom, ...APPLY_STEPS.slice(1)]);
    expect(r.ack).toBe(false);
    expect(r.errors).toEqual([{ key: "boom", message: "step boom failed: unexpected" }]);
    expect(live("VirtualService", "a")).toBeUndefined();
    // A malformed output version (resources not a map) is an error, not a throw.
    const bad = await createApplier(opts()).applyOutput({ version: 2, complete: true, sourceCommit: "c", resources: null } as unknown as OutputVersion);
    expect(bad.ack).toBe(false);
    expect(bad.errors[0]!.key).toBe("plan");
  });
});

describe("classification of a failure that outlived the delivery's retries", () => {
  const api = (code: number, message = "x") => new ApiException(code, "HTTP", JSON.stringify({ message }), {});
  it("429, 5xx, resets and lost leadership are transient; 422, 409, RBAC 403, a typed-patch 500 and anything unknown need a person", () => {
    const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    for (const err of [api(429), api(500), api(503), api(504), reset, new NotLeaderError()]) expect(resourceError("k", "m", err)).toEqual({ key: "k", message: "m", transient: true });
    for (const err of [api(422), api(409), api(403), api(404), api(500, "failed to create typed patch object (x): .spec.host: expected string"), new Error("bug")]) expect(resourceError("k", "m", err)).toEqual({ key: "k", message: "m" });
  });
});
