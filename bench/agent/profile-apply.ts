/**
 * Profiles the agent's side of a first apply (issue #20): `[objects] [out.cpuprofile] [warm-ups]`.
 * The emulator runs in a process of its own (emulator-process.ts), so the profile holds the agent's
 * CPU only. Warm-up applies (default 2) into fresh emulators, then a profiled first apply into another one,
 * then three more to show the spread. `node --import tsx bench/agent/profile-apply.ts 2000 out.cpuprofile 2`.
 */
import { writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import { KubeConfig } from "@kubernetes/client-node";
import { silentLogger } from "../../src/core/index.js";
import { createApplier, createInventory, createKubeClient, withFieldOwner, type KubeObject } from "../../src/agent/index.js";
import { spawnEmulator } from "./emulator-process.js";
import { outputObjects, outputVersion } from "./output.js";

const count = Number(process.argv[2] ?? 2000);
const out = process.argv[3] ?? "apply.cpuprofile";
const warmUps = Number(process.argv[4] ?? 2);
const seed: KubeObject[] = [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } }, ...Array.from({ length: 100 }, (_, i): KubeObject => ({ apiVersion: "v1", kind: "Namespace", metadata: { name: `ns-${i}` } }))];
const objects = outputObjects(count, 100);
const emulator = spawnEmulator();

async function firstApply(): Promise<number> {
  const { kubeconfig } = await emulator.start(seed);
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfig);
  const client = createKubeClient(kc);
  const writer = withFieldOwner(client);
  const inventory = createInventory({ reader: client, writer, namespace: "gitmesh", cluster: "bench" });
  const applier = createApplier({ cluster: "bench", reader: client, writer, inventory, logger: silentLogger });
  const cpu = process.cpuUsage();
  const r = await applier.applyOutput(outputVersion(objects, 1));
  const used = process.cpuUsage(cpu);
  if (!r.ack || r.applied !== count) throw new Error(`apply failed: ${JSON.stringify(r.errors.slice(0, 3))}`);
  client.connections.destroy();
  return (used.user + used.system) / 1000;
}

try {
  for (let i = 0; i < warmUps; i++) console.log(`warm-up: agent CPU ${String(Math.round(await firstApply()))} ms`);
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.start");
  const ms = await firstApply();
  const { profile } = await session.post("Profiler.stop");
  await writeFile(out, JSON.stringify(profile));
  console.log(`profiled: agent CPU ${String(Math.round(ms))} ms -> ${out}`);
  for (let i = 0; i < 3; i++) console.log(`again: agent CPU ${String(Math.round(await firstApply()))} ms`);
} finally {
  await emulator.stop();
}
