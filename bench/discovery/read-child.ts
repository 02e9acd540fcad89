/**
 * Child of the discovery-read benchmark (read.bench.ts), a fresh process per sample:
 * `node --import tsx bench/discovery/read-child.ts <gitmesh-root> <discovery-dir> read|parse`.
 * `read`: readDiscoveryDirectory of <gitmesh-root> (another checkout gives the before figure);
 * `parse`: the floor, readFile + JSON.parse of every `<dir>/<cluster>/snapshot.json`.
 * Prints `{ cpuMs, wallMs, clusters, diagnostics }` as JSON: CPU of the call alone (module loading excluded).
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [root, dir, mode] = process.argv.slice(2);
if (root === undefined || dir === undefined || (mode !== "read" && mode !== "parse")) {
  throw new Error("usage: read-child.ts <gitmesh-root> <discovery-dir> read|parse");
}

type Read = (dir: string) => Promise<{ snapshots: Map<string, unknown>; diagnostics: unknown[] }>;
const { readDiscoveryDirectory } = (await import(pathToFileURL(join(root, "src", "discovery", "index.ts")).href)) as { readDiscoveryDirectory: Read };

const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
let clusters = 0;
let diagnostics = 0;
if (mode === "read") {
  const result = await readDiscoveryDirectory(dir);
  clusters = result.snapshots.size;
  diagnostics = result.diagnostics.length;
} else {
  for (const cluster of (await readdir(dir)).sort()) {
    JSON.parse(await readFile(join(dir, cluster, "snapshot.json"), "utf8"));
    clusters++;
  }
}
const cpu = process.cpuUsage(cpu0);
const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
process.stdout.write(`${JSON.stringify({ cpuMs: (cpu.user + cpu.system) / 1000, wallMs, clusters, diagnostics })}\n`);
