/**
 * `npm run bench -- diff`: `gitmesh diff` of a one-policy change (the fleet generator's
 * OutlierDetectionPolicy edit) on generated fleets of 20 clusters × 500 services and 100 clusters ×
 * 1,000 services, as CI runs it: a fresh process through bin/gitmesh.js, both revisions read from a
 * real Git repository, Markdown comments and report.json written with --out-dir. Discovery from each
 * source users have, alternated: the audit branch's `discovery/<cluster>.yaml` (canonical YAML, as the
 * audit writer writes it; what `gitmesh diff` reads without --discovery) and a directory of JSON
 * snapshot files (`--discovery <dir>`, `<dir>/<cluster>/snapshot.json`). GITMESH_BENCH_DIFF_DISCOVERY=dir
 * or =audit runs one.
 *
 * Floor, in the same run and also a fresh process (bench/diff/floor.ts): load both configuration
 * trees from disk, JSON.parse the discovery files, translate both revisions in full, JSON.stringify
 * both outputs. Figures per size: wall, CPU and peak RSS of each process (medians), and the ratio of
 * the diff to the floor.
 *
 * The `gitmesh` measured is the one users run: compiled (tsc -p tsconfig.build.json) into a temporary
 * directory laid out as the container image lays it out (bin/, dist/, package.json, node_modules; no
 * src/), so bin/gitmesh.js runs dist/ and no TypeScript is transpiled at start-up (in a checkout, tsx
 * adds about 1.5 s of module loading). GITMESH_BENCH_DIFF_BUILD=0 runs the checkout through tsx instead.
 *
 * Knobs: GITMESH_BENCH_DIFF_SIZES=20,100 (default both), GITMESH_BENCH_DIFF_ROOT=<checkout> runs the
 * `gitmesh` of another checkout (an unpacked older commit, for before/after figures on one machine; built
 * the same way).
 */
