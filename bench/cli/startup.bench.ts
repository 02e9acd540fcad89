/**
 * `npm run bench -- cli-startup`: wall time of the `gitmesh` command as users run it in pre-commit
 * hooks and CI loops — `--version`, `--help`, `validate examples/repo-layout` — each a fresh process
 * through bin/gitmesh.js, beside the floor of a bare `node -e 0` in the same run (the ratio is what
 * gitmesh adds on top of starting Node). bin/gitmesh.js runs the CLI compiled by `npm install` (.build/)
 * while it is fresh: `--help` is also timed from the sources through tsx (GITMESH_FROM_SOURCE=1), the
 * start every run paid before that build existed.
 *
 * Beside wall time, each figure has the children's CPU time (user + system, Linux: this process's
 * cutime + cstime, in clock ticks, summed over the runs): on a shared, busy machine it is the steadier figure.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { repeat, round, type Benchmark, type Figure } from "../harness.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const bin = fileURLToPath(new URL("../../bin/gitmesh.js", import.meta.url));

function run(args: readonly string[], env: NodeJS.ProcessEnv = process.env): void {
  const r = spawnSync(process.execPath, args, { cwd: root, env, stdio: ["ignore", "ignore", "pipe"] });
  if (r.status !== 0) throw new Error(`node ${args.join(" ")} exited ${r.status}: ${r.stderr.toString()}`);
}

/** CPU time (ms) of this process's waited-for children so far (Linux /proc; NaN elsewhere). */
function childrenCpuMs(): number {
  try {
    // Fields after the command name: state is field 3; cutime and cstime are fields 16 and 17 (ticks, 100/s on Linux).
    const fields = readFileSync("/proc/self/stat", "utf8").replace(/^.*\) /s, "").split(" ");
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** Median wall time and mean CPU time of `runs` runs. */
async function measure(runs: number, fn: () => void): Promise<{ median: number; cpu: number }> {
  const before = childrenCpuMs();
  const r = await repeat(runs, fn);
  return { median: r.median, cpu: (childrenCpuMs() - before) / runs };
}

export const benchmark: Benchmark = {
  name: "cli-startup",
  description: "gitmesh --version / --help / validate of the example repository, fresh process each, vs bare node",
  async run(ctx) {
    const runs = Math.max(5, ctx.runs);
    const floor = await measure(runs, () => run(["-e", "0"]));
    const figures: Figure[] = [
      { label: "node -e 0 (floor), median", value: round(floor.median), unit: "ms" },
      { label: "node -e 0 (floor), CPU per run", value: round(floor.cpu), unit: "ms" },
    ];
    for (const [label, args] of [
      ["gitmesh --version", ["--version"]],
      ["gitmesh --help", ["--help"]],
      ["gitmesh validate examples/repo-layout", ["validate", "examples/repo-layout"]],
    ] as const) {
      ctx.log(label);
      const r = await measure(runs, () => run([bin, ...args]));
      figures.push(
        { label: `${label}, median`, value: round(r.median), unit: "ms" },
        { label: `${label} / floor`, value: round(r.median / floor.median, 2), unit: "x" },
        { label: `${label} CPU / floor CPU`, value: round(r.cpu / floor.cpu, 2), unit: "x" },
      );
    }
    ctx.log("gitmesh --help from the sources (tsx)");
    const tsx = await repeat(runs, () => run([bin, "--help"], { ...process.env, GITMESH_FROM_SOURCE: "1" }));
    figures.push({ label: "gitmesh --help from the sources (tsx), median", value: round(tsx.median), unit: "ms" }, { label: "gitmesh --help from the sources (tsx) / floor", value: round(tsx.median / floor.median, 2), unit: "x" });
    return figures;
  },
};
