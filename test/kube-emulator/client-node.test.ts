/* eslint-disable @typescript-eslint/no-unsafe-class-instance-assignment, @typescript-eslint/no-explicit-any --
   client-node's model "classes" are plain data shapes that its own docs fill with object literals, and
   the Status bodies and unstructured objects read here are untyped JSON. */
/**
 * The emulator through the real @kubernetes/client-node over real HTTP: CRUD, conflicts, patches,
 * server-side apply and managedFields, selectors, namespaces, discovery.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ApiException,
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  V1MicroTime,
  type KubernetesObject,
  type V1ConfigMap,
} from "@kubernetes/client-node";
import { startKube, type StartedKube } from "../helpers/kube.js";

let kube: StartedKube;
let core: CoreV1Api;
let apps: AppsV1Api;
let objects: KubernetesObjectApi;
let custom: CustomObjectsApi;

beforeAll(async () => {
  kube = await startKube({
    seed: [
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "shop", labels: { team: "a" } } },
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "bank", labels: { team: "b" } } },
    ],
  });
  core = kube.kc.makeApiClient(CoreV1Api);
  apps = kube.kc.makeApiClient(AppsV1Api);
  custom = kube.kc.makeApiClient(CustomObjectsApi);
  objects = KubernetesObjectApi.makeApiClient(kube.kc);
});
afterAll(async () => {
  await kube.stop();
});

/** Runs `fn`, expecting an ApiException; returns its code and parsed Status body. */
async function failure(fn: () => Promise<unknown>): Promise<{ code: number; status: Record<string, any> }> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof ApiException) {
      const body = err.body as unknown;
      return { code: err.code, status: (typeof body === "string" ? JSON.parse(body) : body) as Record<string, any> };
    }
    throw err;
  }
  throw new Error("expected the call to fail");
}

const cm = (name: string, data: Record<string, string>, labels?: Record<string, string>): V1ConfigMap => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "shop", ...(labels ? { labels } : {}) },
  data,
});