import { spawn, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { generateFleet, type Fleet, type FleetFile } from "../fleet/generate.js";
import { FLEET_PRESETS } from "../fleet/presets.js";
import { MB, median, round, type Benchmark, type Figure } from "../harness.js";
import { canonicalYaml } from "../../src/core/index.js";
import { discoveryPath, RENDER_RECORD_PATH, renderRecordBytes } from "../../src/git-sync/index.js";
import { loadDesiredState } from "../../src/config/index.js";
import { renderRecord, translateAll } from "../../src/translate/index.js";

const AUDIT_BRANCH = "gitmesh/rendered";

const here = dirname(fileURLToPath(import.meta.url));
const root = fileURLToPath(new URL("../..", import.meta.url));
const rusagePreload = join(here, "rusage.mjs");

interface ProcessFigures {
  readonly wallMs: number;
  readonly cpuMs: number;
  readonly maxRssKb: number;
  /** The end of what the process wrote to stderr. */
  readonly err?: string;
}

function git(cwd: string, args: readonly string[], env: Readonly<Record<string, string>> = {}): string {
  const r = spawnSync("git", args, {
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env, GIT_AUTHOR_NAME: "bench", GIT_AUTHOR_EMAIL: "bench@example.com", GIT_COMMITTER_NAME: "bench", GIT_COMMITTER_EMAIL: "bench@example.com", GIT_AUTHOR_DATE: "1700000000 +0000", GIT_COMMITTER_DATE: "1700000000 +0000" },
  });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

function writeFiles(dir: string, files: readonly FleetFile[]): void {
  for (const f of files) {
    mkdirSync(dirname(join(dir, f.path)), { recursive: true });
    writeFileSync(join(dir, f.path), f.content);
  }
}

/**
 * base/ (the configuration of the base revision), repo/ (a Git repository: base, then head, and the audit
 * branch gitmesh/rendered holding discovery/<cluster>.yaml as the audit writer writes it), discovery/ (JSON).
 */
export function prepare(fleet: Fleet, dir: string): { discoveryBytes: number; auditDiscoveryBytes: number } {
  const base = join(dir, "base");
  const repo = join(dir, "repo");
  writeFiles(base, fleet.files);
  mkdirSync(repo);
  git(repo, ["init", "-q", "-b", "main"]);
  writeFiles(repo, fleet.files);
  git(repo, ["add", "-A"]);
  git(repo, ["commit", "-q", "-m", "base"]);
  writeFiles(repo, [fleet.onePolicyChange.after]);
  git(repo, ["commit", "-q", "-am", "one policy"]);
  let discoveryBytes = 0;
  let auditDiscoveryBytes = 0;
  const audit = join(dir, "audit");
  for (const [cluster, snapshot] of fleet.discovery) {
    mkdirSync(join(dir, "discovery", cluster), { recursive: true });
    const document = { apiVersion: "gitmesh.io/v1alpha1", kind: "DiscoverySnapshot", ...snapshot };
    const json = JSON.stringify(document, null, 2) + "\n";
    discoveryBytes += json.length;
    writeFileSync(join(dir, "discovery", cluster, "snapshot.json"), json);
    // The audit writer's file: canonical YAML of the snapshot at discovery/<cluster>.yaml (src/git-sync/audit.ts).
    const yaml = canonicalYaml(document);
    auditDiscoveryBytes += yaml.length;
    mkdirSync(join(audit, "discovery"), { recursive: true });
    writeFileSync(join(audit, discoveryPath(cluster)), yaml);
  }
  // The render record of base (#39), as the audit writer keeps it next to the output: what lets `gitmesh diff`
  // translate only what the change reaches. (The output YAML itself is not written: no diff reads it.)
  const documents = new Map([...fleet.discovery].map(([c, s]) => [c, { apiVersion: "gitmesh.io/v1alpha1", kind: "DiscoverySnapshot", ...s }]));
  const record = renderRecord(translateAll(loadDesiredState(fleet.files).state, fleet.discovery));
  mkdirSync(join(audit, ".gitmesh"), { recursive: true });
  writeFileSync(join(audit, RENDER_RECORD_PATH), renderRecordBytes(documents, record));
  // The audit branch: a commit of its own (no source files on it), built with an index of its own; its trailer names base.
  const index = { GIT_INDEX_FILE: join(dir, "audit.index") };
  git(audit, ["--git-dir", join(repo, ".git"), "--work-tree", ".", "add", "-A"], index);
  const tree = git(repo, ["write-tree"], index);
  const baseCommit = git(repo, ["rev-parse", "HEAD~1"]);
  git(repo, ["update-ref", `refs/heads/${AUDIT_BRANCH}`, git(repo, ["commit-tree", tree, "-m", `rendered\n\nSource-Commit: ${baseCommit}`])]);
  return { discoveryBytes, auditDiscoveryBytes };
}

/** `gitmesh` of `checkout` built as the image holds it (bin, dist, package.json, node_modules): its root. */
export function buildLikeTheImage(checkout: string, into: string): string {
  const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
  const r = spawnSync(process.execPath, [tsc, "-p", join(checkout, "tsconfig.build.json"), "--outDir", join(into, "dist")], { cwd: checkout, stdio: ["ignore", "pipe", "pipe"] });
  if (r.status !== 0) throw new Error(`building ${checkout}: ${r.stdout.toString()}${r.stderr.toString()}`);
  cpSync(join(checkout, "bin"), join(into, "bin"), { recursive: true });
  cpSync(join(checkout, "package.json"), join(into, "package.json"));
  symlinkSync(join(checkout, "node_modules"), join(into, "node_modules"));
  return into;
}

/** One child process: wall time measured here, CPU and peak RSS reported by the child itself (rusage.mjs). */
function measure(args: readonly string[], cwd: string, usageFile: string): Promise<ProcessFigures> {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(process.execPath, ["--import", rusagePreload, ...args], { cwd, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, GITMESH_BENCH_RUSAGE: usageFile } });
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err = (err + d).slice(-4000)));
    child.on("error", reject);
    child.on("close", (code) => {
      const wallMs = Number(process.hrtime.bigint() - start) / 1e6;
      // gitmesh diff exits 1 when head has translation errors; the fleet has none, so anything but 0 is a failure.
      if (code !== 0) return reject(new Error(`node ${args.join(" ")} exited ${code}: ${err}`));
      const usage = JSON.parse(readFileSync(usageFile, "utf8")) as { cpuMs: number; maxRssKb: number };
      resolve({ wallMs, cpuMs: usage.cpuMs, maxRssKb: usage.maxRssKb, err });
    });
  });
}

function medianOf(list: readonly ProcessFigures[]): ProcessFigures {
  return { wallMs: median(list.map((p) => p.wallMs)), cpuMs: median(list.map((p) => p.cpuMs)), maxRssKb: median(list.map((p) => p.maxRssKb)) };
}

const SIZES: Readonly<Record<string, keyof typeof FLEET_PRESETS>> = { "20": "medium", "100": "large" };

