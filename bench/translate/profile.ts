/**
 * Profiling driver (not a benchmark): `node --import tsx --cpu-prof bench/translate/profile.ts <preset> [full|novalidate|inc]`.
 * Prints timings of a full translation and, with `inc`, of three one-policy changes.
 */
import { loadDesiredState, updateDesiredState } from "../../src/config/index.js";
import { affectedWorkspaces, retranslate, translateAll } from "../../src/translate/index.js";
import { generateFleet } from "../fleet/generate.js";
import { FLEET_PRESETS } from "../fleet/presets.js";
const preset = (process.argv[2] ?? "medium") as "medium";
const mode = process.argv[3] ?? "full";
const fleet = generateFleet(FLEET_PRESETS[preset]);
const state = loadDesiredState(fleet.files).state;
const discovery = fleet.discovery as never;
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
let t = performance.now(); let c = cpu();
const validate = mode !== "novalidate";
const first = translateAll(state, discovery, { validate });
console.log("full", Math.round(performance.now() - t), "ms cpu", Math.round(cpu() - c));
let n = 0; for (const cl of first.clusters.values()) n += cl.resources.length;
console.log("resources", n, "diags", first.diagnostics.length, "rss", Math.round(process.memoryUsage().rss / 1e6));
if (mode === "inc" ) {
  for (let i = 0; i < 3; i++) {
    t = performance.now(); c = cpu();
    const next = updateDesiredState(state, [fleet.onePolicyChange.after], []);
    const t1 = performance.now();
    const changed = affectedWorkspaces({ desired: state, discovery }, { desired: next.state, discovery }, { changedKeys: next.changedKeys });
    const t2 = performance.now();
    const re = retranslate(first, next.state, discovery, changed);
    console.log("inc", Math.round(performance.now() - t), "ms (update", Math.round(t1 - t), "affected", Math.round(t2 - t1), "retranslate", Math.round(performance.now() - t2), ") cpu", Math.round(cpu() - c), changed, re.reassembled.length);
  }
}
