/**
 * `npm run bench -- discovery-read`: what `gitmesh diff --discovery <dir>` spends reading the discovery
 * of the 100-cluster fleet (the `large` preset: 100 `<dir>/<cluster>/snapshot.json` files, 83 MB of
 * indented JSON, as bench/diff writes them): `readDiscoveryDirectory` in a fresh process per sample
 * (read, JSON.parse, validate, normalise), CPU of the call alone, module loading excluded.
 *
 * Floor, alternated with it in the same run: readFile + JSON.parse of the same files. With
 * GITMESH_BENCH_DISCOVERY_BASELINE=<checkout> (e.g. a `git worktree` of an older commit with
 * node_modules linked) that checkout's readDiscoveryDirectory is alternated too, for before/after
 * figures from one run. Child: bench/discovery/read-child.ts.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateFleet } from "../fleet/generate.js";
import { FLEET_PRESETS } from "../fleet/presets.js";
import { MB, median, round, type Benchmark, type Figure } from "../harness.js";

const here = dirname(fileURLToPath(import.meta.url));
const root = fileURLToPath(new URL("../..", import.meta.url));

interface Sample {
  readonly cpuMs: number;
  readonly wallMs: number;
  readonly clusters: number;
  readonly diagnostics: number;
}

function child(gitmeshRoot: string, dir: string, mode: "read" | "parse"): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", "tsx", join(here, "read-child.ts"), gitmeshRoot, dir, mode], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    p.stderr.setEncoding("utf8").on("data", (d: string) => (err = (err + d).slice(-4000)));
    p.on("error", reject);
    p.on("close", (code) => (code === 0 ? resolve(JSON.parse(out) as Sample) : reject(new Error(`read-child ${mode} exited ${code}: ${err}`))));
  });
}


export const benchmark: Benchmark = {
  name: "discovery-read",
  description: "readDiscoveryDirectory of the 100-cluster fleet's JSON discovery (fresh process, CPU of the call) vs readFile + JSON.parse; optional baseline checkout",
  async run(ctx) {
    const baseline = process.env.GITMESH_BENCH_DISCOVERY_BASELINE;
    const dir = mkdtempSync(join(tmpdir(), "gitmesh-bench-discovery-"));
    try {
      const fleet = generateFleet(FLEET_PRESETS.large);
      let bytes = 0;
      for (const [cluster, snapshot] of fleet.discovery) {
        mkdirSync(join(dir, cluster), { recursive: true });
        const json = JSON.stringify({ apiVersion: "gitmesh.io/v1alpha1", kind: "DiscoverySnapshot", ...snapshot }, null, 2) + "\n";
        bytes += json.length;
        writeFileSync(join(dir, cluster, "snapshot.json"), json);
      }
      ctx.log(`${fleet.discovery.size} clusters, ${fleet.counts.services} services, ${round(bytes / MB)} MB of JSON discovery`);
      const floor: Sample[] = [];
      const now: Sample[] = [];
      const before: Sample[] = [];
      // Alternated, so that a change in the machine's load falls on every side.
      for (let i = 0; i < ctx.runs; i++) {
        floor.push(await child(root, dir, "parse"));
        now.push(await child(root, dir, "read"));
        if (baseline !== undefined) before.push(await child(baseline, dir, "read"));
        ctx.log(`  run ${i + 1}: floor ${round(floor.at(-1)!.cpuMs)} ms, read ${round(now.at(-1)!.cpuMs)} ms${baseline !== undefined ? `, baseline ${round(before.at(-1)!.cpuMs)} ms` : ""} CPU`);
      }
      for (const s of [...now, ...before]) {
        if (s.clusters !== fleet.discovery.size || s.diagnostics !== 0) throw new Error(`read ${s.clusters} clusters with ${s.diagnostics} diagnostics`);
      }
      const f = median(floor.map((s) => s.cpuMs));
      const n = median(now.map((s) => s.cpuMs));
      const figures: Figure[] = [
        { label: `readFile + JSON.parse (floor) CPU (median of ${ctx.runs})`, value: round(f), unit: "ms" },
        { label: "readDiscoveryDirectory CPU", value: round(n), unit: "ms" },
        { label: "readDiscoveryDirectory / floor, CPU", value: round(n / f, 2), unit: "x" },
      ];
      if (baseline !== undefined) {
        const b = median(before.map((s) => s.cpuMs));
        figures.push(
          { label: "baseline readDiscoveryDirectory CPU", value: round(b), unit: "ms" },
          { label: "baseline / floor, CPU", value: round(b / f, 2), unit: "x" },
          { label: "readDiscoveryDirectory / baseline, CPU", value: round(n / b, 2), unit: "x" },
        );
      }
      return figures;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
