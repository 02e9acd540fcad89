/**
 * `npm run bench -- git-sync`: git-sync against a real smart-HTTP server (git http-backend), which runs
 * in a process of its own (git-server-child.ts), not in the benchmark's event loop.
 *
 * - A configuration repository of 10,000 files (one object each, bench/config's generator).
 * - First sync, both sides in fresh processes, alternated over the samples (`--runs N`, default 3):
 *   gitmesh (sync-child.ts: createGitSource, shallow fetch and reading every blob, a loader that does
 *   nothing) against git (`git clone --bare --depth=1` then `git cat-file --batch-all-objects --batch`,
 *   which inflates every object): medians of wall time, CPU time and peak RSS, and the ratios to git.
 *   Then one first sync with the real loader (YAML parsing and validation) in this process.
 * - The sync of a commit that changes one file, next to `git fetch` by the git command line on the
 *   same repository in the same run (ratio = git-sync / git CLI).
 * - The audit writer: a 100-cluster output (50 resources per cluster), first write, then a write
 *   where one resource in one cluster changed, to a local repository and pushed to the server.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { silentLogger } from "../../src/core/index.js";
import { createAuditWriter, createConfigLoader, createGitSource, type DesiredStateLoader, type RenderedResource } from "../../src/git-sync/index.js";
import { startGitServer } from "../../test/helpers/git-server.js";
import { generateConfigRepo } from "../config/generate-config-repo.js";
import { median, round, time, type Benchmark, type Figure } from "../harness.js";
import { startServerProcess } from "./server-process.js";

const exec = promisify(execFile);
const FILES = 10_000;
const CLUSTERS = 100;
const PER_CLUSTER = 50;

interface SideRun {
  readonly ms: number;
  readonly cpuMs: number;
  readonly maxRssKb: number;
}

const here = dirname(fileURLToPath(import.meta.url));

/** gitmesh's first sync in a fresh process (sync-child.ts). */
async function gitmeshSide(url: string, cacheDir: string): Promise<SideRun & { files: number }> {
  const { stdout } = await exec(process.execPath, ["--import", "tsx", join(here, "sync-child.ts"), url, cacheDir], { maxBuffer: 1 << 20 });
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as SideRun & { files: number };
}

/** git's side: a shallow bare clone, then every object read and inflated; wall, CPU and peak RSS from GNU time. */
async function gitSide(url: string, dest: string): Promise<SideRun> {
  const script = `git clone --quiet --bare --depth=1 "$1" "$2" && git --git-dir "$2" cat-file --batch-all-objects --batch > /dev/null`;
  const { stderr } = await exec("/usr/bin/time", ["-f", "gitside %e %U %S %M", "sh", "-c", script, "sh", url, dest], { maxBuffer: 1 << 20 });
  const m = /gitside ([\d.]+) ([\d.]+) ([\d.]+) (\d+)/.exec(stderr);
  if (!m) throw new Error(`no timing from /usr/bin/time: ${stderr}`);
  return { ms: Number(m[1]) * 1000, cpuMs: (Number(m[2]) + Number(m[3])) * 1000, maxRssKb: Number(m[4]) };
}

/** Peak RSS of a Node process that does nothing (`args` = e.g. ["--import", "tsx"], how sync-child.ts runs): the floor of the memory ratio. */
async function nodeFloorKb(args: readonly string[]): Promise<number> {
  const { stderr } = await exec("/usr/bin/time", ["-f", "nodefloor %M", process.execPath, ...args, "-e", "0"], { maxBuffer: 1 << 20 });
  const m = /nodefloor (\d+)/.exec(stderr);
  if (!m) throw new Error(`no peak RSS from /usr/bin/time: ${stderr}`);
  return Number(m[1]);
}

const noopLoader: DesiredStateLoader<number> = {
  load: (files) => ({ state: files.length, diagnostics: [] }),
  update: (prev, changed) => ({ state: prev + changed.length, diagnostics: [], changedKeys: new Set(changed.map((f) => f.path)) }),
};

