/**
 * `npm run bench -- git-sync`: git-sync against a real smart-HTTP server (git http-backend).
 *
 * - A configuration repository of 10,000 files (one object each, bench/config's generator).
 * - First sync (clone depth 1 + read every blob + load) and the sync of a commit that changes one
 *   file, each next to `git fetch --depth=1` by the git command line on the same repository in the
 *   same run (ratio = git-sync / git CLI). The "git part" runs git-sync with a loader that does
 *   nothing, to separate transport + object reading from YAML parsing and validation.
 * - The audit writer: a 100-cluster output (50 resources per cluster), first write, then a write
 *   where one resource in one cluster changed, to a local repository and pushed to the server.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { silentLogger } from "../../src/core/index.js";
import { createAuditWriter, createConfigLoader, createGitSource, type DesiredStateLoader, type RenderedResource } from "../../src/git-sync/index.js";
import { startGitServer } from "../../test/helpers/git-server.js";
import { generateConfigRepo } from "../config/generate-config-repo.js";
import { round, time, type Benchmark, type Figure } from "../harness.js";

const exec = promisify(execFile);
const FILES = 10_000;
const CLUSTERS = 100;
const PER_CLUSTER = 50;

const noopLoader: DesiredStateLoader<number> = {
  load: (files) => ({ state: files.length, diagnostics: [] }),
  update: (prev, changed) => ({ state: prev + changed.length, diagnostics: [], changedKeys: new Set(changed.map((f) => f.path)) }),
};

export const benchmark: Benchmark = {
  name: "git-sync",
  description: `git-sync of a ${FILES.toLocaleString("en")}-file repository vs git fetch; audit write of ${CLUSTERS} clusters`,
  async run({ runs, log }) {
    const server = await startGitServer();
    const tmp: string[] = [];
    const dir = (p: string) => {
      const d = mkdtempSync(join(tmpdir(), p));
      tmp.push(d);
      return d;
    };
    const figures: Figure[] = [];
    try {
      await server.createRepo("cfg");
      const files = generateConfigRepo({ objects: FILES, docsPerFile: 1 });
      const seed = await time(() => server.commitFiles("cfg", Object.fromEntries(files.map((f) => [f.path, f.content])), "10k files"));
      log(`repository of ${files.length} files committed in ${round(seed.ms)} ms`);
      const url = server.url("cfg");

      const cliRepo = dir("bench-cli-");
      await exec("git", ["init", "--quiet", "--bare", cliRepo]);
      // the same strategy as git-sync: a shallow first fetch, then plain incremental fetches
      const cliFetch = (depth: string[]) => () => exec("git", ["--git-dir", cliRepo, "fetch", "--quiet", ...depth, url, "+refs/heads/main:refs/remotes/origin/main"]);

      const cli1 = await time(cliFetch(["--depth=1"]));
      const gitOnly = createGitSource({ location: { kind: "remote", url, cacheDir: dir("bench-noop-") }, loader: noopLoader, logger: silentLogger });
      const ours1 = await time(() => gitOnly.sync());
      const full = createGitSource({ location: { kind: "remote", url, cacheDir: dir("bench-full-") }, loader: createConfigLoader(), logger: silentLogger });
      const full1 = await time(() => full.sync());
      if (full1.result.kind !== "updated") throw new Error(`first sync was ${full1.result.kind}`);
      log(`first sync: git CLI fetch ${round(cli1.ms)} ms, git-sync (no parse) ${round(ours1.ms)} ms, git-sync + load ${round(full1.ms)} ms`);
      figures.push(
        { label: `first sync: git fetch --depth=1 (CLI), ${FILES} files`, value: round(cli1.ms), unit: "ms" },
        { label: "first sync: git-sync fetch + read all blobs", value: round(ours1.ms), unit: "ms" },
        { label: "first sync: git-sync fetch + read + load/validate", value: round(full1.ms), unit: "ms" },
        { label: "first sync ratio git-sync (no parse) / git CLI", value: round(ours1.ms / cli1.ms, 2), unit: "x" },
        { label: "first sync ratio git-sync + load / git CLI", value: round(full1.ms / cli1.ms, 2), unit: "x" },
      );

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
      const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      log(`one-file commit: git CLI ${round(med(cliTimes))} ms, git-sync ${round(med(oursTimes))} ms, + load ${round(med(fullTimes))} ms`);
      figures.push(
        { label: "one-file commit: git fetch (CLI) (median)", value: round(med(cliTimes)), unit: "ms" },
        { label: "one-file commit: git-sync fetch + diff + read (median)", value: round(med(oursTimes)), unit: "ms" },
        { label: "one-file commit: git-sync + incremental load (median)", value: round(med(fullTimes)), unit: "ms" },
        { label: "one-file commit ratio git-sync (no parse) / git CLI", value: round(med(oursTimes) / med(cliTimes), 2), unit: "x" },
        { label: "one-file commit ratio git-sync + load / git CLI", value: round(med(fullTimes) / med(cliTimes), 2), unit: "x" },
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
          target: kind === "local" ? { kind, path: server.repoPath(`audit-${kind}`) } : { kind, url: server.url(`audit-${kind}`), cacheDir: dir("bench-audit-") },
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
        log(`audit ${kind}: first ${round(first.ms)} ms, one change ${round(med(times))} ms, unchanged ${round(unchanged.ms)} ms`);
        figures.push(
          { label: `audit ${kind}: first write, ${CLUSTERS} clusters × ${PER_CLUSTER}`, value: round(first.ms), unit: "ms" },
          { label: `audit ${kind}: write with one changed resource, other objects reused (median)`, value: round(med(times)), unit: "ms" },
          { label: `audit ${kind}: write with no change`, value: round(unchanged.ms), unit: "ms" },
        );
      }
      return figures;
    } finally {
      await server.stop();
      for (const d of tmp) rmSync(d, { recursive: true, force: true });
    }
  },
};
