/**
 * Where a full translation spends its CPU time (not a benchmark): `node --import tsx bench/translate/phases.ts <preset>`.
 * Times each per-kind translator (summed over workspaces), then the rest of the workspace stage
 * (merge, canonical form, validation) and the cluster stage, in CPU time (steadier than wall time
 * on a shared machine). Three runs: validated (cold: JIT, memo tables, heap growth), unvalidated
 * on a freshly loaded state, validated again on the first state (warm; its index is memoised).
 */
import { loadDesiredState } from "../../src/config/index.js";
import { KIND_TRANSLATORS, assembleCluster, fragmentsFor, indexOf, toDesiredInput, translateWorkspace, type KindTranslator, type WorkspaceResult } from "../../src/translate/index.js";
import { generateFleet } from "../fleet/generate.js";
import { FLEET_PRESETS, isFleetPreset } from "../fleet/presets.js";

const name = process.argv[2] ?? "medium";
if (!isFleetPreset(name)) throw new Error(`unknown preset ${name}`);
const fleet = generateFleet(FLEET_PRESETS[name]);
const state = loadDesiredState(fleet.files).state;
const cpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const spent = new Map<string, number>();
const translators: KindTranslator[] = KIND_TRANSLATORS.map((t) => ({
  name: t.name,
  translate: (ctx) => {
    const start = cpu();
    const out = t.translate(ctx);
    spent.set(t.name, (spent.get(t.name) ?? 0) + cpu() - start);
    return out;
  },
}));
for (const validate of [true, false, true]) {
  spent.clear();
  const start = cpu();
  const wall = performance.now();
  const desired = validate ? state : loadDesiredState(fleet.files).state;
  const discovery = fleet.discovery as never;
  const t0 = cpu();
  const index = indexOf(toDesiredInput(desired), discovery);
  const t1 = cpu();
  const results: WorkspaceResult[] = [];
  for (const ws of index.workspaceNames) results.push(translateWorkspace(ws, desired, discovery, { validate, translators }));
  const t2 = cpu();
  for (const c of index.clusters) assembleCluster(c, fragmentsFor(results, c));
  const t3 = cpu();
  process.stdout.write(`  index ${Math.round(t1 - t0)} ms, workspace stage ${Math.round(t2 - t1)} ms, cluster stage ${Math.round(t3 - t2)} ms\n`);
  const total = cpu() - start;
  let inTranslators = 0;
  for (const v of spent.values()) inTranslators += v;
  process.stdout.write(`validate=${String(validate)}: total ${Math.round(total)} ms CPU (${Math.round(performance.now() - wall)} ms wall); translators ${Math.round(inTranslators)} ms, rest ${Math.round(total - inTranslators)} ms\n`);
  for (const [k, v] of [...spent].sort((a, b) => b[1] - a[1])) process.stdout.write(`  ${k.padEnd(28)} ${Math.round(v)} ms\n`);
}
