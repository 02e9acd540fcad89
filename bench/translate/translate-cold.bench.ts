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
 * GITMESH_BENCH_FLEET=medium (or small) for a smaller fleet; default large (100 clusters × 1,000 services).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateFleet } from "../fleet/generate.js";
import { FLEET_PRESETS, isFleetPreset } from "../fleet/presets.js";
import { round, type Benchmark, type Figure } from "../harness.js";
import type { ColdChildReport, Step } from "./cold-child.js";

const childScript = fileURLToPath(new URL("./cold-child.ts", import.meta.url));

function runChild(fleetFile: string, warmRuns: number): Promise<ColdChildReport> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--expose-gc", "--import", "tsx", childScript, fleetFile, "--warm", String(warmRuns)], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`cold-child exited with ${code}`));
      resolve(JSON.parse(out.trim().split("\n").at(-1)!) as ColdChildReport);
    });
  });
}

const median = (l: readonly number[]): number => [...l].sort((a, b) => a - b)[Math.floor(l.length / 2)]!;
const load1 = (): number => round(loadavg()[0]!, 1);

export const benchmark: Benchmark = {
  name: "translate-cold",
  description: "first load + translation of the large fleet in a fresh process (cold) vs again in the same process (warm); medians and ratios (GITMESH_BENCH_FLEET=medium|small)",
  async run({ runs, log }) {
    const preset = process.env.GITMESH_BENCH_FLEET ?? "large";
    if (!isFleetPreset(preset)) throw new Error(`GITMESH_BENCH_FLEET=${preset}: not a fleet preset`);
    const fleet = generateFleet(FLEET_PRESETS[preset]);
    const dir = mkdtempSync(join(tmpdir(), "gitmesh-bench-cold-"));
    const fleetFile = join(dir, "fleet.json");
    writeFileSync(fleetFile, JSON.stringify({ files: fleet.files, discovery: [...fleet.discovery] }));
    const loadBefore = load1();
    const reports: ColdChildReport[] = [];
    try {
      for (let i = 0; i < runs; i++) {
        const r = await runChild(fleetFile, 2);
        const w = r.warm.at(-1)!;
        log(
          `sample ${i + 1}/${runs}: import ${round(r.importModules.cpuMs)} ms CPU; cold load ${round(r.cold.load.cpuMs)} + translate ${round(r.cold.translate.cpuMs)} ms CPU ` +
            `(${round(r.cold.translate.ms)} ms wall, GC ${round(r.cold.translate.gcMs)} ms); warm load ${round(w.load.cpuMs)} + translate ${round(w.translate.cpuMs)} ms CPU (${round(w.translate.ms)} ms wall, GC ${round(w.translate.gcMs)} ms); load average ${load1()}`,
        );
        reports.push(r);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const warm = reports.flatMap((r) => r.warm);
    const med = (pick: (s: { load: Step; translate: Step }) => number, from: readonly { load: Step; translate: Step }[]) => median(from.map(pick));
    const cold = reports.map((r) => r.cold);
    const importCpu = median(reports.map((r) => r.importModules.cpuMs));
    const importMs = median(reports.map((r) => r.importModules.ms));
    // Per child, so that each ratio compares figures measured under the same load.
    const perChild = (f: (r: ColdChildReport, w: { load: Step; translate: Step }) => number) => median(reports.map((r) => f(r, r.warm.at(-1)!)));
    const firstRatioCpu = perChild((r, w) => r.cold.translate.cpuMs / w.translate.cpuMs);
    const firstRatioWall = perChild((r, w) => r.cold.translate.ms / w.translate.ms);
    const restartRatioCpu = perChild((r, w) => (r.importModules.cpuMs + r.cold.load.cpuMs + r.cold.translate.cpuMs) / (w.load.cpuMs + w.translate.cpuMs));
    const restartRatioWall = perChild((r, w) => (r.importModules.ms + r.cold.load.ms + r.cold.translate.ms) / (w.load.ms + w.translate.ms));
    const figures: Figure[] = [
      { label: `${preset}: resources rendered`, value: reports[0]!.resources, unit: "objects" },
      { label: `${preset}: samples (fresh processes) / warm runs`, value: reports.length, unit: `processes / ${warm.length} warm runs` },
      { label: `${preset}: import of config + translate modules (cold), CPU`, value: round(importCpu), unit: `ms (${round(importMs)} ms wall)` },
      { label: `${preset}: load desired state, cold (first use of the validators), CPU`, value: round(med((s) => s.load.cpuMs, cold)), unit: `ms (${round(med((s) => s.load.ms, cold))} ms wall)` },
      { label: `${preset}: load desired state, warm, CPU`, value: round(med((s) => s.load.cpuMs, warm)), unit: `ms (${round(med((s) => s.load.ms, warm))} ms wall)` },
      { label: `${preset}: first translation in a fresh process, CPU`, value: round(med((s) => s.translate.cpuMs, cold)), unit: `ms (${round(med((s) => s.translate.ms, cold))} ms wall)` },
      { label: `${preset}: warm translation in the same process, CPU`, value: round(med((s) => s.translate.cpuMs, warm)), unit: `ms (${round(med((s) => s.translate.ms, warm))} ms wall)` },
      { label: `${preset}: GC pauses in the first / a warm translation`, value: round(med((s) => s.translate.gcMs, cold)), unit: `ms / ${round(med((s) => s.translate.gcMs, warm))} ms` },
      { label: `${preset}: first / warm translation, CPU`, value: round(firstRatioCpu, 2), unit: `x (wall ${round(firstRatioWall, 2)}x)` },
      { label: `${preset}: restart (import + load + translate) / warm (load + translate), CPU`, value: round(restartRatioCpu, 2), unit: `x (wall ${round(restartRatioWall, 2)}x)` },
      { label: "load average (1 min) before / after", value: loadBefore, unit: `/ ${load1()}` },
    ];
    return figures;
  },
};
