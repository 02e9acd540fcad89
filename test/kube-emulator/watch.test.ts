/* eslint-disable @typescript-eslint/no-unsafe-class-instance-assignment --
   client-node's model "classes" are plain data shapes that its own docs fill with object literals. */
/**
 * Watches through @kubernetes/client-node: informer list+watch, relist after 410 Gone when the
 * history has moved past the informer's resourceVersion, resume after a server-side close,
 * bookmarks, timeoutSeconds, and selector enter/leave events.
 */
import { afterEach, describe, expect, it } from "vitest";
import { CoreV1Api, KubeConfig, Watch, makeInformer, type V1ConfigMap } from "@kubernetes/client-node";
import { eventually, startKube, type StartedKube } from "../helpers/kube.js";

let kube: StartedKube | undefined;
const stops: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
  await kube?.stop();
  kube = undefined;
});

const cm = (name: string, data: Record<string, string> = {}, labels: Record<string, string> = {}): Record<string, unknown> => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "default", labels },
  data,
});

function configMapInformer(kc: KubeConfig, labelSelector?: string) {
  const core = kc.makeApiClient(CoreV1Api);
  let lists = 0;
  const informer = makeInformer<V1ConfigMap>(
    kc,
    "/api/v1/namespaces/default/configmaps",
    () => {
      lists += 1;
      return core.listNamespacedConfigMap({ namespace: "default", ...(labelSelector === undefined ? {} : { labelSelector }) });
    },
    labelSelector,
  );
  const log: string[] = [];
  const errors: unknown[] = [];
  let connects = 0;
  informer.on("add", (o) => log.push(`add ${o.metadata!.name!}`));
  informer.on("update", (o) => log.push(`update ${o.metadata!.name!} ${o.data?.v ?? ""}`));
  informer.on("delete", (o) => log.push(`delete ${o.metadata!.name!}`));
  informer.on("error", (e) => errors.push(e));
  informer.on("connect", () => (connects += 1));
  stops.push(() => informer.stop());
  return { informer, log, errors, connects: () => connects, lists: () => lists };
}

describe("informer", () => {
  it("lists, then follows adds, updates and deletes over the watch", async () => {
    kube = await startKube({ seed: [cm("one", { v: "1" }), cm("two", { v: "1" })] });
    const { informer, log } = configMapInformer(kube.kc);
    await informer.start();
    await eventually("initial list", () => log.length === 2);
    expect(log.sort()).toEqual(["add one", "add two"]);
    await eventually("watch open", () => kube!.emulator.openWatches() === 1);

    const core = kube.kc.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({ namespace: "default", body: { metadata: { name: "three" }, data: { v: "1" } } });
    kube.emulator.seed([cm("one", { v: "2" })]);
    await core.deleteNamespacedConfigMap({ namespace: "default", name: "two" });
    await eventually("three watch events", () => log.length === 5);
    expect(log.slice(2)).toEqual(["add three", "update one 2", "delete two"]);
    expect(informer.list().map((o) => o.metadata!.name).sort()).toEqual(["one", "three"]);
  });

  it("resumes from its resourceVersion after a server-side close, without a relist and without missing events", async () => {
    kube = await startKube();
    const { informer, log, errors, connects, lists } = configMapInformer(kube.kc);
    await informer.start();
    await eventually("watch open", () => kube!.emulator.openWatches() === 1);
    expect(lists()).toBe(1);
    kube.emulator.seed([cm("a")]);
    await eventually("add a", () => log.includes("add a"));
    const connectsBefore = connects();

    expect(kube.emulator.faults.closeWatches()).toBe(1);
    // Written in the same tick as the close, before the informer can reconnect: only a resume from
    // the right resourceVersion delivers it.
    kube.emulator.seed([cm("b")]);
    await eventually("add b after resume", () => log.includes("add b"));
    await eventually("watch reopened", () => kube!.emulator.openWatches() === 1);
    expect(connects()).toBe(connectsBefore + 1);
    expect(lists()).toBe(1); // resumed, not relisted
    expect(log).toEqual(["add a", "add b"]);
    expect(errors).toEqual([]);
  });

  it("relists after 410 Gone when the event history no longer reaches its resourceVersion", async () => {
    kube = await startKube({ historySize: 5, seed: [cm("keep"), cm("doomed")] });
    const { informer, log, errors, lists } = configMapInformer(kube.kc);
    await informer.start();
    await eventually("initial list", () => log.length === 2);
    await eventually("watch open", () => kube!.emulator.openWatches() === 1);
    expect(lists()).toBe(1);

    const history: string[] = [];
    const raw = new Watch(kube.kc);
    kube.emulator.faults.closeWatches();
    // While the informer is away: delete one object and churn more than the history holds.
    kube.emulator.remove("v1", "ConfigMap", "default", "doomed");
    for (let i = 0; i < 10; i++) kube.emulator.seed([{ apiVersion: "v1", kind: "Secret", metadata: { name: `churn-${i}`, namespace: "default" } }]);
    kube.emulator.seed([cm("fresh")]);

    // The raw protocol: an expired resourceVersion gets an ERROR event carrying a 410 Status, then the stream ends.
    await new Promise<void>((resolve, reject) => {
      raw
        .watch("/api/v1/namespaces/default/configmaps", { resourceVersion: "1" }, (type, obj) => history.push(`${type} ${obj.code} ${obj.reason}`), () => resolve())
        .catch(reject);
    });
    expect(history).toEqual(["ERROR 410 Expired"]);

    await eventually("relisted", () => log.includes("delete doomed") && log.includes("add fresh"));
    expect(informer.list().map((o) => o.metadata!.name).sort()).toEqual(["fresh", "keep"]);
    expect(lists()).toBe(2); // the 410 made it list again
    expect(errors).toEqual([]);
    await eventually("watch reopened", () => kube!.emulator.openWatches() === 1);
  });

  it("sees objects leave and enter its label selector as DELETED and ADDED", async () => {
    kube = await startKube({ seed: [cm("x", {}, { pick: "yes" })] });
    const { informer, log } = configMapInformer(kube.kc, "pick=yes");
    await informer.start();
    await eventually("initial", () => log.length === 1);
    await eventually("watch open", () => kube!.emulator.openWatches() === 1);
    kube.emulator.seed([cm("x", {}, { pick: "no" })]);
    await eventually("left", () => log.length === 2);
    kube.emulator.seed([cm("x", {}, { pick: "yes" })]);
    await eventually("entered", () => log.length === 3);
    expect(log).toEqual(["add x", "delete x", "add x"]);
  });
});

