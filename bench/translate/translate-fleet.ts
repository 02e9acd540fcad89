/**
 * Translation benchmark over a generated fleet (bench/fleet): one preset per benchmark file, so
 * that the runner measures each preset's peak RSS in a child process of its own.
 *
 * Figures: full translation (both stages, Istio schema validation on, as in production) — the
 * first one in the process (cold) and warm ones with fresh inputs — the same without schema
 * validation, the floor in the same run — JSON.stringify of the produced output and JSON.parse of that
 * text, the least any process that hands this output on as data pays (ratio = warm full / (stringify +
 * parse)) — and a one-policy change (OutlierDetectionPolicy interval edit):
 * updateDesiredState + affectedWorkspaces + retranslate, and the translation part alone.
 */
import { allObjects, loadDesiredState, updateDesiredState, type DesiredState } from "../../src/config/index.js";
import { affectedWorkspaces, retranslate, translateAll, type DiscoveryMap, type TranslationResult } from "../../src/translate/index.js";
import { generateFleet, type FleetFile } from "../fleet/generate.js";
import { FLEET_PRESETS, type FleetPresetName } from "../fleet/presets.js";
import { heapAfterGc, MB, median, repeat, round, time, type Benchmark, type Figure } from "../harness.js";

function outputJson(result: TranslationResult): string {
  const all: unknown[] = [];
  for (const c of result.clusters.values()) all.push(c.resources);
  return JSON.stringify(all);
}

/**
 * Timed full translations, each after a full GC (children run with --expose-gc), so that one
 * run's garbage does not count against the next run's time or the process's peak memory.
 */
async function warmRuns(runs: number, fn: () => TranslationResult): Promise<{ median: number; cpuMedian: number }> {
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    heapAfterGc();
    const c = process.cpuUsage();
    const t = await time(() => fn().clusters.size);
    const used = process.cpuUsage(c);
    wall.push(t.ms);
    cpu.push((used.user + used.system) / 1000);
  }
  return { median: median(wall), cpuMedian: median(cpu) };
}

/** Median times of a one-policy change; a function of its own so the previous result is released when it returns. */
async function measureOnePolicyChange(
  state: DesiredState,
  discovery: DiscoveryMap,
  previous: TranslationResult,
  after: FleetFile,
  runs: number,
): Promise<{ total: number; translation: number; workspaces: number; reassembled: number }> {
  const inc = await repeat(runs, () => {
    const next = updateDesiredState(state, [after], []);
    const changed = affectedWorkspaces({ desired: state, discovery }, { desired: next.state, discovery }, { changedKeys: next.changedKeys });
    return retranslate(previous, next.state, discovery, changed);
  });
  const probe = updateDesiredState(state, [after], []);
  const translation = await repeat(runs, () => {
    const changed = affectedWorkspaces({ desired: state, discovery }, { desired: probe.state, discovery }, { changedKeys: probe.changedKeys });
    return retranslate(previous, probe.state, discovery, changed);
  });
  const changed = affectedWorkspaces({ desired: state, discovery }, { desired: probe.state, discovery }, { changedKeys: probe.changedKeys });
  const re = retranslate(previous, probe.state, discovery, changed);
  return { total: inc.median, translation: translation.median, workspaces: changed.length, reassembled: re.reassembled.length };
}

