/**
 * `gitmesh kube-emulator`: runs the Kubernetes API emulator standalone (demo, manual kubectl use,
 * fleet benchmarks) until interrupted. Prints the URL and writes a kubeconfig for kubectl.
 */
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { mkdtemp } from "node:fs/promises";
import type { Command } from "commander";
import { createLogger, formatDiagnostic, hasErrors } from "../core/index.js";
import { createKubeEmulator } from "../kube-emulator/index.js";
import { ExitCode, UsageError, type CliIo } from "./io.js";
import { untilStopSignal } from "./signals.js";

interface KubeEmulatorFlags {
  readonly port: string;
  readonly host: string;
  readonly seed?: string;
  readonly kubeconfig?: string;
}

export function registerKubeEmulator(program: Command, io: CliIo): void {
  program
    .command("kube-emulator")
    .summary("run a Kubernetes API emulator (tests, the demo, benchmarks; kubectl works against it)")
    .description(
      "Run the Kubernetes API emulator (for tests, the demo and benchmarks).\n" +
        "Point kubectl at it with:  kubectl --kubeconfig <printed path> get ns   (or export KUBECONFIG=<path>)",
    )
    .option("--port <n>", "TCP port (0 picks a free one)", "0")
    .option("--host <addr>", "interface to listen on", "127.0.0.1")
    .option("--seed <file.yaml>", "multi-document YAML of objects to load at start")
    .option("--kubeconfig <path>", "where to write the kubeconfig (default: a new temporary directory)")
    .action(async (flags: KubeEmulatorFlags) => {
      const port = Number(flags.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be an integer 0..65535, got "${flags.port}"`);
      const emulator = await createKubeEmulator({ port, host: flags.host, logger: createLogger({ name: "kube-emulator" }) });
      if (flags.seed !== undefined) {
        let result;
        try {
          result = await emulator.seedFile(flags.seed);
        } catch (err) {
          await emulator.stop();
          io.err(`gitmesh kube-emulator: cannot read seed file ${flags.seed}: ${err instanceof Error ? err.message : String(err)}\n`);
          io.exitCode = ExitCode.Failed;
          return;
        }
        for (const d of result.diagnostics) io.err(formatDiagnostic(d) + "\n");
        if (hasErrors(result.diagnostics)) {
          await emulator.stop();
          io.err("gitmesh kube-emulator: the seed file has errors (see above); fix them and start again\n");
          io.exitCode = ExitCode.Failed;
          return;
        }
        io.out(`seeded ${result.applied} objects from ${flags.seed}\n`);
      }
      const kubeconfig = resolve(flags.kubeconfig ?? join(await mkdtemp(join(tmpdir(), "gitmesh-kube-emulator-")), "kubeconfig"));
      await emulator.writeKubeconfig(kubeconfig);
      io.out(`kube-emulator listening on ${emulator.url}\n`);
      io.out(`kubeconfig: ${kubeconfig}\n`);
      io.out(`try: kubectl --kubeconfig ${kubeconfig} api-resources\n`);
      await untilStopSignal();
      await emulator.stop();
    });
}