describe("raw watch protocol", () => {
  it("flushes headers at once, sends BOOKMARKs when asked, and closes at timeoutSeconds", async () => {
    kube = await startKube({ bookmarkIntervalMs: 50 });
    const started = Date.now();
    const res = await fetch(`${kube.url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${kube.emulator.resourceVersion()}&allowWatchBookmarks=true&timeoutSeconds=1`);
    // fetch resolves on headers: nothing has been written yet, so they were flushed on their own.
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    kube.emulator.seed([cm("w")]);
    const text = await res.text(); // ends when the server closes the stream at timeoutSeconds
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    const events = text.trim().split("\n").map((l) => JSON.parse(l));
    expect(events[0]).toMatchObject({ type: "ADDED", object: { kind: "ConfigMap", metadata: { name: "w" } } });
    const bookmarks = events.filter((e) => e.type === "BOOKMARK");
    expect(bookmarks.length).toBeGreaterThan(1);
    expect(bookmarks.at(-1).object).toEqual({ kind: "ConfigMap", apiVersion: "v1", metadata: { resourceVersion: kube.emulator.resourceVersion() } });
  });

  it("without a resourceVersion starts with the current objects as ADDED events", async () => {
    kube = await startKube({ seed: [cm("pre")] });
    const res = await fetch(`${kube.url}/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1`);
    const events = (await res.text()).trim().split("\n").map((l) => JSON.parse(l));
    expect(events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(["ADDED pre"]);
  });

  it("keeps exactly historySize events: resuming at the edge works, one before it is 410", async () => {
    kube = await startKube({ historySize: 3 });
    for (let i = 0; i < 10; i++) kube.emulator.seed([cm(`h${i}`)]);
    const now = Number(kube.emulator.resourceVersion());
    const watchFrom = async (rv: number): Promise<string[]> => {
      const res = await fetch(`${kube!.url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${rv}&timeoutSeconds=1`);
      return (await res.text()).trim().split("\n").map((l) => {
        const e = JSON.parse(l);
        return e.type === "ERROR" ? `ERROR ${e.object.code}` : `${e.type} ${e.object.metadata.name}`;
      });
    };
    expect(await watchFrom(now - 3)).toEqual(["ADDED h7", "ADDED h8", "ADDED h9"]);
    expect(await watchFrom(now - 1)).toEqual(["ADDED h9"]);
    expect(await watchFrom(now - 4)).toEqual(["ERROR 410"]);
  });

  it("a watch from a future resourceVersion sends nothing at or before it", async () => {
    kube = await startKube();
    const future = Number(kube.emulator.resourceVersion()) + 2;
    const pending = fetch(`${kube.url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${future}&timeoutSeconds=1`).then((r) => r.text());
    await eventually("watch open", () => kube!.emulator.openWatches() === 1);
    kube.emulator.seed([cm("f1"), cm("f2"), cm("f3")]);
    const events = (await pending).trim().split("\n").map((l) => JSON.parse(l).object.metadata.name);
    expect(events).toEqual(["f3"]);
  });

  it("one global resourceVersion counter orders events across kinds", async () => {
    kube = await startKube();
    const from = kube.emulator.resourceVersion();
    const pending = fetch(`${kube.url}/api/v1/secrets?watch=true&resourceVersion=${from}&timeoutSeconds=1`).then((r) => r.text());
    kube.emulator.seed([cm("c1"), { apiVersion: "v1", kind: "Secret", metadata: { name: "s1", namespace: "default" } }]);
    const events = (await pending).trim().split("\n").map((l) => JSON.parse(l));
    expect(events).toHaveLength(1);
    expect(Number(events[0].object.metadata.resourceVersion)).toBe(Number(from) + 2);
  });
});
