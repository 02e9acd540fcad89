// The applier, the inventory and drift repair on a real kube-apiserver, authenticated as the agent's
// ServiceAccount bound by the agent chart's RBAC (default values). Other actors (a user's kubectl, a
// rollout controller) are the admin with field managers of their own. Expectations: DESIGN.md
// "Agent" and "Failure behaviour", and Kubernetes' documented server-side apply semantics (managed
// fields, conflicts, force, preconditions).
import { isDeepStrictEqual } from "node:util";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { createMemoryLogger } from "../../src/core/index.js";
import {
  ANNOTATION_ADOPT,
  createAgentMetrics,
  createApplier,
  createDriftWatcher,
  createInventory,
  createKubeClient,
  OUTPUT_OPTIONS_KEY,
  withFieldOwner,
  type Applier,
  type KubeReader,
} from "../../src/agent/index.js";
import { istioCrdObjects, type RealKube } from "../helpers/real-kube.js";
import { dr, metricValue, output, racingReader as racing, vs } from "../agent/helpers.js";
import { AGENT_NAMESPACE, getObject, namesAt, startAgentCluster, until, type AgentCluster } from "./cluster.js";

/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are untyped JSON here */
type Obj = Record<string, any>;

let cluster: AgentCluster;
let kube: RealKube;
let ns = "";
let n = 0;

beforeAll(async () => {
  cluster = await startAgentCluster();
  kube = cluster.kube;
}, 180_000);
afterAll(async () => {
  await (cluster as AgentCluster | undefined)?.stop();
});
// Each test: a namespace of its own, and a fresh inventory (the agent's ownership starts empty).
beforeEach(async () => {
  ns = `t${String(++n)}`;
  await kube.apply([{ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } }]);
  await kube.request("DELETE", `/api/v1/namespaces/${AGENT_NAMESPACE}/configmaps/gitmesh-agent-inventory`);
});

function agentParts(name = "agent") {
  const mem = createMemoryLogger(name);
  const registry = new Registry();
  const metrics = createAgentMetrics(registry);
  const kc = cluster.agentKc();
  const client = createKubeClient(kc);
  const writer = withFieldOwner(client);
  const inventory = createInventory({ reader: client, writer, namespace: AGENT_NAMESPACE, cluster: "cluster1" });
  return { mem, registry, metrics, kc, client, writer, inventory };
}
function newApplier(p: ReturnType<typeof agentParts>, reader: KubeReader = p.client): Applier {
  return createApplier({ cluster: "cluster1", reader, writer: p.writer, inventory: p.inventory, metrics: p.metrics, logger: p.mem.logger });
}

/** A reader that runs `race` right after the applier's first list of VirtualServices (helpers.ts). */
const racingReader = (p: ReturnType<typeof agentParts>, race: () => Promise<void>): KubeReader => racing(p.client, race);

const NET = "/apis/networking.istio.io/v1";
const path = (plural: string, name: string, namespace = ns) => `${NET}/namespaces/${namespace}/${plural}/${name}`;
const live = async (plural: string, name: string) => getObject(kube, path(plural, name));
const names = (plural: string) => namesAt(kube, `${NET}/namespaces/${ns}/${plural}`);
const managers = (o: Obj) => ((o.metadata.managedFields ?? []) as Obj[]).map((m) => `${String(m.manager)}/${String(m.operation)}`).sort();

/** Another actor's server-side apply (field manager `manager`), as the admin. */
async function applyAs(manager: string, obj: Obj, force = true): Promise<Obj> {
  const plural = `${String(obj.kind).toLowerCase()}s`;
  const r = await kube.request("PATCH", path(plural, String(obj.metadata.name), String(obj.metadata.namespace ?? ns)), {
    body: JSON.stringify(obj),
    contentType: "application/apply-patch+yaml",
    query: { fieldManager: manager, force: String(force) },
  });
  if (r.status !== 200 && r.status !== 201) throw new Error(`apply by ${manager}: HTTP ${r.status}: ${r.text}`);
  return r.body as Obj;
}

