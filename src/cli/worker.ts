/**
 * `gitmesh worker`: the composition root of a translation worker (src/server/worker.ts). Reads flags
 * and environment ONCE (flags win; env names match the server chart's worker Deployment: WORKER_ENV),
 * validates and freezes the configuration, and runs until SIGINT/SIGTERM, then finishes the jobs in
 * hand (at most the shutdown timeout) and exits.
 */
import { hostname } from "node:os";
import type { Command } from "commander";
import { Registry, collectDefaultMetrics } from "prom-client";
import { createLogger, registerBuildInfo } from "../core/index.js";
import { createTranslationWorker, parseWorkerConfig, WORKER_ENV } from "../server/index.js";
import { processBuildInfo, UsageError, type CliIo } from "./io.js";
import { untilStopSignal } from "./signals.js";

interface WorkerFlags {
  readonly redisUrl?: string;
  readonly concurrency?: string;
  readonly httpPort?: string;
  readonly httpHost?: string;
  readonly identity?: string;
  readonly jobLock?: string;
  readonly shutdownTimeout?: string;
  readonly logLevel?: string;
  readonly logFormat?: string;
}

export function registerWorker(program: Command, io: CliIo): void {
  program
    .command("worker")
    .summary("run translation jobs from Redis, apart from the server replicas (HTTP :9092)")
    .description(
      "Run translation jobs (workspace and cluster jobs) from the Redis the management server replicas share, so that translation scales apart from the relay: add workers when the queue grows (gitmesh_pipeline_queue_depth), run the servers with --workers 0 to keep translation out of them.\n\n" +
        "A worker needs only the Redis URL and the server's key prefix: no Git, relay or Kubernetes credentials. Outputs are identical to the server's own translation. HTTP :9092 serves /healthz, /readyz (connected to Redis) and /metrics.\n\n" +
        "On SIGTERM it takes no new job and finishes those in hand for at most --shutdown-timeout; a worker that dies (or runs out of time) loses nothing: its jobs go back to the queue when their lock expires (--job-lock) and another worker runs them.",
    )
    .option("--redis-url <url>", `Redis of the server replicas [${WORKER_ENV.redisUrl}] (required; the server's value)`)
    .option("--concurrency <n>", `jobs per type (workspace, cluster) run at once [${WORKER_ENV.concurrency}] (default 4; about the cores given to the worker)`)
    .option("--http-port <n>", `HTTP port: /healthz, /readyz, /metrics [${WORKER_ENV.httpPort}] (default 9092)`)
    .option("--http-host <addr>", "HTTP listen address (default 0.0.0.0)")
    .option("--identity <name>", `worker name in logs and in Redis' worker list [${WORKER_ENV.identity}] (default hostname)`)
    .option("--job-lock <seconds>", `lock of a running job: a job of a worker that died is handed back after at most about twice this [${WORKER_ENV.jobLockSeconds}] (default 30)`)
    .option("--shutdown-timeout <seconds>", `on SIGTERM, finish the jobs in hand for at most this long [${WORKER_ENV.shutdownTimeoutSeconds}] (default 25; below the pod's terminationGracePeriodSeconds)`)
    .option("--log-level <level>", `debug | info | warn | error [${WORKER_ENV.logLevel}] (default info)`)
    .option("--log-format <format>", "json | human (default: human on a terminal, json otherwise)")
    .addHelpText(
      "after",
      `\nThe key prefix is read from ${WORKER_ENV.redisPrefix} (default gitmesh) and must be the server's; so must the retention settings ${WORKER_ENV.retentionCommits}, ${WORKER_ENV.retentionDesiredStates}, ${WORKER_ENV.retentionMaxAgeHours} (see gitmesh server --help).\n` +
        "\nExamples:\n" +
        "  gitmesh server --git-url https://github.com/acme/mesh-config.git --redis-url redis://redis:6379 --workers 0\n" +
        "  gitmesh worker --redis-url redis://redis:6379 --concurrency 2\n" +
        "  curl -s localhost:9092/metrics | grep gitmesh_pipeline_queue_depth\n",
    )
    .action(async (flags: WorkerFlags) => {
      const env = process.env;
      const { config, problems } = parseWorkerConfig(
        {
          redisUrl: flags.redisUrl ?? env[WORKER_ENV.redisUrl],
          redisPrefix: env[WORKER_ENV.redisPrefix],
          identity: flags.identity ?? env[WORKER_ENV.identity],
          concurrency: flags.concurrency ?? env[WORKER_ENV.concurrency],
          httpPort: flags.httpPort ?? env[WORKER_ENV.httpPort],
          httpHost: flags.httpHost,
          jobLockSeconds: flags.jobLock ?? env[WORKER_ENV.jobLockSeconds],
          shutdownTimeoutSeconds: flags.shutdownTimeout ?? env[WORKER_ENV.shutdownTimeoutSeconds],
          logLevel: flags.logLevel ?? env[WORKER_ENV.logLevel],
          retentionCommits: env[WORKER_ENV.retentionCommits],
          retentionDesiredStates: env[WORKER_ENV.retentionDesiredStates],
          retentionMaxAgeHours: env[WORKER_ENV.retentionMaxAgeHours],
          logFormat: flags.logFormat ?? (io.isTty ? "human" : "json"),
        },
        { identity: hostname() },
      );
      if (!config) throw new UsageError(`invalid worker configuration:\n  ${problems.join("\n  ")}`);
      const logger = createLogger({ name: "worker", level: config.logLevel, format: config.logFormat });
      const registry = new Registry();
      collectDefaultMetrics({ register: registry });
      registerBuildInfo(registry, processBuildInfo(process.env));
      const worker = createTranslationWorker({ config, logger, registry });
      await worker.start();
      logger.info("worker started", { identity: config.identity, concurrency: config.concurrency, jobLockMs: config.jobLockMs, http: worker.httpPort });
      io.out(`gitmesh worker ${config.identity} running (HTTP :${String(worker.httpPort)}, ${String(config.concurrency)} jobs per type)\n`);
      await untilStopSignal();
      logger.info("stopping: finishing the jobs in hand", { shutdownTimeoutMs: config.shutdownTimeoutMs });
      await worker.stop();
      logger.info("worker stopped");
      // The one process.exit of a command, on purpose: a job still running when the shutdown timeout
      // ran out goes back to the queue when its lock expires, but BullMQ 5 keeps retrying that job's
      // result on the connection the pipeline cut, without a pause while it closes (Worker.retryIfFailed),
      // which never lets the event loop end: the process would spin on a core until SIGKILL.
      process.exit(io.exitCode);
    });
}
