/**
 * `npm run bench -- yaml-emit [--runs N]`: canonicalYaml's hand-written emitter (src/core/yaml-emit.ts)
 * against the `yaml` package's `stringify` it replaces, on every rendered object of a generated fleet
 * (bench/fleet; `GITMESH_BENCH_FLEET=large` by default, 100 clusters × 1,000 services), in the same
 * process, alternated round by round. The objects are put in canonical form before the clock starts
 * (both sides get the same values); both outputs are compared byte for byte once. CPU time per object
 * and the ratio (median of per-round ratios).
 */
import { loadDesiredState } from "../../src/config/index.js";
import { canonicalObject, emitYaml, yamlPackageStringify } from "../../src/core/index.js";
import { translateAll } from "../../src/translate/index.js";
import { generateFleet } from "../fleet/generate.js";
import { FLEET_PRESETS, isFleetPreset } from "../fleet/presets.js";
import { median, round, type Benchmark, type Figure } from "../harness.js";

function cpuMs(fn: () => void): number {
  const start = process.cpuUsage();
  fn();
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}

export const benchmark: Benchmark = {
  name: "yaml-emit",
  description: "canonicalYaml's hand-written YAML emitter vs the yaml package's stringify on a fleet's rendered output (CPU per object, ratio, same run, alternated)",
  run(ctx) {
    const preset = process.env.GITMESH_BENCH_FLEET ?? "large";
    if (!isFleetPreset(preset)) throw new Error(`unknown fleet preset ${preset}`);
    ctx.log(`translating the ${preset} fleet …`);
    const fleet = generateFleet(FLEET_PRESETS[preset]);
    const result = translateAll(loadDesiredState(fleet.files).state, fleet.discovery, { validate: false });
    const objects: unknown[] = [];
    for (const c of result.clusters.values()) for (const r of c.resources) objects.push(canonicalObject(r));
    let declined = 0;
    let bytes = 0;
    for (const o of objects) {
      const e = emitYaml(o);
      const y = yamlPackageStringify(o);
      if (e === undefined) declined++;
      else if (e !== y) throw new Error(`emitter and yaml package differ:\n${y}\n---\n${e}`);
      bytes += y.length;
    }
    ctx.log(`${objects.length} objects, ${declined} declined by the emitter; ${ctx.runs} rounds`);
    const emitter: number[] = [];
    const pkg: number[] = [];
    const ratios: number[] = [];
    for (let i = 0; i < Math.max(ctx.runs, 3); i++) {
      const runEmitter = (): number => cpuMs(() => { for (const o of objects) emitYaml(o); });
      const runPackage = (): number => cpuMs(() => { for (const o of objects) yamlPackageStringify(o); });
      let e: number;
      let p: number;
      if (i % 2 === 0) {
        e = runEmitter();
        p = runPackage();
      } else {
        p = runPackage();
        e = runEmitter();
      }
      emitter.push(e);
      pkg.push(p);
      ratios.push(p / e);
      ctx.log(`round ${i + 1}: emitter ${round(e)} ms, yaml package ${round(p)} ms`);
    }
    const n = objects.length;
    const figures: Figure[] = [
      { label: `${preset} fleet: rendered objects`, value: n, unit: "objects" },
      { label: "objects the emitter declined (yaml package path)", value: declined, unit: "objects" },
      { label: "YAML written", value: round(bytes / 1024 / 1024, 2), unit: "MB" },
      { label: "emitter, all objects (CPU, median)", value: round(median(emitter)), unit: "ms" },
      { label: "yaml package stringify, all objects (CPU, median)", value: round(median(pkg)), unit: "ms" },
      { label: "emitter per object", value: round((median(emitter) * 1000) / n, 2), unit: "µs" },
      { label: "yaml package per object", value: round((median(pkg) * 1000) / n, 2), unit: "µs" },
      { label: "yaml package / emitter (median of per-round ratios)", value: round(median(ratios), 1), unit: "x" },
    ];
    return Promise.resolve(figures);
  },
};
