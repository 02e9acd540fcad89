/** Output density of a fleet preset (not a benchmark): `node --import tsx bench/translate/density.ts <preset>` prints objects per kind and per service. */
import { loadDesiredState } from "../../src/config/index.js";
import { translateAll } from "../../src/translate/index.js";
import { generateFleet } from "../fleet/generate.js";
import { FLEET_PRESETS, isFleetPreset } from "../fleet/presets.js";

const name = process.argv[2] ?? "small";
if (!isFleetPreset(name)) throw new Error(`unknown preset ${name}`);
const fleet = generateFleet(FLEET_PRESETS[name]);
const result = translateAll(loadDesiredState(fleet.files).state, fleet.discovery, { validate: false });
const kinds = new Map<string, number>();
let total = 0;
for (const c of result.clusters.values()) for (const r of c.resources) {
  kinds.set(r.kind, (kinds.get(r.kind) ?? 0) + 1);
  total++;
}
process.stdout.write(`${name}: ${fleet.counts.clusters} clusters, ${fleet.counts.workspaces} workspaces, ${fleet.counts.services} services, ${fleet.counts.configObjects} config objects → ${total} objects (${(total / fleet.counts.services).toFixed(2)} per service)\n`);
for (const [k, n] of [...kinds].sort((a, b) => b[1] - a[1])) process.stdout.write(`  ${k.padEnd(20)} ${String(n).padStart(7)}  ${(n / fleet.counts.services).toFixed(3)} per service\n`);
