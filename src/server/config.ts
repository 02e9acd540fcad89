/**
 * The management server's configuration: parsed ONCE by the composition root (`gitmesh server`)
 * from flags and environment variables that match the Helm chart (charts/gitmesh-server), validated
 * and frozen. Problems are returned as messages that say what to fix, never thrown.
 */
import { configResult, createConfigReader, DNS1123_LABEL, isLogLevel, type ConfigReader } from "../core/index.js";
import { GIT_HTTP_IDLE_TIMEOUT_MS, isSshUrl } from "../git-sync/index.js";
import { LEASE_DEFAULTS, redisUrlProblem } from "../queue/index.js";
import { isValidClusterName } from "../relay/index.js";
import { prometheusUrlProblem } from "../traffic/index.js";
import { DEFAULT_DIFF_MAX_MEMORY_MB, DEFAULT_DIFF_TIMEOUT_SECONDS } from "./diff-service.js";

export type ServerLogFormat = "json" | "human";
export type ServerLogLevel = "debug" | "info" | "warn" | "error";

export type GitSourceConfig =
  | {
      readonly kind: "remote";
      /** http(s) URL (credentials inside it are moved out and never logged), or an SSH URL (`ssh://…`, `git@host:org/repo.git`). */
      readonly url: string;
      readonly username: string | undefined;
      readonly password: string | undefined;
      /** For an SSH URL: the private key, its passphrase and the known_hosts to check the server against. */
      readonly ssh?: GitSshConfig | undefined;
    }
  | { readonly kind: "local"; /** A repository or bare repository on disk, read in place. */ readonly path: string };

export interface GitSshConfig {
  /** Private key file (chart: the Secret `git.ssh.secretName`, key `identity`). */
  readonly privateKeyFile: string;
  readonly passphrase?: string;
  /** known_hosts file; required unless `acceptUnknownHosts`. */
  readonly knownHostsFile?: string;
  /** Trust a host known_hosts does not list on first use (default false); a changed key is refused regardless. */
  readonly acceptUnknownHosts: boolean;
}

