/**
 * `npm run bench -- translate-cold`: the first translation of a fleet in a fresh process (cold) against
 * the same work again in that process (warm). Each sample is a fresh child (cold-child.ts) that
 * imports the modules, loads the desired state (schema validation on: the model's validators are first
 * used here), translates, then loads and translates twice more after a full GC. Medians over the
 * samples (`--runs N`, default 3); the load average is printed because the machine is shared.
 *
 * Ratios, each of two figures measured in the same child:
 * - first translation / warm translation (translateAll alone: JIT, heap growth, first use of the Istio models);
 * - restart / warm: import + load + translate against load + translate (what every cluster waits for
 *   after a restart, against what the same change costs a running server from scratch).
 * Where the first translation's extra CPU goes: each step also reports the main thread's CPU (Linux), so
 * cold − warm splits into main thread (interpreted and baseline code before tier-up, lazy compilation) and
 * V8's helper threads (concurrent TurboFan compilation, parallel scavenges, concurrent marking).
 * GITMESH_BENCH_FLEET=medium (or small) for a smaller fleet; default large (100 clusters × 1,000 services).
 * GITMESH_BENCH_NODE_FLAGS="--max-semi-space-size=64 …" runs a second variant of each child with those
 * Node/V8 flags, alternated with the default one sample by sample, and prints both (before/after from one run).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateFleet } from "../fleet/generate.js";
import { FLEET_PRESETS, isFleetPreset } from "../fleet/presets.js";
import { median, round, type Benchmark, type Figure } from "../harness.js";
import type { ColdChildReport, Step } from "./cold-child.js";

const childScript = fileURLToPath(new URL("./cold-child.ts", import.meta.url));

function runChild(fleetFile: string, warmRuns: number, flags: readonly string[]): Promise<ColdChildReport> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...flags, "--expose-gc", "--import", "tsx", childScript, fleetFile, "--warm", String(warmRuns)], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`cold-child exited with ${code}`));
      resolve(JSON.parse(out.trim().split("\n").at(-1)!) as ColdChildReport);
    });
  });
}

const load1 = (): number => round(loadavg()[0]!, 1);

interface Variant {
  readonly name: string;
  readonly flags: readonly string[];
  readonly reports: ColdChildReport[];
}

type Run = { readonly load: Step; readonly translate: Step };

function describeSample(r: ColdChildReport): string {
  const w = r.warm.at(-1)!;
  const main = (s: Step) => (s.mainCpuMs === undefined ? "" : `, main thread ${round(s.mainCpuMs)}`);
  return (
    `import ${round(r.importModules.cpuMs)} ms CPU; cold load ${round(r.cold.load.cpuMs)} + translate ${round(r.cold.translate.cpuMs)} ms CPU${main(r.cold.translate)} ` +
    `(${round(r.cold.translate.ms)} ms wall, GC ${round(r.cold.translate.gcMs)} ms); warm load ${round(w.load.cpuMs)} + translate ${round(w.translate.cpuMs)} ms CPU${main(w.translate)} ` +
    `(${round(w.translate.ms)} ms wall, GC ${round(w.translate.gcMs)} ms); peak RSS ${round(r.peakRssMiB)} MiB; load average ${load1()}`
  );
}

function figuresOf(v: Variant, preset: string, label: string): Figure[] {
  const reports = v.reports;
  const p = `${preset}${label}`;
  const warm = reports.flatMap((r) => r.warm);
  const cold = reports.map((r) => r.cold);
  const med = (pick: (s: Run) => number, from: readonly Run[]) => median(from.map(pick));
  // Per child, so that each ratio compares figures measured under the same load.
  const perChild = (f: (r: ColdChildReport, w: Run) => number) => median(reports.map((r) => f(r, r.warm.at(-1)!)));
  const importCpu = median(reports.map((r) => r.importModules.cpuMs));
  const importMs = median(reports.map((r) => r.importModules.ms));
  const figures: Figure[] = [
    { label: `${p}: samples (fresh processes) / warm runs`, value: reports.length, unit: `processes / ${warm.length} warm runs` },
    { label: `${p}: import of config + translate modules (cold), CPU`, value: round(importCpu), unit: `ms (${round(importMs)} ms wall)` },
    { label: `${p}: load desired state, cold (first use of the validators), CPU`, value: round(med((s) => s.load.cpuMs, cold)), unit: `ms (${round(med((s) => s.load.ms, cold))} ms wall)` },
    { label: `${p}: load desired state, warm, CPU`, value: round(med((s) => s.load.cpuMs, warm)), unit: `ms (${round(med((s) => s.load.ms, warm))} ms wall)` },
    { label: `${p}: first translation in a fresh process, CPU`, value: round(med((s) => s.translate.cpuMs, cold)), unit: `ms (${round(med((s) => s.translate.ms, cold))} ms wall)` },
    { label: `${p}: warm translation in the same process, CPU`, value: round(med((s) => s.translate.cpuMs, warm)), unit: `ms (${round(med((s) => s.translate.ms, warm))} ms wall)` },
  ];
  if (reports.every((r) => r.cold.translate.mainCpuMs !== undefined && r.warm.at(-1)!.translate.mainCpuMs !== undefined)) {
    const mainExtra = perChild((r, w) => r.cold.translate.mainCpuMs! - w.translate.mainCpuMs!);
    const helperExtra = perChild((r, w) => r.cold.translate.cpuMs - r.cold.translate.mainCpuMs! - (w.translate.cpuMs - w.translate.mainCpuMs!));
    figures.push({ label: `${p}: first − warm translation, CPU of the main thread / of V8's helper threads`, value: round(mainExtra), unit: `ms / ${round(helperExtra)} ms` });
  }
  figures.push(
    { label: `${p}: GC pauses in the first / a warm translation`, value: round(med((s) => s.translate.gcMs, cold)), unit: `ms / ${round(med((s) => s.translate.gcMs, warm))} ms` },
    {
      label: `${p}: first / warm translation, CPU`,
      value: round(perChild((r, w) => r.cold.translate.cpuMs / w.translate.cpuMs), 2),
      unit: `x (wall ${round(perChild((r, w) => r.cold.translate.ms / w.translate.ms), 2)}x; per sample ${reports.map((r) => round(r.cold.translate.cpuMs / r.warm.at(-1)!.translate.cpuMs, 2)).join(", ")})`,
    },
    {
      label: `${p}: restart (import + load + translate) / warm (load + translate), CPU`,
      value: round(perChild((r, w) => (r.importModules.cpuMs + r.cold.load.cpuMs + r.cold.translate.cpuMs) / (w.load.cpuMs + w.translate.cpuMs)), 2),
      unit: `x (wall ${round(perChild((r, w) => (r.importModules.ms + r.cold.load.ms + r.cold.translate.ms) / (w.load.ms + w.translate.ms)), 2)}x)`,
    },
    { label: `${p}: peak RSS of the child`, value: round(median(reports.map((r) => r.peakRssMiB))), unit: "MiB" },
  );
  return figures;
}

export const benchmark: Benchmark = {
  name: "translate-cold",
  description:
    "first load + translation of the large fleet in a fresh process (cold) vs again in the same process (warm); medians and ratios, main-thread vs helper-thread CPU, peak RSS (GITMESH_BENCH_FLEET=medium|small, GITMESH_BENCH_NODE_FLAGS for an alternated variant)",
  async run({ runs, log }) {
    const preset = process.env.GITMESH_BENCH_FLEET ?? "large";
    if (!isFleetPreset(preset)) throw new Error(`GITMESH_BENCH_FLEET=${preset}: not a fleet preset`);
    const extraFlags = (process.env.GITMESH_BENCH_NODE_FLAGS ?? "").split(/\s+/).filter((f) => f !== "");
    const variants: Variant[] = [{ name: "default", flags: [], reports: [] }];
    if (extraFlags.length > 0) variants.push({ name: extraFlags.join(" "), flags: extraFlags, reports: [] });
    const fleet = generateFleet(FLEET_PRESETS[preset]);
    const dir = mkdtempSync(join(tmpdir(), "gitmesh-bench-cold-"));
    const fleetFile = join(dir, "fleet.json");
    writeFileSync(fleetFile, JSON.stringify({ files: fleet.files, discovery: [...fleet.discovery] }));
    const loadBefore = load1();
    try {
      for (let i = 0; i < runs; i++) {
        // Alternated (default, flags, default, …) so that both variants see the same spread of load.
        for (const v of i % 2 === 0 ? variants : [...variants].reverse()) {
          const r = await runChild(fleetFile, 2, v.flags);
          log(`sample ${i + 1}/${runs}${variants.length > 1 ? ` [${v.name}]` : ""}: ${describeSample(r)}`);
          v.reports.push(r);
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const figures: Figure[] = [{ label: `${preset}: resources rendered`, value: variants[0]!.reports[0]!.resources, unit: "objects" }];
    for (const v of variants) figures.push(...figuresOf(v, preset, variants.length > 1 ? ` [${v.name}]` : ""));
    figures.push({ label: "load average (1 min) before / after", value: loadBefore, unit: `/ ${load1()}` });
    return figures;
  },
};
