// Ownership (gitmesh issue #12, points 1, 2, 5): the whole agent with a real relay, on the emulator
// over HTTP, with "kubectl" (another field manager through client-node) playing the other teams.
import { afterEach, describe, expect, it } from "vitest";
import { gunzipSync } from "node:zlib";
import { createKubeClient, OUTPUT_OPTIONS_KEY, type KubeObject } from "../../src/agent/index.js";
import { eventually } from "../helpers/kube.js";
import { metricValue, vs } from "./helpers.js";
import { startRelayEnv, type RelayEnv } from "./relay-env.js";

let env: RelayEnv | undefined;
afterEach(async () => {
  await env?.stop();
  env = undefined;
});

const NS = "bookinfo";
const VS = "networking.istio.io/v1";
const live = (e: RelayEnv, name: string, kind = "VirtualService") => e.kube.emulator.get(VS, kind, NS, name) as KubeObject | undefined;
const uid = (o: KubeObject | undefined) => o?.metadata.uid as string | undefined;

/** Another team's client: its own field manager, through the API like kubectl. */
function kubectl(e: RelayEnv) {
  const c = createKubeClient(e.kube.newKubeConfig());
  return {
    apply: (o: KubeObject) => c.apply(o, { fieldManager: "kubectl", force: true }),
    delete: (name: string, kind = "VirtualService") => c.delete({ apiVersion: VS, kind, plural: "", namespaced: true }, NS, name),
  };
}

function inventoryUids(e: RelayEnv): Map<string, string> {
  const cm = e.kube.emulator.get("v1", "ConfigMap", "gitmesh", "gitmesh-agent-inventory") as { binaryData?: Record<string, string> } | undefined;
  const rows = JSON.parse(gunzipSync(Buffer.from(cm?.binaryData?.["entries.json.gz"] ?? "", "base64")).toString("utf8")) as string[][];
  return new Map(rows.map((r) => [`${r[1]}/${r[2]}/${r[3]}`, r[4]!]));
}

const foreign = (name: string, extra: Partial<KubeObject["metadata"]> = {}): KubeObject => ({
  apiVersion: VS,
  kind: "VirtualService",
  metadata: { name, namespace: NS, ...extra },
  spec: { hosts: [name], http: [{ route: [{ destination: { host: "legacy" } }] }] },
});