export interface ServerConfig {
  /** Namespace of the server (chart: POD_NAMESPACE; default `gitmesh`): where the relay secrets live. */
  readonly namespace: string;
  /** This replica's name (POD_NAME or hostname): in logs, the leader lock and /api. */
  readonly identity: string;
  /** Redis URL; undefined = standalone (everything in memory, one replica). */
  readonly redisUrl: string | undefined;
  /** Key prefix in Redis (default `gitmesh`); several installations can share one Redis with different prefixes. */
  readonly redisPrefix: string;
  /**
   * A Redis that cannot be reached at start stops the server (exit 1, a crash loop is the signal) unless
   * this is set: then it starts in memory (degraded) and writes back when Redis comes (--redis-optional).
   */
  readonly redisOptional: boolean;
  /** How long start waits for Redis before giving up or, with redisOptional, starting degraded (default 30 s). */
  readonly redisConnectTimeoutMs: number;
  /** The leader lease (src/queue/lock.ts): Kubernetes' timings by default, 15 s / 10 s / 2 s. */
  readonly lease: { readonly ttlMs: number; readonly renewDeadlineMs: number; readonly retryPeriodMs: number };
  /** Jobs per type this replica translates at once (`--workers`, default 4); 0: none, `gitmesh worker` processes do (needs Redis). */
  readonly translationWorkers: number;
  /** Lock of a running translation job: a job of a process that died is handed back after at most about twice this (default 30 s). */
  readonly jobLockMs: number;
  /** How much per-commit history Redis (and memory) keeps: see src/store/retention.ts. */
  readonly retention: RetentionConfig;
  readonly relayHost: string;
  /** gRPC relay port (default 9900; 0 picks a free port). */
  readonly relayPort: number;
  /** (Re)connecting agents the relay admits per second, and the burst (defaults 50 and 100; rate 0: no limit). */
  readonly relayAdmission: { readonly ratePerSecond: number; readonly burst: number };
  readonly httpHost: string;
  /** HTTP port: health, metrics, webhooks, API (default 9091; 0 picks a free port). */
  readonly httpPort: number;
  readonly logLevel: ServerLogLevel;
  readonly logFormat: ServerLogFormat;
  readonly git: GitSourceConfig;
  /** Branch, tag or commit of the source (default `main`). */
  readonly gitBranch: string;
  /** Sub-directory of the repository holding the configuration ("" = whole repository). */
  readonly gitPath: string;
  /** Poll interval, the backstop of webhooks (default 30 s; 0 = off). */
  readonly pollIntervalMs: number;
  /** A Git HTTP request whose server sends nothing for this long fails (GITMESH_GIT_IDLE_TIMEOUT_SECONDS, default GIT_HTTP_IDLE_TIMEOUT_MS). */
  readonly gitIdleTimeoutMs: number;
  /** Heap of the worker thread that renders /api/diff, MiB (GITMESH_DIFF_MAX_MEMORY_MB, default DEFAULT_DIFF_MAX_MEMORY_MB). */
  readonly diffMaxMemoryMb: number;
  /** A /api/diff rendering that takes longer is stopped, ms (GITMESH_DIFF_TIMEOUT_SECONDS, default DEFAULT_DIFF_TIMEOUT_SECONDS). */
  readonly diffTimeoutMs: number;
  /** Audit branch (default `gitmesh/rendered`); "" turns the audit writer off. */
  readonly auditBranch: string;
  /** HMAC secret of /webhooks/{github,gitlab,generic}; undefined = webhooks answer 404. */
  readonly webhookSecret: string | undefined;
  /** TLS server name of the relay (default `gitmesh-server.gitmesh`). */
  readonly relayAuthority: string;
  readonly relayAdditionalSans: readonly string[];
  /** Generate the relay CA on first start when none is stored (default true). */
  readonly generateCa: boolean;
  /** Kubernetes secret names (chart) of the relay material. */
  readonly secrets: { readonly root: string; readonly server: string; readonly signing: string; readonly token: string };
  /** Where relay PKI and token are kept outside Kubernetes: a directory (`--pki-dir`). */
  readonly pkiDir: string | undefined;
  /** Use Kubernetes secrets in `namespace` for the relay PKI/token (in a pod, or with --kubeconfig). */
  readonly kubernetesSecrets: boolean;
  readonly kubeconfig: string | undefined;
  /**
   * How agents register (`--bootstrap` / GITMESH_RELAY_BOOTSTRAP): `per-cluster` (default) — a single-use,
   * expiring credential bound to one cluster, minted by `gitmesh cluster register` / reissue; or
   * `fleet-token` — the explicit opt-in for Gloo-style installs: one token shared by every cluster
   * (relay-identity-token-secret). Both keep one live identity per cluster.
   */
  readonly bootstrap: "per-cluster" | "fleet-token";
  /** Fleet token given directly (`--relay-token` / GITMESH_RELAY_TOKEN); wins over stored ones; only with `bootstrap: fleet-token`. */
  readonly relayToken: string | undefined;
  /** Warming window: after a restart that lost state, publish nothing for at most this long (default 60 s). */
  readonly warmingWindowMs: number;
  /** Clusters never waited for while warming (in addition to KubernetesCluster spec.skipWarming). */
  readonly skipWarming: readonly string[];
  /** Working directory for Git caches (default: a temp directory). */
  readonly dataDir: string | undefined;
  /** Bearer tokens required on /api (default true); false opens the API to anyone who reaches the port (`--no-api-auth`, trials only). */
  readonly apiAuth: boolean;
  /** Token files (`--api-token-file`, `--api-admin-token-file`; the chart mounts its Secret): each wins over the stored token of its role. */
  readonly apiTokenFiles: { readonly read: string | undefined; readonly admin: string | undefined };
  /** Kubernetes Secret of the API tokens (keys read, admin; default gitmesh-api-tokens). */
  readonly apiTokenSecret: string;
  /** Serve the HTTP port over TLS with these PEM files (`--http-tls-cert`, `--http-tls-key`); undefined = plain HTTP. */
  readonly httpTls: { readonly certFile: string; readonly keyFile: string } | undefined;
  /** Secret (in `namespace`) holding the generated mesh root when Kubernetes is used (default gitmesh-mesh-root-ca). */
  readonly meshRootSecret: string;
  /** Without Kubernetes: directory of `mgmtServerCa.secretRef` Secrets, `<dir>/<namespace>/<name>/<key>` (--mesh-ca-secret-dir). */
  readonly meshCaSecretDir: string | undefined;
  /** Debounce of webhook bursts (default 50 ms: one push sends one hint; a burst of pushes still coalesces). */
  readonly webhookDebounceMs: number;
  /** Commit statuses on the Git host (opt-in): where, and the file holding the token. */
  /** --verify-commits: files of trusted keys (either set turns verification on). */
  readonly verifyCommits: { readonly allowedSignersFile: string | undefined; readonly openpgpKeysFile: string | undefined } | undefined;
  readonly commitStatus: { readonly platform: "github" | "gitlab"; readonly apiUrl: string; readonly repository: string; readonly tokenFile: string } | undefined;
  /** The Prometheus holding Istio's standard metrics, for the traffic graph (`/api/traffic`); undefined: not configured. */
  readonly prometheus: { readonly url: string; readonly tokenFile: string | undefined; readonly caFile: string | undefined } | undefined;
}

/** Raw values: flags win over environment variables (the root merges them). */
export type ServerConfigInput = { readonly [K in keyof typeof SERVER_ENV]?: string | undefined } & {
  readonly skipWarming?: readonly string[] | undefined;
  readonly logFormat?: string | undefined;
  readonly gitLocal?: string | undefined;
  readonly pkiDir?: string | undefined;
  readonly kubeconfig?: string | undefined;
  readonly dataDir?: string | undefined;
  readonly meshCaSecretDir?: string | undefined;
  readonly relayHost?: string | undefined;
  readonly httpHost?: string | undefined;
  readonly webhookDebounceMs?: string | undefined;
  readonly inCluster?: boolean | undefined;
};

