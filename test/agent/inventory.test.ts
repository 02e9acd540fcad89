// The inventory ConfigMap under concurrent writers and when corrupt, against the emulator over real HTTP.
import { gzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createApplier, createInventory, type Inventory } from "../../src/agent/index.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { output, parts, vs } from "./helpers.js";

const NS = "bookinfo";
let kube: StartedKube;
let p: ReturnType<typeof parts>;

beforeEach(async () => {
  kube = await startKube();
  kube.emulator.seed([{ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } }, { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } }]);
  p = parts(kube);
});
afterEach(async () => {
  await kube.stop();
});

const newInventory = (): Inventory => createInventory({ reader: p.client, writer: p.writer, namespace: "gitmesh", cluster: "cluster1" });
const entry = (name: string, uid = `uid-${name}`) => ({ apiVersion: "networking.istio.io/v1", kind: "VirtualService", namespace: NS, name, uid });
const stored = async () => {
  const again = newInventory();
  await again.load();
  return again.entries().map((e) => e.name).sort();
};
const storedConfigMap = () => kube.emulator.get("v1", "ConfigMap", "gitmesh", "gitmesh-agent-inventory");

describe("inventory writes that meet another writer (409)", () => {
  it("a create that finds the ConfigMap created, and a replace with a stale resourceVersion, merge: the other writer's entries are kept, ours written, our removals stay removed", async () => {
    const a = newInventory();
    const b = newInventory();
    await Promise.all([a.load(), b.load()]);
    a.set(entry("from-a"));
    await a.flush();
    b.set(entry("from-b"));
    await b.flush(); // create → 409 AlreadyExists → read, merge, replace
    expect(await stored()).toEqual(["from-a", "from-b"]);

    a.remove("networking.istio.io/v1/VirtualService/bookinfo/from-a");
    a.set(entry("later-a"));
    await a.flush(); // replace with a's stale resourceVersion → 409 Conflict → merge
    expect(await stored()).toEqual(["from-b", "later-a"]);
  });
});

describe("a corrupt inventory ConfigMap", () => {
  const corrupt = (data: Buffer) =>
    kube.emulator.seed([{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "gitmesh-agent-inventory", namespace: "gitmesh" }, data: { format: "gitmesh.io/inventory-v1" }, binaryData: { "entries.json.gz": data.toString("base64") } }]);

  for (const [what, data] of [
    ["not gzip", Buffer.from("definitely not gzip")],
    ["gzip of JSON that is not a list of entries", gzipSync(JSON.stringify({ entries: [] }))],
  ] as const) {
    it(`(${what}): nothing applied or pruned, the ConfigMap named with what to do, not transient, and left as it is`, async () => {
      const applier = createApplier({ cluster: "cluster1", reader: p.client, writer: p.writer, inventory: newInventory(), metrics: p.metrics, logger: p.logger });
      await applier.applyOutput(output(1, [vs("owned", NS, "owned")]));
      corrupt(data);
      const before = JSON.stringify(storedConfigMap()!.binaryData);
      const restarted = createApplier({ cluster: "cluster1", reader: p.client, writer: p.writer, inventory: newInventory(), metrics: p.metrics, logger: p.logger });
      const r = await restarted.applyOutput(output(2, [vs("new", NS, "new")]));
      expect(r).toMatchObject({ ack: false, applied: 0, pruned: 0 });
      expect(r.errors).toHaveLength(1);
      expect(r.errors[0]!.key).toBe("inventory");
      expect(r.errors[0]!.message).toMatch(/gitmesh\/gitmesh-agent-inventory is unreadable .*until it is fixed or deleted/);
      expect(r.errors[0]).not.toHaveProperty("transient");
      expect(kube.emulator.get("networking.istio.io/v1", "VirtualService", NS, "new")).toBeUndefined();
      expect(kube.emulator.get("networking.istio.io/v1", "VirtualService", NS, "owned")).toBeDefined();
      expect(JSON.stringify(storedConfigMap()!.binaryData)).toBe(before);
    });
  }
});
