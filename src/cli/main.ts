/**
 * Composition root of the `gitmesh` command. Each sub-command lives in its own file and exports a
 * `register(program, io)` function; this file parses argv once and maps outcomes to exit codes:
 * 0 success (warnings allowed), 1 errors found / command failed, 2 usage errors.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Command, CommanderError } from "commander";
import { createIo, ExitCode, UsageError, type CliIo } from "./io.js";

export type RegisterCommand = (program: Command, io: CliIo) => void;

/**
 * The sub-commands, in the order `--help` lists them. Each module is imported only when its command
 * runs (or its own help is asked for): `gitmesh --version`, `gitmesh --help` and every command load
 * nothing they do not use, so start-up stays short for pre-commit hooks and CI loops. `summary`
 * repeats the command's own one-line summary for the top-level help (a test keeps them equal).
 */
export interface CommandEntry {
  readonly name: string;
  readonly summary: string;
  readonly load: () => Promise<RegisterCommand>;
}

export const COMMANDS: readonly CommandEntry[] = [
  { name: "validate", summary: "check a configuration repository (YAML, schemas, references, ownership)", load: async () => (await import("./validate.js")).registerValidate },
  { name: "render", summary: "render the Istio resources every cluster must run", load: async () => (await import("./render.js")).registerRender },
  {
    name: "insights",
    summary: "analyse the fleet: risky or ineffective configuration, Istio versions, certificates; exit 1 on errors",
    load: async () => (await import("./insights.js")).registerInsights,
  },
  {
    name: "kube-emulator",
    summary: "run a Kubernetes API emulator (tests, the demo, benchmarks; kubectl works against it)",
    load: () => loadDevelopmentCommand("kube-emulator", "./kube-emulator.js", "registerKubeEmulator"),
  },
  { name: "agent", summary: "run the cluster agent: discovery, relay link, apply and safe prune, drift repair (HTTP :9977)", load: async () => (await import("./agent.js")).registerAgent },
  { name: "server", summary: "run the management server (relay :9900, HTTP :9091)", load: async () => (await import("./server.js")).registerServer },
  { name: "worker", summary: "run translation jobs from Redis, apart from the server replicas (HTTP :9092)", load: async () => (await import("./worker.js")).registerWorker },
  { name: "demo", summary: "run the whole system locally: Git server, Redis, two emulated clusters, server, agents", load: () => loadDevelopmentCommand("demo", "./demo.js", "registerDemo") },
  {
    name: "simulate",
    summary: "size a management plane: a real server (and workers) against N simulated agents, a stream of pushes, the figures",
    load: () => loadDevelopmentCommand("simulate", "./simulate.js", "registerSimulate"),
  },
  { name: "check", summary: "print a management server's health; exit 1 when unhealthy", load: async () => (await import("./check.js")).registerCheck },
  { name: "suspend", summary: "hold a cluster or the whole fleet: nothing new is applied or pruned there until resumed", load: async () => (await import("./suspend.js")).registerSuspend },
  { name: "resume", summary: "let a suspended cluster or the fleet go: it is brought to the commit in force", load: async () => (await import("./suspend.js")).registerResume },
  { name: "cluster", summary: "register or deregister a workload cluster", load: async () => (await import("./cluster.js")).registerCluster },
  { name: "diff", summary: "show the rendered Istio diff between two revisions (pull-request review)", load: async () => (await import("./diff.js")).registerDiff },
];

/** A development command asked for where its code is absent (the container image). */
export class DevelopmentCommandError extends Error {
  readonly code = "DevelopmentCommandError";
  constructor(name: string) {
    super(
      `'${name}' is a development command; this build does not ship it (the container image leaves out ` +
        `src/devtools, src/kube-emulator and their commands). Run it from a source checkout: npm ci, then node bin/gitmesh.js ${name}`,
    );
  }
}

/**
 * `demo`, `simulate` and `kube-emulator` (and src/devtools, src/kube-emulator behind them) are left out of the
 * production build by tsconfig.build.json's `exclude`. tsc compiles every module a literal
 * `import("…")` names, so their specifiers are passed as values; where the module is absent the
 * command says what it is instead of a module-not-found stack trace.
 */
