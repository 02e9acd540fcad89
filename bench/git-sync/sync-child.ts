/**
 * One first sync by gitmesh in a fresh process (not a benchmark): createGitSource on the URL given,
 * a new cache directory, and a loader that does nothing, so that what is timed is the transport and
 * reading every blob, as `git clone` + `git cat-file --batch-all-objects --batch` does on the other
 * side. Prints {ms, cpuMs, maxRssKb, files} as one JSON line.
 */
import { silentLogger } from "../../src/core/index.js";
import { createGitSource, type DesiredStateLoader } from "../../src/git-sync/index.js";

const [url, cacheDir] = process.argv.slice(2);
if (url === undefined || cacheDir === undefined) throw new Error("usage: sync-child.ts <url> <cacheDir>");
let files = 0;
const loader: DesiredStateLoader<number> = {
  load: (f) => {
    files = f.length;
    return { state: f.length, diagnostics: [] };
  },
  update: (prev, changed) => ({ state: prev + changed.length, diagnostics: [], changedKeys: new Set(changed.map((f) => f.path)) }),
};
const source = createGitSource({ location: { kind: "remote", url, cacheDir }, loader, logger: silentLogger });
const c = process.cpuUsage();
const t = performance.now();
const result = await source.sync();
const ms = performance.now() - t;
const used = process.cpuUsage(c);
if (result.kind !== "updated") throw new Error(`first sync was ${result.kind}`);
process.stdout.write(`${JSON.stringify({ ms, cpuMs: (used.user + used.system) / 1000, maxRssKb: process.resourceUsage().maxRSS, files })}\n`);