/** What `kubectl edit` does: read, change, PUT (an Update operation of field manager `manager`). */
async function editAs(manager: string, plural: string, name: string, change: (o: Obj) => void): Promise<Obj> {
  const o = (await live(plural, name))!;
  change(o);
  const r = await kube.request("PUT", path(plural, name), { body: o, query: { fieldManager: manager } });
  if (r.status !== 200) throw new Error(`edit by ${manager}: HTTP ${r.status}: ${r.text}`);
  return r.body as Obj;
}

/** The inventory ConfigMap as stored: key → uid (inventory.ts format). */
async function inventoryEntries(): Promise<Map<string, string>> {
  const cm = await getObject(kube, `/api/v1/namespaces/${AGENT_NAMESPACE}/configmaps/gitmesh-agent-inventory`);
  if (cm === undefined) return new Map();
  const rows = JSON.parse(gunzipSync(Buffer.from(String(cm.binaryData["entries.json.gz"]), "base64")).toString("utf8")) as string[][];
  return new Map(rows.map(([apiVersion, kind, namespace, name, uid]) => [`${String(apiVersion)}/${String(kind)}/${String(namespace)}/${String(name)}`, String(uid)]));
}

describe("the applier on a real API server, as the agent's ServiceAccount", () => {
  it("first apply: creates in dependency order as field manager gitmesh-agent (Apply), records each uid; the same output again writes nothing", async () => {
    const p = agentParts();
    const applier = newApplier(p);
    const objs = [vs("reviews", ns, "reviews"), dr("reviews", ns, "reviews"), vs("ratings", ns, "ratings")];
    const r1 = await applier.applyOutput(output(1, objs));
    expect(r1).toMatchObject({ ack: true, errors: [], applied: 3, pruned: 0, refused: 0 });
    const reviews = (await live("virtualservices", "reviews"))!;
    const rule = (await live("destinationrules", "reviews"))!;
    // Dependency order: the DestinationRule existed before the VirtualService that routes to it.
    expect(Number(rule.metadata.resourceVersion)).toBeLessThan(Number(reviews.metadata.resourceVersion));
    expect(managers(reviews)).toEqual(["gitmesh-agent/Apply"]);
    expect(reviews.spec).toEqual({ hosts: ["reviews"], http: [{ route: [{ destination: { host: "reviews" } }] }] });
    expect(reviews.metadata.labels).toMatchObject({ "gitmesh.io/managed": "true", "gitmesh.io/cluster": "cluster1" });
    const inv = await inventoryEntries();
    expect(inv.get(`networking.istio.io/v1/VirtualService/${ns}/reviews`)).toBe(reviews.metadata.uid);
    expect(inv.get(`networking.istio.io/v1/DestinationRule/${ns}/reviews`)).toBe(rule.metadata.uid);
    expect(inv.size).toBe(3);

    const r2 = await applier.applyOutput(output(2, objs));
    expect(r2).toMatchObject({ ack: true, applied: 3, unchanged: 3 });
    expect((await live("virtualservices", "reviews"))!.metadata.resourceVersion).toBe(reviews.metadata.resourceVersion);
    expect(await metricValue(p.registry, "gitmesh_agent_applies_total", { result: "ok" })).toBe(3);

    // A new leader (a fresh applier reading the stored inventory) finds the objects its own and unchanged on the server.
    const q = agentParts("next-leader");
    const again = await newApplier(q).applyOutput(output(3, objs));
    expect(again).toMatchObject({ ack: true, applied: 3, refused: 0 });
    expect((await live("virtualservices", "reviews"))!.metadata.resourceVersion).toBe(reviews.metadata.resourceVersion);
  });

  it("a change is applied and what the output no longer holds is pruned (uid precondition); other objects stay", async () => {
    const p = agentParts();
    const applier = newApplier(p);
    await applier.applyOutput(output(1, [vs("reviews", ns, "reviews"), dr("reviews", ns, "reviews"), vs("ratings", ns, "ratings"), vs("details", ns, "details")]));
    await kube.apply([{ apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: "users-own", namespace: ns }, spec: { hosts: ["u"] } }]);
    const before = (await live("virtualservices", "reviews"))!;
    const changed = vs("reviews", ns, "reviews");
    changed.spec = { hosts: ["reviews"], http: [{ route: [{ destination: { host: "reviews", subset: "v2" }, weight: 100 }] }] };
    const r = await applier.applyOutput(output(2, [changed, dr("reviews", ns, "reviews"), vs("details", ns, "details")]));
    expect(r).toMatchObject({ ack: true, applied: 3, unchanged: 2, pruned: 1 });
    const after = (await live("virtualservices", "reviews"))!;
    expect(after.spec.http).toEqual([{ route: [{ destination: { host: "reviews", subset: "v2" }, weight: 100 }] }]);
    expect(after.metadata.uid).toBe(before.metadata.uid);
    expect(Number(after.metadata.generation)).toBe(Number(before.metadata.generation) + 1);
    expect(await names("virtualservices")).toEqual(["details", "reviews", "users-own"]);
    expect((await inventoryEntries()).has(`networking.istio.io/v1/VirtualService/${ns}/ratings`)).toBe(false);
    expect(await metricValue(p.registry, "gitmesh_agent_prunes_total", { result: "ok" })).toBe(1);
  });

  it("an object gitmesh did not create is refused (NACK, not changed) until its owner annotates gitmesh.io/adopt; adopted, it is gitmesh's to change and prune", async () => {
    const p = agentParts();
    const applier = newApplier(p);
    // A user's object of the same name, even carrying gitmesh's labels: labels are no proof of ownership.
    const users = { apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: "reviews", namespace: ns, labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": "cluster1" } }, spec: { hosts: ["reviews"], http: [{ route: [{ destination: { host: "reviews", subset: "mine" } }] }] } };
    const created = await applyAs("kubectl", users);
    const r = await applier.applyOutput(output(1, [vs("reviews", ns, "reviews"), vs("ratings", ns, "ratings")]));
    expect(r.ack).toBe(false);
    expect(r.refused).toBe(1);
    expect(r.errors.map((e) => e.key)).toEqual([`VirtualService/${ns}/reviews`]);
    expect(r.errors[0]!.message).toMatch(/already exists and was not created by gitmesh/);
    expect(r.errors[0]!.message).toContain(`kubectl annotate virtualservice -n ${ns} reviews gitmesh.io/adopt=true`);
    const untouched = (await live("virtualservices", "reviews"))!;
    expect(untouched.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
    expect(managers(untouched)).toEqual(["kubectl/Apply"]);
    expect(await names("virtualservices")).toEqual(["ratings", "reviews"]);

    // The owner hands it over.
    await editAs("kubectl-annotate", "virtualservices", "reviews", (o) => {
      o.metadata.annotations = { ...(o.metadata.annotations ?? {}), [ANNOTATION_ADOPT]: "true" };
    });
    const r2 = await applier.applyOutput(output(2, [vs("reviews", ns, "reviews"), vs("ratings", ns, "ratings")]));
    expect(r2).toMatchObject({ ack: true, refused: 0 });
    const adopted = (await live("virtualservices", "reviews"))!;
    expect(adopted.metadata.uid).toBe(created.metadata.uid);
    // Forced: gitmesh's route replaced the user's (the http list is atomic in Istio's CRD).
    expect(adopted.spec.http).toEqual([{ route: [{ destination: { host: "reviews" } }] }]);
    expect(managers(adopted)).toContain("gitmesh-agent/Apply");
    expect((await inventoryEntries()).get(`networking.istio.io/v1/VirtualService/${ns}/reviews`)).toBe(created.metadata.uid);
    expect(await metricValue(p.registry, "gitmesh_agent_adoptions_total")).toBe(1);
    // Now gitmesh's: removed from the output, it is pruned.
    const r3 = await applier.applyOutput(output(3, [vs("ratings", ns, "ratings")]));
    expect(r3).toMatchObject({ ack: true, pruned: 1 });
    expect(await names("virtualservices")).toEqual(["ratings"]);
  });

  it("an object deleted and recreated by someone else between the agent's list and its write is neither changed nor deleted", async () => {
    const p = agentParts();
    await newApplier(p).applyOutput(output(1, [vs("a", ns, "a"), vs("b", ns, "b")]));
    const original = (await live("virtualservices", "a"))!;
    // The race, made deterministic: right after the applier listed VirtualServices, "a" is replaced by a user's object.
    const racing = racingReader(p, async () => {
      expect((await kube.request("DELETE", path("virtualservices", "a"))).status).toBe(200);
      await applyAs("kubectl", { apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: "a", namespace: ns }, spec: { hosts: ["someone-else"] } });
    });
    const q = agentParts("racing");
    const changed = vs("a", ns, "a");
    changed.spec = { hosts: ["a"], http: [{ route: [{ destination: { host: "a", subset: "v2" } }] }] };
    // "a" changed in the output: the applier writes it with the uid it listed as a precondition.
    const r = await newApplier(q, racing).applyOutput(output(2, [changed, vs("b", ns, "b")]));
    const now = (await live("virtualservices", "a"))!;
    expect(now.metadata.uid).not.toBe(original.metadata.uid);
    expect(now.spec).toEqual({ hosts: ["someone-else"] });
    expect(managers(now)).toEqual(["kubectl/Apply"]);
    expect(r.ack).toBe(false);
    expect(r.errors.map((e) => e.key)).toEqual([`VirtualService/${ns}/a`]);
    expect(r.errors[0]!.message).toMatch(/deleted and recreated by someone else/);
    expect((await inventoryEntries()).has(`networking.istio.io/v1/VirtualService/${ns}/a`)).toBe(false);

    // And prune: dropped from the output, the recreated object is not deleted (DELETE with preconditions.uid).
    const racingDelete = racingReader(p, async () => {
      expect((await kube.request("DELETE", path("virtualservices", "b"))).status).toBe(200);
      await applyAs("kubectl", { apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: "b", namespace: ns }, spec: { hosts: ["theirs"] } });
    });
    const s = agentParts("racing-prune");
    const r2 = await newApplier(s, racingDelete).applyOutput(output(3, []));
    expect(r2).toMatchObject({ pruned: 0 });
    expect((await live("virtualservices", "b"))!.spec).toEqual({ hosts: ["theirs"] });
    expect(await metricValue(s.registry, "gitmesh_agent_prune_skipped_total", { reason: "recreated" })).toBe(1);
  });

  it("an owned object deleted by someone else between the agent's list and its write is created again (not a NACK)", async () => {
    const p = agentParts();
    await newApplier(p).applyOutput(output(1, [vs("a", ns, "a")]));
    const original = (await live("virtualservices", "a"))!;
    const racing = racingReader(p, async () => {
      expect((await kube.request("DELETE", path("virtualservices", "a"))).status).toBe(200);
    });
    const q = agentParts("racing");
    const changed = vs("a", ns, "a");
    changed.spec = { hosts: ["a"], http: [{ route: [{ destination: { host: "a", subset: "v2" } }] }] };
    // A real server answers the forced apply naming the old uid with 409 "uid mismatch: … no existing object was found".
    const r = await newApplier(q, racing).applyOutput(output(2, [changed]));
    expect(r).toMatchObject({ ack: true, errors: [], applied: 1 });
    const now = (await live("virtualservices", "a"))!;
    expect(now.metadata.uid).not.toBe(original.metadata.uid);
    expect(now.spec).toEqual(changed.spec);
    expect(managers(now)).toEqual(["gitmesh-agent/Apply"]);
    expect((await inventoryEntries()).get(`networking.istio.io/v1/VirtualService/${ns}/a`)).toBe(now.metadata.uid);
  });

  it("refuses a mass deletion (NACK with how to allow it, nothing deleted) unless the output allows it", async () => {
    const p = agentParts();
    const applier = newApplier(p);
    const many = (k: number) => Array.from({ length: k }, (_, i) => vs(`r-${String(i)}`, ns, `h${String(i)}.example.com`));
    expect(await applier.applyOutput(output(1, many(10)))).toMatchObject({ ack: true, applied: 10 });
    const r = await applier.applyOutput(output(2, many(3)));
    expect(r).toMatchObject({ ack: false, pruned: 0, pruneSkipped: "mass_deletion" });
    expect(r.errors.map((e) => e.key)).toEqual(["prune"]);
    expect(r.errors[0]!.message).toMatch(/refusing to delete 7 of 10 owned objects/);
    expect(r.errors[0]!.message).toContain("Gitmesh-Allow-Deletion: cluster1");
    expect(await names("virtualservices")).toHaveLength(10);
    expect(await metricValue(p.registry, "gitmesh_agent_prune_refused_total", { reason: "mass_deletion" })).toBe(1);
    const allowed = await applier.applyOutput(output(3, many(3), { extra: { [OUTPUT_OPTIONS_KEY]: { allowMassDeletion: true } } }));
    expect(allowed).toMatchObject({ ack: true, pruned: 7 });
    expect(await names("virtualservices")).toEqual(["r-0", "r-1", "r-2"]);
  });

  it("RBAC: an apply that would create an object needs `create` besides `patch` (why the chart grants both); a refusal is a NACK for that object, the rest applies", async () => {
    // The chart's RBAC for another ServiceAccount, without `create` on networking.istio.io.
    const limited = cluster.rbac.map((o) => {
      const c = structuredClone(o);
      c.metadata.name = `limited-${String(c.metadata.name)}`;
      if (c.roleRef !== undefined) c.roleRef.name = `limited-${String(c.roleRef.name)}`;
      for (const s of (c.subjects ?? []) as Obj[]) s.name = "limited";
      for (const r of (c.rules ?? []) as Obj[]) if ((r.apiGroups as string[]).includes("networking.istio.io")) r.verbs = (r.verbs as string[]).filter((v) => v !== "create");
      return c;
    });
    const access = await kube.serviceAccountKubeConfig(AGENT_NAMESPACE, "limited", limited);
    const p = agentParts();
    await newApplier(p).applyOutput(output(1, [vs("existing", ns, "existing")]));
    const client = createKubeClient(access.kc);
    const writer = withFieldOwner(client);
    const applier = createApplier({ cluster: "cluster1", reader: client, writer, inventory: createInventory({ reader: client, writer, namespace: AGENT_NAMESPACE, cluster: "cluster1" }), logger: p.mem.logger });
    const changed = vs("existing", ns, "existing");
    changed.spec = { hosts: ["existing"], http: [{ route: [{ destination: { host: "existing", subset: "v2" } }] }] };
    const r = await applier.applyOutput(output(2, [changed, vs("new", ns, "new")]));
    expect(r.ack).toBe(false);
    expect(r.errors.map((e) => e.key)).toEqual([`VirtualService/${ns}/new`]);
    expect(r.errors[0]!.message).toMatch(/HTTP 403: .*system:serviceaccount:gitmesh:limited.* cannot create resource "virtualservices"/);
    expect(await names("virtualservices")).toEqual(["existing"]);
    expect((await live("virtualservices", "existing"))!.spec).toEqual(changed.spec);
  });

  it("never prunes against an incomplete output", async () => {
    const p = agentParts();
    const applier = newApplier(p);
    await applier.applyOutput(output(1, [vs("a", ns, "a"), vs("b", ns, "b")]));
    const r = await applier.applyOutput(output(2, [vs("a", ns, "a")], { complete: false }));
    expect(r).toMatchObject({ ack: true, pruned: 0, pruneSkipped: "incomplete" });
    expect(await names("virtualservices")).toEqual(["a", "b"]);
  });
});