export const benchmark: Benchmark = {
  name: "diff",
  description: "gitmesh diff of a one-policy change at 20 and 100 clusters (fresh process, real Git, JSON discovery) vs two translations + JSON.stringify",
  async run(ctx) {
    const sizes = (process.env.GITMESH_BENCH_DIFF_SIZES ?? "20,100").split(",").map((s) => s.trim());
    const sources = (process.env.GITMESH_BENCH_DIFF_DISCOVERY ?? "dir,audit,audit-full").split(",").map((s) => s.trim());
    for (const s of sources) if (s !== "dir" && s !== "audit" && s !== "audit-full") throw new Error(`GITMESH_BENCH_DIFF_DISCOVERY: ${s} is not dir, audit or audit-full`);
    const checkout = process.env.GITMESH_BENCH_DIFF_ROOT ?? root;
    const built = process.env.GITMESH_BENCH_DIFF_BUILD !== "0";
    const how = built ? "built" : "tsx";
    const buildDir = built ? mkdtempSync(join(tmpdir(), "gitmesh-bench-diff-build-")) : undefined;
    const figures: Figure[] = [];
    try {
      if (buildDir !== undefined) ctx.log(`building ${checkout} as the image holds it (tsc -p tsconfig.build.json)`);
      const gitmeshRoot = buildDir === undefined ? checkout : buildLikeTheImage(checkout, buildDir);
      const bin = join(gitmeshRoot, "bin", "gitmesh.js");
      for (const size of sizes) {
        const preset = SIZES[size];
        if (preset === undefined) throw new Error(`GITMESH_BENCH_DIFF_SIZES: ${size} is not one of ${Object.keys(SIZES).join(", ")}`);
        const dir = mkdtempSync(join(tmpdir(), `gitmesh-bench-diff-${size}-`));
        try {
          const fleet = generateFleet(FLEET_PRESETS[preset]);
          const { discoveryBytes, auditDiscoveryBytes } = prepare(fleet, dir);
          ctx.log(
            `${size} clusters: ${fleet.counts.configObjects} configuration objects, ${fleet.counts.services} services, ` +
              `${round(discoveryBytes / MB)} MB of JSON discovery, ${round(auditDiscoveryBytes / MB)} MB of YAML discovery on the audit branch`,
          );
          const usage = join(dir, "usage.json");
          const common = (out: string) => [bin, "diff", "--repo", join(dir, "repo"), "--base", "HEAD~1", "--head", "HEAD", "--out-dir", join(dir, out)];
          const LABELS = {
            dir: "discovery from a JSON directory",
            audit: "discovery and the base's render record from the audit branch (the default)",
            "audit-full": "discovery from the audit branch, base translated (--no-stored-base)",
          } as const;
          const variants = sources.map((source) => ({
            source,
            label: LABELS[source as keyof typeof LABELS],
            out: `out-${source}`,
            args: source === "dir" ? [...common(`out-${source}`), "--discovery", join(dir, "discovery")] : source === "audit" ? common(`out-${source}`) : [...common(`out-${source}`), "--no-stored-base"],
            runs: [] as ProcessFigures[],
          }));
          const floorArgs = ["--import", "tsx", join(here, "floor.ts"), join(dir, "base"), join(dir, "repo"), join(dir, "discovery")];
          const floors: ProcessFigures[] = [];
          // Alternated, so that a change in the machine's load falls on every side.
          for (let i = 0; i < ctx.runs; i++) {
            floors.push(await measure(floorArgs, root, usage));
            ctx.log(`  floor run ${i + 1}: ${round(floors.at(-1)!.wallMs / 1000, 2)} s`);
            for (const v of variants) {
              v.runs.push(await measure(v.args, gitmeshRoot, usage));
              // Which way the base was had is the point of the audit variants: a fallback would measure the other one.
              const took = /base: from the render record/.test(v.runs.at(-1)!.err ?? "");
              if (v.source === "audit" && !took) throw new Error(`diff did not use the base's render record: ${v.runs.at(-1)!.err ?? ""}`);
              if (v.source === "audit-full" && took) throw new Error("diff --no-stored-base used the render record");
              ctx.log(`  diff (${v.label}) run ${i + 1}: ${round(v.runs.at(-1)!.wallMs / 1000, 2)} s, ${round(v.runs.at(-1)!.maxRssKb / 1024)} MB`);
            }
          }
          const f = medianOf(floors);
          figures.push(
            { label: `${size} clusters: floor (load + translate both, JSON.stringify both) wall`, value: round(f.wallMs / 1000, 2), unit: "s" },
            { label: `${size} clusters: floor CPU`, value: round(f.cpuMs / 1000, 2), unit: "s" },
            { label: `${size} clusters: floor peak RSS`, value: round(f.maxRssKb / 1024), unit: "MB" },
          );
          for (const v of variants) {
            const d = medianOf(v.runs);
            const at = `${size} clusters, ${v.label}`;
            figures.push(
              { label: `${at}: gitmesh diff (${how}) wall (median of ${ctx.runs})`, value: round(d.wallMs / 1000, 2), unit: "s" },
              { label: `${at}: gitmesh diff CPU`, value: round(d.cpuMs / 1000, 2), unit: "s" },
              { label: `${at}: gitmesh diff peak RSS`, value: round(d.maxRssKb / 1024), unit: "MB" },
              { label: `${at}: diff / floor, wall`, value: round(d.wallMs / f.wallMs, 2), unit: "x" },
              { label: `${at}: diff / floor, CPU`, value: round(d.cpuMs / f.cpuMs, 2), unit: "x" },
              { label: `${at}: diff / floor, peak RSS`, value: round(d.maxRssKb / f.maxRssKb, 2), unit: "x" },
            );
          }
          const reports = variants.map((v) => readFileSync(join(dir, v.out, "report.json"), "utf8"));
          figures.push({ label: `${size} clusters: report.json size`, value: round((reports[0]?.length ?? 0) / 1024), unit: "KiB" });
          figures.push({ label: `${size} clusters: report.json the same from every variant (1 = yes)`, value: reports.every((r) => r === reports[0]) ? 1 : 0, unit: "" });
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      }
    } finally {
      if (buildDir !== undefined) rmSync(buildDir, { recursive: true, force: true });
    }
    return figures;
  },
};
