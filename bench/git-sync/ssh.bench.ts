/**
 * `npm run bench -- git-ssh`: Git over SSH (src/git-sync/ssh-transport.ts: isomorphic-git over ssh2)
 * against the two alternatives, on one repository served by the same bare repository over a real
 * sshd (test/helpers/sshd.ts) and over smart HTTP (git http-backend):
 *
 * - the first sync of 2,000 files (shallow fetch and reading every blob) over SSH, and over HTTP by the
 *   same isomorphic-git code: the ratio is the cost of the SSH transport;
 * - the same over SSH by the git command line (`git clone --bare --depth=1` with GIT_SSH_COMMAND and
 *   `-o UserKnownHostsFile`, then `git cat-file --batch-all-objects --batch`), the other way the brief
 *   named: it needs git and ssh binaries in the server image and gives up the object-store reads of
 *   src/git-sync (a checkout-free, in-process pipeline);
 * - a poll that finds nothing new (the steady state: every 30 s) over SSH and over HTTP.
 *
 * Medians of `--runs` samples (default 3), in this process (the servers are separate processes).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { silentLogger } from "../../src/core/index.js";
import { createGitSource, type DesiredStateLoader, type GitLocation } from "../../src/git-sync/index.js";
import { startGitServer } from "../../test/helpers/git-server.js";
import { startSshd } from "../../test/helpers/sshd.js";
import { median, round, time, type Benchmark, type Figure } from "../harness.js";

const exec = promisify(execFile);
const FILES = 2_000;

const nothing: DesiredStateLoader<null> = {
  load: () => ({ state: null, diagnostics: [] }),
  update: () => ({ state: null, diagnostics: [], changedKeys: new Set() }),
};

export const benchmark: Benchmark = {
  name: "git-ssh",
  description: "Git over SSH (isomorphic-git on ssh2) against the same over HTTP and against the git CLI over ssh",
  async run(ctx) {
    const git = await startGitServer();
    const sshd = await startSshd({ root: git.root });
    const dirs: string[] = [];
    const dir = () => {
      const d = mkdtempSync(join(tmpdir(), "gitmesh-bench-ssh-"));
      dirs.push(d);
      return d;
    };
    try {
      await git.createRepo("cfg");
      const files = Object.fromEntries(Array.from({ length: FILES }, (_, i) => [`ws/${i % 20}/rt-${i}.yaml`, `apiVersion: networking.gloo.solo.io/v2\nkind: RouteTable\nmetadata:\n  name: rt-${i}\n  namespace: ws-${i % 20}\nspec:\n  hosts: [h${i}.example.com]\n`]));
      await git.commitFiles("cfg", files, "bench");
      const ssh = { privateKeyFile: sshd.clientKeyFile, knownHostsFile: sshd.knownHostsFile };
      const viaSsh = (): GitLocation => ({ kind: "remote", url: sshd.url("cfg"), cacheDir: dir(), ssh });
      const viaHttp = (): GitLocation => ({ kind: "remote", url: git.url("cfg"), cacheDir: dir() });
      const source = (location: GitLocation) => createGitSource({ location, loader: nothing, logger: silentLogger, retry: { attempts: 1 } });
      const gitCli = async () => {
        const target = join(dir(), "c.git");
        const sshCommand = `ssh -i ${sshd.clientKeyFile} -o IdentitiesOnly=yes -o UserKnownHostsFile=${sshd.knownHostsFile} -o StrictHostKeyChecking=yes -o BatchMode=yes`;
        await exec("git", ["clone", "--quiet", "--bare", "--depth=1", sshd.url("cfg"), target], { env: { ...process.env, GIT_SSH_COMMAND: sshCommand } });
        await exec("git", ["--git-dir", target, "cat-file", "--batch-all-objects", "--batch"], { maxBuffer: 256 * 1024 * 1024 });
      };

      const first: Record<"ssh" | "http" | "cli", number[]> = { ssh: [], http: [], cli: [] };
      const poll: Record<"ssh" | "http", number[]> = { ssh: [], http: [] };
      for (let i = 0; i < Math.max(1, ctx.runs); i++) {
        const s = source(viaSsh());
        first.ssh.push((await time(() => s.sync())).ms);
        poll.ssh.push((await time(() => s.sync())).ms);
        const h = source(viaHttp());
        first.http.push((await time(() => h.sync())).ms);
        poll.http.push((await time(() => h.sync())).ms);
        first.cli.push((await time(gitCli)).ms);
        ctx.log(`sample ${i + 1}: first sync ssh ${round(first.ssh.at(-1)!)} ms, http ${round(first.http.at(-1)!)} ms, git CLI over ssh ${round(first.cli.at(-1)!)} ms`);
      }
      const m = (xs: number[]) => round(median(xs));
      return [
        { label: `first sync of ${FILES} files over SSH (gitmesh, median)`, value: m(first.ssh), unit: "ms" },
        { label: `first sync of ${FILES} files over HTTP (gitmesh, median)`, value: m(first.http), unit: "ms" },
        { label: `clone + read every object over SSH (git CLI, median)`, value: m(first.cli), unit: "ms" },
        { label: "ratio first sync SSH / HTTP (gitmesh)", value: round(median(first.ssh) / median(first.http)), unit: "x" },
        { label: "ratio first sync gitmesh SSH / git CLI SSH", value: round(median(first.ssh) / median(first.cli)), unit: "x" },
        { label: "poll, nothing new, over SSH (median)", value: m(poll.ssh), unit: "ms" },
        { label: "poll, nothing new, over HTTP (median)", value: m(poll.http), unit: "ms" },
        { label: "ratio poll SSH / HTTP", value: round(median(poll.ssh) / median(poll.http)), unit: "x" },
      ] satisfies Figure[];
    } finally {
      await sshd.stop();
      await git.stop();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    }
  },
};
