/**
 * Composition root of the `gitmesh` command. Each sub-command lives in its own file and exports a
 * `register(program, io)` function; this file parses argv once and maps outcomes to exit codes:
 * 0 success (warnings allowed), 1 errors found / command failed, 2 usage errors.
 */
import { Command, CommanderError } from "commander";
import { describeError, stripCredentials } from "../core/index.js";
import { createIo, ExitCode, UsageError, type CliIo } from "./io.js";
import { registerValidate } from "./validate.js";
import { registerRender } from "./render.js";
import { registerKubeEmulator } from "./kube-emulator.js";
import { registerAgent } from "./agent.js";
import { registerServer } from "./server.js";
import { registerDemo } from "./demo.js";
import { registerCheck } from "./check.js";
import { registerCluster } from "./cluster.js";
import { registerDiff } from "./diff.js";

export type RegisterCommand = (program: Command, io: CliIo) => void;

// One line per sub-command, in the order `--help` lists them.
const commands: readonly RegisterCommand[] = [
  registerValidate,
  registerRender,
  registerKubeEmulator,
  registerAgent,
  registerServer,
  registerDemo,
  registerCheck,
  registerCluster,
  registerDiff,
];

export async function main(argv: readonly string[], io: CliIo = createIo()): Promise<number> {
  const program = new Command()
    .name("gitmesh")
    .description(
      "GitOps management plane for multi-cluster Istio.\n" +
        "Mesh policy (Gloo Mesh v2 API) lives in Git; gitmesh renders it to Istio per cluster and delivers it to agents.",
    )
    .version(io.version, "-v, --version")
    .showHelpAfterError("(run with --help for usage)")
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .exitOverride();
  for (const register of commands) register(program, io);
  program.commands.forEach((c) => c.exitOverride().configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) }));

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
    io.err(`gitmesh: ${stripCredentials(describeError(err))}\n`);
    return ExitCode.Failed;
  }
}

const isEntry = process.argv[1] !== undefined && /(?:gitmesh(?:\.js)?|main\.[tj]s)$/.test(process.argv[1]);
if (isEntry) {
  process.exitCode = await main(process.argv.slice(2));
}