async function loadDevelopmentCommand(name: string, specifier: string, exported: string): Promise<RegisterCommand> {
  try {
    const loaded = (await import(specifier)) as Record<string, RegisterCommand | undefined>;
    const register = loaded[exported];
    if (register === undefined) throw new Error(`${specifier} does not export ${exported}`);
    return register;
  } catch (err) {
    const here = (ext: string) => existsSync(fileURLToPath(new URL(specifier.replace(/\.js$/, ext), import.meta.url)));
    if ((err as NodeJS.ErrnoException).code === "ERR_MODULE_NOT_FOUND" && !here(".js") && !here(".ts")) throw new DevelopmentCommandError(name);
    throw err;
  }
}

/**
 * Joins the lines of each paragraph of a description so that commander wraps it cleanly at the
 * terminal width (80 columns when piped) instead of breaking it twice. Blank lines separate
 * paragraphs; a line starting with a space or "- " (an example, a list item) keeps its line break.
 */
/** Columns of the top-level help, whatever the terminal (the launcher's kept copy must be the same text). */
export const TOP_LEVEL_HELP_WIDTH = 80;

export function asParagraphs(text: string): string {
  return text.replace(/([^\n])\n(?!\s|- )/g, "$1 ");
}

/** The command argv runs (`gitmesh <name> …` or `gitmesh help <name>`), if it names one. */
function commandOf(argv: readonly string[]): CommandEntry | undefined {
  const first = argv[0] === "help" ? argv[1] : argv[0];
  return COMMANDS.find((c) => c.name === first);
}

export async function main(argv: readonly string[], io: CliIo = createIo()): Promise<number> {
  const program = new Command()
    .name("gitmesh")
    .description(
      "GitOps management plane for multi-cluster Istio.\n" +
        "Mesh policy (Gloo Mesh v2 API) lives in Git; gitmesh renders it to Istio per cluster and delivers it to agents.",
    )
    .version(io.version, "-v, --version")
    .showHelpAfterError("(run with --help for usage)")
    .addHelpText(
      "after",
      "\nExit codes (every command): 0 done; 1 failed (errors found, refused, not in sync, unreachable, not found, not authorized);\n" +
        "2 usage (a flag or argument is wrong, or names what does not exist: fix the command line); 130 interrupted (Ctrl-C).\n" +
        "\ndemo, simulate and kube-emulator are development commands: they run from a source checkout; the container image does not ship them.\n",
    )
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .exitOverride();
  const chosen = commandOf(argv);
  if (chosen) {
    try {
      (await chosen.load())(program, io);
    } catch (err) {
      if (!(err instanceof DevelopmentCommandError)) throw err;
      io.err(`gitmesh: ${err.message}\n`);
      return ExitCode.Failed;
    }
  }
  // Descriptions are written as source lines; help shows them as paragraphs wrapped to the terminal.
  for (const c of [program, ...program.commands, ...program.commands.flatMap((s) => s.commands)]) c.description(asParagraphs(c.description()));
  // Every other command is listed by name and summary only (top-level help, "did you mean").
  for (const c of COMMANDS) if (c !== chosen) program.command(c.name).summary(c.summary);
  program.commands.forEach((c) => c.exitOverride().configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) }));
  // The top-level help is the same text on every terminal (80 columns, as piped): the build keeps a copy
  // that bin/gitmesh.js prints without loading anything (scripts/build-cli.mjs). Set after the commands
  // were added, so their own help still wraps to the terminal.
  program.configureHelp({ helpWidth: TOP_LEVEL_HELP_WIDTH });

  try {
    await program.parseAsync(argv, { from: "user" });
    return io.exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === "commander.helpDisplayed" || err.code === "commander.version" || err.code === "commander.help") return ExitCode.Ok;
      return ExitCode.Usage;
    }
    if (err instanceof UsageError) {
      io.err(`gitmesh: ${err.message}\n`);
      return ExitCode.Usage;
    }
    // core (yaml, prom-client, node:http behind its front door) is loaded here, not at start: `--help`
    // and `--version` never need it, and a command that runs has loaded it already.
    const { describeError, stripCredentials } = await import("../core/index.js");
    io.err(`gitmesh: ${stripCredentials(describeError(err))}\n`);
    return ExitCode.Failed;
  }
}

const isEntry = process.argv[1] !== undefined && /(?:gitmesh(?:\.js)?|main\.[tj]s)$/.test(process.argv[1]);
if (isEntry) {
  // A reader that goes away (`gitmesh validate --codes | head`) ends the command quietly, the way
  // Unix tools end on SIGPIPE, instead of an EPIPE stack trace.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
      throw err;
    });
  }
  process.exitCode = await main(process.argv.slice(2));
}
