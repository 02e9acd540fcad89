/**
 * `gitmesh server`: the composition root of the management server. Reads flags and environment ONCE
 * (flags win; env names match charts/gitmesh-server), validates and freezes the configuration, builds
 * the clients (Redis, snapshot store, pipeline, relay secret storage) and runs until SIGINT/SIGTERM,
 * then stops the parts in reverse order.
 */
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { existsSync, statSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { KubeConfig } from "@kubernetes/client-node";
import type { Command } from "commander";
import { Registry, collectDefaultMetrics } from "prom-client";
import { createLogger, describeError, NeedsHumanError, registerBuildInfo, stripCredentials, type Logger } from "../core/index.js";
import { createCommitStatusPoster, type CommitStatusPoster } from "../git-host/index.js";
import { createCommitVerifier, type CommitVerifier } from "../git-sync/index.js";
import { createFileMeshRootStorage } from "../mesh-ca/index.js";
import { createPrometheusClient, type PrometheusClient } from "../traffic/index.js";
import { createLeaderLock, createRedisClient, leaseTimings, parseRedisUrl, redisKeyPrefix, type RedisClient } from "../queue/index.js";
import {
  createDirectoryApiTokenStore,
  createKubernetesApiTokenStore,
  createRedisApiTokenStore,
  createRedisSuspensionStore,
  createDirectoryCaSecretReader,
  createDirectorySecretStore,
  createKubernetesCaSecretReader,
  createKubernetesMeshRootStorage,
  createLeadership,
  createRedisMeshRootStorage,
  createQueuePipeline,
  createRedisPresence,
  createKubernetesSecretStore,
  createManagementServer,
  createMemorySecretStore,
  createDirectoryRecordStore,
  createRedisRecordStore,
  createRedisSecretStore,
  parseServerConfig,
  SERVER_ENV,
  SERVER_ENV_HELP,
  withDurableRevocations,
  withDurableSuspensions,
  SUSPENSION_SECRETS,
  createKubernetesRecordStore,
  createMemorySuspensionStore,
  type ManagementServer,
  type ApiTokenStore,
  type ManagementServerOptions,
  type PipelinePort,
  type RelaySecretStore,
  type ServerConfig,
  type ServerConfigInput,
} from "../server/index.js";
import { readFlagFile, readTokenFile } from "./flag-files.js";
import { processBuildInfo, UsageError, type CliIo } from "./io.js";
import { untilStopSignal } from "./signals.js";

interface ServerFlags {
  readonly verifyCommitsAllowedSigners?: string;
  readonly verifyCommitsOpenpgpKeys?: string;
  readonly commitStatus?: string;
  readonly commitStatusApiUrl?: string;
  readonly commitStatusRepository?: string;
  readonly commitStatusTokenFile?: string;
  readonly prometheusUrl?: string;
  readonly prometheusTokenFile?: string;
  readonly prometheusCaFile?: string;
  readonly gitUrl?: string;
  readonly gitSshKey?: string;
  readonly gitSshKnownHosts?: string;
  readonly gitSshAcceptNewHostKeys?: boolean;
  readonly gitLocal?: string;
  readonly branch?: string;
  readonly path?: string;
  readonly pollInterval?: string;
  readonly auditBranch?: string;
  readonly noAudit?: boolean;
  readonly audit?: boolean;
  readonly redisUrl?: string;
  readonly redisOptional?: boolean;
  readonly workers?: string;
  readonly relayPort?: string;
  readonly relayHost?: string;
  readonly httpPort?: string;
  readonly httpHost?: string;
  readonly relayToken?: string;
  readonly bootstrap?: string;
  readonly authority?: string;
  readonly additionalSans?: string;
  readonly pkiDir?: string;
  readonly kubeconfig?: string;
  readonly namespace?: string;
  readonly identity?: string;
  readonly warmingWindow?: string;
  readonly skipWarming?: string[];
  readonly dataDir?: string;
  readonly meshCaSecretDir?: string;
  readonly logLevel?: string;
  readonly logFormat?: string;
  readonly apiAuth?: boolean;
  readonly apiTokenFile?: string;
  readonly apiAdminTokenFile?: string;
  readonly httpTlsCert?: string;
  readonly httpTlsKey?: string;
}

export function registerServer(program: Command, io: CliIo): void {
  program
    .command("server")
    .summary("run the management server (relay :9900, HTTP :9091)")
    .description(
      // One line per paragraph: commander wraps them to the terminal (80 columns when piped).
      "Run the management server: read the desired state from Git, translate it per workspace and cluster, deliver it to agents over the gRPC relay (:9900), commit rendered output to the audit branch, and serve /healthz, /readyz, /metrics, /webhooks/{github,gitlab,generic} and /api on :9091.\n\n" +
        "With REDIS_URL several replicas share one Redis; without it one replica runs standalone in memory. Flags win over environment variables (shown in brackets, all listed below; the Helm chart sets them).\n\n" +
        "At start-up a repository, branch or credential that does not work stops the server with what to fix (exit 1); a Git server that cannot be reached is retried (logged as such).\n\n" +
        'API authentication: /api/* needs "Authorization: Bearer <token>". The read token reads every GET /api endpoint (dashboards, gitmesh check); the admin token also runs actions (POST under /api). /healthz, /readyz, /metrics and the webhooks (HMAC) stay open. The tokens are generated once and kept where the relay token is (Secret gitmesh-api-tokens keys read/admin in Kubernetes, --pki-dir files api-token-read/api-token-admin, Redis, else <data-dir>/api-tokens), or given as files. Wrong or missing tokens answer 401 (403 when the role is too low), are logged without the token and counted in gitmesh_server_api_auth_failures_total. --http-tls-cert/--http-tls-key serve HTTPS.',
    )
    .option("--git-url <url>", `configuration repository: https://…, git@host:org/repo.git or ssh://[user@]host[:port]/path [${SERVER_ENV.gitUrl}]`)
    .option("--git-ssh-key <file>", `private key for an SSH --git-url (a deploy key; passphrase in ${SERVER_ENV.gitSshKeyPassphrase}) [${SERVER_ENV.gitSshKeyFile}]`)
    .option("--git-ssh-known-hosts <file>", `known_hosts with the Git server's host key; unknown or changed keys are refused [${SERVER_ENV.gitSshKnownHostsFile}]`)
    .option("--git-ssh-accept-new-host-keys", `trust an SSH host known_hosts does not list on first use (a changed key is still refused) [${SERVER_ENV.gitSshAcceptNewHostKeys}=true]`)
    .option("--git-local <path>", "configuration repository on disk (read in place; for trials and the demo)")
    .option("--branch <ref>", `branch, tag or commit to follow [${SERVER_ENV.gitBranch}] (default main)`)
    .option("--path <dir>", `sub-directory holding the configuration [${SERVER_ENV.gitPath}] (default: whole repository)`)
    .option("--poll-interval <seconds>", `Git poll interval, the webhook backstop [${SERVER_ENV.pollIntervalSeconds}] (default 30; 0 = off)`)
    .option("--audit-branch <branch>", `branch for rendered output [${SERVER_ENV.auditBranch}] (default gitmesh/rendered)`)
    .option("--no-audit", "do not write the audit branch")
    .option("--redis-url <url>", `Redis shared by replicas [${SERVER_ENV.redisUrl}] (unset: standalone, in memory)`)
    .option("--redis-optional", `start even when --redis-url cannot be reached: in memory (degraded), written back when Redis comes [${SERVER_ENV.redisOptional}=true] (default: exit 1 naming the URL)`)
    .option("--workers <n>", `translation jobs per type this replica runs at once [${SERVER_ENV.workers}] (default 4; 0: none — \`gitmesh worker\` processes on the same Redis translate)`)
    .option("--relay-port <n>", `gRPC relay port [${SERVER_ENV.relayPort}] (default 9900)`)
    .option("--relay-host <addr>", "relay listen address (default 0.0.0.0)")
    .option("--http-port <n>", `HTTP port [${SERVER_ENV.httpPort}] (default 9091)`)
    .option("--http-host <addr>", "HTTP listen address (default 0.0.0.0)")
    .option("--api-token-file <file>", `read-role API token (one word, >= 32 characters) [${SERVER_ENV.apiTokenFile}] (default: stored, generated once)`)
    .option("--api-admin-token-file <file>", `admin-role API token [${SERVER_ENV.apiAdminTokenFile}] (default: stored, generated once)`)
    .option("--no-api-auth", `serve /api without tokens to anyone who reaches the port (trials only) [${SERVER_ENV.apiAuth}=false]`)
    .option("--http-tls-cert <file>", `serve the HTTP port over TLS with this PEM certificate chain [${SERVER_ENV.httpTlsCert}]`)
    .option("--http-tls-key <file>", `PEM private key of --http-tls-cert [${SERVER_ENV.httpTlsKey}]`)
    .option("--bootstrap <mode>", `how agents register [${SERVER_ENV.bootstrap}]: per-cluster (default: single-use credential per cluster, minted by \`gitmesh cluster register\`) or fleet-token (opt-in: one shared token)`)
    .option("--relay-token <token>", `fleet bootstrap token, with --bootstrap fleet-token [${SERVER_ENV.relayToken}] (default: from ${SERVER_ENV.tokenSecret} / the PKI storage, generated once)`)
    .option("--authority <name>", `name in the relay server certificate [${SERVER_ENV.relayAuthority}] (default gitmesh-server.gitmesh)`)
    .option("--additional-sans <a,b>", `more DNS names/IPs for the relay certificate [${SERVER_ENV.relayAdditionalSans}]`)
    .option("--pki-dir <dir>", "keep relay PKI and token in this directory (default: Kubernetes secrets in a pod, else Redis, else memory)")
    .option("--kubeconfig <path>", "keep relay PKI and token in Kubernetes secrets of this cluster")
    .option("--namespace <ns>", `namespace of the relay secrets [${SERVER_ENV.namespace}] (default gitmesh)`)
    .option("--identity <name>", `replica name [${SERVER_ENV.identity}] (default hostname)`)
    .option("--warming-window <seconds>", `after a restart that lost state, hold output at most this long [${SERVER_ENV.warmingWindowSeconds}] (default 60)`)
    .option("--skip-warming <cluster>", "never wait for this cluster while warming (repeatable; also KubernetesCluster spec.skipWarming)", (v: string, prev: string[] | undefined) => [...(prev ?? []), v])
    .option("--data-dir <dir>", "working directory for Git caches (default: a temporary directory)")
    .option("--mesh-ca-secret-dir <dir>", "without Kubernetes: RootTrustPolicy mgmtServerCa.secretRef Secrets as files, <dir>/<namespace>/<name>/ca-cert.pem|ca-key.pem|root-cert.pem")
    .option("--verify-commits-allowed-signers <file>", `signed commits only: trusted SSH keys, git allowed-signers format [${SERVER_ENV.verifyAllowedSigners}]`)
    .option("--verify-commits-openpgp-keys <file>", `signed commits only: trusted armored OpenPGP public keys [${SERVER_ENV.verifyOpenpgpKeys}]`)
    .option("--commit-status <host>", `post commit statuses gitmesh/apply to github | gitlab [${SERVER_ENV.commitStatus}] (default off)`)
    .option("--commit-status-api-url <url>", `API of the Git host [${SERVER_ENV.commitStatusApiUrl}] (default https://api.github.com / https://gitlab.com/api/v4)`)
    .option("--commit-status-repository <repo>", `GitHub owner/repo or GitLab project [${SERVER_ENV.commitStatusRepository}]`)
    .option("--prometheus-url <url>", `Prometheus with Istio's standard metrics, for the traffic graph [${SERVER_ENV.prometheusUrl}] (default: none)`)
    .option("--prometheus-token-file <file>", `file holding a bearer token for Prometheus [${SERVER_ENV.prometheusTokenFile}]`)
    .option("--prometheus-ca-file <file>", `PEM CA bundle for an https Prometheus [${SERVER_ENV.prometheusCaFile}]`)
    .option("--commit-status-token-file <file>", `file holding the Git host token for statuses [${SERVER_ENV.commitStatusTokenFile}]`)
    .option("--log-level <level>", `debug | info | warn | error [${SERVER_ENV.logLevel}] (default info)`)
    .option("--log-format <format>", "json | human (default: human on a terminal, json otherwise)")
    .addHelpText(
      "after",
      `\nEnvironment variables:\n${Object.entries(SERVER_ENV_HELP)
        .map(([key, text]) => `  ${SERVER_ENV[key as keyof typeof SERVER_ENV]}\n      ${text}`)
        .join("\n")}\n` +
        "\nExamples:\n" +
        "  gitmesh server --git-url https://github.com/acme/mesh-config.git --redis-url redis://redis:6379\n" +
        "  gitmesh server --git-local ./mesh-config --pki-dir ./pki --relay-token $TOKEN --log-format human\n" +
        "  gitmesh server --git-url https://github.com/acme/mesh-config.git --redis-url redis://redis:6379 --workers 0   # with: gitmesh worker --redis-url redis://redis:6379\n" +
        "  gitmesh check --server localhost:9091 --token-file ./pki/api-token-read   # what an operator wants to see\n" +
        "  curl -H \"Authorization: Bearer $(cat ./pki/api-token-read)\" http://localhost:9091/api/status\n",
    )
    .action(async (flags: ServerFlags) => {
      const { config, problems } = parseServerConfig(configInput(flags, process.env, io.isTty), { identity: hostname() });
      if (!config) throw new UsageError(`invalid server configuration:\n  ${problems.join("\n  ")}`);
      if (config.git.kind === "local") checkLocalRepository(config.git.path);
      const logger = createLogger({ name: "server", level: config.logLevel, format: config.logFormat });
      const running = await startServerProcess(config, logger);
      io.out(`gitmesh server ${config.identity} running (relay :${String(running.server.relayPort)}, HTTP :${String(running.server.httpPort)})\n`);
      await untilStopSignal();
      await running.stop();
    });
}

/** `--git-local`: a directory holding a Git repository (work tree or bare), else a usage error saying which. */
function checkLocalRepository(path: string): void {
  if (!existsSync(path) || !statSync(path).isDirectory()) throw new UsageError(`--git-local ${path}: no such directory; give the path of a Git repository (git init, or a clone)`);
  if (!existsSync(join(path, ".git")) && !existsSync(join(path, "HEAD"))) throw new UsageError(`--git-local ${path}: not a Git repository (no .git); run \`git init\` there and commit the configuration, or give the repository's path`);
}

export function configInput(flags: ServerFlags, env: NodeJS.ProcessEnv, isTty: boolean): ServerConfigInput {
  const e = (k: keyof typeof SERVER_ENV) => env[SERVER_ENV[k]];
  return {
    namespace: flags.namespace ?? e("namespace"),
    identity: flags.identity ?? e("identity"),
    redisUrl: flags.redisUrl ?? e("redisUrl"),
    redisPrefix: e("redisPrefix"),
    redisOptional: flags.redisOptional === true ? "true" : e("redisOptional"),
    redisConnectTimeoutSeconds: e("redisConnectTimeoutSeconds"),
    leaseDurationSeconds: e("leaseDurationSeconds"),
    leaseRenewDeadlineSeconds: e("leaseRenewDeadlineSeconds"),
    leaseRetryPeriodSeconds: e("leaseRetryPeriodSeconds"),
    workers: flags.workers ?? e("workers"),
    jobLockSeconds: e("jobLockSeconds"),
    retentionCommits: e("retentionCommits"),
    retentionDesiredStates: e("retentionDesiredStates"),
    retentionMaxAgeHours: e("retentionMaxAgeHours"),
    relayPort: flags.relayPort ?? e("relayPort"),
    relayAdmissionRate: e("relayAdmissionRate"),
    relayAdmissionBurst: e("relayAdmissionBurst"),
    httpPort: flags.httpPort ?? e("httpPort"),
    relayHost: flags.relayHost,
    httpHost: flags.httpHost,
    logLevel: flags.logLevel ?? e("logLevel"),
    logFormat: flags.logFormat ?? (isTty ? "human" : "json"),
    gitUrl: flags.gitUrl ?? (flags.gitLocal ? undefined : e("gitUrl")),
    gitLocal: flags.gitLocal,
    gitBranch: flags.branch ?? e("gitBranch"),
    gitPath: flags.path ?? e("gitPath"),
    pollIntervalSeconds: flags.pollInterval ?? e("pollIntervalSeconds"),
    gitUsername: e("gitUsername"),
    gitPassword: e("gitPassword"),
    gitSshKeyFile: flags.gitSshKey ?? e("gitSshKeyFile"),
    gitSshKeyPassphrase: e("gitSshKeyPassphrase"),
    gitSshKnownHostsFile: flags.gitSshKnownHosts ?? e("gitSshKnownHostsFile"),
    gitSshAcceptNewHostKeys: flags.gitSshAcceptNewHostKeys === true ? "true" : e("gitSshAcceptNewHostKeys"),
    auditBranch: flags.audit === false ? "" : (flags.auditBranch ?? e("auditBranch")),
    webhookSecret: e("webhookSecret"),
    relayAuthority: flags.authority ?? e("relayAuthority"),
    relayAdditionalSans: flags.additionalSans ?? e("relayAdditionalSans"),
    generateCa: e("generateCa"),
    rootTlsSecret: e("rootTlsSecret"),
    serverTlsSecret: e("serverTlsSecret"),
    signingTlsSecret: e("signingTlsSecret"),
    tokenSecret: e("tokenSecret"),
    relayToken: flags.relayToken ?? e("relayToken"),
    bootstrap: flags.bootstrap ?? e("bootstrap"),
    warmingWindowSeconds: flags.warmingWindow ?? e("warmingWindowSeconds"),
    diffMaxMemoryMb: e("diffMaxMemoryMb"),
    diffTimeoutSeconds: e("diffTimeoutSeconds"),
    gitIdleTimeoutSeconds: e("gitIdleTimeoutSeconds"),
    apiAuth: flags.apiAuth === false ? "false" : e("apiAuth"),
    apiTokenFile: flags.apiTokenFile ?? e("apiTokenFile"),
    apiAdminTokenFile: flags.apiAdminTokenFile ?? e("apiAdminTokenFile"),
    apiTokenSecret: e("apiTokenSecret"),
    httpTlsCert: flags.httpTlsCert ?? e("httpTlsCert"),
    httpTlsKey: flags.httpTlsKey ?? e("httpTlsKey"),
    skipWarming: flags.skipWarming,
    pkiDir: flags.pkiDir,
    kubeconfig: flags.kubeconfig,
    dataDir: flags.dataDir,
    meshRootSecret: e("meshRootSecret"),
    commitStatus: flags.commitStatus ?? e("commitStatus"),
    verifyAllowedSigners: flags.verifyCommitsAllowedSigners ?? e("verifyAllowedSigners"),
    verifyOpenpgpKeys: flags.verifyCommitsOpenpgpKeys ?? e("verifyOpenpgpKeys"),
    commitStatusApiUrl: flags.commitStatusApiUrl ?? e("commitStatusApiUrl"),
    commitStatusRepository: flags.commitStatusRepository ?? e("commitStatusRepository"),
    commitStatusTokenFile: flags.commitStatusTokenFile ?? e("commitStatusTokenFile"),
    prometheusUrl: flags.prometheusUrl ?? e("prometheusUrl"),
    prometheusTokenFile: flags.prometheusTokenFile ?? e("prometheusTokenFile"),
    prometheusCaFile: flags.prometheusCaFile ?? e("prometheusCaFile"),
    meshCaSecretDir: flags.meshCaSecretDir,
    inCluster: env.KUBERNETES_SERVICE_HOST !== undefined,
  };
}

export interface RunningServer {
  readonly server: ManagementServer;
  stop(): Promise<void>;
}

/**
 * Where the mesh root and secretRef Secrets live (src/server/mesh-root-storage.ts): one generated root
 * for the whole management plane, kept where the relay PKI is — `--pki-dir`/mesh-ca, else a
 * Kubernetes Secret (in a pod or with --kubeconfig), else Redis (shared by replicas); undefined = the
 * server's data directory (standalone).
 */
function meshCaWiring(config: ServerConfig, kc: KubeConfig | undefined, redis: { client: RedisClient; prefix: string } | undefined): ManagementServerOptions["meshCa"] {
  const storage =
    config.pkiDir !== undefined
      ? createFileMeshRootStorage(join(config.pkiDir, "mesh-ca"))
      : kc
        ? createKubernetesMeshRootStorage(kc, config.namespace, config.meshRootSecret)
        : redis
          ? createRedisMeshRootStorage(redis.client, redis.prefix)
          : undefined;
  const readSecret = config.meshCaSecretDir !== undefined ? createDirectoryCaSecretReader(config.meshCaSecretDir) : kc ? createKubernetesCaSecretReader(kc) : undefined;
  const describeSecrets = config.meshCaSecretDir !== undefined ? `directory ${config.meshCaSecretDir}` : kc ? "Kubernetes" : undefined;
  if (!storage && !readSecret) return undefined;
  return {
    ...(storage ? { storage } : {}),
    ...(readSecret ? { readSecret } : {}),
    ...(describeSecrets ? { describeSecrets } : {}),
  };
}

/** The Prometheus of the traffic graph; its token and CA are read from files once (the token never logged). */
async function prometheusClient(c: NonNullable<ServerConfig["prometheus"]>): Promise<PrometheusClient> {
  const token = await readTokenFile({ flag: "--prometheus-token-file", env: SERVER_ENV.prometheusTokenFile }, c.tokenFile);
  const caPem = await readFlagFile({ flag: "--prometheus-ca-file", env: SERVER_ENV.prometheusCaFile }, c.caFile);
  return createPrometheusClient({ url: c.url, ...(token === undefined ? {} : { token }), ...(caPem === undefined ? {} : { caPem }) });
}

/** The Git host client for commit statuses; its token is read from a file once (never from a flag, never logged). */
async function commitStatusPoster(c: NonNullable<ServerConfig["commitStatus"]>): Promise<CommitStatusPoster> {
  const token = (await readTokenFile({ flag: "--commit-status-token-file", env: SERVER_ENV.commitStatusTokenFile }, c.tokenFile))!;
  return createCommitStatusPoster({ platform: c.platform, apiUrl: c.apiUrl, repository: c.repository, token });
}

/** The trusted keys of --verify-commits, read once; a file that cannot be read or parsed stops the start. */
async function commitVerifier(c: NonNullable<ServerConfig["verifyCommits"]>): Promise<CommitVerifier> {
  const allowedSigners = await readFlagFile("--verify-commits-allowed-signers", c.allowedSignersFile);
  const openpgpKeys = await readFlagFile("--verify-commits-openpgp-keys", c.openpgpKeysFile);
  try {
    return await createCommitVerifier({ ...(allowedSigners === undefined ? {} : { allowedSigners }), ...(openpgpKeys === undefined ? {} : { openpgpKeys }) });
  } catch (err) {
    throw new UsageError(`--verify-commits: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Waits until a Redis client is connected, at most `ms`; true when it is. */
async function waitReady(redis: RedisClient, ms: number): Promise<boolean> {
  if (redis.status === "ready") return true;
  return new Promise<boolean>((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    redis.once("ready", () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

/**
 * A Redis named by the configuration that cannot be reached at start: a misconfiguration until proved
 * otherwise (wrong host, wrong password, a NetworkPolicy). Exiting makes it a crash loop, the signal
 * Kubernetes and its operators read; `--redis-optional` starts degraded instead. The URL is named
 * without its credentials.
 */
export class RedisUnreachableError extends NeedsHumanError {}

async function requireRedis(redis: RedisClient, config: ServerConfig, logger: Logger): Promise<void> {
  let lastError = "";
  const onError = (err: unknown) => {
    lastError = describeError(err);
  };
  redis.on("error", onError);
  const ready = await waitReady(redis, config.redisConnectTimeoutMs);
  redis.off("error", onError);
  if (ready) return;
  const where = stripCredentials(config.redisUrl ?? "");
  const seconds = String(config.redisConnectTimeoutMs / 1000);
  const why = lastError === "" ? "no answer" : stripCredentials(lastError);
  if (config.redisOptional) {
    logger.warn("Redis cannot be reached: starting degraded, in memory; state is written back when it comes", { redis: where, waitedSeconds: seconds, error: why });
    return;
  }
  redis.disconnect();
  throw new RedisUnreachableError(
    `cannot reach Redis at ${where} within ${seconds} s (${why}). Start Redis or correct --redis-url (${SERVER_ENV.redisUrl}); ` +
      `to start without it, in memory until it comes, pass --redis-optional (${SERVER_ENV.redisOptional}=true); ${SERVER_ENV.redisConnectTimeoutSeconds} sets the wait`,
  );
}

/** Builds the clients for a parsed configuration and starts the server (also used by the demo). */
export async function startServerProcess(config: ServerConfig, logger: Logger, extra: { auditDebounceMs?: number; leaseMs?: number } = {}): Promise<RunningServer> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  registerBuildInfo(registry, processBuildInfo(process.env));
  // A single server, Sentinel or Cluster (parseServerConfig validated the URL). On a Cluster the
  // prefix is a hash tag, `{gitmesh}`, so that every key gitmesh writes is in one slot.
  const redisConfig = config.redisUrl === undefined ? undefined : parseRedisUrl(config.redisUrl);
  const redisPrefix = redisKeyPrefix(redisConfig, config.redisPrefix);
  let redis: RedisClient | undefined;
  if (redisConfig !== undefined) {
    // Secrets and the leader lease: fail fast while Redis is down (the pipeline has its own clients).
    redis = createRedisClient(redisConfig, { maxRetriesPerRequest: 1, enableOfflineQueue: false, retryStrategy: () => 250 });
    redis.on("error", (err) => logger.debug("redis connection error", { error: describeError(err) }));
    await requireRedis(redis, config, logger);
  } else {
    logger.warn("no REDIS_URL: running standalone in memory (one replica; state is lost on restart)");
  }
  const dataDir = config.dataDir ?? (await mkdtemp(join(tmpdir(), "gitmesh-server-")));
  let secrets: RelaySecretStore;
  // Kubernetes access (in a pod, or --kubeconfig): relay secrets and API tokens (unless --pki-dir), the mesh root, secretRef Secrets.
  let kc: KubeConfig | undefined;
  if (config.kubernetesSecrets || config.kubeconfig !== undefined) {
    kc = new KubeConfig();
    if (config.kubeconfig !== undefined) kc.loadFromFile(config.kubeconfig);
    else kc.loadFromCluster();
  }
  // API tokens live beside the relay token; standalone, in the data directory (a file an operator can read).
  let apiTokens: ApiTokenStore;
  if (config.pkiDir !== undefined) {
    // Identity records (credentials, live certificates, revocations) must be shared by every replica:
    // with Redis and a PKI directory, they go to Redis — and revocations are also kept in the PKI
    // directory, so that a Redis restarted empty, flushed or failed over never re-admits a revoked
    // certificate (src/server/durable-revocations.ts).
    secrets = redis
      ? { ...createDirectorySecretStore(config.pkiDir), records: withDurableRevocations(createRedisRecordStore(redis, redisPrefix), createDirectoryRecordStore(join(config.pkiDir, "revocations"))) }
      : createDirectorySecretStore(config.pkiDir);
    apiTokens = createDirectoryApiTokenStore(config.pkiDir);
  } else if (config.kubernetesSecrets && kc) {
    secrets = createKubernetesSecretStore(kc, config.namespace, config.secrets);
    apiTokens = createKubernetesApiTokenStore(kc, config.namespace, config.apiTokenSecret);
  } else if (redis) {
    secrets = createRedisSecretStore(redis, redisPrefix);
    apiTokens = createRedisApiTokenStore(redis, redisPrefix);
  } else {
    secrets = createMemorySecretStore();
    apiTokens = createDirectoryApiTokenStore(join(dataDir, "api-tokens"));
  }
  const meshCa = meshCaWiring(config, kc, redis === undefined ? undefined : { client: redis, prefix: redisPrefix });
  // API suspensions: shared in Redis, and kept beside the relay PKI as well, so that a Redis restarted
  // empty never releases a cluster held during an incident (src/server/durable-suspensions.ts); without
  // Redis, the copy beside the PKI is the store.
  const suspensionCopy = config.pkiDir !== undefined ? createDirectoryRecordStore(join(config.pkiDir, "suspensions")) : config.kubernetesSecrets && kc ? createKubernetesRecordStore(kc, config.namespace, SUSPENSION_SECRETS) : undefined;
  const sharedSuspensions = redis === undefined ? undefined : createRedisSuspensionStore(redis, redisPrefix);
  const suspensions = suspensionCopy === undefined ? sharedSuspensions : withDurableSuspensions(sharedSuspensions ?? createMemorySuspensionStore(), suspensionCopy);

  const pipeline: PipelinePort = createQueuePipeline({
    ...(config.redisUrl === undefined ? {} : { redisUrl: config.redisUrl }),
    prefix: `${redisPrefix}:`,
    logger: logger.child("pipeline"),
    registry,
    workers: config.translationWorkers,
    jobLockMs: config.jobLockMs,
    identity: config.identity,
    retention: config.retention,
  });
  // Kubernetes' leader-election timings unless configured; `extra.leaseMs` (tests) scales all three.
  const lease = extra.leaseMs === undefined ? config.lease : leaseTimings({ ttlMs: extra.leaseMs });
  const leadership = createLeadership({
    ...(redis === undefined
      ? {}
      : { lock: createLeaderLock({ redis, name: "server-leader", prefix: `${redisPrefix}:`, ...lease, onLost: (reason) => leadership.lostLease(reason), logger: logger.child("lock") }) }),
    retryMs: lease.retryPeriodMs,
    logger: logger.child("leader"),
  });
  await leadership.start();
  const presence = redis === undefined ? undefined : createRedisPresence({ redis, prefix: `${redisPrefix}:`, replica: config.identity });
  const commitStatus = config.commitStatus === undefined ? undefined : await commitStatusPoster(config.commitStatus);
  const verifier = config.verifyCommits === undefined ? undefined : await commitVerifier(config.verifyCommits);
  const prometheus = config.prometheus === undefined ? undefined : await prometheusClient(config.prometheus);
  const server = createManagementServer({ config, pipeline, secrets, apiTokens, registry, logger, dataDir, singleton: leadership, ...(meshCa ? { meshCa } : {}), ...(prometheus ? { prometheus } : {}), ...(commitStatus ? { commitStatus } : {}), ...(verifier ? { verifier } : {}), ...(presence === undefined ? {} : { presence }), ...(suspensions === undefined ? {} : { suspensions }), ...(extra.auditDebounceMs === undefined ? {} : { auditDebounceMs: extra.auditDebounceMs }) });
  try {
    await server.start();
  } catch (err) {
    await server.stop().catch(() => undefined);
    await leadership.stop();
    redis?.disconnect();
    throw err;
  }
  return {
    server,
    async stop() {
      await server.stop();
      await leadership.stop();
      redis?.disconnect();
    },
  };
}
