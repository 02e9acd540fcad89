/**
 * `npm run bench -- load`: load and validate a generated repository of 10,000 objects.
 * Baseline in the same run: parsing the same YAML with the `yaml` package alone, so the ratio
 * shows what the loader adds (positions, schema validation, linking, freezing).
 */
import { LineCounter, parseAllDocuments } from "yaml";
import { loadDesiredState, updateDesiredState } from "../../src/config/index.js";
import { heapAfterGc, MB, repeat, round, time, type Benchmark } from "../harness.js";
import { generateConfigRepo } from "./generate-config-repo.js";

const OBJECTS = 10_000;

export const benchmark: Benchmark = {
  name: "load",
  description: `load + validate a generated configuration repository of ${OBJECTS.toLocaleString("en")} objects`,
  async run({ runs, log }) {
    const gen = await time(() => generateConfigRepo({ objects: OBJECTS, docsPerFile: 4 }));
    const files = gen.result;
    const bytes = files.reduce((n, f) => n + Buffer.byteLength(f.content), 0);
    log(`generated ${files.length} files, ${round(bytes / MB)} MB, in ${round(gen.ms)} ms`);

    const parseOnly = () => {
      for (const f of files) for (const d of parseAllDocuments(f.content, { lineCounter: new LineCounter() }) as unknown as { toJS(): unknown }[]) d.toJS();
    };
    parseOnly(); // warm-up (JIT)
    const first = await time(() => loadDesiredState(files)); // includes compiling the ajv validators once
    if (first.result.diagnostics.length > 0) throw new Error(`the generated repository has ${first.result.diagnostics.length} diagnostics; fix the generator`);
    log(`first load (cold validators): ${round(first.ms)} ms`);

    const baseline = await repeat(runs, parseOnly);
    log(`yaml parse only: ${round(baseline.median)} ms`);
    const full = await repeat(runs, () => loadDesiredState(files));
    log(`full load: ${round(full.median)} ms`);
    const noSchema = await repeat(runs, () => loadDesiredState(files, { schemaValidation: false }));

    const heapBefore = heapAfterGc();
    const { state } = loadDesiredState(files);
    const retained = heapAfterGc() - heapBefore;
    const serialised = Buffer.byteLength(JSON.stringify(state));

    const changedFile = files[Math.floor(files.length / 2)]!;
    const edited = { path: changedFile.path, content: changedFile.content.replace("requestTimeout: 5s", "requestTimeout: 6s").replace("hosts:", "hosts:\n") };
    const update = await repeat(runs, () => updateDesiredState(state, [edited], []));
    const upd = updateDesiredState(state, [edited], []);
    log(`update of one file: ${round(update.median)} ms, ${upd.changedKeys.size} changed keys`);

    return [
      { label: "files / YAML bytes", value: files.length, unit: `files, ${round(bytes / MB)} MB` },
      { label: "first load incl. compiling validators (wall)", value: round(first.ms), unit: "ms" },
      { label: `baseline: yaml parse only (median of ${runs}, wall)`, value: round(baseline.median), unit: "ms" },
      { label: "baseline: yaml parse only (CPU)", value: round(baseline.cpuMedian), unit: "ms" },
      { label: `full load + validate (median of ${runs}, wall)`, value: round(full.median), unit: "ms" },
      { label: "full load + validate (CPU)", value: round(full.cpuMedian), unit: "ms" },
      { label: "full load / baseline (CPU)", value: round(full.cpuMedian / baseline.cpuMedian, 2), unit: "x" },
      { label: "full load throughput (CPU)", value: Math.round(OBJECTS / (full.cpuMedian / 1000)), unit: "objects/s" },
      { label: "load without schema validation (CPU)", value: round(noSchema.cpuMedian), unit: "ms" },
      { label: `update: one file changed (median of ${runs}, wall)`, value: round(update.median, 2), unit: "ms" },
      { label: "update: one file changed (CPU)", value: round(update.cpuMedian, 2), unit: "ms" },
      { label: "heap retained by the desired state", value: round(retained / MB), unit: "MB" },
      { label: "desired state as JSON", value: round(serialised / MB), unit: "MB" },
    ];
  },
};