export function translateBenchmark(preset: FleetPresetName): Benchmark {
  const options = FLEET_PRESETS[preset];
  return {
    name: `translate-${preset}`,
    description: `translate the ${preset} fleet (${options.clusters} clusters × ${options.servicesPerCluster} services): full, incremental one-policy change, vs JSON.stringify + JSON.parse of its output`,
    async run({ runs, log }) {
      const fleet = generateFleet(options);
      const loaded = loadDesiredState(fleet.files);
      if (loaded.diagnostics.length > 0) throw new Error(`fleet ${preset}: ${loaded.diagnostics.length} loader diagnostics; fix the generator`);
      const state = loaded.state;
      const discovery = fleet.discovery as unknown as DiscoveryMap;
      log(`${preset}: ${fleet.counts.workspaces} workspaces, ${fleet.counts.services} services, ${fleet.counts.configObjects} config objects`);
      const timedRuns = preset === "large" ? Math.min(runs, 2) : runs;

      // 1. First translation in this process (cold: JIT, memo tables, heap growth), as a restarted server does it.
      let first: { ms: number; result: TranslationResult } | undefined = await time(() => translateAll(state, discovery));
      let resources = 0;
      for (const c of first.result.clusters.values()) resources += c.resources.length;
      log(`first full translation: ${round(first.ms)} ms, ${resources} resources, ${first.result.diagnostics.length} diagnostics`);
      const firstMs = first.ms;

      // 2. The floor: JSON.stringify of the same output, and JSON.parse of that text.
      const json = await repeat(Math.max(3, timedRuns), () => outputJson(first!.result).length);
      const text = outputJson(first.result);
      const bytes = Buffer.byteLength(text);
      const parse = await repeat(Math.max(3, timedRuns), () => (JSON.parse(text) as unknown[]).length);
      const floor = json.median + parse.median;
      heapAfterGc();

      // 3. One-policy change: the loader's update, then translation's part (affected workspaces + retranslate).
      const incremental = await measureOnePolicyChange(state, discovery, first.result, fleet.onePolicyChange.after, runs);
      heapAfterGc();
      log(`one-policy change: ${incremental.workspaces} workspace(s) re-run, ${incremental.reassembled} cluster(s) re-assembled`);

      // 4. Warm full translations with fresh inputs (translateAll memoises its index per input
      //    identity); the first result is released first, so peak memory holds one output at a time.
      first = undefined;
      const fresh = () => ({ objects: [...allObjects(state)] });
      const full = await warmRuns(timedRuns, () => translateAll(fresh(), discovery));
      const noValidate = await warmRuns(timedRuns, () => translateAll(fresh(), discovery, { validate: false }));
      // What a server keeps: the heap retained by one full result (after a full GC).
      const before = heapAfterGc();
      const kept = translateAll(fresh(), discovery);
      const retained = heapAfterGc() - before;
      log(`retained ${round(retained / MB)} MB for ${kept.clusters.size} clusters`);

      const figures: Figure[] = [
        { label: `${preset}: resources rendered`, value: resources, unit: "objects" },
        { label: `${preset}: full translation, first in process (validated)`, value: round(firstMs), unit: "ms" },
        { label: `${preset}: full translation, warm (validated, median of ${timedRuns})`, value: round(full.median), unit: "ms" },
        { label: `${preset}: full translation, warm (validated), CPU time`, value: round(full.cpuMedian), unit: "ms" },
        { label: `${preset}: full translation, warm (no schema validation)`, value: round(noValidate.median), unit: "ms" },
        { label: `${preset}: JSON.stringify of the output`, value: round(json.median), unit: "ms" },
        { label: `${preset}: JSON.parse of that text`, value: round(parse.median), unit: "ms" },
        { label: `${preset}: full translation (warm, validated) / (JSON.stringify + JSON.parse), the floor`, value: round(full.median / floor, 2), unit: "x" },
        { label: `${preset}: output size (JSON)`, value: round(bytes / MB), unit: "MB" },
        { label: `${preset}: heap retained by one full result`, value: round(retained / MB), unit: "MB" },
        { label: `${preset}: one-policy change (loader update + affected + retranslate)`, value: round(incremental.total), unit: "ms" },
        { label: `${preset}: one-policy change, translation only (affected + retranslate)`, value: round(incremental.translation), unit: "ms" },
        { label: `${preset}: workspaces re-run / clusters re-assembled for one policy`, value: incremental.workspaces, unit: `workspaces / ${incremental.reassembled} clusters` },
      ];
      return figures;
    },
  };
}
