/** The bookinfo example (examples/repo-layout + examples/discovery) as pipeline inputs. */
import { loadDesiredState, readConfigDirectory, updateDesiredState, type DesiredState, type SourceFile } from "../../src/config/index.js";
import { readDiscoveryDirectory, snapshotChecksum, type DiscoverySnapshot } from "../../src/discovery/index.js";
import { createMemoryStore } from "../../src/store/index.js";
import { translateAll } from "../../src/translate/index.js";
import type { OutputEvent } from "../../src/queue/index.js";

export interface Fixture {
  readonly files: SourceFile[];
  readonly state: DesiredState;
  readonly discovery: Map<string, DiscoverySnapshot>;
}

export async function loadFixture(): Promise<Fixture> {
  const files = await readConfigDirectory("examples/repo-layout");
  const { state } = loadDesiredState(files);
  const { snapshots } = await readDiscoveryDirectory("examples/discovery");
  return { files, state, discovery: snapshots };
}

/** The fault-injection policy of bookinfo-backends with another delay: a one-workspace change. */
/** The fixture in a memory store, as the pipeline leaves it after commit c1 and every cluster's first discovery. */
export async function seededMemoryStore() {
  const f = await loadFixture();
  const store = createMemoryStore();
  await store.putDesired({ commit: "c1", ref: "main", generation: 1, state: f.state, changedKeys: [], atMs: 1 });
  for (const [cluster, snapshot] of f.discovery) await store.putDiscovery({ cluster, checksum: snapshotChecksum(snapshot), snapshot, atMs: 1 });
  return { f, store };
}

export function faultInjectionChange(f: Fixture, delay = "3s") {
  const file = f.files.find((x) => x.path.endsWith("fault-injection.yaml"))!;
  const content = (typeof file.content === "string" ? file.content : new TextDecoder().decode(file.content)).replace("fixedDelay: 2s", `fixedDelay: ${delay}`);
  return updateDesiredState(f.state, [{ path: file.path, content }], []);
}

/** cluster → JSON of the full in-process translation (the reference). */
export function reference(state: DesiredState, discovery: ReadonlyMap<string, DiscoverySnapshot>): Map<string, string> {
  const r = translateAll(state, discovery);
  return new Map([...r.clusters].filter(([, c]) => c.resources.length > 0).map(([c, o]) => [c, JSON.stringify(o.resources)]));
}

/** Collects outputs: the last one per cluster and every version seen. */
export function outputSink() {
  const last = new Map<string, OutputEvent>();
  const versions: { cluster: string; version: number }[] = [];
  return {
    last,
    versions,
    onOutput: (e: OutputEvent) => {
      last.set(e.cluster, e);
      versions.push({ cluster: e.cluster, version: e.version });
    },
    json: () => new Map([...last].map(([c, e]) => [c, JSON.stringify(e.resources)])),
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until(cond: () => boolean | Promise<boolean>, timeoutMs = 20_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}