/** Environment variables the root reads (names match charts/gitmesh-server/templates/deployment.yaml). */
export const SERVER_ENV = {
  namespace: "POD_NAMESPACE",
  identity: "POD_NAME",
  redisUrl: "REDIS_URL",
  redisPrefix: "GITMESH_REDIS_PREFIX",
  redisOptional: "GITMESH_REDIS_OPTIONAL",
  redisConnectTimeoutSeconds: "GITMESH_REDIS_CONNECT_TIMEOUT_SECONDS",
  leaseDurationSeconds: "GITMESH_LEASE_DURATION_SECONDS",
  leaseRenewDeadlineSeconds: "GITMESH_LEASE_RENEW_DEADLINE_SECONDS",
  leaseRetryPeriodSeconds: "GITMESH_LEASE_RETRY_PERIOD_SECONDS",
  workers: "GITMESH_WORKERS",
  jobLockSeconds: "GITMESH_JOB_LOCK_SECONDS",
  retentionCommits: "GITMESH_RETENTION_COMMITS",
  retentionDesiredStates: "GITMESH_RETENTION_DESIRED_STATES",
  retentionMaxAgeHours: "GITMESH_RETENTION_MAX_AGE_HOURS",
  relayPort: "GITMESH_RELAY_PORT",
  relayAdmissionRate: "GITMESH_RELAY_ADMISSION_RATE",
  relayAdmissionBurst: "GITMESH_RELAY_ADMISSION_BURST",
  httpPort: "GITMESH_HTTP_PORT",
  logLevel: "GITMESH_LOG_LEVEL",
  gitUrl: "GITMESH_GIT_URL",
  gitBranch: "GITMESH_GIT_BRANCH",
  gitPath: "GITMESH_GIT_PATH",
  pollIntervalSeconds: "GITMESH_GIT_POLL_INTERVAL_SECONDS",
  gitIdleTimeoutSeconds: "GITMESH_GIT_IDLE_TIMEOUT_SECONDS",
  gitUsername: "GITMESH_GIT_USERNAME",
  gitPassword: "GITMESH_GIT_PASSWORD",
  gitSshKeyFile: "GITMESH_GIT_SSH_KEY_FILE",
  gitSshKeyPassphrase: "GITMESH_GIT_SSH_KEY_PASSPHRASE",
  gitSshKnownHostsFile: "GITMESH_GIT_SSH_KNOWN_HOSTS_FILE",
  gitSshAcceptNewHostKeys: "GITMESH_GIT_SSH_ACCEPT_NEW_HOST_KEYS",
  auditBranch: "GITMESH_AUDIT_BRANCH",
  webhookSecret: "GITMESH_WEBHOOK_SECRET",
  relayAuthority: "GITMESH_RELAY_AUTHORITY",
  relayAdditionalSans: "GITMESH_RELAY_ADDITIONAL_SANS",
  generateCa: "GITMESH_RELAY_GENERATE_CA",
  rootTlsSecret: "GITMESH_RELAY_ROOT_TLS_SECRET",
  serverTlsSecret: "GITMESH_RELAY_SERVER_TLS_SECRET",
  signingTlsSecret: "GITMESH_RELAY_SIGNING_TLS_SECRET",
  tokenSecret: "GITMESH_RELAY_TOKEN_SECRET",
  relayToken: "GITMESH_RELAY_TOKEN",
  bootstrap: "GITMESH_RELAY_BOOTSTRAP",
  warmingWindowSeconds: "GITMESH_WARMING_WINDOW_SECONDS",
  diffMaxMemoryMb: "GITMESH_DIFF_MAX_MEMORY_MB",
  diffTimeoutSeconds: "GITMESH_DIFF_TIMEOUT_SECONDS",
  apiAuth: "GITMESH_API_AUTH",
  apiTokenFile: "GITMESH_API_TOKEN_FILE",
  apiAdminTokenFile: "GITMESH_API_ADMIN_TOKEN_FILE",
  apiTokenSecret: "GITMESH_API_TOKEN_SECRET",
  httpTlsCert: "GITMESH_HTTP_TLS_CERT_FILE",
  httpTlsKey: "GITMESH_HTTP_TLS_KEY_FILE",
  meshRootSecret: "GITMESH_MESH_ROOT_SECRET",
  commitStatus: "GITMESH_COMMIT_STATUS",
  commitStatusApiUrl: "GITMESH_COMMIT_STATUS_API_URL",
  commitStatusRepository: "GITMESH_COMMIT_STATUS_REPOSITORY",
  commitStatusTokenFile: "GITMESH_COMMIT_STATUS_TOKEN_FILE",
  prometheusUrl: "GITMESH_PROMETHEUS_URL",
  prometheusTokenFile: "GITMESH_PROMETHEUS_TOKEN_FILE",
  prometheusCaFile: "GITMESH_PROMETHEUS_CA_FILE",
  verifyAllowedSigners: "GITMESH_VERIFY_ALLOWED_SIGNERS_FILE",
  verifyOpenpgpKeys: "GITMESH_VERIFY_OPENPGP_KEYS_FILE",
} as const;

/**
 * What each environment variable sets (`gitmesh server --help` prints this table and the README carries
 * it; a test checks both, so a setting cannot go undocumented). Typed by SERVER_ENV: a new variable
 * without a description does not compile.
 */
