/**
 * `gitmesh diff --repo <path|url> --base <ref> --head <ref>`: render both revisions with the same
 * discovery and report what changes in every cluster — the pull-request review of rendered Istio.
 * Reads revisions straight from Git objects (no checkout); discovery comes from --discovery <dir>
 * or, by default, from `discovery/` on the audit branch. Exit 1 when head has errors.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { mkdir, mkdtemp, open, rm, stat, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import { createLogger, formatDiagnostic, sortDiagnostics, type Diagnostic } from "../core/index.js";
import { discoveryFromFiles, readDiscoveryDirectory, type DiscoverySnapshot } from "../discovery/index.js";
import { allowedDeletions, compareRenders, reportFails, DEFAULT_MAX_COMMENT_BODIES, GitRefNotFoundError, isSshUrl, readRevisionFiles, readStoredRender, renderJsonChunks, renderMarkdown, resolveRevision, type DiffReport, type GitLocation, type SshRemoteOptions } from "../git-sync/index.js";
import type { CiContext } from "../git-host/index.js";
import { loadRevisions, renderedSide, renderRevisions, renderRevisionsFromStored } from "../translate/index.js";
import { createPrometheusClient, prometheusUrlProblem, reviewTraffic, trafficEdges } from "../traffic/index.js";
import { readFlagFile, readTokenFile } from "./flag-files.js";
import { ExitCode, integerFlag, UsageError, type CliIo } from "./io.js";

interface DiffFlags {
  readonly repo?: string;
  readonly base?: string;
  readonly head?: string;
  readonly subPath?: string;
  readonly discovery?: string;
  readonly discoveryFromAudit?: boolean;
  readonly auditBranch?: string;
  readonly format: string;
  readonly maxCommentChars: string;
  readonly maxComments: string;
  readonly outDir?: string;
  readonly tokenEnv: string;
  readonly sshKey?: string;
  readonly sshKnownHosts?: string;
  readonly sshAcceptNewHostKeys?: boolean;
  readonly post?: string;
  readonly pr?: string;
  readonly storedBase: boolean;
  readonly prometheus?: string;
  readonly prometheusTokenFile?: string;
  readonly prometheusCaFile?: string;
  readonly trafficWindow: string;
}

export function registerDiff(program: Command, io: CliIo): void {
  program
    .command("diff")
    .summary("show the rendered Istio diff between two revisions (pull-request review)")
    .description(
      "Render --base and --head of the configuration repository with the same discovery and compare the\n" +
        "outputs per cluster and resource: added, removed, changed (with a unified YAML diff), plus the\n" +
        "diagnostics head introduces or fixes. Markdown comes as one or more comment bodies, each under\n" +
        "--max-comment-chars and never cutting one resource's diff; --out-dir writes comment-<n>.md and\n" +
        "report.json for CI to post.\n\n" +
        "Discovery: --discovery <dir> (one sub-directory per cluster), or by default the newest\n" +
        "discovery/ on the audit branch of the repository (--discovery-from-audit).\n" +
        "A remote --repo is read over HTTPS (a token is taken from the environment variable named by --token-env)\n" +
        "or SSH (git@host:org/repo.git, ssh://[user@]host[:port]/path) with --ssh-key (default ~/.ssh/id_ed25519,\n" +
        "id_ecdsa or id_rsa; an encrypted key's passphrase in GITMESH_SSH_KEY_PASSPHRASE); the host key must be in\n" +
        "--ssh-known-hosts (default ~/.ssh/known_hosts): an unknown or changed host key is refused.\n\n" +
        "--post github|gitlab posts the report to the pull/merge request: one sticky comment (several when\n" +
        "long; updated in place on every run, surplus parts deleted) and a commit status gitmesh/diff on the\n" +
        "head commit. In CI it needs no flags: GitHub reads GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_API_URL\n" +
        "and the pull request from GITHUB_EVENT_PATH; GitLab reads GITLAB_TOKEN (api scope), CI_API_V4_URL,\n" +
        "CI_PROJECT_ID, CI_MERGE_REQUEST_IID and CI_COMMIT_SHA. --pr <n> names the pull request elsewhere.\n\n" +
        "--prometheus <url> reads the mesh's live traffic (Istio's standard metrics) over --traffic-window (default 1h):\n" +
        "each changed route, destination and security policy is annotated with its requests per second and 5xx rate,\n" +
        "and the comment opens with the changes that touch live traffic (a route that carries traffic removed or\n" +
        "re-pointed, an AuthorizationPolicy or PeerAuthentication removed, a gateway losing a host). A Prometheus that\n" +
        "cannot be read is said in the report and on stderr; the diff itself is unaffected.\n\n" +
        "Exit status: 0 head has no errors, 1 head has errors, 2 usage error.",
    )
    .option("--repo <path|url>", "repository: a local path, an http(s) URL or an SSH URL (required)")
    .option("--base <rev>", "base revision: branch, tag, commit, HEAD~1, origin/main, main...HEAD (merge base) (required)")
    .option("--head <rev>", "head revision, spelled the same way (required)")
    .option("--sub-path <dir>", "configuration root inside the repository")
    .option("--discovery <dir>", "discovery directory: one sub-directory per cluster")
    .option("--discovery-from-audit", "read discovery/ from the audit branch (the default without --discovery)")
    .option("--audit-branch <branch>", "audit branch (default: gitmesh.yaml's auditBranch, else gitmesh/rendered)")
    .option("--format <format>", "markdown or json", "markdown")
    .option("--max-comment-chars <n>", "maximum characters of one Markdown comment body", "65000")
    .option("--max-comments <n>", "maximum number of Markdown comment bodies; the last says what it leaves out (report.json and --format json hold everything)", String(DEFAULT_MAX_COMMENT_BODIES))
    .option("--out-dir <dir>", "write comment-<n>.md files and report.json here instead of printing")
    .option("--token-env <name>", "environment variable holding the Git token for a remote --repo", "GITMESH_GIT_TOKEN")
    .option("--ssh-key <file>", "private key for an SSH --repo (default: ~/.ssh/id_ed25519, id_ecdsa or id_rsa, the first that exists)")
    .option("--ssh-known-hosts <file>", "known_hosts holding the SSH server's host key (default ~/.ssh/known_hosts)")
    .option("--ssh-accept-new-host-keys", "trust an SSH host that known_hosts does not list (its fingerprint is printed); a changed key is still refused")
    .option("--no-stored-base", "translate the base in full even when the audit branch holds its render record for the same discovery")
    .option("--post <platform>", "post the report as a sticky pull-request comment and a commit status: github or gitlab")
    .option("--pr <number>", "with --post: the pull request (GitHub) or merge request iid (GitLab); default from the CI environment")
    .option("--prometheus <url>", "Prometheus with Istio's standard metrics: annotate the report with live traffic")
    .option("--prometheus-token-file <file>", "file holding a bearer token for --prometheus")
    .option("--prometheus-ca-file <file>", "PEM CA bundle trusted for an https --prometheus")
    .option("--traffic-window <duration>", "window of the traffic figures, a PromQL duration", "1h")
    .addHelpText("after", "\nExamples:\n  gitmesh diff --repo . --base origin/main --head HEAD --discovery ./discovery\n  gitmesh diff --repo . --base HEAD~1 --head HEAD --discovery ./discovery\n  gitmesh diff --repo . --base origin/main...HEAD --head HEAD   # from where the branch forked\n  gitmesh diff --repo https://github.com/org/mesh.git --base main --head pr-42 --out-dir diff/\n  gitmesh diff --repo git@github.com:org/mesh.git --base main --head pr-42 --ssh-key ~/.ssh/deploy_key\n  gitmesh diff --repo . --base origin/main --head HEAD --post github   # in a pull_request workflow")
    .action(async (flags: DiffFlags) => {
      if (flags.repo === undefined || flags.base === undefined || flags.head === undefined) throw new UsageError("diff: --repo, --base and --head are required");
      if (flags.format !== "markdown" && flags.format !== "json") throw new UsageError(`diff: --format must be markdown or json, not ${JSON.stringify(flags.format)}`);
      if (flags.discovery !== undefined && flags.discoveryFromAudit === true) throw new UsageError("diff: use either --discovery or --discovery-from-audit");
      if (flags.post !== undefined && flags.post !== "github" && flags.post !== "gitlab") throw new UsageError(`diff: --post must be github or gitlab, not ${JSON.stringify(flags.post)}`);
      if (flags.post !== undefined && flags.format !== "markdown") throw new UsageError("diff: --post posts the Markdown report; drop --format json");
      if (flags.pr !== undefined && flags.post === undefined) throw new UsageError("diff: --pr goes with --post");
      const pr = flags.pr === undefined ? undefined : Number(flags.pr);
      if (pr !== undefined && (!Number.isInteger(pr) || pr < 1)) throw new UsageError(`diff: --pr must be a pull request number, not ${JSON.stringify(flags.pr)}`);
      if (flags.prometheus === undefined && (flags.prometheusTokenFile !== undefined || flags.prometheusCaFile !== undefined)) throw new UsageError("diff: --prometheus-token-file and --prometheus-ca-file go with --prometheus <url>");
      if (flags.prometheus !== undefined) {
        const problem = prometheusUrlProblem(flags.prometheus);
        if (problem !== undefined) throw new UsageError(`diff: --prometheus: ${problem}`);
      }
      if (!/^[1-9][0-9]*(s|m|h|d)$/.test(flags.trafficWindow)) throw new UsageError(`diff: --traffic-window must be a duration such as 30m, 1h or 1d, not ${JSON.stringify(flags.trafficWindow)}`);
      const prometheusToken = await readTokenFile("--prometheus-token-file", flags.prometheusTokenFile);
      const prometheusCa = await readFlagFile("--prometheus-ca-file", flags.prometheusCaFile);
      const env = io.env ?? process.env;
      const maxChars = Number.parseInt(flags.maxCommentChars, 10);
      if (!Number.isInteger(maxChars) || maxChars < 1000) throw new UsageError("diff: --max-comment-chars must be a number of at least 1000");
      const maxBodies = integerFlag("diff: --max-comments", flags.maxComments, 1, 10_000);
      const logger = createLogger({ name: "gitmesh.diff", level: "warn", format: "human", write: (line) => io.err(line + "\n") });
      const temp: string[] = [];
      try {
        const location = await locate(flags.repo, { token: env[flags.tokenEnv], ssh: () => sshSettings(flags, env) }, temp);
        const revision = async (spec: string) => {
          try {
            // A local repository takes every revision spelling (HEAD~1, origin/main, A...B, short SHAs);
            // a remote URL is asked for a branch, tag or full SHA.
            let ref = spec;
            if (location.kind === "local") ref = (await resolveRevision(gitdirOf(location.path), spec)).oid;
            else if (/[~^]|\.\.\.|^HEAD$/.test(spec)) throw new UsageError(`diff: ${spec}: relative revisions need a local clone (--repo <path>); a remote --repo takes a branch, tag or full commit SHA`);
            return await readRevisionFiles({ location, ref, logger, retry: { attempts: 3 }, ...(flags.subPath === undefined ? {} : { subPath: flags.subPath }) });
          } catch (err) {
            // A revision the repository does not have: the command line names nothing (2), as a wrong flag.
            if (err instanceof GitRefNotFoundError) throw new UsageError(`diff: ${err.message}`);
            throw err;
          }
        };
        const [base, head] = [await revision(flags.base), await revision(flags.head)];
        // Where to post is settled before rendering: a missing token is a usage error (exit 2), at once.
        let target: CiContext | undefined;
        // The platform clients (@octokit/rest, @gitbeaker/rest: ~200 ms to load) only when posting.
        const host = flags.post === undefined ? undefined : await import("../git-host/index.js");
        if (host !== undefined && (flags.post === "github" || flags.post === "gitlab")) {
          const { ciContextFromEnv, GitHostConfigError } = host;
          try {
            target = ciContextFromEnv(flags.post, env, { headCommit: head.commit.oid, readText: (p) => readFileSync(p, "utf8"), ...(pr === undefined ? {} : { pr }) });
          } catch (err) {
            if (err instanceof GitHostConfigError) throw new UsageError(`diff ${err.message}`);
            throw err;
          }
        }

        const loaded = loadRevisions(base.files, head.files);

        let snapshots: ReadonlyMap<string, DiscoverySnapshot>;
        let discoveryDiagnostics: Diagnostic[];
        // The audit commit discovery was read from (default), for the stored-base check below.
        let discoveryCommit: string | undefined;
        if (flags.discovery !== undefined) {
          const info = await stat(flags.discovery).catch(() => undefined);
          if (!info?.isDirectory()) throw new UsageError(`diff: --discovery ${flags.discovery} is not a directory`);
          ({ snapshots, diagnostics: discoveryDiagnostics } = await readDiscoveryDirectory(flags.discovery));
        } else {
          const branch = flags.auditBranch ?? loaded.head.state.settings.auditBranch;
          let files;
          try {
            let commit;
            ({ files, commit } = await readRevisionFiles({ location, ref: branch, subPath: "discovery", logger, retry: { attempts: 3 } }));
            discoveryCommit = commit.oid;
          } catch (err) {
            if (err instanceof GitRefNotFoundError) {
              throw new UsageError(`diff: no discovery — the audit branch ${branch} (or its discovery/ folder) is missing; pass --discovery <dir>`);
            }
            throw err;
          }
          ({ snapshots, diagnostics: discoveryDiagnostics } = discoveryFromFiles(files, { displayRoot: `${branch}:discovery` }));
        }

        // From the base's render record on the audit branch (same base commit, same discovery) only what can
        // differ is translated; otherwise the base in full and the head incrementally from it. compareRenders then
        // skips by identity what the head kept. The report is the same either way.
        let renders;
        if (flags.storedBase) {
          const branch = flags.auditBranch ?? loaded.head.state.settings.auditBranch;
          const found = await readStoredRender({
            gitdir: location.kind === "local" ? gitdirOf(location.path) : location.cacheDir,
            branch,
            sourceCommit: base.commit.oid,
            discovery: discoveryCommit === undefined ? { snapshots } : { auditCommit: discoveryCommit },
          }).catch((err: unknown) => ({ why: `reading it failed: ${err instanceof Error ? err.message : String(err)}` }));
          if ("stored" in found) {
            renders = renderRevisionsFromStored(loaded, snapshots, found.stored.render);
            if (renders === undefined) io.err(`base: the render record of ${base.commit.oid.slice(0, 12)} on ${branch} does not fit this diff; translating it\n`);
            else io.err(`base: from the render record of ${base.commit.oid.slice(0, 12)} on ${branch} (${found.stored.auditCommit.slice(0, 12)})\n`);
          } else {
            io.err(`base: translated (${found.why})\n`);
          }
        }
        renders ??= renderRevisions(loaded, snapshots);
        const headSide = renderedSide(flags.head, head.commit.oid, renders.head);
        // Consent to a mass deletion: gitmesh.yaml's allowMassDeletion, and the head commit's trailers.
        const allowMassDeletion = [...headSide.allowMassDeletion, ...allowedDeletions(head.commit.message).clusters];
        const baseSide = renderedSide(flags.base, base.commit.oid, renders.base);
        let report = compareRenders(baseSide, { ...headSide, allowMassDeletion });
        if (flags.prometheus !== undefined) {
          const client = createPrometheusClient({ url: flags.prometheus, ...(prometheusToken === undefined ? {} : { token: prometheusToken }), ...(prometheusCa === undefined ? {} : { caPem: prometheusCa }) });
          const window = flags.trafficWindow;
          try {
            const edges = await trafficEdges(client, { window });
            report = { ...report, traffic: reviewTraffic({ report, base: baseSide.clusters, head: headSide.clusters, edges, source: client.url, window }) };
          } catch (err) {
            // The review stands without traffic: say so in the report and here, never fail the diff for it.
            const why = err instanceof Error ? err.message : String(err);
            io.err(`warning: no live traffic in the report: ${why}\n`);
            report = { ...report, traffic: { source: client.url, window, touches: [], objects: [], unavailable: why } };
          }
        }
        for (const d of sortDiagnostics(discoveryDiagnostics)) io.err(`${formatDiagnostic(d)}\n`);

        if (flags.format === "json") {
          // In pieces (one per changed cluster): a report of every object of a large fleet is hundreds of MB.
          if (flags.outDir !== undefined) await writeOut(flags.outDir, [], report);
          else for (const chunk of renderJsonChunks(report)) io.out(chunk);
        } else {
          const bodies = renderMarkdown(report, { maxChars, maxBodies });
          if (flags.outDir !== undefined) {
            await writeOut(flags.outDir, bodies, report);
            io.err(`wrote ${bodies.length} comment bod${bodies.length === 1 ? "y" : "ies"} and report.json to ${flags.outDir}\n`);
          } else if (target === undefined) {
            io.out(bodies.join("\n"));
          }
          if (target !== undefined && host !== undefined) {
            // A refusal (GitHostApiError) propagates: main prints it and exits 1.
            const status = host.statusOfReport(report);
            const posted = await host.createReporter(target).post({ bodies, headSha: target.headSha, ...status });
            const where = target.platform === "github" ? `${target.owner}/${target.repo}#${target.pullNumber}` : `!${target.mergeRequestIid}`;
            io.err(
              `posted to ${where}: ${posted.created} comment(s) created, ${posted.updated} updated, ${posted.deleted} deleted` +
                `${posted.url === undefined ? "" : ` (${posted.url})`}; status gitmesh/diff ${status.state} on ${target.headSha.slice(0, 12)}\n`,
            );
          }
        }
        const blocking = report.risks.filter((r) => r.blocking);
        io.err(
          (report.rejected === undefined ? `${String(report.clusters.length)} cluster(s) change` : `head would be rejected (${String(report.rejected.errors.length)} error(s)); clusters keep ${report.rejected.keeps.slice(0, 12)}`) +
            `; head: ${String(report.headErrors)} error(s), ${String(report.introduced.length)} diagnostic(s) introduced, ${String(report.fixed.length)} fixed` +
            (report.risks.length > 0 ? `; ${String(report.risks.length)} risk(s)${blocking.length > 0 ? `, ${String(blocking.length)} needing consent` : ""}` : "") +
            "\n",
        );
        io.exitCode = reportFails(report) ? ExitCode.Failed : ExitCode.Ok;
      } finally {
        for (const d of temp) await rm(d, { recursive: true, force: true });
      }
    });
}

async function locate(repo: string, access: { readonly token: string | undefined; readonly ssh: () => SshRemoteOptions }, temp: string[]): Promise<GitLocation> {
  const local = await stat(repo).catch(() => undefined);
  if (local?.isDirectory() === true) return { kind: "local", path: repo };
  const https = /^https?:\/\//i.test(repo);
  if (!https && !isSshUrl(repo)) throw new UsageError(`diff: --repo ${repo} is neither a directory, an http(s) URL nor an SSH URL (git@host:org/repo.git, ssh://host/path)`);
  const ssh = https ? undefined : access.ssh();
  const cacheDir = await mkdtemp(join(tmpdir(), "gitmesh-diff-"));
  temp.push(cacheDir);
  return { kind: "remote", url: repo, cacheDir, depth: null, ...(access.token && https ? { auth: { token: access.token } } : {}), ...(ssh ? { ssh } : {}) };
}

/** The key and known_hosts of an SSH --repo: the flags, else what `ssh` itself would use. */
function sshSettings(flags: DiffFlags, env: Readonly<Record<string, string | undefined>>): SshRemoteOptions {
  const home = env.HOME ?? homedir();
  const privateKeyFile = flags.sshKey ?? ["id_ed25519", "id_ecdsa", "id_rsa"].map((n) => join(home, ".ssh", n)).find((f) => existsSync(f));
  if (privateKeyFile === undefined) throw new UsageError(`diff: an SSH --repo needs a private key: --ssh-key <file> (none of ~/.ssh/id_ed25519, id_ecdsa, id_rsa exists)`);
  const knownHostsFile = flags.sshKnownHosts ?? join(home, ".ssh", "known_hosts");
  const passphrase = env.GITMESH_SSH_KEY_PASSPHRASE;
  if (!existsSync(knownHostsFile) && flags.sshAcceptNewHostKeys !== true) {
    throw new UsageError(`diff: ${knownHostsFile} does not exist: give --ssh-known-hosts <file> with the server's host key (\`ssh-keyscan <host>\` prints it — check its fingerprint), or --ssh-accept-new-host-keys`);
  }
  return {
    privateKeyFile,
    ...(existsSync(knownHostsFile) ? { knownHostsFile } : {}),
    ...(passphrase ? { passphrase } : {}),
    acceptUnknownHosts: flags.sshAcceptNewHostKeys === true,
  };
}

async function writeOut(dir: string, bodies: readonly string[], report: DiffReport): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [i, body] of bodies.entries()) await writeFile(join(dir, `comment-${i + 1}.md`), body);
  const file = await open(join(dir, "report.json"), "w");
  try {
    for (const chunk of renderJsonChunks(report)) await file.write(chunk);
  } finally {
    await file.close();
  }
}

/** The git directory of a local repository: `<path>/.git` for a work tree, else the path (bare). */
function gitdirOf(path: string): string {
  const dotGit = join(path, ".git");
  return existsSync(dotGit) && statSync(dotGit).isDirectory() ? dotGit : path;
}

