/**
 * `npm run bench -- api-diff`: the server's `GET /api/diff` on the large fleet (100 clusters × 1,000
 * services, the diff bench's one-policy change), as the server runs it — the built code
 * (dist/, laid out as the image holds it) in this process, discovery held in memory as the server
 * holds it. Two sides, alternated, each in a fresh service:
 *
 * - **in-thread**: the report rendered on this thread (dist/server/diff-render.js's renderDiffReport,
 *   what diff-service did before #20's change);
 * - **worker**: createDiffService, which renders in a worker thread.
 *
 * Per side, for the first diff of a service (the worker is started and sent the whole discovery) and a
 * second one (another commit pair, same discovery): wall time, and the longest stall of this thread's
 * event loop while the diff ran (perf_hooks.monitorEventLoopDelay) — the time the server's relay,
 * webhooks and health checks would have waited. Medians of --runs.
 *
 * Knob: GITMESH_BENCH_DIFF_ROOT=<checkout> builds another checkout's `gitmesh` (it must have diff-render.js).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { buildLikeTheImage, prepare } from "../diff/diff.bench.js";
import { generateFleet } from "../fleet/generate.js";
import { FLEET_PRESETS } from "../fleet/presets.js";
import { median, round, type Benchmark, type Figure } from "../harness.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

interface Sample {
  readonly wallMs: number;
  readonly stallMs: number;
}

type Discovery = readonly { cluster: string; checksum: string; snapshot: unknown }[];
type Revision = { ref: string; commit: string; files: readonly unknown[] };
interface Built {
  readonly createDiffService: (o: { location: unknown; discovery: () => Promise<Discovery>; logger: unknown }) => { diff(b: string, h: string): Promise<unknown>; close(): Promise<void> };
  readonly renderDiffReport: (b: Revision, h: Revision, d: ReadonlyMap<string, unknown>) => string;
  readonly readRevisionFiles: (o: { location: unknown; ref: string; logger: unknown }) => Promise<{ commit: { oid: string }; files: readonly unknown[] }>;
  readonly readDiscoveryDirectory: (dir: string) => Promise<{ snapshots: ReadonlyMap<string, unknown> }>;
  readonly logger: unknown;
}

/** Wall time of `fn` and the longest event-loop stall of this thread meanwhile (a timer turn after it, so a stall at its end is seen). */
async function measure(fn: () => Promise<unknown>): Promise<Sample> {
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const start = performance.now();
  await fn();
  const wallMs = performance.now() - start;
  await sleep(20);
  delay.disable();
  return { wallMs, stallMs: delay.max / 1e6 };
}

export const benchmark: Benchmark = {
  name: "api-diff",
  description: "GET /api/diff on 100 clusters: wall and the server thread's longest stall, rendered in-thread vs in the diff worker",
  async run(ctx) {
    const checkout = process.env.GITMESH_BENCH_DIFF_ROOT ?? root;
    const buildDir = mkdtempSync(join(tmpdir(), "gitmesh-bench-api-diff-build-"));
    const dir = mkdtempSync(join(tmpdir(), "gitmesh-bench-api-diff-"));
    try {
      ctx.log(`building ${checkout} as the image holds it`);
      const dist = join(buildLikeTheImage(checkout, buildDir), "dist");
      const load = async (p: string) => (await import(pathToFileURL(join(dist, p)).href)) as Record<string, unknown>;
      const core = await load("core/index.js");
      const built = {
        ...(await load("server/index.js")),
        ...(await load("server/diff-render.js")),
        ...(await load("git-sync/index.js")),
        ...(await load("discovery/index.js")),
        logger: (core.createMemoryLogger as (n: string) => { logger: unknown })("bench").logger,
      } as unknown as Built;
      const fleet = generateFleet(FLEET_PRESETS.large);
      prepare(fleet, dir);
      const repo = join(dir, "repo");
      const location = { kind: "local", path: repo };
      const [head, base] = execFileSync("git", ["-C", repo, "rev-parse", "HEAD", "HEAD~1"], { encoding: "utf8" }).trim().split("\n") as [string, string];
      const { snapshots } = await built.readDiscoveryDirectory(join(dir, "discovery"));
      const discovery: Discovery = [...snapshots].map(([cluster, snapshot]) => ({ cluster, checksum: cluster, snapshot }));
      ctx.log(`100 clusters, ${fleet.counts.services} services; diffs ${base.slice(0, 8)}..${head.slice(0, 8)} then back`);
      const read = async (ref: string): Promise<Revision> => {
        const r = await built.readRevisionFiles({ location, ref, logger: built.logger });
        return { ref, commit: r.commit.oid, files: r.files };
      };
      const inThread = async (b: string, h: string) => {
        const [rb, rh] = [await read(b), await read(h)];
        JSON.parse(built.renderDiffReport(rb, rh, snapshots));
      };
      const samples: Record<string, Sample[]> = {};
      const add = (label: string, s: Sample) => {
        (samples[label] ??= []).push(s);
        ctx.log(`  ${label}: ${round(s.wallMs)} ms wall, longest stall ${round(s.stallMs)} ms`);
      };
      for (let i = 0; i < ctx.runs; i++) {
        add("in-thread, first diff", await measure(() => inThread(base, head)));
        add("in-thread, second diff", await measure(() => inThread(head, base)));
        const service = built.createDiffService({ location, discovery: () => Promise.resolve(discovery), logger: built.logger });
        try {
          add("worker, first diff", await measure(() => service.diff(base, head)));
          add("worker, second diff", await measure(() => service.diff(head, base)));
        } finally {
          await service.close();
        }
      }
      const figures: Figure[] = [];
      for (const [label, list] of Object.entries(samples)) {
        figures.push({ label: `${label}: wall (median of ${ctx.runs})`, value: round(median(list.map((s) => s.wallMs))), unit: "ms" });
        figures.push({ label: `${label}: longest stall of the server thread`, value: round(median(list.map((s) => s.stallMs))), unit: "ms" });
      }
      for (const which of ["first", "second"]) {
        const w = samples[`worker, ${which} diff`]!;
        const t = samples[`in-thread, ${which} diff`]!;
        figures.push({ label: `${which} diff: worker / in-thread, wall`, value: round(median(w.map((s, i) => s.wallMs / t[i]!.wallMs)), 2), unit: "x" });
        figures.push({ label: `${which} diff: worker / in-thread, longest stall`, value: round(median(w.map((s, i) => s.stallMs / t[i]!.stallMs)), 3), unit: "x" });
      }
      return figures;
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(buildDir, { recursive: true, force: true });
    }
  },
};
