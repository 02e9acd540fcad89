/**
 * `gitmesh render <repo-dir> --discovery <dir> [--cluster NAME] [--out DIR]`: translate a
 * configuration repository against discovery snapshots (or plain `kubectl get -o yaml` manifests,
 * one directory per cluster) and write the Istio resources each cluster must run, in the audit
 * layout `clusters/<cluster>/<namespace>/<kind>/<name>.yaml` under --out, or as one multi-document
 * YAML stream on stdout. Diagnostics go to stderr like `validate` prints them; exit 1 on errors.
 */
import { mkdir, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Command } from "commander";
import { canonicalYaml, formatDiagnostic, Severity, sortDiagnostics, type Diagnostic } from "../core/index.js";
import { loadDesiredState, readConfigDirectory } from "../config/index.js";
import { readDiscoveryDirectory } from "../discovery/index.js";
import { renderedPath } from "../git-sync/index.js";
import { translateAll, type ClusterOutput } from "../translate/index.js";
import { ExitCode, UsageError, type CliIo } from "./io.js";

interface RenderFlags {
  readonly discovery?: string;
  readonly cluster?: string;
  readonly out?: string;
}

export function registerRender(program: Command, io: CliIo): void {
  program
    .command("render")
    .summary("render the Istio resources every cluster must run")
    .description(
      "Load the configuration repository <repo-dir>, read one discovery directory per cluster under\n" +
        "--discovery (DiscoverySnapshot files or kubectl-style manifests), translate, and print the\n" +
        "rendered resources as a multi-document YAML stream — or, with --out DIR, write them to\n" +
        "DIR/clusters/<cluster>/<namespace>/<kind>/<name>.yaml (each rendered cluster's directory is\n" +
        "replaced). Diagnostics go to stderr as `file:line:col: severity CODE: message`.\n\n" +
        "Exit status: 0 no errors (warnings allowed), 1 errors found, 2 usage error.",
    )
    .argument("<repo-dir>", "root of the configuration repository")
    .option("--discovery <dir>", "discovery directory: one sub-directory per cluster (required)")
    .option("--cluster <name>", "render only this cluster")
    .option("--out <dir>", "write files in the audit layout under this directory instead of printing")
    .addHelpText("after", "\nExamples:\n  gitmesh render examples/repo-layout --discovery examples/discovery\n  gitmesh render . --discovery ./discovery --cluster cluster1 --out rendered/")
    .action(async (repo: string, flags: RenderFlags) => {
      if (flags.discovery === undefined) throw new UsageError("render: --discovery <dir> is required (one sub-directory per cluster)");
      await requireDirectory(repo, "<repo-dir>");
      await requireDirectory(flags.discovery, "--discovery");
      const loaded = loadDesiredState(await readConfigDirectory(repo));
      const discovery = await readDiscoveryDirectory(flags.discovery);
      const result = translateAll(loaded.state, discovery.snapshots);
      let clusters = [...result.clusters.values()];
      if (flags.cluster !== undefined) {
        const only = result.clusters.get(flags.cluster);
        if (only === undefined) throw new UsageError(`render: unknown cluster "${flags.cluster}"; known clusters: ${[...result.clusters.keys()].join(", ") || "(none)"}`);
        clusters = [only];
      }
      const diagnostics = sortDiagnostics([
        ...loaded.diagnostics.map((d) => withRoot(d, repo)),
        ...discovery.diagnostics,
        ...result.diagnostics.map((d) => withRoot(d, repo)),
      ]);
      for (const d of diagnostics) io.err(`${formatDiagnostic(d)}\n`);
      const count = clusters.reduce((n, c) => n + c.resources.length, 0);
      if (flags.out !== undefined) {
        await writeTree(flags.out, clusters);
        io.out(`rendered ${count} resource${count === 1 ? "" : "s"} for ${clusters.length} cluster${clusters.length === 1 ? "" : "s"} into ${join(flags.out, "clusters")}\n`);
      } else {
        io.out(stream(clusters));
      }
      const errors = diagnostics.filter((d) => d.severity === Severity.Error).length;
      const warnings = diagnostics.filter((d) => d.severity === Severity.Warning).length;
      io.err(`${errors === 0 ? "ok" : "failed"}: ${count} resources, ${errors} error${errors === 1 ? "" : "s"}, ${warnings} warning${warnings === 1 ? "" : "s"}\n`);
      io.exitCode = errors > 0 ? ExitCode.Failed : ExitCode.Ok;
    });
}

/** The multi-document stream: each document preceded by a `# clusters/<cluster>/…` comment naming its audit path. */
export function stream(clusters: readonly ClusterOutput[]): string {
  const docs: string[] = [];
  for (const c of clusters) for (const r of c.resources) docs.push(`# ${renderedPath(c.cluster, r)}\n${canonicalYaml(r)}`);
  return docs.map((d) => `---\n${d}`).join("");
}

async function writeTree(out: string, clusters: readonly ClusterOutput[]): Promise<void> {
  for (const c of clusters) {
    // Replace the cluster's directory so that objects no longer rendered disappear.
    await rm(join(out, "clusters", c.cluster), { recursive: true, force: true });
    for (const r of c.resources) {
      const path = join(out, renderedPath(c.cluster, r));
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, canonicalYaml(r));
    }
  }
}

async function requireDirectory(dir: string, what: string): Promise<void> {
  const info = await stat(dir).catch(() => undefined);
  if (!info) throw new UsageError(`render: ${what} ${dir} does not exist`);
  if (!info.isDirectory()) throw new UsageError(`render: ${what} ${dir} is not a directory`);
}

function withRoot(d: Diagnostic, dir: string): Diagnostic {
  return d.file === undefined ? d : { ...d, file: join(dir, d.file) };
}
