/**
 * The translation worker (`gitmesh worker`): a process that only runs translation jobs — workspace
 * jobs and cluster jobs — from the Redis the server replicas share, so that translation scales apart
 * from the relay. It holds no credential but the Redis URL: no relay PKI, no Git access, no
 * Kubernetes API. Its inputs (desired state, discovery) and outputs are in Redis; the replicas
 * deliver the outputs it publishes (pub/sub).
 *
 * HTTP (default :9092): /healthz (alive), /readyz (connected to Redis and taking jobs), /metrics
 * (translation times, job results, queue depth). Stop (SIGTERM): no new job is taken; the jobs in
 * hand are finished within the shutdown timeout, after which they go back to the queue when their
 * lock expires (BullMQ stalled-job recovery), to be run by another worker. Nothing is lost either way.
 */
import type { Registry } from "prom-client";
import { configResult, createConfigReader, createHealthEndpoint, isLogLevel, type Logger } from "../core/index.js";
import { readRetention, SERVER_ENV, type RetentionConfig } from "./config.js";
import { createPipeline, redisUrlProblem, type Pipeline } from "../queue/index.js";

/** Environment variables of `gitmesh worker` (the chart's worker Deployment sets them); shared names match the server's. */
export const WORKER_ENV = {
  redisUrl: "REDIS_URL",
  redisPrefix: "GITMESH_REDIS_PREFIX",
  identity: "POD_NAME",
  concurrency: "GITMESH_WORKER_CONCURRENCY",
  httpPort: "GITMESH_HTTP_PORT",
  jobLockSeconds: "GITMESH_JOB_LOCK_SECONDS",
  retentionCommits: SERVER_ENV.retentionCommits,
  retentionDesiredStates: SERVER_ENV.retentionDesiredStates,
  retentionMaxAgeHours: SERVER_ENV.retentionMaxAgeHours,
  shutdownTimeoutSeconds: "GITMESH_SHUTDOWN_TIMEOUT_SECONDS",
  logLevel: "GITMESH_LOG_LEVEL",
} as const;

export interface WorkerConfig {
  readonly redisUrl: string;
  /** Key prefix in Redis, the server's (default `gitmesh`). */
  readonly redisPrefix: string;
  /** Name in logs and in Redis' list of workers (default hostname). */
  readonly identity: string;
  /** Jobs per type run at once (default 4). */
  readonly concurrency: number;
  readonly httpHost: string;
  /** Default 9092; 0 picks a free port. */
  readonly httpPort: number;
  /** Lock of a running job; a dead worker's job is handed back after at most about twice this (default 30 s). */
  readonly jobLockMs: number;
  /** On SIGTERM, finish the jobs in hand for at most this long (default 25 s; keep it below the pod's grace period). */
  readonly shutdownTimeoutMs: number;
  readonly logLevel: "debug" | "info" | "warn" | "error";
  readonly logFormat: "json" | "human";
  /** What the store keeps per commit: the servers' setting (the jobs write convergence records too). */
  readonly retention: RetentionConfig;
}

export type WorkerConfigInput = { readonly [K in keyof typeof WORKER_ENV]?: string | undefined } & {
  readonly httpHost?: string | undefined;
  readonly logFormat?: string | undefined;
};

export function parseWorkerConfig(input: WorkerConfigInput, defaults: { identity: string }): { config?: WorkerConfig; problems: string[] } {
  const read = createConfigReader();
  const { problems } = read;
  const redisUrl = input.redisUrl || "";
  if (redisUrl === "") problems.push(`a worker needs the Redis of the server replicas: --redis-url or ${WORKER_ENV.redisUrl} (the same value as the server's)`);
  else {
    const problem = redisUrlProblem(redisUrl);
    if (problem !== undefined) problems.push(`${problem} (--redis-url or ${WORKER_ENV.redisUrl}; the server's value)`);
  }
  const level = input.logLevel || "info";
  if (!isLogLevel(level)) problems.push(`log level "${level}" must be debug, info, warn or error (--log-level or ${WORKER_ENV.logLevel})`);
  const format = input.logFormat || "json";
  if (format !== "json" && format !== "human") problems.push(`log format "${format}" must be json or human`);
  const config: WorkerConfig = {
    redisUrl,
    redisPrefix: input.redisPrefix || "gitmesh",
    identity: input.identity || defaults.identity,
    concurrency: read.number(input.concurrency, `concurrency (--concurrency or ${WORKER_ENV.concurrency})`, 4, (n) => Number.isInteger(n) && n >= 1 && n <= 64, "an integer from 1 to 64"),
    httpHost: input.httpHost || "0.0.0.0",
    httpPort: read.port(input.httpPort, `HTTP port (--http-port or ${WORKER_ENV.httpPort})`, 9092),
    jobLockMs: 1000 * read.number(input.jobLockSeconds, `job lock (--job-lock or ${WORKER_ENV.jobLockSeconds})`, 30, (n) => n >= 1 && n <= 3600, "seconds from 1 to 3600"),
    shutdownTimeoutMs: 1000 * read.number(input.shutdownTimeoutSeconds, `shutdown timeout (--shutdown-timeout or ${WORKER_ENV.shutdownTimeoutSeconds})`, 25, (n) => n >= 0 && n <= 3600, "seconds from 0 to 3600"),
    logLevel: level as WorkerConfig["logLevel"],
    logFormat: format as WorkerConfig["logFormat"],
    retention: readRetention(read, input),
  };
  return configResult(config, problems);
}

export interface TranslationWorkerOptions {
  readonly config: WorkerConfig;
  readonly logger: Logger;
  /** prom-client registry served on /metrics (the pipeline's metrics are registered in it). */
  readonly registry: Registry;
}

export interface TranslationWorker {
  /** Bound HTTP port once started. */
  readonly httpPort: number;
  /** undefined when ready, else why not. */
  notReadyReason(): string | undefined;
  start(): Promise<void>;
  /** Stops taking jobs, finishes those in hand (at most the shutdown timeout), closes HTTP and Redis. */
  stop(): Promise<void>;
}

export function createTranslationWorker(options: TranslationWorkerOptions): TranslationWorker {
  const { config, logger: log, registry } = options;
  let pipeline: Pipeline | undefined;
  let stopping = false;
  let reason = "starting";

  const notReadyReason = (): string | undefined => {
    if (stopping) return "stopping";
    if (pipeline === undefined) return reason;
    return pipeline.mode() === "redis" ? undefined : `Redis unreachable: ${reason}`;
  };

  const http = createHealthEndpoint({
    port: config.httpPort,
    host: config.httpHost,
    registry,
    notReadyReason,
    logger: log,
    notFound: "not found: this is a translation worker (/healthz, /readyz, /metrics)\n",
  });

  return {
    get httpPort() {
      return http.port ?? 0;
    },
    notReadyReason,
    async start() {
      await http.start();
      pipeline = await createPipeline({
        role: "worker",
        redis: config.redisUrl,
        prefix: `${config.redisPrefix}:`,
        logger: log.child("pipeline"),
        registry,
        concurrency: { workspace: config.concurrency, cluster: config.concurrency },
        jobLockMs: config.jobLockMs,
        retention: config.retention,
        workerName: config.identity,
        onModeChange: (_mode, why) => {
          reason = why;
        },
      });
    },
    async stop() {
      stopping = true;
      const p = pipeline;
      pipeline = undefined;
      reason = "stopped";
      await p?.close(config.shutdownTimeoutMs);
      await http.stop();
    },
  };
}