describe("ownership: the agent changes and deletes only what it created", () => {
  it("never adopts or deletes objects it did not create (labels prove nothing); adopts on the owner's annotation; survives a restart", async () => {
    const labels = { "gitmesh.io/managed": "true", "gitmesh.io/cluster": "cluster1" };
    env = await startRelayEnv({}, [
      // carries gitmesh's labels but gitmesh never created it
      { ...foreign("impostor"), metadata: { name: "impostor", namespace: NS, labels } },
      { apiVersion: VS, kind: "DestinationRule", metadata: { name: "impostor", namespace: NS, labels }, spec: { host: "impostor" } },
    ]);
    const e = env;
    const k = kubectl(e);
    // existed before gitmesh, same name as a rendered object
    await k.apply(foreign("reviews", { labels: { team: "legacy" }, annotations: { owner: "team-a" } }));
    const before = live(e, "reviews")!;

    const a = e.agent("agent-a");
    await a.start();
    await eventually("leader", () => a.isLeader, 10_000);

    const r1 = await e.publish(1, [vs("reviews", NS, "reviews"), vs("ratings", NS, "ratings")]);
    expect(r1.ack).toBe(false);
    expect(r1.errors).toHaveLength(1);
    expect(r1.errors[0]!.key).toBe("VirtualService/bookinfo/reviews");
    expect(r1.errors[0]!.message).toContain("VirtualService bookinfo/reviews already exists and was not created by gitmesh");
    expect(r1.errors[0]!.message).toContain("kubectl annotate virtualservice -n bookinfo reviews gitmesh.io/adopt=true");
    expect(r1.errors[0]!.message).toContain("or deletes it");
    expect(live(e, "reviews")!.spec).toEqual(before.spec); // not overwritten
    expect(live(e, "reviews")!.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(live(e, "ratings")).toBeDefined();
    expect(await metricValue(e.registries.get(a)!, "gitmesh_agent_ownership_refused_total", { kind: "VirtualService" })).toBe(1);
    expect(await metricValue(e.registries.get(a)!, "gitmesh_agent_ownership_conflicts")).toBe(1);
    // first start without an inventory: the labelled objects are named, not adopted, and the log says what to do
    const warn = e.logs.get(a)!.records.find((r) => r.msg.startsWith("first start without an inventory"));
    expect(warn?.msg).toContain("2 objects carry gitmesh's labels");
    expect(warn?.msg).toContain("kubectl annotate destinationrule,virtualservice -A -l gitmesh.io/managed=true,gitmesh.io/cluster=cluster1 gitmesh.io/adopt=true");
    // the inventory records what the agent created, with its uid
    expect(inventoryUids(e)).toEqual(new Map([["VirtualService/bookinfo/ratings", uid(live(e, "ratings"))]]));

    // a complete output without them: the labelled impostors and the pre-existing object stay
    expect((await e.publish(2, [vs("ratings", NS, "ratings")])).ack).toBe(true);
    expect(live(e, "impostor")).toBeDefined();
    expect(live(e, "impostor", "DestinationRule")).toBeDefined();
    expect(live(e, "reviews")).toBeDefined();

    // the owner hands "reviews" over: adopted, applied, in the inventory
    await k.apply(foreign("reviews", { labels: { team: "legacy" }, annotations: { owner: "team-a", "gitmesh.io/adopt": "true" } }));
    expect((await e.publish(3, [vs("reviews", NS, "reviews"), vs("ratings", NS, "ratings")])).ack).toBe(true);
    expect((live(e, "reviews")!.spec as { http: unknown[] }).http).toEqual([{ route: [{ destination: { host: "reviews" } }] }]);
    expect(inventoryUids(e).get("VirtualService/bookinfo/reviews")).toBe(uid(live(e, "reviews")));
    expect(await metricValue(e.registries.get(a)!, "gitmesh_agent_adoptions_total")).toBe(1);

    // restart: a new agent process reads the inventory from the cluster
    await a.stop();
    const b = e.agent("agent-b");
    await b.start();
    await eventually("b leads", () => b.isLeader, 10_000);

    // "ratings" is deleted and recreated by someone else: the agent must not delete the new one
    await k.delete("ratings");
    await k.apply(foreign("ratings"));
    const theirs = uid(live(e, "ratings"));
    expect((await e.publish(4, [vs("reviews", NS, "reviews")])).ack).toBe(true);
    expect(uid(live(e, "ratings"))).toBe(theirs);
    expect(inventoryUids(e).has("VirtualService/bookinfo/ratings")).toBe(false);
    expect(await metricValue(e.registries.get(b)!, "gitmesh_agent_prune_skipped_total", { reason: "recreated" })).toBe(1);

    // and the adopted object is gitmesh's now: pruned when it leaves the output
    expect((await e.publish(5, [vs("details", NS, "details")])).ack).toBe(true);
    expect(live(e, "reviews")).toBeUndefined();
    expect(live(e, "details")).toBeDefined();
    expect(live(e, "impostor")).toBeDefined();
    expect(live(e, "ratings")).toBeDefined();
  }, 60_000);

  it("a refused mass deletion says exactly how to allow it from Git, and the output option allows it", async () => {
    env = await startRelayEnv();
    const e = env;
    const a = e.agent("agent-a");
    await a.start();
    const objs = Array.from({ length: 6 }, (_, i) => vs(`r${i}`, NS, `h${i}`));
    expect((await e.publish(1, objs)).ack).toBe(true);
    const r = await e.publish(2, objs.slice(0, 1));
    expect(r.ack).toBe(false);
    expect(r.errors[0]!.key).toBe("prune");
    expect(r.errors[0]!.message).toContain("refusing to delete 5 of 6 owned objects");
    expect(r.errors[0]!.message).toContain('add the trailer "Gitmesh-Allow-Deletion: cluster1" (or "Gitmesh-Allow-Deletion: *") to the commit that removes the configuration');
    expect(r.errors[0]!.message).toContain("--max-prune-fraction");
    expect(r.errors[0]!.message).not.toContain("publish the output with");
    expect(e.kube.emulator.list(VS, "VirtualService", NS)).toHaveLength(6);
    // what the server sends for a commit with that trailer
    expect((await e.publish(3, objs.slice(0, 1), { extra: { [OUTPUT_OPTIONS_KEY]: { allowMassDeletion: true } } })).ack).toBe(true);
    expect(e.kube.emulator.list(VS, "VirtualService", NS)).toHaveLength(1);
  }, 60_000);
});
