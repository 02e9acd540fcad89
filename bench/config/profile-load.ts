/**
 * Profiling helper for the loader (not a benchmark): `node --cpu-prof --import tsx bench/config/profile-load.ts [loads] [updates]`
 * loads the generated 10,000-object repository `loads` times (default 4) and applies `updates`
 * one-file updates (default 20), printing wall and CPU time of each phase.
 */
import { loadDesiredState, updateDesiredState } from "../../src/config/index.js";
import { generateConfigRepo } from "./generate-config-repo.js";

const loads = Number(process.argv[2] ?? 4);
const updates = Number(process.argv[3] ?? 20);
const files = generateConfigRepo({ objects: 10_000, docsPerFile: 4 });
let wall = performance.now();
let cpu = process.cpuUsage();
const lap = (label: string): void => {
  const used = process.cpuUsage(cpu);
  process.stdout.write(`${label}: ${Math.round(performance.now() - wall)} ms wall, ${Math.round((used.user + used.system) / 1000)} ms CPU\n`);
  wall = performance.now();
  cpu = process.cpuUsage();
};
let state = loadDesiredState(files).state;
lap("first load");
for (let i = 1; i < loads; i++) {
  state = loadDesiredState(files).state;
  lap("load");
}
const f = files[Math.floor(files.length / 2)]!;
const variants = [f.content.replace("requestTimeout: 5s", "requestTimeout: 6s"), f.content];
for (let i = 0; i < updates; i++) state = updateDesiredState(state, [{ path: f.path, content: variants[i % 2]! }], []).state;
lap(`${updates} chained one-file updates`);
process.stdout.write(`peak RSS ${Math.round(process.resourceUsage().maxRSS / 1024)} MB\n`);
