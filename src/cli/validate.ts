/**
 * `gitmesh validate <dir>`: load a configuration repository from disk and report every problem like a
 * compiler does (`file:line:col: error CODE: message`). With `--discovery <dir>` it also translates
 * (as the server would) and reports translation errors — broken service references, conflicts — that
 * the schemas cannot see. Exit 0 when there are no errors (warnings allowed), 1 when there are errors,
 * 2 on usage errors.
 */
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { Option, type Command } from "commander";
import { formatDiagnostic, Severity, sortDiagnostics, type Diagnostic } from "../core/index.js";
import { allObjects, CONFIG_CODES, loadDesiredState, readConfigDirectory, unsupportedObjects } from "../config/index.js";
import { ExitCode, UsageError, type CliIo } from "./io.js";

const OUTPUTS = ["human", "json"] as const;
type Output = (typeof OUTPUTS)[number];

interface ValidateFlags {
  readonly output: Output;
  readonly codes?: boolean;
  readonly discovery?: string;
}

export function registerValidate(program: Command, io: CliIo): void {
  program
    .command("validate")
    .summary("check a configuration repository (YAML, schemas, references, ownership)")
    .description(
      "Load every .yaml/.yml file under <dir> (honouring the ignore rules of <dir>/gitmesh.yaml) and report\n" +
        "YAML syntax errors, schema violations, unsupported kinds, duplicates, references that point at\n" +
        "nothing and objects that no Workspace owns, each as `file:line:col: severity CODE: message`.\n" +
        "A Gloo kind gitmesh does not translate, or a mistyped Gloo apiVersion/kind, is an error (the\n" +
        "server would reject the commit); list kinds another tool applies under `ignoreKinds` in gitmesh.yaml.\n\n" +
        "Exit status: 0 no errors (warnings allowed), 1 errors found or no configuration found, 2 usage error.",
    )
    .usage("<dir> [options]\n       gitmesh validate --codes [--output json]")
    .argument("[dir]", "root of the configuration repository")
    .addOption(new Option("-o, --output <format>", "output format").choices(OUTPUTS).default("human"))
    .option("--discovery <dir>", "also translate against this discovery directory (one sub-directory per cluster, as for render) and report translation errors")
    .option("--codes", "list every diagnostic code with its meaning, then exit")
    .addHelpText(
      "after",
      "\nExamples:\n  gitmesh validate examples/repo-layout\n  gitmesh validate examples/repo-layout --discovery examples/discovery\n  gitmesh validate . --output json | jq '.diagnostics[] | select(.severity == \"error\")'\n  gitmesh validate --codes",
    )
    .action(async (dir: string | undefined, flags: ValidateFlags) => {
      if (flags.codes) {
        printCodes(io, flags.output);
        return;
      }
      if (dir === undefined) throw new UsageError("validate: missing <dir> (the root of a configuration repository)");
      const info = await stat(dir).catch(() => undefined);
      if (!info) throw new UsageError(`validate: ${dir} does not exist`);
      if (!info.isDirectory()) throw new UsageError(`validate: ${dir} is not a directory`);
      if (flags.discovery !== undefined) {
        const d = await stat(flags.discovery).catch(() => undefined);
        if (!d?.isDirectory()) throw new UsageError(`validate: --discovery ${flags.discovery} is not a directory (one sub-directory per cluster)`);
      }
      const files = await readConfigDirectory(dir);
      const loaded = loadDesiredState(files);
      const { state } = loaded;
      let diagnostics = loaded.diagnostics;
      // Translation sees what the schemas cannot (a Service that does not exist, conflicting routes);
      // it needs discovery, so it runs only when given one. Loaded lazily: plain validate stays fast.
      if (flags.discovery !== undefined) {
        const [{ readDiscoveryDirectory }, { translateAll }] = await Promise.all([import("../discovery/index.js"), import("../translate/index.js")]);
        const discovery = await readDiscoveryDirectory(flags.discovery);
        const translated = translateAll(state, discovery.snapshots);
        diagnostics = sortDiagnostics([...diagnostics, ...discovery.diagnostics, ...translated.diagnostics]);
      }
      const errors = diagnostics.filter((d) => d.severity === Severity.Error).length;
      const warnings = diagnostics.filter((d) => d.severity === Severity.Warning).length;
      const summary = {
        files: Object.keys(state.files).length,
        objects: allObjects(state).length,
        unsupported: unsupportedObjects(state).length,
        ignored: state.ignored.length,
        ignoredKinds: diagnostics.filter((d) => d.code === "IGNORED_KIND").length,
        translated: flags.discovery !== undefined,
        errors,
        warnings,
      };
      // Nothing to validate is almost always a wrong path: say so instead of "ok". YAML files without one
      // Gloo object (a chart, CI files) are the same mistake one level down.
      const empty = summary.files === 0;
      const noGloo = !empty && summary.objects === 0;
      if (flags.output === "json") {
        io.out(`${JSON.stringify({ ok: errors === 0 && !empty && !noGloo, root: dir, summary, diagnostics }, null, 2)}\n`);
      } else if (empty) {
        io.out(`${formatDiagnostics(diagnostics, dir)}failed: no configuration found in ${dir}: no .yaml or .yml files (besides gitmesh.yaml and ignored paths); check the path\n`);
      } else if (noGloo) {
        io.out(
          `${formatDiagnostics(diagnostics, dir)}failed: no Gloo Mesh configuration found in ${dir}: ${plural(summary.files, "YAML file")} read, none holds a Gloo Mesh object ` +
            "(apiVersion `*.solo.io/v2`, e.g. a Workspace or RouteTable); check the path, and list files that are not Gloo configuration (Helm values, CI settings) under `ignore:` in gitmesh.yaml\n",
        );
      } else {
        const notes = [
          ...(summary.unsupported - summary.ignoredKinds > 0 ? [`${summary.unsupported - summary.ignoredKinds} unsupported`] : []),
          ...(summary.ignoredKinds > 0 ? [`${summary.ignoredKinds} ignored by configuration`] : []),
        ];
        io.out(formatDiagnostics(diagnostics, dir));
        if (!summary.translated && errors === 0) {
          io.out("note: not translated: references to services and workloads, and route conflicts, are checked with --discovery <dir>\n");
        }
        io.out(
          `${errors === 0 ? "ok" : "failed"}: ${plural(summary.objects, "object")} in ${plural(summary.files, "file")}` +
            `${notes.length > 0 ? ` (${notes.join(", ")})` : ""}: ${plural(errors, "error")}, ${plural(warnings, "warning")}\n`,
        );
      }
      io.exitCode = errors > 0 || empty || noGloo ? ExitCode.Failed : ExitCode.Ok;
    });
}

/** One line per diagnostic, paths relative to the current directory so editors and terminals can jump to them. */
function formatDiagnostics(diagnostics: readonly Diagnostic[], dir: string): string {
  return diagnostics.map((d) => `${formatDiagnostic(withRoot(d, dir))}\n`).join("");
}

function withRoot(d: Diagnostic, dir: string): Diagnostic {
  return d.file === undefined ? d : { ...d, file: join(dir, d.file) };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function printCodes(io: CliIo, output: Output): void {
  const entries = Object.entries(CONFIG_CODES);
  if (output === "json") {
    io.out(`${JSON.stringify(Object.fromEntries(entries), null, 2)}\n`);
    return;
  }
  const width = Math.max(...entries.map(([code]) => code.length));
  for (const [code, info] of entries) io.out(`${code.padEnd(width)}  ${info.severity.padEnd(7)}  ${info.description}\n`);
}
