/**
 * Benchmark runner: `npm run bench [-- <name>… | --list] [--runs N] [--json]`.
 *
 * Finds every `bench/** /*.bench.ts` exporting `benchmark`, runs the selected ones (all by default)
 * one at a time, each in a child process of its own so that its peak memory (maxRSS from
 * process.resourceUsage()) is its own, and prints a table of figures. Figures are not tests: nothing
 * here fails on a slow result.
 */
import { spawn } from "node:child_process";
import { readdir } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Benchmark, Figure } from "./harness.js";
import { round } from "./harness.js";

const benchDir = dirname(fileURLToPath(import.meta.url));

interface Found {
  readonly file: string;
  readonly benchmark: Benchmark;
}

interface ChildReport {
  readonly figures: Figure[];
  readonly maxRssKb: number;
  readonly wallMs: number;
}

async function findBenchmarks(): Promise<Found[]> {
  const files: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) await walk(path);
      else if (e.name.endsWith(".bench.ts")) files.push(path);
    }
  };
  await walk(benchDir);
  files.sort();
  const found: Found[] = [];
  for (const file of files) {
    const mod = (await import(pathToFileURL(file).href)) as { benchmark?: Benchmark };
    if (mod.benchmark) found.push({ file, benchmark: mod.benchmark });
  }
  return found;
}

function parseArgs(argv: readonly string[]): { names: string[]; runs: number; list: boolean; json: boolean; child?: string } {
  const names: string[] = [];
  let runs = 3;
  let list = false;
  let json = false;
  let child: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--list") list = true;
    else if (a === "--json") json = true;
    else if (a === "--runs") runs = Number(argv[++i]);
    else if (a.startsWith("--runs=")) runs = Number(a.slice(7));
    else if (a === "--child") child = argv[++i];
    else if (a.startsWith("-")) throw new Error(`unknown flag ${a}; use --list, --runs N, --json`);
    else names.push(a);
  }
  if (!Number.isInteger(runs) || runs < 1) throw new Error("--runs needs a positive integer");
  return { names, runs, list, json, ...(child !== undefined ? { child } : {}) };
}

/** Child mode: run one benchmark and write its report as JSON on stdout. */
async function runChild(file: string, runs: number): Promise<void> {
  const mod = (await import(pathToFileURL(file).href)) as { benchmark: Benchmark };
  const start = process.hrtime.bigint();
  const figures = await mod.benchmark.run({ runs, log: (m) => process.stderr.write(`  ${m}\n`) });
  const report: ChildReport = {
    figures,
    maxRssKb: process.resourceUsage().maxRSS,
    wallMs: Number(process.hrtime.bigint() - start) / 1e6,
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

function runInChild(file: string, runs: number): Promise<ChildReport> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--expose-gc", "--import", "tsx", fileURLToPath(import.meta.url), "--child", file, "--runs", String(runs)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`benchmark ${relative(benchDir, file)} exited with ${code}`));
      try {
        resolve(JSON.parse(out.trim().split("\n").at(-1)!) as ChildReport);
      } catch (err) {
        reject(new Error(`benchmark ${relative(benchDir, file)} printed no report`, { cause: err }));
      }
    });
  });
}

function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  const line = (r: readonly string[]) => r.map((cell, c) => (c === 2 ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join("  ").trimEnd();
  return [line(rows[0]!), widths.map((w) => "-".repeat(w)).join("  "), ...rows.slice(1).map(line)].join("\n");
}

async function mainRun(argv: readonly string[]): Promise<number> {
  const args = parseArgs(argv);
  if (args.child !== undefined) {
    await runChild(args.child, args.runs);
    return 0;
  }
  const all = await findBenchmarks();
  if (args.list) {
    for (const f of all) process.stdout.write(`${f.benchmark.name.padEnd(16)} ${f.benchmark.description}  (${relative(benchDir, f.file)})\n`);
    return 0;
  }
  const unknown = args.names.filter((n) => !all.some((f) => f.benchmark.name === n));
  if (unknown.length > 0) {
    process.stderr.write(`unknown benchmark(s): ${unknown.join(", ")}; known: ${all.map((f) => f.benchmark.name).join(", ")}\n`);
    return 2;
  }
  const selected = args.names.length > 0 ? all.filter((f) => args.names.includes(f.benchmark.name)) : all;
  const rows: string[][] = [["benchmark", "figure", "value", "unit"]];
  const reports: Record<string, ChildReport> = {};
  for (const f of selected) {
    process.stderr.write(`running ${f.benchmark.name}: ${f.benchmark.description}\n`);
    const report = await runInChild(f.file, args.runs);
    reports[f.benchmark.name] = report;
    for (const fig of report.figures) rows.push([f.benchmark.name, fig.label, String(fig.value), fig.unit]);
    rows.push([f.benchmark.name, "peak RSS of the benchmark process (maxRSS)", String(round(report.maxRssKb / 1024)), "MB"]);
    rows.push([f.benchmark.name, "benchmark process wall time", String(round(report.wallMs / 1000, 2)), "s"]);
  }
  if (args.json) process.stdout.write(`${JSON.stringify(reports, null, 2)}\n`);
  else process.stdout.write(`${table(rows)}\n\nnode ${process.version}, ${process.platform}/${process.arch}\n`);
  return 0;
}

mainRun(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
  },
);