export const benchmark: Benchmark = {
  name: "git-sync",
  description: `first sync of a ${FILES.toLocaleString("en")}-file repository vs git clone + cat-file (server in its own process, sides alternated); one-file commit vs git fetch; audit write of ${CLUSTERS} clusters`,
  async run({ runs, log }) {
    const server = await startGitServer();
    const tmp: string[] = [];
    const dir = (p: string) => {
      const d = mkdtempSync(join(tmpdir(), p));
      tmp.push(d);
      return d;
    };
    const figures: Figure[] = [];
    let stopServerProcess = (): void => undefined;
    try {
      await server.createRepo("cfg");
      const files = generateConfigRepo({ objects: FILES, docsPerFile: 1 });
      const seed = await time(() => server.commitFiles("cfg", Object.fromEntries(files.map((f) => [f.path, f.content])), "10k files"));
      log(`repository of ${files.length} files committed in ${round(seed.ms)} ms`);
      // Every fetch goes to the Git server process; `server` here only writes commits into the bare repositories.
      const serverProcess = await startServerProcess(dirname(server.repoPath("cfg")));
      stopServerProcess = () => serverProcess.child.stdin!.end();
      const serverUrl = serverProcess.baseUrl;
      const url = `${serverUrl}/cfg.git`;

      const cliRepo = dir("bench-cli-");
      await exec("git", ["init", "--quiet", "--bare", cliRepo]);
      // the same strategy as git-sync: a shallow first fetch, then plain incremental fetches
      const cliFetch = (depth: string[]) => () => exec("git", ["--git-dir", cliRepo, "fetch", "--quiet", ...depth, url, "+refs/heads/main:refs/remotes/origin/main"]);

      // First sync, alternated: gitmesh in a fresh process, then git, `runs` times.
      const ours: (SideRun & { files: number })[] = [];
      const theirs: SideRun[] = [];
      const load1 = () => round(loadavg()[0]!, 1);
      const loadBefore = load1();
      for (let i = 0; i < Math.max(1, runs); i++) {
        const o = await gitmeshSide(url, dir("bench-sync-"));
        if (o.files !== files.length) throw new Error(`gitmesh read ${o.files} files, expected ${files.length}`);
        const g = await gitSide(url, join(dir("bench-clone-"), "clone.git"));
        ours.push(o);
        theirs.push(g);
        log(`first sync ${i + 1}: gitmesh ${round(o.ms)} ms (CPU ${round(o.cpuMs)} ms, ${round(o.maxRssKb / 1024)} MiB), git clone + cat-file ${round(g.ms)} ms (CPU ${round(g.cpuMs)} ms, ${round(g.maxRssKb / 1024)} MiB); load ${load1()}`);
      }
      const bare = median([await nodeFloorKb([]), await nodeFloorKb([]), await nodeFloorKb([])]);
      const withTsx = median([await nodeFloorKb(["--import", "tsx"]), await nodeFloorKb(["--import", "tsx"]), await nodeFloorKb(["--import", "tsx"])]);
      const m = (l: readonly SideRun[], k: keyof SideRun) => median(l.map((r) => r[k]));
      const perSample = (k: keyof SideRun) => median(ours.map((o, i) => o[k] / theirs[i]![k]));
      figures.push(
        { label: `first sync, ${FILES} files: samples (alternated, fresh processes)`, value: ours.length, unit: `each side; load average ${loadBefore} → ${load1()}` },
        { label: "first sync: gitmesh fetch + read every blob (median)", value: round(m(ours, "ms")), unit: `ms (CPU ${round(m(ours, "cpuMs"))} ms)` },
        { label: "first sync: git clone --bare --depth=1 + cat-file every object (median)", value: round(m(theirs, "ms")), unit: `ms (CPU ${round(m(theirs, "cpuMs"))} ms)` },
        { label: "first sync ratio gitmesh / git, wall (median of per-sample ratios)", value: round(perSample("ms"), 2), unit: "x" },
        { label: "first sync ratio gitmesh / git, CPU", value: round(perSample("cpuMs"), 2), unit: "x" },
        { label: "first sync peak RSS: gitmesh process / git (largest process)", value: round(m(ours, "maxRssKb") / 1024), unit: `MiB / ${round(m(theirs, "maxRssKb") / 1024)} MiB` },
        // The memory ratio's floor: no Node process gets near git's; the child runs under tsx.
        { label: "peak RSS floor: `node -e 0` / `node --import tsx -e 0`", value: round(bare / 1024), unit: `MiB / ${round(withTsx / 1024)} MiB` },
        { label: "first sync peak RSS ratio gitmesh / git; gitmesh / node -e 0", value: round(m(ours, "maxRssKb") / m(theirs, "maxRssKb"), 2), unit: `x; ${round(m(ours, "maxRssKb") / bare, 2)}x` },
      );

      const gitOnly = createGitSource({ location: { kind: "remote", url, cacheDir: dir("bench-noop-") }, loader: noopLoader, logger: silentLogger });
      await gitOnly.sync();
      const full = createGitSource({ location: { kind: "remote", url, cacheDir: dir("bench-full-") }, loader: createConfigLoader(), logger: silentLogger });
      const full1 = await time(() => full.sync());
      if (full1.result.kind !== "updated") throw new Error(`first sync was ${full1.result.kind}`);
      log(`first sync with the loader (in this process): ${round(full1.ms)} ms`);
      figures.push({ label: "first sync: gitmesh fetch + read + load/validate (in the bench process, once)", value: round(full1.ms), unit: "ms" });
      await exec("git", ["--git-dir", cliRepo, "fetch", "--quiet", "--depth=1", url, "+refs/heads/main:refs/remotes/origin/main"]);

      const cliTimes: number[] = [];
      const oursTimes: number[] = [];
      const fullTimes: number[] = [];
      for (let i = 0; i < Math.max(1, runs); i++) {
        const f = files[(i * 7919) % files.length]!;
        await server.commitFiles("cfg", { [f.path]: f.content.replace(/\n$/, `\n# edit ${i}\n`) }, `edit ${i}`);
        cliTimes.push((await time(cliFetch([]))).ms);
        oursTimes.push((await time(() => gitOnly.sync())).ms);
        const r = await time(() => full.sync());
        if (r.result.kind !== "updated" || r.result.parsedPaths.length !== 1) throw new Error("one-file commit did not parse exactly one file");
        fullTimes.push(r.ms);
      }
      log(`one-file commit: git CLI ${round(median(cliTimes))} ms, git-sync ${round(median(oursTimes))} ms, + load ${round(median(fullTimes))} ms`);
      figures.push(
        { label: "one-file commit: git fetch (CLI) (median)", value: round(median(cliTimes)), unit: "ms" },
        { label: "one-file commit: git-sync fetch + diff + read (median)", value: round(median(oursTimes)), unit: "ms" },
        { label: "one-file commit: git-sync + incremental load (median)", value: round(median(fullTimes)), unit: "ms" },
        { label: "one-file commit ratio git-sync (no parse) / git CLI", value: round(median(oursTimes) / median(cliTimes), 2), unit: "x" },
        { label: "one-file commit ratio git-sync + load / git CLI", value: round(median(fullTimes) / median(cliTimes), 2), unit: "x" },
      );

      // audit writer: 100 clusters × 50 resources
      const output = (edit: number) =>
        new Map(
          Array.from({ length: CLUSTERS }, (_, c) => {
            const cluster = `cluster-${String(c).padStart(3, "0")}`;
            const resources: RenderedResource[] = Array.from({ length: PER_CLUSTER }, (_, r) => ({
              apiVersion: "networking.istio.io/v1",
              kind: r % 2 === 0 ? "VirtualService" : "DestinationRule",
              metadata: { name: `svc-${r}`, namespace: `ns-${r % 5}`, labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": cluster } },
              spec: { hosts: [`svc-${r}.ns-${r % 5}.svc.cluster.local`], revision: c === 42 && r === 7 ? edit : 0 },
            }));
            return [cluster, resources] as const;
          }),
        );
      // incremental translation hands the same objects again for unchanged resources: reuse them
      const base0 = output(0);
      const withEdit = (edit: number) => {
        const m = new Map(base0);
        const rs = [...m.get("cluster-042")!];
        rs[7] = output(edit).get("cluster-042")![7]!;
        m.set("cluster-042", rs);
        return m;
      };
      const discovery = new Map(Array.from({ length: CLUSTERS }, (_, c) => [`cluster-${String(c).padStart(3, "0")}`, { cluster: `c${c}`, namespaces: [] }] as const));
      const input = (edit: number) => ({ clusters: edit === 0 ? base0 : withEdit(edit), discovery, sourceCommit: String(edit).padStart(40, "0"), sourceRef: "refs/heads/main", timestamp: 1_700_000_000 + edit });

      for (const kind of ["local", "remote"] as const) {
        await server.createRepo(`audit-${kind}`);
        await server.commitFiles(`audit-${kind}`, { "README.md": "x\n" }, "init");
        const writer = createAuditWriter({
          target: kind === "local" ? { kind, path: server.repoPath(`audit-${kind}`) } : { kind, url: `${serverUrl}/audit-${kind}.git`, cacheDir: dir("bench-audit-") },
          logger: silentLogger,
        });
        const first = await time(() => writer.write(input(0)));
        const times: number[] = [];
        for (let i = 1; i <= Math.max(1, runs); i++) {
          const r = await time(() => writer.write(input(i)));
          if (r.result.changes.length !== 1) throw new Error("expected one changed cluster");
          times.push(r.ms);
        }
        const unchanged = await time(() => writer.write(input(Math.max(1, runs))));
        if (unchanged.result.commit !== undefined) throw new Error("unchanged output produced a commit");
        log(`audit ${kind}: first ${round(first.ms)} ms, one change ${round(median(times))} ms, unchanged ${round(unchanged.ms)} ms`);
        figures.push(
          { label: `audit ${kind}: first write, ${CLUSTERS} clusters × ${PER_CLUSTER}`, value: round(first.ms), unit: "ms" },
          { label: `audit ${kind}: write with one changed resource, other objects reused (median)`, value: round(median(times)), unit: "ms" },
          { label: `audit ${kind}: write with no change`, value: round(unchanged.ms), unit: "ms" },
        );
      }
      return figures;
    } finally {
      stopServerProcess();
      await server.stop();
      for (const d of tmp) rmSync(d, { recursive: true, force: true });
    }
  },
};