export const SERVER_ENV_HELP: { readonly [K in keyof typeof SERVER_ENV]: string } = {
  namespace: "namespace of the relay, API-token and mesh-root Secrets (default gitmesh; --namespace)",
  identity: "replica name in status, logs and leases (default: the hostname; --identity)",
  redisUrl: "Redis shared by the replicas: redis://host:6379[/db], rediss:// (TLS), redis-sentinel://s1:26379,s2:26379,s3:26379/<master name>, redis-cluster://n1:6379,n2:6379,n3:6379 (unset: one standalone replica, in memory; --redis-url)",
  redisPrefix: "key prefix in Redis, to share one Redis between installations (default gitmesh)",
  redisOptional: "true: start even when Redis cannot be reached, in memory (degraded), writing back when it comes (default false: exit 1 naming the URL; --redis-optional)",
  redisConnectTimeoutSeconds: "how long start waits for Redis before exiting (or, with GITMESH_REDIS_OPTIONAL, starting degraded) (default 30)",
  leaseDurationSeconds: "the leader lease (Git polling, audit commits): a dead leader's lease is taken over after this (default 15, as Kubernetes' leader election)",
  leaseRenewDeadlineSeconds: "the leader steps down when no renewal succeeded for this long (default 10; below the lease duration)",
  leaseRetryPeriodSeconds: "how often the leader renews and followers try to take the lease (default 2; below the renew deadline)",
  workers: "translation jobs per type this replica runs at once (default 4; --workers); 0: none, `gitmesh worker` processes translate (needs Redis)",
  jobLockSeconds: "lock of a running translation job: a job whose process died goes back to the queue after at most about twice this (default 30)",
  retentionCommits: "commits whose convergence record (which cluster applied it, when) is kept, besides the one in force and those clusters still run (default 100)",
  retentionDesiredStates: "desired states of earlier commits kept in Redis besides the one in force (default 8)",
  retentionMaxAgeHours: "age after which a convergence record or an earlier desired state is dropped, whatever the counts (default 168, a week)",
  relayPort: "gRPC relay port (default 9900; --relay-port)",
  relayAdmissionRate: "(re)connecting agents the relay admits per second, registrations and discovery streams (default 50; 0: no limit); the excess is told to come back later, with jitter",
  relayAdmissionBurst: "(re)connecting agents admitted at once after a quiet spell (default 100)",
  httpPort: "HTTP port: API, webhooks, health, metrics (default 9091; --http-port)",
  logLevel: "debug | info | warn | error (default info; --log-level)",
  gitUrl: "configuration repository (--git-url): https://host/org/repo.git (credentials in GITMESH_GIT_USERNAME / GITMESH_GIT_PASSWORD, not in the URL), or SSH: git@host:org/repo.git or ssh://[user@]host[:port]/path (key in GITMESH_GIT_SSH_KEY_FILE)",
  gitBranch: "branch, tag or commit to follow (default main; --branch)",
  gitPath: "sub-directory of the repository holding the configuration (default: all; --path)",
  pollIntervalSeconds: "Git poll interval, the backstop of webhooks (default 30; 0 = off; --poll-interval)",
  gitIdleTimeoutSeconds: `a Git request (fetch, audit push, diff read) whose server sends nothing for this long fails and is retried (default ${GIT_HTTP_IDLE_TIMEOUT_MS / 1000})`,
  gitUsername: "Git HTTP user name (default git when a password is set)",
  gitPassword: "Git HTTP password or access token (never logged; the chart reads it from a Secret)",
  gitSshKeyFile: "SSH URL: the private key file, e.g. a deploy key; write access for the audit branch (--git-ssh-key; the chart mounts git.ssh.secretName)",
  gitSshKeyPassphrase: "SSH URL: passphrase of an encrypted key (never logged; the chart reads it from the Secret's passphrase key)",
  gitSshKnownHostsFile: "SSH URL: known_hosts listing the Git server's host key; required, an unknown or changed host key is refused (--git-ssh-known-hosts; chart: git.ssh.knownHosts)",
  gitSshAcceptNewHostKeys: "SSH URL: true trusts a host that known_hosts does not list on first use, logging its fingerprint (default false; --git-ssh-accept-new-host-keys); a changed key is refused regardless",
  auditBranch: "branch of the rendered output (default gitmesh/rendered; --audit-branch; empty or --no-audit: off)",
  webhookSecret: "secret of /webhooks/github (HMAC), /webhooks/gitlab (token) and /webhooks/generic (HMAC); unset: the webhook endpoints answer 404 and polling alone brings commits",
  relayAuthority: "DNS name in the relay server certificate, the agents' relay.authority (default gitmesh-server.gitmesh; --authority)",
  relayAdditionalSans: "more DNS names / IPs for the relay certificate, comma-separated (--additional-sans)",
  generateCa: "false: never generate the relay PKI, use the existing Secrets (default true)",
  rootTlsSecret: "Secret of the relay root CA (default relay-root-tls-secret)",
  serverTlsSecret: "Secret of the relay server certificate (default relay-server-tls-secret)",
  signingTlsSecret: "Secret of the CA that signs agent certificates (default relay-tls-signing-secret)",
  tokenSecret: "Secret holding the fleet bootstrap token, with GITMESH_RELAY_BOOTSTRAP=fleet-token (default relay-identity-token-secret)",
  relayToken: "the fleet bootstrap token itself (--relay-token; prefer the Secret)",
  bootstrap: "per-cluster (default: single-use credentials from `gitmesh cluster register`) or fleet-token (--bootstrap)",
  diffMaxMemoryMb: `memory (MiB) of the worker thread that renders GET /api/diff; a diff that needs more is refused (503) and the server runs on (default ${DEFAULT_DIFF_MAX_MEMORY_MB})`,
  diffTimeoutSeconds: `a GET /api/diff rendering that takes longer is stopped and answered 503; the next diff starts afresh (default ${DEFAULT_DIFF_TIMEOUT_SECONDS})`,
  warmingWindowSeconds: "after a restart that lost state, hold output at most this long for discovery (default 60; --warming-window)",
  apiAuth: "false: serve /api without tokens (trials only; --no-api-auth)",
  apiTokenFile: "file holding the read-role API token (default: stored, generated once; --api-token-file)",
  apiAdminTokenFile: "file holding the admin-role API token (default: stored, generated once; --api-admin-token-file)",
  apiTokenSecret: "Secret holding the generated API tokens (default gitmesh-api-tokens, keys read and admin)",
  httpTlsCert: "serve the HTTP port over TLS with this PEM certificate chain (--http-tls-cert)",
  httpTlsKey: "PEM private key of the HTTP certificate (--http-tls-key)",
  meshRootSecret: "Secret of the generated mesh root CA for RootTrustPolicy (default gitmesh-mesh-root-ca)",
  commitStatus: "github | gitlab: post a commit status gitmesh/apply on each commit that comes into force: pending, success when every cluster applied it, failure on a NACK or a rejection (--commit-status; default off)",
  commitStatusApiUrl: "API of the Git host (default https://api.github.com, https://gitlab.com/api/v4; --commit-status-api-url)",
  commitStatusRepository: "GitHub owner/repo, or GitLab project id or path (--commit-status-repository)",
  prometheusUrl: "Prometheus with Istio's standard metrics, for the traffic graph (/api/traffic, the Traffic page): http(s)://host:9090 (--prometheus-url; default: none, the page says how to set it)",
  prometheusTokenFile: "file holding a bearer token sent to Prometheus (--prometheus-token-file; never logged)",
  prometheusCaFile: "PEM CA bundle trusted for an https Prometheus URL (--prometheus-ca-file)",
  commitStatusTokenFile: "file holding the host token: GitHub statuses: write, GitLab api scope and Developer (--commit-status-token-file; never logged)",
  verifyAllowedSigners: "signed commits only: git allowed-signers file of trusted SSH keys (--verify-commits-allowed-signers); an unsigned or untrusted commit is rejected",
  verifyOpenpgpKeys: "signed commits only: armored OpenPGP public keys trusted to sign commits (--verify-commits-openpgp-keys)",
};