describe("drift repair on a real API server", () => {
  async function withDrift<T>(p: ReturnType<typeof agentParts>, applier: Applier, body: (drift: ReturnType<typeof createDriftWatcher>) => Promise<T>): Promise<T> {
    const drift = createDriftWatcher({ kc: p.kc, reader: p.client, cluster: "cluster1", applier, fightWindowMs: 60_000, metrics: p.metrics, logger: p.mem.logger });
    const stop = new AbortController();
    await drift.start(stop.signal);
    try {
      await Promise.all(drift.informers.map((i) => i.whenSynced()));
      return await body(drift);
    } finally {
      stop.abort();
      await drift.stop();
    }
  }

  it("repairs a route edited inside the http list (kubectl edit: an Update), a subset changed by another manager's forced apply, and a deletion; names the other managers", async () => {
    const p = agentParts();
    const applier = newApplier(p);
    const rule = dr("reviews", ns, "reviews");
    rule.spec = { host: "reviews", subsets: [{ name: "v1", labels: { version: "v1" } }, { name: "v2", labels: { version: "v2" } }] };
    const route = vs("reviews", ns, "reviews");
    route.spec = { hosts: ["reviews"], http: [{ name: "default", route: [{ destination: { host: "reviews", subset: "v1" }, weight: 90 }, { destination: { host: "reviews", subset: "v2" }, weight: 10 }] }] };
    expect(await applier.applyOutput(output(1, [route, rule, vs("ratings", ns, "ratings")]))).toMatchObject({ ack: true, applied: 3 });
    await withDrift(p, applier, async (drift) => {
      // 1. Someone edits a weight inside the first route (a key inside a list element) with kubectl edit.
      const edited = await editAs("kubectl-edit", "virtualservices", "reviews", (o) => {
        o.spec.http[0].route[0].weight = 50;
        o.spec.http[0].route[1].weight = 50;
        o.spec.http[0].fault = { abort: { httpStatus: 503, percentage: { value: 100 } } };
      });
      expect(managers(edited)).toContain("kubectl-edit/Update");
      const repaired = await until("route repaired", async () => {
        const o = (await live("virtualservices", "reviews"))!;
        return isDeepStrictEqual(o.spec, route.spec) ? o : undefined;
      });
      expect(repaired.spec).toEqual(route.spec);
      // 2. Another controller takes over a subset with a forced apply of its own.
      await applyAs("rollout-controller", { apiVersion: "networking.istio.io/v1", kind: "DestinationRule", metadata: { name: "reviews", namespace: ns }, spec: { host: "reviews", subsets: [{ name: "v1", labels: { version: "canary" } }] } });
      await until("subset repaired", async () => isDeepStrictEqual((await live("destinationrules", "reviews"))!.spec, rule.spec));
      // 3. Someone deletes an owned object: created again, and the inventory follows the new uid.
      const gone = (await live("virtualservices", "ratings"))!;
      expect((await kube.request("DELETE", path("virtualservices", "ratings"))).status).toBe(200);
      const back = await until("deleted object recreated", async () => {
        const o = await live("virtualservices", "ratings");
        return o !== undefined && o.metadata.uid !== gone.metadata.uid ? o : undefined;
      });
      expect(back.spec).toEqual(vs("ratings", ns, "ratings").spec);
      await until("inventory has the new uid", async () => (await inventoryEntries()).get(`networking.istio.io/v1/VirtualService/${ns}/ratings`) === back.metadata.uid);
      await until("three repairs counted", () => drift.repairs >= 3);
      const warned = p.mem.records.filter((x) => x.msg === "drift repaired: an owned object was changed by someone else");
      const who = warned.map((x) => JSON.stringify(x)).join("\n");
      expect(who).toContain("kubectl-edit");
      expect(who).toContain("rollout-controller");
    });
  }, 60_000);

  it("repairs a list Istio's CRD merges by key (ServiceEntry ports, x-kubernetes-list-type: map): a port another manager added is removed", async () => {
    const p = agentParts();
    const applier = newApplier(p);
    const se = {
      apiVersion: "networking.istio.io/v1",
      kind: "ServiceEntry",
      metadata: { name: "httpbin", namespace: ns, labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": "cluster1" } },
      spec: { hosts: ["httpbin.org"], location: "MESH_EXTERNAL", resolution: "DNS", ports: [{ name: "https", number: 443, protocol: "TLS" }] },
    };
    expect(await applier.applyOutput(output(1, [se]))).toMatchObject({ ack: true, applied: 1 });
    await withDrift(p, applier, async (drift) => {
      const edited = await editAs("kubectl-edit", "serviceentries", "httpbin", (o) => {
        o.spec.ports.push({ name: "http", number: 80, protocol: "HTTP" });
      });
      expect((edited.spec.ports as Obj[]).map((x) => x.name)).toEqual(["https", "http"]);
      await until("port removed", async () => isDeepStrictEqual((await live("serviceentries", "httpbin"))!.spec, se.spec), 10_000);
      await until("repair counted", () => drift.repairs >= 1);
      // Removed with a merge patch by gitmesh-agent (an Update): kubectl-edit owns nothing any more.
      const after = (await live("serviceentries", "httpbin"))!;
      expect(managers(after)).not.toContain("kubectl-edit/Update");
      expect(p.mem.records.some((x) => x.msg.startsWith("removed fields other managers added") && JSON.stringify(x).includes("kubectl-edit"))).toBe(true);
    });
    // And the next output finds it unchanged (nothing left to re-apply).
    expect(await applier.applyOutput(output(2, [se]))).toMatchObject({ ack: true, unchanged: 1 });
  }, 30_000);

  it("a user's object of the same kind is never repaired, nor is an object that left the inventory", async () => {
    const p = agentParts();
    const applier = newApplier(p);
    await applier.applyOutput(output(1, [vs("mine", ns, "mine")]));
    await applyAs("kubectl", { apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: "theirs", namespace: ns, labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": "cluster1" } }, spec: { hosts: ["x"] } });
    await withDrift(p, applier, async (drift) => {
      await editAs("kubectl-edit", "virtualservices", "theirs", (o) => {
        o.spec.hosts = ["y"];
      });
      await new Promise((r) => setTimeout(r, 1500));
      expect((await live("virtualservices", "theirs"))!.spec).toEqual({ hosts: ["y"] });
      expect(drift.repairs).toBe(0);
    });
  }, 30_000);
});

describe("an inventory that proves itself, on a real API server (#40)", () => {
  /** What someone who can write ConfigMaps in the agent's namespace does: adds entries naming live objects and their uids. */
  async function forge(objects: readonly Obj[]): Promise<void> {
    const forger = createInventory({ reader: createKubeClient(kube.kc), writer: withFieldOwner(createKubeClient(kube.kc), "kubectl-edit"), namespace: AGENT_NAMESPACE, cluster: "cluster1" });
    await forger.load();
    for (const o of objects) forger.set({ apiVersion: String(o.apiVersion), kind: String(o.kind), namespace: String(o.metadata.namespace), name: String(o.metadata.name), uid: String(o.metadata.uid) });
    await forger.flush();
  }
  const theirs = (name: string, host = "theirs"): Obj => ({ apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name, namespace: ns }, spec: { hosts: [host] } });

  it("forged entries — an object created by kubectl, a recreated one, one applied by another field manager only — are dropped with a warning naming each, counted, and neither pruned nor changed", async () => {
    const p = agentParts();
    const applier = newApplier(p);
    await applier.applyOutput(output(1, [vs("mine", ns, "mine"), vs("recreated", ns, "recreated")]));
    // kubectl create: an Update by field manager kubectl-create
    const created = await kube.request("POST", `${NET}/namespaces/${ns}/virtualservices`, { body: theirs("foreign"), query: { fieldManager: "kubectl-create" } });
    expect(created.status).toBe(201);
    // deleted and recreated by someone else: same name, new uid
    expect((await kube.request("DELETE", path("virtualservices", "recreated"))).status).toBe(200);
    const recreated = await applyAs("kubectl", theirs("recreated"));
    // another controller's server-side apply: an Apply, but not gitmesh's
    const otherManager = await applyAs("rollout-controller", theirs("other-manager"));
    await forge([created.body as Obj, recreated, otherManager]);
    const before = new Map(await Promise.all(["foreign", "recreated", "other-manager"].map(async (n) => [n, (await live("virtualservices", n))!.metadata.resourceVersion] as const)));

    // The agent restarts (forged entries are read at the next start). The output keeps only "mine": forged entries would have these three pruned.
    const q = agentParts("restarted");
    const r = await newApplier(q).applyOutput(output(2, [vs("mine", ns, "mine")]));
    expect(r).toMatchObject({ ack: true, pruned: 0 });
    expect(await names("virtualservices")).toEqual(["foreign", "mine", "other-manager", "recreated"]);
    const warned = q.mem.records.filter((x) => x.level === "warn" && x.msg.startsWith("inventory entry dropped")).map((x) => x.msg);
    for (const n of ["foreign", "recreated", "other-manager"]) expect(warned.some((m) => m.includes(`VirtualService ${ns}/${n}:`))).toBe(true);
    expect(await metricValue(q.registry, "gitmesh_agent_inventory_entries_rejected_total", { reason: "not_applied_by_gitmesh" })).toBe(3);
    expect([...(await inventoryEntries()).keys()]).toEqual([`networking.istio.io/v1/VirtualService/${ns}/mine`]);

    // Forged again, and this time the output names them: refused (NACK), not changed.
    await forge([created.body as Obj, recreated, otherManager]);
    const r2 = await newApplier(agentParts("restarted-again")).applyOutput(output(3, ["mine", "foreign", "recreated", "other-manager"].map((n) => vs(n, ns, n))));
    expect(r2.errors.map((e) => e.key).sort()).toEqual(["foreign", "other-manager", "recreated"].map((n) => `VirtualService/${ns}/${n}`));
    expect(r2.errors.every((e) => /gitmesh's field manager never applied it/.test(e.message) && e.transient === undefined)).toBe(true);
    for (const [n, rv] of before) expect((await live("virtualservices", n))!.metadata.resourceVersion).toBe(rv);
  });

  it("a genuine entry whose object was recreated since (the recorded uid is not the live one) is dropped with a warning, counted, and the object left alone", async () => {
    const p = agentParts();
    const applier = newApplier(p);
    await applier.applyOutput(output(1, [vs("a", ns, "a"), vs("b", ns, "b")]));
    expect((await kube.request("DELETE", path("virtualservices", "a"))).status).toBe(200);
    await applyAs("kubectl", theirs("a"));
    const r = await applier.applyOutput(output(2, [vs("b", ns, "b")]));
    expect(r).toMatchObject({ ack: true, pruned: 0 });
    expect((await live("virtualservices", "a"))!.spec).toEqual({ hosts: ["theirs"] });
    expect(await metricValue(p.registry, "gitmesh_agent_inventory_entries_rejected_total", { reason: "recreated" })).toBe(1);
    expect(p.mem.records.some((x) => x.level === "warn" && x.msg.includes(`VirtualService ${ns}/a: the live object has uid`))).toBe(true);
  });
});

describe("one missing CRD affects one kind, on a real API server (#35)", () => {
  const VS_CRD = "virtualservices.networking.istio.io";
  const served = async () => (await kube.request("GET", `${NET}/namespaces/${ns}/virtualservices`)).status === 200;

  async function deleteVirtualServiceCrd(): Promise<void> {
    const r = await kube.request("DELETE", `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${VS_CRD}`);
    expect(r.status).toBe(200);
    await until("the VirtualService CRD gone", async () => (await getObject(kube, `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${VS_CRD}`)) === undefined && !(await served()), 60_000);
  }
  async function createVirtualServiceCrd(): Promise<void> {
    const crd = (istioCrdObjects() as Obj[]).find((o) => o.metadata?.name === VS_CRD);
    await kube.apply([crd!]);
    await until("the VirtualService CRD served", served, 60_000);
  }

  it("VirtualService CRD deleted: a DestinationRule is applied and another pruned, the VirtualService is reported naming its CRD and its prune held; re-created, the next delivery applies it", async () => {
    const p = agentParts();
    const applier = newApplier(p);
    expect(await applier.applyOutput(output(1, [dr("keep", ns, "keep"), dr("old", ns, "old"), vs("held", ns, "held")]))).toMatchObject({ ack: true, applied: 3 });
    await deleteVirtualServiceCrd();
    try {
      const wanted = [vs("route", ns, "route"), dr("keep", ns, "keep"), dr("new", ns, "new")];
      const r = await applier.applyOutput(output(2, wanted));
      expect(r.ack).toBe(false);
      expect(r.errors).toEqual([{ key: `VirtualService/${ns}/route`, message: expect.stringContaining(`${VS_CRD} is not installed`) }]);
      expect(r).toMatchObject({ pruned: 1 });
      expect(await names("destinationrules")).toEqual(["keep", "new"]);
      expect(p.mem.records.some((x) => x.msg === `pruned DestinationRule ${ns}/old: no longer in the output`)).toBe(true);
      // The VirtualService's entry is held, not dropped as "already gone".
      expect((await inventoryEntries()).has(`networking.istio.io/v1/VirtualService/${ns}/held`)).toBe(true);
      // An output without VirtualServices is ACKed.
      expect(await applier.applyOutput(output(3, [dr("keep", ns, "keep"), dr("new", ns, "new")]))).toMatchObject({ ack: true, errors: [] });

      await createVirtualServiceCrd();
      const again = await applier.applyOutput(output(4, wanted));
      expect(again).toMatchObject({ ack: true, errors: [] });
      expect(await names("virtualservices")).toEqual(["route"]);
      expect(managers((await live("virtualservices", "route"))!)).toEqual(["gitmesh-agent/Apply"]);
    } finally {
      if (!(await served())) await createVirtualServiceCrd();
    }
  }, 150_000);
});
