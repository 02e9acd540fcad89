/**
 * Translation benchmark over a generated fleet (bench/fleet): one preset per benchmark file, so
 * that the runner measures each preset's peak RSS in a child process of its own.
 *
 * Figures: full translation (both stages, Istio schema validation on, as in production), the
 * same without schema validation, JSON.stringify of the produced output in the same run (the
 * baseline; ratio = full / stringify), and a one-policy change (OutlierDetectionPolicy interval
 * edit): updateDesiredState + affectedWorkspaces + retranslate.
 */
import { allObjects, loadDesiredState, updateDesiredState } from "../../src/config/index.js";
import { affectedWorkspaces, retranslate, translateAll, type DiscoveryMap, type TranslationResult } from "../../src/translate/index.js";
import { generateFleet } from "../fleet/generate.js";
import { FLEET_PRESETS, type FleetPresetName } from "../fleet/presets.js";
import { MB, repeat, round, time, type Benchmark, type Figure } from "../harness.js";

function outputJson(result: TranslationResult): string {
  const all: unknown[] = [];
  for (const c of result.clusters.values()) all.push(c.resources);
  return JSON.stringify(all);
}

export function translateBenchmark(preset: FleetPresetName): Benchmark {
  const options = FLEET_PRESETS[preset];
  return {
    name: `translate-${preset}`,
    description: `translate the ${preset} fleet (${options.clusters} clusters × ${options.servicesPerCluster} services): full, incremental one-policy change, vs JSON.stringify`,
    async run({ runs, log }) {
      const fleet = generateFleet(options);
      const loaded = loadDesiredState(fleet.files);
      if (loaded.diagnostics.length > 0) throw new Error(`fleet ${preset}: ${loaded.diagnostics.length} loader diagnostics; fix the generator`);
      const state = loaded.state;
      const discovery = fleet.discovery as unknown as DiscoveryMap;
      log(`${preset}: ${fleet.counts.workspaces} workspaces, ${fleet.counts.services} services, ${fleet.counts.configObjects} config objects`);
      const timedRuns = preset === "large" ? 1 : runs;

      const first = await time(() => translateAll(state, discovery));
      let resources = 0;
      for (const c of first.result.clusters.values()) resources += c.resources.length;
      log(`first full translation: ${round(first.ms)} ms, ${resources} resources, ${first.result.diagnostics.length} diagnostics`);
      // translateAll memoises its index per input identity: give each timed run fresh inputs.
      const fresh = () => ({ objects: [...allObjects(state)] });
      const full = timedRuns > 1 ? await repeat(timedRuns, () => translateAll(fresh(), discovery)) : { median: first.ms };
      const noValidate = await repeat(timedRuns, () => translateAll(fresh(), discovery, { validate: false }));
      const json = await repeat(Math.max(3, timedRuns), () => outputJson(first.result));
      const bytes = Buffer.byteLength(outputJson(first.result));

      // one-policy change
      const change = fleet.onePolicyChange;
      const inc = await repeat(runs, () => {
        const next = updateDesiredState(state, [change.after], []);
        const changed = affectedWorkspaces({ desired: state, discovery }, { desired: next.state, discovery }, { changedKeys: next.changedKeys });
        return retranslate(first.result, next.state, discovery, changed);
      });
      const probe = updateDesiredState(state, [change.after], []);
      const changed = affectedWorkspaces({ desired: state, discovery }, { desired: probe.state, discovery }, { changedKeys: probe.changedKeys });
      const re = retranslate(first.result, probe.state, discovery, changed);
      log(`one-policy change: ${changed.length} workspace(s) re-run, ${re.reassembled.length} cluster(s) re-assembled`);

      const figures: Figure[] = [
        { label: `${preset}: resources rendered`, value: resources, unit: "objects" },
        { label: `${preset}: full translation (validated)`, value: round(full.median), unit: "ms" },
        { label: `${preset}: full translation (no schema validation)`, value: round(noValidate.median), unit: "ms" },
        { label: `${preset}: JSON.stringify of the output (baseline)`, value: round(json.median), unit: "ms" },
        { label: `${preset}: full translation / JSON.stringify`, value: round(full.median / json.median), unit: "x" },
        { label: `${preset}: output size (JSON)`, value: round(bytes / MB), unit: "MB" },
        { label: `${preset}: one-policy change (update + affected + retranslate)`, value: round(inc.median), unit: "ms" },
        { label: `${preset}: workspaces re-run for one policy`, value: changed.length, unit: "workspaces" },
      ];
      return figures;
    },
  };
}
