/* eslint-disable @typescript-eslint/no-unsafe-class-instance-assignment --
   client-node's model "classes" are plain data shapes that its own docs fill with object literals. */
/**
 * The fault switch, seen from @kubernetes/client-node: 500s for N requests or until cleared, all
 * watches closed, and the server going away and coming back on the same port with its state.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ApiException, CoreV1Api, makeInformer, type V1ConfigMap } from "@kubernetes/client-node";
import { eventually, startKube, type StartedKube } from "../helpers/kube.js";

let kube: StartedKube | undefined;
afterEach(async () => {
  await kube?.stop();
  kube = undefined;
});

async function code(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    return -1; // connection-level failure
  }
}

describe("fault switch", () => {
  it("answers 500 InternalError for the next N requests, then recovers", async () => {
    kube = await startKube();
    const core = kube.kc.makeApiClient(CoreV1Api);
    kube.emulator.faults.failRequests(2);
    const res = await fetch(`${kube.url}/api/v1/namespaces`);
    expect(res.status).toBe(500);
    expect(await res.json()).toMatchObject({ kind: "Status", status: "Failure", reason: "InternalError", code: 500 });
    expect(await code(core.listNamespace())).toBe(500);
    expect(await code(core.listNamespace())).toBe(200);
  });

  it("fails every request until cleared", async () => {
    kube = await startKube();
    const core = kube.kc.makeApiClient(CoreV1Api);
    kube.emulator.faults.failRequests();
    for (let i = 0; i < 5; i++) expect(await code(core.readNamespace({ name: "default" }))).toBe(500);
    kube.emulator.faults.clear();
    expect(await code(core.readNamespace({ name: "default" }))).toBe(200);
  });

  it("can fail only matching requests (writes to one kind) while reads keep working", async () => {
    kube = await startKube();
    const core = kube.kc.makeApiClient(CoreV1Api);
    kube.emulator.faults.failRequests(undefined, { methods: ["POST", "PATCH"], path: "/configmaps" });
    expect(await code(core.createNamespacedConfigMap({ namespace: "default", body: { metadata: { name: "x" } } }))).toBe(500);
    expect(await code(core.listNamespacedConfigMap({ namespace: "default" }))).toBe(200);
    expect(await code(core.createNamespacedSecret({ namespace: "default", body: { metadata: { name: "s" } } }))).toBe(200);
    kube.emulator.faults.clear();
    expect(await code(core.createNamespacedConfigMap({ namespace: "default", body: { metadata: { name: "x" } } }))).toBe(200);
  });

  it("goes away (connections refused, watches dropped) and comes back on the same port with its state", async () => {
    kube = await startKube({ seed: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "kept", namespace: "default" } }] });
    const core = kube.kc.makeApiClient(CoreV1Api);
    const informer = makeInformer<V1ConfigMap>(kube.kc, "/api/v1/namespaces/default/configmaps", () => core.listNamespacedConfigMap({ namespace: "default" }));
    const errors: unknown[] = [];
    informer.on("error", (e) => errors.push(e));
    await informer.start();
    await eventually("watch open", () => kube!.emulator.openWatches() === 1);
    const port = kube.emulator.port;

    await kube.emulator.faults.goAway();
    expect(kube.emulator.faults.listening).toBe(false);
    expect(kube.emulator.openWatches()).toBe(0);
    expect(await code(core.listNamespacedConfigMap({ namespace: "default" }))).toBe(-1);
    // client-node's informer reports the failed reconnect and stops: supervising it is the caller's job.
    await eventually("informer saw the outage", () => errors.length > 0);

    kube.emulator.seed([{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "while-away", namespace: "default" } }]);
    await kube.emulator.faults.comeBack();
    expect(kube.emulator.port).toBe(port);
    const names = (await core.listNamespacedConfigMap({ namespace: "default" })).items.map((c) => c.metadata!.name);
    expect(names).toEqual(["kept", "while-away"]);

    await informer.start(); // what a supervisor does after an error
    await eventually("informer caught up", () => informer.list().length === 2);
    await informer.stop();
  });

  it("closeWatches ends every open watch and reports how many", async () => {
    kube = await startKube();
    const a = fetch(`${kube.url}/api/v1/pods?watch=true&resourceVersion=${kube.emulator.resourceVersion()}`).then((r) => r.text());
    const b = fetch(`${kube.url}/apis/networking.istio.io/v1/virtualservices?watch=true`).then((r) => r.text());
    await eventually("two watches", () => kube!.emulator.openWatches() === 2);
    expect(kube.emulator.faults.closeWatches()).toBe(2);
    expect(await a).toBe("");
    expect(await b).toBe("");
    expect(kube.emulator.openWatches()).toBe(0);
  });
});