describe("create, get, update, delete", () => {
  it("creates with uid, generation, creationTimestamp and a resourceVersion from one global counter", async () => {
    const before = Number(kube.emulator.resourceVersion());
    const a = await core.createNamespacedConfigMap({ namespace: "shop", body: cm("crud-a", { k: "1" }) });
    const b = await core.createNamespacedConfigMap({ namespace: "bank", body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "crud-b" }, data: { k: "1" } } });
    expect(a.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.metadata?.generation).toBe(1);
    expect(a.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(Number(a.metadata?.resourceVersion)).toBe(before + 1);
    expect(Number(b.metadata?.resourceVersion)).toBe(before + 2);
    expect(b.metadata?.namespace).toBe("bank");
    const got = await core.readNamespacedConfigMap({ name: "crud-a", namespace: "shop" });
    expect(got.data).toEqual({ k: "1" });
    expect(got.metadata?.uid).toBe(a.metadata?.uid);
  });

  it("answers 409 AlreadyExists on a second create, with a real Status object", async () => {
    const { code, status } = await failure(() => core.createNamespacedConfigMap({ namespace: "shop", body: cm("crud-a", {}) }));
    expect(code).toBe(409);
    expect(status).toMatchObject({
      kind: "Status",
      apiVersion: "v1",
      status: "Failure",
      reason: "AlreadyExists",
      code: 409,
      message: 'configmaps "crud-a" already exists',
      details: { name: "crud-a", kind: "configmaps" },
    });
  });

  it("answers 404 NotFound for a missing object, and for a create in a missing namespace", async () => {
    const missing = await failure(() => core.readNamespacedConfigMap({ name: "nope", namespace: "shop" }));
    expect(missing.code).toBe(404);
    expect(missing.status).toMatchObject({ reason: "NotFound", message: 'configmaps "nope" not found', code: 404 });
    const noNs = await failure(() => core.createNamespacedConfigMap({ namespace: "ghost", body: { metadata: { name: "x" } } }));
    expect(noNs.code).toBe(404);
    expect(noNs.status.message).toBe('namespaces "ghost" not found');
    const dep = await failure(() => apps.readNamespacedDeployment({ name: "nope", namespace: "shop" }));
    expect(dep.status.message).toBe('deployments.apps "nope" not found');
  });

  it("rejects a create that carries a resourceVersion (400), but seeds accept `kubectl get -o yaml` dumps", async () => {
    const { code, status } = await failure(() =>
      core.createNamespacedConfigMap({ namespace: "shop", body: { metadata: { name: "with-rv", resourceVersion: "5" } } }),
    );
    expect(code).toBe(400);
    expect(status.message).toBe("resourceVersion should not be set on objects to be created");
    const seeded = kube.emulator.seed([{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "dumped", namespace: "shop", resourceVersion: "5", uid: "old" } }]);
    expect(seeded.diagnostics).toEqual([]);
    expect((kube.emulator.get("v1", "ConfigMap", "shop", "dumped")!.metadata as { uid: string }).uid).not.toBe("old");
  });

  it("rejects an invalid name with 422 Invalid and a cause naming the field", async () => {
    const { code, status } = await failure(() => core.createNamespacedConfigMap({ namespace: "shop", body: cm("Bad_Name", {}) }));
    expect(code).toBe(422);
    expect(status.reason).toBe("Invalid");
    expect(status.details.causes[0].field).toBe("metadata.name");
  });

  it("updates with optimistic concurrency: 409 Conflict on a stale resourceVersion", async () => {
    const live = await core.readNamespacedConfigMap({ name: "crud-a", namespace: "shop" });
    const updated = await core.replaceNamespacedConfigMap({ name: "crud-a", namespace: "shop", body: { metadata: live.metadata!, data: { k: "2" } } });
    expect(updated.data).toEqual({ k: "2" });
    expect(Number(updated.metadata?.resourceVersion)).toBeGreaterThan(Number(live.metadata?.resourceVersion));
    const { code, status } = await failure(() =>
      core.replaceNamespacedConfigMap({ name: "crud-a", namespace: "shop", body: { metadata: live.metadata!, data: { k: "3" } } }),
    );
    expect(code).toBe(409);
    expect(status.reason).toBe("Conflict");
    expect(status.message).toContain("the object has been modified");
  });

  it("bumps generation on a spec change only, not on a label change", async () => {
    const d = await apps.createNamespacedDeployment({
      namespace: "shop",
      body: {
        metadata: { name: "web" },
        spec: { replicas: 1, selector: { matchLabels: { app: "web" } }, template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "c", image: "nginx" }] } } },
      },
    });
    expect(d.metadata?.generation).toBe(1);
    const relabelled = await apps.patchNamespacedDeployment(
      { name: "web", namespace: "shop", body: { metadata: { labels: { tier: "front" } } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    expect(relabelled.metadata?.generation).toBe(1);
    const scaled = await apps.patchNamespacedDeployment(
      { name: "web", namespace: "shop", body: { spec: { replicas: 3 } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    expect(scaled.metadata?.generation).toBe(2);
    expect(scaled.spec?.replicas).toBe(3);
  });

  it("does not write (no new resourceVersion) when an update changes nothing", async () => {
    const live = await core.readNamespacedConfigMap({ name: "crud-a", namespace: "shop" });
    const same = await core.replaceNamespacedConfigMap({ name: "crud-a", namespace: "shop", body: live });
    expect(same.metadata?.resourceVersion).toBe(live.metadata?.resourceVersion);
  });

  it("deletes, then 404s; deleting a namespace deletes its objects", async () => {
    await core.deleteNamespacedConfigMap({ name: "crud-a", namespace: "shop" });
    expect((await failure(() => core.readNamespacedConfigMap({ name: "crud-a", namespace: "shop" }))).code).toBe(404);
    expect((await failure(() => core.deleteNamespacedConfigMap({ name: "crud-a", namespace: "shop" }))).code).toBe(404);
    await core.createNamespace({ body: { metadata: { name: "doomed" } } });
    await core.createNamespacedSecret({ namespace: "doomed", body: { metadata: { name: "s" }, stringData: { a: "b" } } });
    await core.createNamespacedService({ namespace: "doomed", body: { metadata: { name: "svc" }, spec: { ports: [{ port: 80 }] } } });
    await core.deleteNamespace({ name: "doomed" });
    expect((await core.listNamespacedSecret({ namespace: "doomed" })).items).toEqual([]);
    expect(kube.emulator.list("v1", "Service", "doomed")).toEqual([]);
    expect((await failure(() => core.readNamespace({ name: "doomed" }))).code).toBe(404);
  });

  it("serves cluster-scoped kinds without a namespace", async () => {
    await core.createNode({ body: { metadata: { name: "node-1", labels: { "topology.kubernetes.io/zone": "z1" } } } });
    const nodes = await core.listNode();
    expect(nodes.items.map((n) => n.metadata?.name)).toEqual(["node-1"]);
    expect(nodes.items[0]!.metadata?.namespace).toBeUndefined();
  });
});

describe("server-side defaulting clients rely on", () => {
  it("folds Secret stringData into base64 data, defaults type Opaque, and never returns stringData", async () => {
    const s = await core.createNamespacedSecret({ namespace: "shop", body: { metadata: { name: "tok" }, stringData: { token: "s3cret" } } });
    expect(s.data).toEqual({ token: Buffer.from("s3cret").toString("base64") });
    expect(s.type).toBe("Opaque");
    expect(s.stringData).toBeUndefined();
    const applied = await objects.patch(
      { apiVersion: "v1", kind: "Secret", metadata: { name: "tok", namespace: "shop" }, stringData: { extra: "x" } } as KubernetesObject,
      undefined,
      undefined,
      "gitmesh-agent",
      true,
      PatchStrategy.ServerSideApply,
    );
    expect((applied as { data?: Record<string, string> }).data).toEqual({ token: Buffer.from("s3cret").toString("base64"), extra: Buffer.from("x").toString("base64") });
  });

  it("allocates a Service clusterIP once and keeps it across updates; ports default to TCP", async () => {
    const svc = await core.createNamespacedService({ namespace: "shop", body: { metadata: { name: "api" }, spec: { ports: [{ port: 80 }] } } });
    expect(svc.spec?.type).toBe("ClusterIP");
    expect(svc.spec?.clusterIP).toMatch(/^10\.96\.\d+\.\d+$/);
    expect(svc.spec?.clusterIPs).toEqual([svc.spec?.clusterIP]);
    expect(svc.spec?.ports?.[0]?.protocol).toBe("TCP");
    const other = await core.createNamespacedService({ namespace: "shop", body: { metadata: { name: "api2" }, spec: { ports: [{ port: 80 }] } } });
    expect(other.spec?.clusterIP).not.toBe(svc.spec?.clusterIP);
    const replaced = await core.replaceNamespacedService({ name: "api", namespace: "shop", body: { metadata: { name: "api" }, spec: { ports: [{ port: 81 }] } } });
    expect(replaced.spec?.clusterIP).toBe(svc.spec?.clusterIP);
    const deleted = await core.deleteNamespacedService({ name: "api2", namespace: "shop" });
    expect(deleted.metadata?.name).toBe("api2");
  });
});

describe("leases (leader election)", () => {
  it("two candidates replacing the same lease version: exactly one wins, the other gets 409", async () => {
    const leases = kube.kc.makeApiClient(CoordinationV1Api);
    // A plain Date serialises with milliseconds; Lease times are MicroTime, which the real server parses
    // only as 2006-01-02T15:04:05.000000Z07:00 (400 otherwise). client-node's V1MicroTime writes microseconds.
    const wrong = await failure(() =>
      leases.createNamespacedLease({ namespace: "shop", body: { metadata: { name: "gitmesh-agent" }, spec: { holderIdentity: "a", renewTime: new Date("2026-01-01T00:00:00.123Z") } } }),
    );
    expect(wrong.code).toBe(400);
    expect(wrong.status.message).toContain('parsing time "2026-01-01T00:00:00.123Z" as "2006-01-02T15:04:05.000000Z07:00"');
    const created = await leases.createNamespacedLease({
      namespace: "shop",
      body: { metadata: { name: "gitmesh-agent" }, spec: { holderIdentity: "a", leaseDurationSeconds: 15, renewTime: new V1MicroTime("2026-01-01T00:00:00.123Z") } },
    });
    expect((kube.emulator.get("coordination.k8s.io/v1", "Lease", "shop", "gitmesh-agent")!.spec as { renewTime: string }).renewTime).toBe("2026-01-01T00:00:00.123000Z");
    expect(new Date(String(created.spec?.renewTime)).toISOString()).toBe("2026-01-01T00:00:00.123Z");
    const take = (holder: string) =>
      leases.replaceNamespacedLease({
        name: "gitmesh-agent",
        namespace: "shop",
        body: { metadata: created.metadata!, spec: { holderIdentity: holder, leaseDurationSeconds: 15, renewTime: new V1MicroTime() } },
      });
    const results = await Promise.allSettled([take("b"), take("c")]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const lost = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect((lost.reason as ApiException<unknown>).code).toBe(409);
    const winner = (results.find((r) => r.status === "fulfilled") as PromiseFulfilledResult<{ spec?: { holderIdentity?: string } }>).value.spec?.holderIdentity;
    expect((await leases.readNamespacedLease({ name: "gitmesh-agent", namespace: "shop" })).spec?.holderIdentity).toBe(winner);
  });
});

describe("patches", () => {
  it("merge patch deletes keys with null; JSON patch applies RFC 6902 operations", async () => {
    await core.createNamespacedConfigMap({ namespace: "shop", body: cm("patchy", { a: "1", b: "2" }) });
    const merged = await core.patchNamespacedConfigMap(
      { name: "patchy", namespace: "shop", body: { data: { a: null, c: "3" } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    expect(merged.data).toEqual({ b: "2", c: "3" });
    const patched = await core.patchNamespacedConfigMap(
      {
        name: "patchy",
        namespace: "shop",
        body: [
          { op: "test", path: "/data/b", value: "2" },
          { op: "replace", path: "/data/b", value: "20" },
          { op: "add", path: "/metadata/labels", value: { x: "y" } },
          { op: "remove", path: "/data/c" },
        ],
      },
      setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
    );
    expect(patched.data).toEqual({ b: "20" });
    expect(patched.metadata?.labels).toEqual({ x: "y" });
    const failed = await failure(() =>
      core.patchNamespacedConfigMap(
        { name: "patchy", namespace: "shop", body: [{ op: "test", path: "/data/b", value: "nope" }] },
        setHeaderOptions("Content-Type", PatchStrategy.JsonPatch),
      ),
    );
    expect(failed.code).toBe(422);
  });

  it("strategic merge patch is served as a merge patch (lists replaced)", async () => {
    const p = await core.patchNamespacedConfigMap(
      { name: "patchy", namespace: "shop", body: { data: { s: "1" } } },
      setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
    );
    expect(p.data).toEqual({ b: "20", s: "1" });
  });

  it("merge patch carrying a stale resourceVersion gets 409 Conflict", async () => {
    const { code } = await failure(() =>
      core.patchNamespacedConfigMap(
        { name: "patchy", namespace: "shop", body: { metadata: { resourceVersion: "1" }, data: { z: "1" } } },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      ),
    );
    expect(code).toBe(409);
  });
});

describe("server-side apply", () => {
  const vs = (hosts: string[], extra: Record<string, unknown> = {}): KubernetesObject & Record<string, unknown> => ({
    apiVersion: "networking.istio.io/v1",
    kind: "VirtualService",
    metadata: { name: "reviews", namespace: "shop", labels: { "gitmesh.io/managed": "true" } },
    spec: { hosts, http: [{ route: [{ destination: { host: "reviews" } }] }], ...extra },
  });
  const apply = (obj: KubernetesObject, manager: string, force = false): Promise<KubernetesObject & Record<string, any>> =>
    objects.patch(obj, undefined, undefined, manager, force, PatchStrategy.ServerSideApply);

  it("creates the object and records the manager in managedFields (operation Apply, fieldsV1)", async () => {
    const created = await apply(vs(["reviews"]), "gitmesh-agent");
    expect(created.metadata?.uid).toBeDefined();
    expect(created.spec.hosts).toEqual(["reviews"]);
    const mf = created.metadata?.managedFields ?? [];
    expect(mf).toHaveLength(1);
    expect(mf[0]).toMatchObject({ manager: "gitmesh-agent", operation: "Apply", apiVersion: "networking.istio.io/v1", fieldsType: "FieldsV1" });
    expect(mf[0]!.fieldsV1).toEqual({
      "f:metadata": { "f:labels": { "f:gitmesh.io/managed": {} } },
      "f:spec": { "f:hosts": {}, "f:http": {} },
    });
  });

  it("updates on re-apply, removes fields the manager stopped applying, and is a no-op when unchanged", async () => {
    const withGw = await apply(vs(["reviews"], { gateways: ["mesh"] }), "gitmesh-agent");
    expect(withGw.spec.gateways).toEqual(["mesh"]);
    expect(withGw.metadata?.generation).toBe(2);
    const without = await apply(vs(["reviews"]), "gitmesh-agent");
    expect(without.spec.gateways).toBeUndefined();
    const again = await apply(vs(["reviews"]), "gitmesh-agent");
    expect(again.metadata?.resourceVersion).toBe(without.metadata?.resourceVersion);
  });

  it("answers 409 Conflict listing the fields another manager owns with a different value", async () => {
    const { code, status } = await failure(() => apply(vs(["ratings"], { gateways: ["gw"] }), "someone-else"));
    expect(code).toBe(409);
    expect(status).toMatchObject({ kind: "Status", status: "Failure", reason: "Conflict", code: 409 });
    expect(status.message).toBe('Apply failed with 1 conflict: conflict with "gitmesh-agent": .spec.hosts');
    expect(status.details.causes).toEqual([
      { reason: "FieldManagerConflict", message: 'conflict with "gitmesh-agent"', field: ".spec.hosts" },
    ]);
    const live = kube.emulator.get("networking.istio.io/v1", "VirtualService", "shop", "reviews")!;
    expect((live.spec as any).hosts).toEqual(["reviews"]);
  });

  it("shares ownership without conflict when the value is the same", async () => {
    const shared = await apply(vs(["reviews"]), "co-owner");
    const managers = (shared.metadata?.managedFields ?? []).map((m: any) => m.manager).sort();
    expect(managers).toEqual(["co-owner", "gitmesh-agent"]);
  });

  it("with force, takes the fields over from the other managers", async () => {
    const forced = await apply(vs(["ratings"]), "someone-else", true);
    expect(forced.spec.hosts).toEqual(["ratings"]);
    const owners = (forced.metadata?.managedFields ?? []).filter((m: any) => m.fieldsV1?.["f:spec"]?.["f:hosts"] !== undefined).map((m: any) => m.manager);
    expect(owners).toEqual(["someone-else"]);
  });

  it("an Update by another writer takes ownership; the applier then conflicts on that field", async () => {
    await apply({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "ssa-cm", namespace: "shop" }, data: { a: "1", b: "1" } } as KubernetesObject, "gitmesh-agent");
    await core.patchNamespacedConfigMap(
      { name: "ssa-cm", namespace: "shop", body: { data: { a: "drifted" } }, fieldManager: "kubectl-edit" },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    const live = await core.readNamespacedConfigMap({ name: "ssa-cm", namespace: "shop" });
    const editor = live.metadata?.managedFields?.find((m) => m.manager === "kubectl-edit");
    expect(editor?.operation).toBe("Update");
    expect(editor?.fieldsV1).toEqual({ "f:data": { "f:a": {} } });
    const conflict = await failure(() =>
      apply({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "ssa-cm", namespace: "shop" }, data: { a: "1", b: "1" } } as KubernetesObject, "gitmesh-agent"),
    );
    expect(conflict.status.details.causes[0].field).toBe(".data.a");
    const repaired = await apply({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "ssa-cm", namespace: "shop" }, data: { a: "1", b: "1" } } as KubernetesObject, "gitmesh-agent", true);
    expect((repaired as any).data).toEqual({ a: "1", b: "1" });
  });

  it("requires fieldManager (400) and rejects force on a non-apply patch", async () => {
    const res = await fetch(`${kube.url}/api/v1/namespaces/shop/configmaps/x`, {
      method: "PATCH",
      headers: { "Content-Type": "application/apply-patch+yaml" },
      body: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).message).toContain("fieldManager");
  });

  it("works through the CustomObjectsApi too (Istio kinds are registered custom resources)", async () => {
    const list = await custom.listNamespacedCustomObject({ group: "networking.istio.io", version: "v1", namespace: "shop", plural: "virtualservices" });
    expect(list.kind).toBe("VirtualServiceList");
    expect(list.items.map((i: any) => [i.kind, i.metadata.name])).toEqual([["VirtualService", "reviews"]]);
  });
});

describe("list and selectors", () => {
  beforeAll(async () => {
    const pods: [string, string, Record<string, string>][] = [
      ["p1", "shop", { app: "web", tier: "front" }],
      ["p2", "shop", { app: "web", tier: "back" }],
      ["p3", "shop", { app: "db" }],
      ["p4", "bank", { app: "web", tier: "front" }],
    ];
    for (const [name, namespace, labels] of pods) {
      await core.createNamespacedPod({ namespace, body: { metadata: { name, labels }, spec: { containers: [{ name: "c", image: "i" }] } } });
    }
  });
  const names = async (labelSelector?: string, fieldSelector?: string, namespace?: string): Promise<string[]> => {
    const list = namespace
      ? await core.listNamespacedPod({ namespace, ...(labelSelector ? { labelSelector } : {}), ...(fieldSelector ? { fieldSelector } : {}) })
      : await core.listPodForAllNamespaces({ ...(labelSelector ? { labelSelector } : {}), ...(fieldSelector ? { fieldSelector } : {}) });
    return list.items.map((p) => p.metadata!.name!);
  };

  it("lists with the current resourceVersion", async () => {
    const list = await core.listPodForAllNamespaces();
    expect(list.metadata?.resourceVersion).toBe(kube.emulator.resourceVersion());
  });

  it.each([
    ["app=web", ["p4", "p1", "p2"]],
    ["app==web", ["p4", "p1", "p2"]],
    ["app!=web", ["p3"]],
    ["app=web,tier=front", ["p4", "p1"]],
    ["tier in (front,back)", ["p4", "p1", "p2"]],
    ["app notin (web)", ["p3"]],
    ["tier", ["p4", "p1", "p2"]],
    ["!tier", ["p3"]],
    ["app in (web, db),!tier", ["p3"]],
  ])("label selector %s", async (selector, expected) => {
    expect(await names(selector)).toEqual(expected);
  });

  it("field selectors metadata.name and metadata.namespace", async () => {
    expect(await names(undefined, "metadata.name=p2")).toEqual(["p2"]);
    expect(await names(undefined, "metadata.namespace=bank")).toEqual(["p4"]);
    expect(await names("app=web", "metadata.name!=p1", "shop")).toEqual(["p2"]);
  });

  it("rejects a bad selector or an unsupported field with 400", async () => {
    expect((await failure(() => core.listPodForAllNamespaces({ labelSelector: "a in (" }))).code).toBe(400);
    expect((await failure(() => core.listConfigMapForAllNamespaces({ fieldSelector: "spec.nodeName=x" }))).code).toBe(400);
  });

  it("pages with limit and continue", async () => {
    const first = await core.listPodForAllNamespaces({ limit: 3 });
    expect(first.items).toHaveLength(3);
    expect(first.metadata?._continue).toBeDefined();
    const rest = await core.listPodForAllNamespaces({ limit: 3, _continue: first.metadata!._continue! });
    expect(rest.items.length).toBeGreaterThan(0);
    expect(rest.metadata?._continue).toBeUndefined();
  });

  it("omits apiVersion/kind on list items of built-in kinds, like the real server", async () => {
    const res = (await (await fetch(`${kube.url}/api/v1/namespaces/shop/pods`)).json()) as any;
    expect(res.kind).toBe("PodList");
    expect(res.items[0].kind).toBeUndefined();
  });
});

describe("discovery", () => {
  it("serves /version, /api, /api/v1, /apis and group versions", async () => {
    const get = async (p: string): Promise<any> => (await fetch(kube.url + p)).json();
    expect((await get("/version")).gitVersion).toMatch(/^v1\./);
    expect((await get("/api")).versions).toEqual(["v1"]);
    const v1 = await get("/api/v1");
    expect(v1.kind).toBe("APIResourceList");
    expect(v1.resources.find((r: any) => r.name === "services")).toMatchObject({
      singularName: "service",
      kind: "Service",
      namespaced: true,
      shortNames: ["svc"],
    });
    expect(v1.resources.find((r: any) => r.name === "nodes").namespaced).toBe(false);
    const groups = (await get("/apis")).groups.map((g: any) => g.name);
    expect(groups).toEqual(expect.arrayContaining(["apps", "coordination.k8s.io", "networking.istio.io", "security.istio.io"]));
    const sec = await get("/apis/security.istio.io/v1");
    expect(sec.resources.filter((r: any) => !r.name.includes("/")).map((r: any) => r.kind).sort()).toEqual(["AuthorizationPolicy", "PeerAuthentication", "RequestAuthentication"]);
    expect(sec.resources[0].verbs).toEqual(expect.arrayContaining(["get", "list", "watch", "create", "update", "patch", "delete"]));
  });

  it("registers more kinds at run time and serves them at once", async () => {
    kube.emulator.registerKind({ group: "admin.gloo.solo.io", version: "v2", kind: "Workspace", plural: "workspaces", namespaced: true });
    const ws = await objects.create({ apiVersion: "admin.gloo.solo.io/v2", kind: "Workspace", metadata: { name: "w", namespace: "shop" } });
    expect((ws.metadata as { uid?: string }).uid).toBeDefined();
    const res = (await (await fetch(`${kube.url}/apis/admin.gloo.solo.io/v2`)).json()) as any;
    expect(res.resources[0].name).toBe("workspaces");
  });

  it("answers 404 with a Status for unknown paths and kinds", async () => {
    const res = await fetch(`${kube.url}/apis/example.com/v1/namespaces/shop/widgets`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).kind).toBe("Status");
  });
});