/** How much per-commit history the store keeps (the server's and the workers' settings; the chart passes the same to both). */
export interface RetentionConfig {
  readonly convergenceCommits: number;
  readonly desiredStates: number;
  readonly maxAgeMs: number;
}

/** The retention settings from their variables (same names for `gitmesh server` and `gitmesh worker`). */
export function readRetention(
  read: ConfigReader,
  input: { readonly retentionCommits?: string | undefined; readonly retentionDesiredStates?: string | undefined; readonly retentionMaxAgeHours?: string | undefined },
): RetentionConfig {
  const int = (min: number) => (n: number) => Number.isSafeInteger(n) && n >= min;
  return {
    convergenceCommits: read.number(input.retentionCommits, `retention (${SERVER_ENV.retentionCommits})`, 100, int(1), "an integer ≥ 1"),
    desiredStates: read.number(input.retentionDesiredStates, `retention (${SERVER_ENV.retentionDesiredStates})`, 8, int(0), "an integer ≥ 0"),
    maxAgeMs: Math.round(3_600_000 * read.number(input.retentionMaxAgeHours, `retention (${SERVER_ENV.retentionMaxAgeHours})`, 168, (n) => n >= 1, "hours ≥ 1")),
  };
}

function commitStatusConfig(input: ServerConfigInput, problems: string[]): ServerConfig["commitStatus"] {
  const platform = input.commitStatus || undefined;
  if (platform === undefined) return undefined;
  if (platform !== "github" && platform !== "gitlab") {
    problems.push(`commit statuses: ${JSON.stringify(platform)} is not github or gitlab (--commit-status or ${SERVER_ENV.commitStatus})`);
    return undefined;
  }
  const apiUrl = input.commitStatusApiUrl || (platform === "github" ? "https://api.github.com" : "https://gitlab.com/api/v4");
  if (!/^https?:\/\//.test(apiUrl)) problems.push(`commit statuses: the API URL must be http(s) (--commit-status-api-url or ${SERVER_ENV.commitStatusApiUrl})`);
  const repository = input.commitStatusRepository || "";
  if (repository === "") problems.push(`commit statuses: name the repository (--commit-status-repository or ${SERVER_ENV.commitStatusRepository}: ${platform === "github" ? "owner/repo" : "the project id or group/project"})`);
  else if (platform === "github" && !/^[^/\s]+\/[^/\s]+$/.test(repository)) problems.push(`commit statuses: a GitHub repository is owner/repo, got ${JSON.stringify(repository)}`);
  const tokenFile = input.commitStatusTokenFile || "";
  if (tokenFile === "") problems.push(`commit statuses: give the token in a file (--commit-status-token-file or ${SERVER_ENV.commitStatusTokenFile}); tokens are never taken from flags`);
  return { platform, apiUrl, repository, tokenFile };
}

function prometheusConfig(input: ServerConfigInput, problems: string[]): ServerConfig["prometheus"] {
  const url = input.prometheusUrl || undefined;
  const tokenFile = input.prometheusTokenFile || undefined;
  const caFile = input.prometheusCaFile || undefined;
  if (url === undefined) {
    if (tokenFile !== undefined || caFile !== undefined) problems.push(`a Prometheus token or CA file needs the Prometheus URL (--prometheus-url or ${SERVER_ENV.prometheusUrl})`);
    return undefined;
  }
  const problem = prometheusUrlProblem(url);
  if (problem !== undefined) problems.push(`${problem} (--prometheus-url or ${SERVER_ENV.prometheusUrl})`);
  return { url, tokenFile, caFile };
}

/** The SSH settings an SSH Git URL needs: a key, and known_hosts unless trust on first use is asked for. */
function gitSshConfig(input: ServerConfigInput, read: ConfigReader, problems: string[]): GitSshConfig | undefined {
  if (input.gitUsername || input.gitPassword) problems.push(`${SERVER_ENV.gitUsername} / ${SERVER_ENV.gitPassword} are for http(s) URLs; an SSH URL authenticates with a key (${SERVER_ENV.gitSshKeyFile})`);
  const acceptUnknownHosts = read.bool(input.gitSshAcceptNewHostKeys, `accept new SSH host keys (${SERVER_ENV.gitSshAcceptNewHostKeys})`, false);
  const privateKeyFile = input.gitSshKeyFile || "";
  const knownHostsFile = input.gitSshKnownHostsFile || undefined;
  if (privateKeyFile === "") problems.push(`an SSH Git URL needs a private key: --git-ssh-key <file> or ${SERVER_ENV.gitSshKeyFile} (chart: git.ssh.secretName)`);
  if (knownHostsFile === undefined && !acceptUnknownHosts) {
    problems.push(`an SSH Git URL needs the server's host key: --git-ssh-known-hosts <file> or ${SERVER_ENV.gitSshKnownHostsFile} (chart: git.ssh.knownHosts; \`ssh-keyscan <host>\` prints it — check its fingerprint), or ${SERVER_ENV.gitSshAcceptNewHostKeys}=true to trust on first use`);
  }
  if (privateKeyFile === "") return undefined;
  return {
    privateKeyFile,
    ...(input.gitSshKeyPassphrase ? { passphrase: input.gitSshKeyPassphrase } : {}),
    ...(knownHostsFile === undefined ? {} : { knownHostsFile }),
    acceptUnknownHosts,
  };
}

export function parseServerConfig(input: ServerConfigInput, defaults: { identity: string }): { config?: ServerConfig; problems: string[] } {
  const read = createConfigReader();
  const { problems } = read;

  const namespace = input.namespace || "gitmesh";
  if (!DNS1123_LABEL.test(namespace)) problems.push(`namespace "${namespace}" is not a valid namespace name (--namespace or ${SERVER_ENV.namespace})`);

  let git: GitSourceConfig | undefined;
  if (input.gitLocal && input.gitUrl) problems.push(`give either --git-url (${SERVER_ENV.gitUrl}) or --git-local, not both`);
  else if (input.gitLocal) git = { kind: "local", path: input.gitLocal };
  else if (input.gitUrl) {
    if (isSshUrl(input.gitUrl)) git = { kind: "remote", url: input.gitUrl, username: undefined, password: undefined, ssh: gitSshConfig(input, read, problems) };
    else if (!/^https?:\/\//.test(input.gitUrl)) problems.push(`Git URL must be https://…, http://…, ssh://[user@]host[:port]/path or [user@]host:path (got a value of ${input.gitUrl.length} characters; --git-url or ${SERVER_ENV.gitUrl}); for a repository on disk use --git-local <path>`);
    else git = { kind: "remote", url: input.gitUrl, username: input.gitUsername || undefined, password: input.gitPassword || undefined, ssh: undefined };
  } else problems.push(`no configuration repository: set --git-url <https://… or git@host:org/repo.git> (${SERVER_ENV.gitUrl}) or --git-local <path>`);

  const level = input.logLevel || "info";
  if (!isLogLevel(level)) problems.push(`log level "${level}" must be debug, info, warn or error (--log-level or ${SERVER_ENV.logLevel})`);
  const format = input.logFormat || "json";
  if (format !== "json" && format !== "human") problems.push(`log format "${format}" must be json or human`);

  const redisUrl = input.redisUrl || undefined;
  const redisProblem = redisUrl === undefined ? undefined : redisUrlProblem(redisUrl);
  if (redisProblem !== undefined) problems.push(`${redisProblem} (--redis-url or ${SERVER_ENV.redisUrl}); unset it to run standalone`);

  const redisOptional = read.bool(input.redisOptional, `Redis optional (--redis-optional or ${SERVER_ENV.redisOptional})`, false);
  if (redisOptional && redisUrl !== undefined && !input.pkiDir && !input.inCluster && !input.kubeconfig) {
    // Without them the relay PKI and API tokens live in that Redis: nothing could start while it is down.
    problems.push(`--redis-optional (${SERVER_ENV.redisOptional}) needs the relay PKI outside Redis, or the server cannot start while Redis is down: add --pki-dir <dir>, or run in Kubernetes (Secrets)`);
  }

  const seconds = (v: string | undefined, what: string, dflt: number) => 1000 * read.number(v, what, dflt / 1000, (n) => n > 0 && n <= 3600, "seconds, more than 0 and at most 3600");
  const lease = {
    ttlMs: seconds(input.leaseDurationSeconds, `lease duration (${SERVER_ENV.leaseDurationSeconds})`, LEASE_DEFAULTS.ttlMs),
    renewDeadlineMs: seconds(input.leaseRenewDeadlineSeconds, `lease renew deadline (${SERVER_ENV.leaseRenewDeadlineSeconds})`, LEASE_DEFAULTS.renewDeadlineMs),
    retryPeriodMs: seconds(input.leaseRetryPeriodSeconds, `lease retry period (${SERVER_ENV.leaseRetryPeriodSeconds})`, LEASE_DEFAULTS.retryPeriodMs),
  };
  if (!(lease.retryPeriodMs < lease.renewDeadlineMs && lease.renewDeadlineMs < lease.ttlMs)) {
    problems.push(`lease timings must satisfy ${SERVER_ENV.leaseRetryPeriodSeconds} < ${SERVER_ENV.leaseRenewDeadlineSeconds} < ${SERVER_ENV.leaseDurationSeconds} (got ${String(lease.retryPeriodMs / 1000)}, ${String(lease.renewDeadlineMs / 1000)}, ${String(lease.ttlMs / 1000)})`);
  }

  const translationWorkers = read.number(input.workers, `translation workers (--workers or ${SERVER_ENV.workers})`, 4, (n) => Number.isInteger(n) && n >= 0 && n <= 64, "an integer from 0 to 64");
  if (translationWorkers === 0 && redisUrl === undefined) problems.push(`--workers 0 (${SERVER_ENV.workers}=0) needs Redis (--redis-url or ${SERVER_ENV.redisUrl}) and \`gitmesh worker\` processes on it: without them nothing would translate`);
  const jobLockSeconds = read.number(input.jobLockSeconds, `job lock (${SERVER_ENV.jobLockSeconds})`, 30, (n) => n >= 1 && n <= 3600, "seconds from 1 to 3600");

  const retention = readRetention(read, input);

  const skipWarming = [...(input.skipWarming ?? [])];
  for (const c of skipWarming) if (!isValidClusterName(c)) problems.push(`--skip-warming "${c}" is not a valid cluster name`);

  const relayToken = input.relayToken || undefined;
  if (relayToken !== undefined && relayToken.length < 16) problems.push(`the relay token must be at least 16 characters (--relay-token or ${SERVER_ENV.relayToken})`);
  const bootstrap = input.bootstrap || "per-cluster";
  if (bootstrap !== "per-cluster" && bootstrap !== "fleet-token") problems.push(`bootstrap "${bootstrap}" must be per-cluster or fleet-token (--bootstrap or ${SERVER_ENV.bootstrap})`);
  if (relayToken !== undefined && bootstrap !== "fleet-token") {
    problems.push(`--relay-token (${SERVER_ENV.relayToken}) is a fleet-wide token: it needs the explicit opt-in --bootstrap fleet-token (${SERVER_ENV.bootstrap}=fleet-token); by default each cluster registers with its own single-use credential (gitmesh cluster register)`);
  }

  const httpTlsCert = input.httpTlsCert || undefined;
  const httpTlsKey = input.httpTlsKey || undefined;
  if ((httpTlsCert === undefined) !== (httpTlsKey === undefined)) problems.push(`HTTPS needs both --http-tls-cert (${SERVER_ENV.httpTlsCert}) and --http-tls-key (${SERVER_ENV.httpTlsKey})`);
  const apiTokenSecret = input.apiTokenSecret || "gitmesh-api-tokens";
  if (!DNS1123_LABEL.test(apiTokenSecret)) problems.push(`API token Secret "${apiTokenSecret}" is not a valid Secret name (${SERVER_ENV.apiTokenSecret})`);

  const pollSeconds = read.number(input.pollIntervalSeconds, "poll interval", 30, (n) => n >= 0, "seconds ≥ 0 (0 = off)");
  const gitIdleSeconds = read.number(input.gitIdleTimeoutSeconds, `Git idle timeout (${SERVER_ENV.gitIdleTimeoutSeconds})`, GIT_HTTP_IDLE_TIMEOUT_MS / 1000, (n) => n >= 1 && n <= 3600, "seconds from 1 to 3600");
  const warmingSeconds = read.number(input.warmingWindowSeconds, "warming window", 60, (n) => n >= 0, "seconds ≥ 0");
  const diffMaxMemoryMb = read.number(input.diffMaxMemoryMb, `diff memory (${SERVER_ENV.diffMaxMemoryMb})`, DEFAULT_DIFF_MAX_MEMORY_MB, (n) => Number.isInteger(n) && n >= 64, "an integer number of MiB ≥ 64");
  const diffTimeoutSeconds = read.number(input.diffTimeoutSeconds, `diff timeout (${SERVER_ENV.diffTimeoutSeconds})`, DEFAULT_DIFF_TIMEOUT_SECONDS, (n) => n >= 1 && n <= 86_400, "seconds from 1 to 86400");

  const config: ServerConfig = {
    namespace,
    identity: input.identity || defaults.identity,
    redisUrl,
    redisPrefix: input.redisPrefix || "gitmesh",
    redisOptional,
    lease,
    redisConnectTimeoutMs:
      1000 * read.number(input.redisConnectTimeoutSeconds, `Redis connect timeout (${SERVER_ENV.redisConnectTimeoutSeconds})`, 30, (n) => n >= 1 && n <= 3600, "seconds from 1 to 3600"),
    translationWorkers,
    jobLockMs: jobLockSeconds * 1000,
    retention,
    relayHost: input.relayHost || "0.0.0.0",
    relayPort: read.port(input.relayPort, "relay port", 9900),
    relayAdmission: {
      ratePerSecond: read.number(input.relayAdmissionRate, `relay admission rate (${SERVER_ENV.relayAdmissionRate})`, 50, (n) => n >= 0, "agents per second ≥ 0 (0: no limit)"),
      burst: read.number(input.relayAdmissionBurst, `relay admission burst (${SERVER_ENV.relayAdmissionBurst})`, 100, (n) => Number.isInteger(n) && n >= 1, "an integer ≥ 1"),
    },
    httpHost: input.httpHost || "0.0.0.0",
    httpPort: read.port(input.httpPort, "HTTP port", 9091),
    logLevel: level as ServerLogLevel,
    logFormat: format as ServerLogFormat,
    git: git ?? { kind: "local", path: "" },
    gitBranch: input.gitBranch || "main",
    gitPath: (input.gitPath ?? "").replace(/^\/+|\/+$/g, ""),
    pollIntervalMs: pollSeconds * 1000,
    gitIdleTimeoutMs: gitIdleSeconds * 1000,
    diffMaxMemoryMb,
    diffTimeoutMs: diffTimeoutSeconds * 1000,
    auditBranch: input.auditBranch ?? "gitmesh/rendered",
    webhookSecret: input.webhookSecret || undefined,
    relayAuthority: input.relayAuthority || "gitmesh-server.gitmesh",
    relayAdditionalSans: (input.relayAdditionalSans ?? "").split(",").map((s) => s.trim()).filter((s) => s !== ""),
    generateCa: read.bool(input.generateCa, `generate CA (${SERVER_ENV.generateCa})`, true),
    secrets: {
      root: input.rootTlsSecret || "relay-root-tls-secret",
      server: input.serverTlsSecret || "relay-server-tls-secret",
      signing: input.signingTlsSecret || "relay-tls-signing-secret",
      token: input.tokenSecret || "relay-identity-token-secret",
    },
    pkiDir: input.pkiDir || undefined,
    kubernetesSecrets: input.pkiDir ? false : Boolean(input.inCluster) || Boolean(input.kubeconfig),
    kubeconfig: input.kubeconfig || undefined,
    relayToken,
    bootstrap: bootstrap === "fleet-token" ? "fleet-token" : "per-cluster",
    warmingWindowMs: warmingSeconds * 1000,
    skipWarming,
    dataDir: input.dataDir || undefined,
    apiAuth: read.bool(input.apiAuth, `API authentication (--no-api-auth or ${SERVER_ENV.apiAuth})`, true),
    apiTokenFiles: { read: input.apiTokenFile || undefined, admin: input.apiAdminTokenFile || undefined },
    apiTokenSecret,
    httpTls: httpTlsCert !== undefined && httpTlsKey !== undefined ? { certFile: httpTlsCert, keyFile: httpTlsKey } : undefined,
    meshRootSecret: input.meshRootSecret || "gitmesh-mesh-root-ca",
    meshCaSecretDir: input.meshCaSecretDir || undefined,
    webhookDebounceMs: read.number(input.webhookDebounceMs, "webhook debounce", 50, (n) => n >= 0, "milliseconds ≥ 0"),
    commitStatus: commitStatusConfig(input, problems),
    prometheus: prometheusConfig(input, problems),
    verifyCommits:
      input.verifyAllowedSigners || input.verifyOpenpgpKeys ? { allowedSignersFile: input.verifyAllowedSigners || undefined, openpgpKeysFile: input.verifyOpenpgpKeys || undefined } : undefined,
  };
  return configResult(config, problems);
}
