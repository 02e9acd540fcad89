/**
 * The floor of the diff benchmark, run as a process of its own like `gitmesh diff`: what any diff of
 * two revisions has to do at least — load both configuration trees, read the discovery files with
 * JSON.parse, translate both revisions in full, and JSON.stringify both outputs.
 *
 * Usage: node --import tsx bench/diff/floor.ts <base-dir> <head-dir> <discovery-dir>
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { loadDesiredState, readConfigDirectory } from "../../src/config/index.js";
import type { DiscoverySnapshot } from "../../src/discovery/index.js";
import { translateAll } from "../../src/translate/index.js";

const [baseDir, headDir, discoveryDir] = process.argv.slice(2);
if (baseDir === undefined || headDir === undefined || discoveryDir === undefined) throw new Error("usage: floor.ts <base-dir> <head-dir> <discovery-dir>");

const discovery = new Map<string, DiscoverySnapshot>();
for (const cluster of (await readdir(discoveryDir)).sort()) {
  const snapshot = JSON.parse(await readFile(join(discoveryDir, cluster, "snapshot.json"), "utf8")) as DiscoverySnapshot;
  discovery.set(snapshot.cluster, snapshot);
}
let bytes = 0;
for (const dir of [baseDir, headDir]) {
  const { state } = loadDesiredState((await readConfigDirectory(dir)).filter((f) => !f.path.startsWith(".git/")));
  const result = translateAll(state, discovery);
  bytes += JSON.stringify([...result.clusters.values()].map((c) => c.resources)).length;
}
process.stdout.write(`${bytes}\n`);
