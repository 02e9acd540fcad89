/**
 * `gitmesh cluster register <name>` and `gitmesh cluster deregister <name>`: what an operator
 * would otherwise do by hand to join a workload cluster (DESIGN.md "helm install of agents"; the
 * flow of Gloo's `meshctl cluster register`), one printed line per step:
 *
 *   register:   read the root CA from the management cluster → create the agent namespace in the
 *               remote cluster → copy the root CA (ca.crt only, never the CA key) → mint a single-use
 *               bootstrap credential bound to this cluster (24 h) and write it there → add
 *               clusters/<name>.yaml (KubernetesCluster) to the configuration repository (commit +
 *               push, or print it for a pull request) → helm upgrade --install the agent chart (or
 *               print the command) → wait for the agent's client certificate → remove the credential.
 *   reissue:    revoke the cluster's certificates and mint a new credential (explicit operator action:
 *               one live identity per cluster) → write it into the remote cluster → wait for the agent's
 *               new certificate (it re-registers on its own, no restart) → remove the credential.
 *   deregister: helm uninstall (or print) → delete the relay secrets in the remote cluster → revoke
 *               the cluster's certificates → remove clusters/<name>.yaml.
 *
 * Where the credential is minted: the CLI writes it (its sha256 only, never the value) straight into
 * the server's identity store — the per-cluster Secret relay-identity-<name> in the server's
 * namespace, the same Secret the server reads, written with a resourceVersion precondition — through
 * the management-cluster context it already uses to read the root CA. So no server API credential is
 * needed, the plaintext travels only from the operator's machine into the workload cluster, and who may
 * mint is decided by Kubernetes RBAC on secrets in the server's namespace (already the root of trust
 * for the relay PKI). Servers that keep identities in Redis or a directory mint through the admin API
 * (POST /api/clusters/<name>/reissue). `--fleet-token` copies the shared token instead (servers run
 * with the `--bootstrap fleet-token` opt-in).
 *
 * Every step is idempotent: what already exists is reported as unchanged. Secret values are never
 * printed (the root CA is shown by subject and fingerprint). Exit 0 done, 1 a step failed, 2 usage.
 * This file is a composition root: it reads the environment (PATH, KUBECONFIG, GITMESH_GIT_*).
 */
import { X509Certificate } from "node:crypto";
import { ApiException, KubeConfig } from "@kubernetes/client-node";
import { Command } from "commander";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { redact, stripCredentials } from "../core/index.js";
import { createKubeClient, KINDS, loadClientCredentials, type KubeReader, type KubeWriter } from "../agent/index.js";
import { DEFAULT_ADMIN_NAMESPACE, loadDesiredState } from "../config/index.js";
import { CLUSTER_URI_PREFIX, createClusterIdentities, isValidClusterName, LiveIdentityError, RELAY_SECRETS } from "../relay/index.js";
import { createKubernetesRecordStore } from "../server/index.js";
import { splitCredentials } from "../git-sync/index.js";
import { ExitCode, UsageError, type CliIo } from "./io.js";
import { bundledAgentChart, findHelm, helmInstallArgs, helmUninstallArgs, runHelm, shellQuote, type AgentInstall } from "./cluster-helm.js";
import { clusterFilePath, editRepoFile, isRemoteLocation, type ConfigRepoTarget } from "./cluster-repo.js";

/** Defaults of the flags. */
export const CLUSTER_DEFAULTS = {
  serverNamespace: "gitmesh",
  agentNamespace: "gitmesh",
  branch: "main",
  release: "gitmesh-agent",
  clusterDomain: "cluster.local",
  timeout: "5m",
  fieldManager: "gitmesh-cluster-register",
  authorName: "gitmesh cluster register",
  authorEmail: "gitmesh@localhost",
} as const;

/** How often the wait step looks for the client certificate, and how often it reports progress. */
const POLL_MS = 250;
const PROGRESS_MS = 10_000;

interface CommonFlags {
  readonly remoteContext: string;
  readonly kubeconfig?: string;
  readonly repo?: string;
  readonly branch: string;
  readonly agentNamespace: string;
  readonly release: string;
  readonly gitUsername?: string;
  readonly gitAuthorName: string;
  readonly gitAuthorEmail: string;
  readonly dryRun?: boolean;
}

interface MgmtFlags {
  readonly mgmtContext?: string;
  readonly mgmtNamespace: string;
}

interface RegisterFlags extends CommonFlags, MgmtFlags {
  readonly relayServerAddress: string;
  readonly fleetToken?: boolean;
  readonly relayAuthority?: string;
  readonly chart?: string;
  readonly clusterDomain: string;
  readonly timeout: string;
}

/** A step that failed: printed as `✗ message` with a hint saying what to do; exit 1. */
class StepError extends Error {
  readonly code = "StepError";
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

interface Steps {
  ok(text: string): void;
  fail(text: string, hint?: string): void;
  /** Progress and advice that is neither done nor failed. */
  note(text: string): void;
}

function createSteps(io: CliIo): Steps {
  return {
    ok: (t) => io.out(`✓ ${t}\n`),
    fail: (t, hint) => io.out(`✗ ${t}\n${hint === undefined ? "" : hint.replace(/^/gm, "    ")}\n`),
    note: (t) => io.out(`  ${t}\n`),
  };
}

export function registerCluster(program: Command, io: CliIo): void {
  const cluster = program.command("cluster").summary("register or deregister a workload cluster").description("Register and deregister workload clusters (agent install, relay secrets, KubernetesCluster in Git).");
  const common = (c: Command): Command =>
    c
      .requiredOption("--remote-context <ctx>", "kubeconfig context of the workload cluster")
      .option("--kubeconfig <path>", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
      .option("--repo <url|path>", "configuration repository (http(s) URL, credentials from GITMESH_GIT_USERNAME/GITMESH_GIT_PASSWORD, or a local path); without it the change is printed for a pull request")
      .option("--branch <name>", "branch of the configuration repository", CLUSTER_DEFAULTS.branch)
      .option("--agent-namespace <ns>", "namespace of the agent in the workload cluster", CLUSTER_DEFAULTS.agentNamespace)
      .option("--release <name>", "Helm release name of the agent", CLUSTER_DEFAULTS.release)
      .option("--git-username <name>", "user for HTTP Git (default $GITMESH_GIT_USERNAME; the password or token only from $GITMESH_GIT_PASSWORD)")
      .option("--git-author-name <name>", "commit author name", CLUSTER_DEFAULTS.authorName)
      .option("--git-author-email <email>", "commit author email", CLUSTER_DEFAULTS.authorEmail)
      .option("--dry-run", "read and report, change nothing");

  common(
    cluster
      .command("register <name>")
      .description("Join a workload cluster: relay secrets, KubernetesCluster in Git, agent chart, wait for its certificate, remove the bootstrap token. Safe to re-run.")
      .requiredOption("--relay-server-address <host:port>", "address of the management server's relay (its LoadBalancer on 9900) as seen from the workload cluster"),
  )
    .option("--mgmt-context <ctx>", "kubeconfig context of the management cluster (default: the current context)")
    .option("--mgmt-namespace <ns>", "namespace of the server in the management cluster", CLUSTER_DEFAULTS.serverNamespace)
    .option("--relay-authority <name>", "TLS name of the relay server (chart relay.authority; default: the chart's)")
    .option("--fleet-token", "copy the shared fleet token (servers run with --bootstrap fleet-token) instead of minting a single-use credential for this cluster")
    .option("--chart <path|ref>", "agent chart (default: the bundled charts/gitmesh-agent)")
    .option("--cluster-domain <domain>", "spec.clusterDomain of the KubernetesCluster", CLUSTER_DEFAULTS.clusterDomain)
    .option("--timeout <duration>", "how long to wait for the agent's client certificate (e.g. 90s, 5m)", CLUSTER_DEFAULTS.timeout)
    .action((name: string, flags: RegisterFlags) => runSteps(io, () => register(name, flags, io)));

  cluster
    .command("reissue <name>")
    .description("Re-issue a cluster's identity (operator action): revoke its client certificates, mint a new single-use bootstrap credential, write it into the workload cluster, wait for the agent's new certificate, remove the credential.")
    .requiredOption("--remote-context <ctx>", "kubeconfig context of the workload cluster")
    .option("--kubeconfig <path>", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    .option("--agent-namespace <ns>", "namespace of the agent in the workload cluster", CLUSTER_DEFAULTS.agentNamespace)
    .option("--mgmt-context <ctx>", "kubeconfig context of the management cluster (default: the current context)")
    .option("--mgmt-namespace <ns>", "namespace of the server in the management cluster", CLUSTER_DEFAULTS.serverNamespace)
    .option("--timeout <duration>", "how long to wait for the agent's new client certificate", CLUSTER_DEFAULTS.timeout)
    .option("--dry-run", "read and report, change nothing")
    .action((name: string, flags: ReissueFlags) => runSteps(io, () => reissue(name, flags, io)));

  common(cluster.command("deregister <name>").description("Undo register: helm uninstall, delete the relay secrets in the workload cluster, revoke its certificates, remove clusters/<name>.yaml from the repository."))
    .option("--mgmt-context <ctx>", "kubeconfig context of the management cluster, where the certificates are revoked (default: the current context)")
    .option("--mgmt-namespace <ns>", "namespace of the server in the management cluster", CLUSTER_DEFAULTS.serverNamespace)
    .action((name: string, flags: CommonFlags & MgmtFlags) => runSteps(io, () => deregister(name, flags, io)));

  for (const c of [cluster, ...cluster.commands]) c.exitOverride().configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) });
}

async function runSteps(io: CliIo, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (err) {
    if (err instanceof UsageError) throw err;
    const steps = createSteps(io);
    if (err instanceof StepError) steps.fail(err.message, err.hint);
    else steps.fail(safeMessage(err));
    io.exitCode = ExitCode.Failed;
  }
}

// ---------------------------------------------------------------------------------------------
// Flags

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function checkCommon(name: string, flags: CommonFlags): void {
  if (!isValidClusterName(name)) throw new UsageError(`cluster name "${name}" is not valid: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit`);
  if (!DNS_LABEL.test(flags.agentNamespace)) throw new UsageError(`--agent-namespace "${flags.agentNamespace}" is not a valid namespace name`);
}

/** "90s", "5m", "1h", "1500ms" or plain seconds → milliseconds. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m?.[1]) return undefined;
  const unit = m[2] ?? "s";
  const factor = unit === "ms" ? 1 : unit === "s" ? 1000 : unit === "m" ? 60_000 : 3_600_000;
  return Math.round(Number(m[1]) * factor);
}

function formatDuration(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${String(ms / 60_000)}m`;
  return `${String(Math.round(ms / 100) / 10)}s`;
}

// ---------------------------------------------------------------------------------------------
// Kubernetes

interface ClusterClient {
  readonly role: string;
  readonly context: string;
  readonly server: string;
  readonly kube: KubeReader & KubeWriter;
  /** A kubeconfig of this one context (for the identity store's CoreV1Api). */
  readonly kc: KubeConfig;
}

function loadKubeconfig(path: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (path !== undefined) kc.loadFromFile(path);
    else kc.loadFromDefault();
  } catch (err) {
    throw new StepError(`cannot read the kubeconfig ${path ?? "(default)"}: ${safeMessage(err)}`, "pass --kubeconfig <file> or set KUBECONFIG");
  }
  return kc;
}

function clientFor(kc: KubeConfig, context: string, role: string): ClusterClient {
  const ctx = kc.getContextObject(context);
  if (ctx === null) {
    const known = kc.getContexts().map((c) => c.name);
    throw new StepError(
      `the ${role} context "${context}" is not in the kubeconfig (contexts: ${known.length > 0 ? known.join(", ") : "none"})`,
      "list them with `kubectl config get-contexts`; pass --kubeconfig <file> when it lives elsewhere",
    );
  }
  const one = new KubeConfig();
  one.loadFromOptions({ clusters: kc.clusters, users: kc.users, contexts: kc.contexts, currentContext: context });
  return { role, context, server: one.getCurrentCluster()?.server ?? "?", kube: createKubeClient(one), kc: one };
}

function statusOf(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}

/** A one-line description of an error that never carries request or response bodies. */
function safeMessage(err: unknown): string {
  if (err instanceof ApiException) {
    let message: unknown;
    try {
      message = (JSON.parse(String(err.body)) as { message?: unknown }).message;
    } catch {
      message = undefined;
    }
    return `HTTP ${String(err.code)}${typeof message === "string" ? `: ${message}` : ""}`;
  }
  const text = err instanceof Error ? err.message : String(err);
  return stripCredentials(String(redact(text)));
}

/** Runs a call against a cluster, turning "cannot connect" into a clear step error. */
async function call<T>(c: ClusterClient, what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const status = statusOf(err);
    if (status === undefined) {
      throw new StepError(`cannot reach the ${c.role} cluster (context ${c.context}, ${c.server}) while ${what}: ${safeMessage(err)}`, `check that the cluster is up and the context is right: kubectl --context ${c.context} get namespaces`);
    }
    if (status === 401 || status === 403) {
      throw new StepError(`the ${c.role} cluster (context ${c.context}) refused ${what}: ${safeMessage(err)}`, "the credentials of this context need rights on namespaces and secrets");
    }
    throw new StepError(`${what} failed in the ${c.role} cluster (context ${c.context}): ${safeMessage(err)}`);
  }
}

const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64");

async function secretValue(c: ClusterClient, namespace: string, name: string, key: string): Promise<{ exists: boolean; value: string | undefined }> {
  const s = await call(c, `reading secret ${namespace}/${name}`, () => c.kube.get(KINDS.Secret, namespace, name));
  if (s === undefined) return { exists: false, value: undefined };
  const raw = (s.data as Record<string, unknown> | undefined)?.[key];
  return { exists: true, value: typeof raw === "string" ? Buffer.from(raw, "base64").toString("utf8") : undefined };
}

/** Creates or updates a one-key Opaque secret; reports created / updated / unchanged. */
async function ensureSecret(c: ClusterClient, namespace: string, name: string, key: string, value: string, dryRun: boolean): Promise<"created" | "updated" | "unchanged"> {
  const current = await secretValue(c, namespace, name, key);
  if (current.value === value) return "unchanged";
  if (!dryRun) {
    await call(c, `writing secret ${namespace}/${name}`, () =>
      c.kube.apply(
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name, namespace, labels: { "app.kubernetes.io/managed-by": CLUSTER_DEFAULTS.fieldManager } },
          type: "Opaque",
          data: { [key]: b64(value) },
        },
        { fieldManager: CLUSTER_DEFAULTS.fieldManager, force: true },
      ),
    );
  }
  return current.exists ? "updated" : "created";
}

async function deleteSecret(c: ClusterClient, namespace: string, name: string, dryRun: boolean): Promise<boolean> {
  if (dryRun) return (await call(c, `reading secret ${namespace}/${name}`, () => c.kube.get(KINDS.Secret, namespace, name))) !== undefined;
  return call(c, `deleting secret ${namespace}/${name}`, () => c.kube.delete(KINDS.Secret, namespace, name));
}

// ---------------------------------------------------------------------------------------------
// Repository

function repoTarget(flags: CommonFlags, env: NodeJS.ProcessEnv): ConfigRepoTarget | undefined {
  if (flags.repo === undefined) return undefined;
  const author = { name: flags.gitAuthorName, email: flags.gitAuthorEmail };
  if (!isRemoteLocation(flags.repo)) return { location: flags.repo, branch: flags.branch, author };
  const password = env.GITMESH_GIT_PASSWORD;
  const username = flags.gitUsername ?? env.GITMESH_GIT_USERNAME;
  const { url, auth } = splitCredentials(flags.repo, password === undefined || password === "" ? undefined : username === undefined ? { token: password } : { username, password });
  return { location: url, branch: flags.branch, author, ...(auth === undefined ? {} : { auth }) };
}

export function kubernetesClusterYaml(name: string, namespace: string, clusterDomain: string): string {
  const doc = { apiVersion: "admin.gloo.solo.io/v2", kind: "KubernetesCluster", metadata: { name, namespace }, spec: { clusterDomain } };
  return `# Workload cluster ${name}, added by gitmesh cluster register. Its agent registers under this name.\n${toYaml(doc)}`;
}

/** The KubernetesCluster for this repository (admin namespace from its gitmesh.yaml), validated by the loader. */
function clusterFile(name: string, clusterDomain: string, settings: string | undefined): string {
  const base = settings === undefined ? [] : [{ path: "gitmesh.yaml", content: settings }];
  const adminNamespace = settings === undefined ? DEFAULT_ADMIN_NAMESPACE : loadDesiredState(base).state.settings.adminNamespace;
  const path = clusterFilePath(name);
  const content = kubernetesClusterYaml(name, adminNamespace, clusterDomain);
  const errors = loadDesiredState([...base, { path, content }]).diagnostics.filter((d) => d.severity === "error" && d.file === path);
  if (errors.length > 0) throw new StepError(`the KubernetesCluster for ${name} does not validate: ${errors.map((d) => d.message).join("; ")}`);
  return content;
}

/** Whether `text` is a KubernetesCluster named `name` (any content otherwise the operator's). */
function holdsCluster(text: string, name: string): { ok: boolean; what: string } {
  try {
    const doc = parseYaml(text) as { kind?: unknown; metadata?: { name?: unknown } } | null;
    const str = (v: unknown) => (typeof v === "string" ? v : "?");
    const what = `${str(doc?.kind)} ${str(doc?.metadata?.name)}`;
    return { ok: doc?.kind === "KubernetesCluster" && doc.metadata?.name === name, what };
  } catch {
    return { ok: false, what: "invalid YAML" };
  }
}

// ---------------------------------------------------------------------------------------------
// register

async function register(name: string, flags: RegisterFlags, io: CliIo): Promise<void> {
  checkCommon(name, flags);
  const env = process.env;
  if (!/^[^\s:/]+:\d{1,5}$/.test(flags.relayServerAddress) && !/^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(flags.relayServerAddress)) {
    throw new UsageError(`--relay-server-address must be host:port, got "${flags.relayServerAddress}"`);
  }
  if (!DNS_LABEL.test(flags.mgmtNamespace)) throw new UsageError(`--mgmt-namespace "${flags.mgmtNamespace}" is not a valid namespace name`);
  const timeoutMs = parseDuration(flags.timeout);
  if (timeoutMs === undefined) throw new UsageError(`--timeout must be a duration like 90s or 5m, got "${flags.timeout}"`);
  const chart = flags.chart ?? bundledAgentChart();
  if (chart === undefined) throw new UsageError("no bundled agent chart next to this gitmesh; pass --chart <path or reference>");
  const dryRun = flags.dryRun === true;
  const steps = createSteps(io);
  const ns = flags.agentNamespace;
  const S = RELAY_SECRETS;

  io.out(`Registering cluster ${name}${dryRun ? " (dry run: nothing is changed)" : ""}\n`);
  const kc = loadKubeconfig(flags.kubeconfig);
  const mgmtContext = flags.mgmtContext ?? kc.getCurrentContext();
  if (mgmtContext === "") throw new StepError("no management context: the kubeconfig has no current context", "pass --mgmt-context <ctx>");
  const mgmt = clientFor(kc, mgmtContext, "management");
  const remote = clientFor(kc, flags.remoteContext, "remote");
  const at = (c: ClusterClient, namespace: string) => `${namespace} (context ${c.context})`;

  // 1. Root CA and bootstrap token from the management cluster.
  const mns = flags.mgmtNamespace;
  const serverHint = `install the server there first (README "Install with Helm"): helm --kube-context ${mgmt.context} upgrade --install gitmesh-server charts/gitmesh-server -n ${mns} --create-namespace …`;
  const ca = await secretValue(mgmt, mns, S.rootTls.name, S.rootTls.keys.caCrt);
  if (ca.value === undefined) {
    throw new StepError(
      `${ca.exists ? `secret ${mns}/${S.rootTls.name} has no ${S.rootTls.keys.caCrt}` : `secret ${mns}/${S.rootTls.name} not found`} in the management cluster (context ${mgmt.context})`,
      `${serverHint}\nor, with your own PKI: kubectl --context ${mgmt.context} -n ${mns} create secret generic ${S.rootTls.name} --from-file=${S.rootTls.keys.caCrt}=<root CA file>\n(a server in another namespace: --mgmt-namespace <ns>)`,
    );
  }
  let caInfo: string;
  try {
    const cert = new X509Certificate(ca.value);
    caInfo = `${cert.subject.replace(/\n/g, ", ")}, SHA-256 ${cert.fingerprint256.slice(0, 23)}…`;
  } catch {
    throw new StepError(`secret ${mns}/${S.rootTls.name} ${S.rootTls.keys.caCrt} in the management cluster is not a PEM certificate`);
  }
  steps.ok(`read root CA ${S.rootTls.name} from ${at(mgmt, mns)}: ${caInfo}`);
  let fleetToken: string | undefined;
  if (flags.fleetToken === true) {
    const token = await secretValue(mgmt, mns, S.identityToken.name, S.identityToken.keys.token);
    if (token.value === undefined || token.value.trim() === "") {
      throw new StepError(
        `${token.exists ? `secret ${mns}/${S.identityToken.name} has no ${S.identityToken.keys.token}` : `secret ${mns}/${S.identityToken.name} not found`} in the management cluster (context ${mgmt.context})`,
        `${serverHint}\nthe fleet token exists only on servers run with --bootstrap fleet-token; without --fleet-token, register mints a credential for this cluster`,
      );
    }
    fleetToken = token.value.trim();
    steps.ok(`read the fleet bootstrap token ${S.identityToken.name} from ${at(mgmt, mns)} (value not shown)`);
  }

  // 2. Agent namespace in the remote cluster.
  const nsObject = await call(remote, `reading namespace ${ns}`, () => remote.kube.get(KINDS.Namespace, undefined, ns));
  if (nsObject !== undefined) steps.ok(`namespace ${ns} exists in the remote cluster (context ${remote.context}): unchanged`);
  else {
    if (!dryRun) {
      await call(remote, `creating namespace ${ns}`, () =>
        remote.kube.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns, labels: { "app.kubernetes.io/managed-by": CLUSTER_DEFAULTS.fieldManager } } }, { fieldManager: CLUSTER_DEFAULTS.fieldManager }),
      );
    }
    steps.ok(`namespace ${ns} ${dryRun ? "would be created" : "created"} in the remote cluster (context ${remote.context})`);
  }

  // 3. Root CA (ca.crt only: the CA key stays in the management cluster) and the token.
  const verb = (r: "created" | "updated" | "unchanged") => (r === "unchanged" ? "unchanged" : dryRun ? `would be ${r}` : r);
  const caResult = nsObject === undefined && dryRun ? "created" : await ensureSecret(remote, ns, S.rootTls.name, S.rootTls.keys.caCrt, ca.value, dryRun);
  steps.ok(`root CA ${S.rootTls.name} in ${at(remote, ns)}: ${verb(caResult)}`);
  const held = nsObject === undefined ? undefined : await call(remote, `reading ${S.clientTls.name}`, () => loadClientCredentials(remote.kube, ns));
  if (held !== undefined) {
    steps.ok(`bootstrap credential not needed: the agent already holds a client certificate (${S.clientTls.name}, valid until ${new Date(held.notAfterMs).toISOString()})`);
  } else {
    const credential = fleetToken ?? (await mintCredential(mgmt, mns, name, false, dryRun, steps));
    const tokenResult = nsObject === undefined && dryRun ? "created" : await ensureSecret(remote, ns, S.identityToken.name, S.identityToken.keys.token, credential, dryRun);
    steps.ok(`bootstrap credential ${S.identityToken.name} in ${at(remote, ns)}: ${verb(tokenResult)}`);
  }

  // 4. KubernetesCluster in the configuration repository.
  const path = clusterFilePath(name);
  const target = repoTarget(flags, env);
  if (target === undefined) {
    const content = clusterFile(name, flags.clusterDomain, undefined);
    steps.ok(`KubernetesCluster ${name}: no --repo, so add this file as ${path} to the configuration repository in a pull request (the server accepts the agent once it is merged):`);
    io.out(content.replace(/^/gm, "    ") + "\n");
  } else {
    const where = `${stripCredentials(target.location)} (branch ${target.branch})`;
    let kept = "";
    const result = await editRepoFile(
      target,
      path,
      `Register cluster ${name}\n\nKubernetesCluster ${name}, added by gitmesh cluster register so that the relay accepts its agent.\n`,
      (current, settings) => {
        if (current === undefined) return clusterFile(name, flags.clusterDomain, settings);
        const found = holdsCluster(current, name);
        if (!found.ok) throw new StepError(`${path} in ${where} holds ${found.what}, not KubernetesCluster ${name}`, `move that file, or register the cluster under another name`);
        kept = "exists, kept as is: unchanged";
        return undefined;
      },
      { dryRun },
    ).catch((err: unknown) => {
      if (err instanceof StepError) throw err;
      throw new StepError(`configuration repository ${where}: ${safeMessage(err)}`);
    });
    const pushed = isRemoteLocation(target.location) ? " pushed" : ` (a local repository: committed, not pushed; push it to the remote the server reads, e.g. git -C ${target.location} push)`;
    if (result.commit !== undefined) steps.ok(`KubernetesCluster ${name} committed as ${path} to ${where}: ${result.commit.slice(0, 12)}${pushed}`);
    else steps.ok(`KubernetesCluster ${name} ${path} in ${where}: ${kept || (dryRun ? "would be committed" : "unchanged")}`);
  }

  // 5. The agent chart.
  const install: AgentInstall = {
    release: flags.release,
    chart,
    namespace: ns,
    context: remote.context,
    ...(flags.kubeconfig === undefined ? {} : { kubeconfig: flags.kubeconfig }),
    serverAddress: flags.relayServerAddress,
    cluster: name,
    ...(flags.relayAuthority === undefined ? {} : { authority: flags.relayAuthority }),
  };
  const args = helmInstallArgs(install);
  const helm = findHelm(env.PATH);
  if (dryRun) {
    steps.ok(`agent chart: would run ${shellQuote(["helm", ...args])}`);
    return;
  }
  if (helm === undefined) {
    // Without helm the chart is installed by hand (the printed command); a re-run must then go on to
    // the certificate and the credential's removal instead of stopping here again.
    const deployed = await call(remote, `reading deployment ${ns}/${flags.release}`, () => remote.kube.get(KINDS.Deployment, ns, flags.release));
    const registered = await call(remote, `reading ${S.clientTls.name}`, () => loadClientCredentials(remote.kube, ns));
    if (deployed === undefined && registered === undefined) {
      steps.note("helm is not on PATH; install the agent with:");
      io.out(`    ${shellQuote(["helm", ...args])}\n`);
      steps.note(`then run this command again: it finds the agent, waits for its client certificate and removes the bootstrap credential.`);
      io.out(`Cluster ${name} is not registered yet: pending step "agent chart" (done: secrets${target === undefined ? "" : ", KubernetesCluster in Git"}).\n`);
      return;
    }
    steps.ok(`agent chart: helm is not on PATH; ${deployed !== undefined ? `Deployment ${ns}/${flags.release} found (installed by hand)` : "the agent already registered"}`);
  } else {
    const ran = await runHelm(helm, args, env);
    if (ran.code !== 0) {
      throw new StepError(`helm upgrade --install failed (exit ${String(ran.code)}): ${lastLines(ran.stderr)}`, `command: ${shellQuote(["helm", ...args])}`);
    }
    steps.ok(`agent chart ${chart} installed as release ${ns}/${flags.release} in context ${remote.context} (helm upgrade --install)`);
  }

  // 6. Wait for the client certificate the agent stores after registering.
  const started = Date.now();
  steps.note(`waiting up to ${formatDuration(timeoutMs)} for the agent's client certificate ${S.clientTls.name} in ${at(remote, ns)}…`);
  let lastReport = started;
  for (;;) {
    const creds = await call(remote, `reading ${S.clientTls.name}`, () => loadClientCredentials(remote.kube, ns));
    if (creds !== undefined) {
      const san = new X509Certificate(creds.certPem).subjectAltName ?? "";
      if (!san.includes(`URI:${CLUSTER_URI_PREFIX}${name}`)) {
        throw new StepError(`${S.clientTls.name} in ${at(remote, ns)} is not a certificate for cluster ${name} (${san || "no SAN"})`, `the agent registered under another name: check relay.cluster of release ${flags.release}, delete ${S.clientTls.name} and run this again`);
      }
      steps.ok(`agent registered: client certificate for ${name} in ${S.clientTls.name}, valid until ${new Date(creds.notAfterMs).toISOString()} (after ${formatDuration(Date.now() - started)})`);
      break;
    }
    const now = Date.now();
    if (now - started >= timeoutMs) {
      throw new StepError(
        `no client certificate from the agent after ${formatDuration(timeoutMs)}; the bootstrap credential is left in place (single use, it expires after 24 h)`,
        [
          `check the agent: kubectl --context ${remote.context} -n ${ns} get pods; kubectl --context ${remote.context} -n ${ns} logs deploy/${flags.release}`,
          `check that ${flags.relayServerAddress} is reachable from the cluster and that relay.authority matches the server certificate`,
          target === undefined ? `merge ${path} into the branch the server reads: it refuses clusters it does not know` : `check that the server reads ${target.branch} of ${stripCredentials(target.location)} and logs no rejection for ${name}`,
          `then run this command again (or with a longer --timeout)`,
        ].join("\n"),
      );
    }
    if (now - lastReport >= PROGRESS_MS) {
      lastReport = now;
      steps.note(`… still waiting (${formatDuration(now - started)} of ${formatDuration(timeoutMs)})`);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }

  // 7. The credential has done its job (used once; the server refuses it from now on anyway).
  const removed = await deleteSecret(remote, ns, S.identityToken.name, false);
  steps.ok(`bootstrap credential ${S.identityToken.name} ${removed ? "removed from" : "already absent in"} ${at(remote, ns)}`);
  io.out(`Cluster ${name} is registered.\n`);
}

// ---------------------------------------------------------------------------------------------
// deregister

async function deregister(name: string, flags: CommonFlags & MgmtFlags, io: CliIo): Promise<void> {
  checkCommon(name, flags);
  const env = process.env;
  const dryRun = flags.dryRun === true;
  const steps = createSteps(io);
  const ns = flags.agentNamespace;
  io.out(`Deregistering cluster ${name}${dryRun ? " (dry run: nothing is changed)" : ""}\n`);
  const kc = loadKubeconfig(flags.kubeconfig);
  const remote = clientFor(kc, flags.remoteContext, "remote");
  const at = `${ns} (context ${remote.context})`;
  // Reachability first, so nothing half-happens against a dead cluster.
  await call(remote, `reading namespace ${ns}`, () => remote.kube.get(KINDS.Namespace, undefined, ns));

  // 1. The agent.
  const args = helmUninstallArgs({ release: flags.release, namespace: ns, context: remote.context, ...(flags.kubeconfig === undefined ? {} : { kubeconfig: flags.kubeconfig }) });
  const helm = findHelm(env.PATH);
  if (dryRun) steps.ok(`agent chart: would run ${shellQuote(["helm", ...args])}`);
  else if (helm === undefined) {
    steps.note("helm is not on PATH; uninstall the agent with:");
    io.out(`    ${shellQuote(["helm", ...args])}\n`);
  } else {
    const ran = await runHelm(helm, args, env);
    if (ran.code === 0) steps.ok(`agent release ${ns}/${flags.release} uninstalled in context ${remote.context}`);
    else if (/not found/i.test(ran.stderr)) steps.ok(`agent release ${ns}/${flags.release} is not installed in context ${remote.context}: unchanged`);
    else throw new StepError(`helm uninstall failed (exit ${String(ran.code)}): ${lastLines(ran.stderr)}`, `command: ${shellQuote(["helm", ...args])}`);
  }

  // 2. Relay secrets in the remote cluster.
  for (const secret of [RELAY_SECRETS.clientTls.name, RELAY_SECRETS.identityToken.name, RELAY_SECRETS.rootTls.name]) {
    const deleted = await deleteSecret(remote, ns, secret, dryRun);
    steps.ok(`secret ${secret} ${deleted ? (dryRun ? "would be deleted from" : "deleted from") : "already absent in"} ${at}`);
  }

  // 3. Revoke its certificates in the server's identity store: a copy of the client certificate kept
  //    somewhere cannot come back if the cluster is registered again later, and a new registration of
  //    the name needs no re-issue.
  const mgmtContext = flags.mgmtContext ?? kc.getCurrentContext();
  if (mgmtContext === "") throw new StepError("no management context: the kubeconfig has no current context", "pass --mgmt-context <ctx>");
  const mgmt = clientFor(kc, mgmtContext, "management");
  if (dryRun) steps.ok(`certificates of ${name} would be revoked in ${flags.mgmtNamespace} (context ${mgmt.context})`);
  else {
    const ids = createClusterIdentities(createKubernetesRecordStore(mgmt.kc, flags.mgmtNamespace));
    await call(mgmt, `revoking the certificates of ${name}`, () => ids.revoke(name, "deregistered with gitmesh cluster deregister"));
    steps.ok(`certificates of ${name} revoked in ${flags.mgmtNamespace} (context ${mgmt.context}); every server replica closes its streams within 15 s`);
  }

  // 4. The KubernetesCluster: once it is gone the server refuses the cluster.
  const path = clusterFilePath(name);
  const target = repoTarget(flags, env);
  if (target === undefined) {
    steps.ok(`KubernetesCluster ${name}: no --repo, so remove ${path} from the configuration repository in a pull request (the server then refuses the cluster's certificate)`);
  } else {
    const where = `${stripCredentials(target.location)} (branch ${target.branch})`;
    const result = await editRepoFile(
      target,
      path,
      `Deregister cluster ${name}\n\nKubernetesCluster ${name} removed by gitmesh cluster deregister: the relay refuses its certificate from now on.\n`,
      (current) => {
        if (current === undefined) return undefined;
        const found = holdsCluster(current, name);
        if (!found.ok) throw new StepError(`${path} in ${where} holds ${found.what}, not KubernetesCluster ${name}; not removing it`);
        return null;
      },
      { dryRun },
    ).catch((err: unknown) => {
      if (err instanceof StepError) throw err;
      throw new StepError(`configuration repository ${where}: ${safeMessage(err)}`);
    });
    const pushed = isRemoteLocation(target.location) ? " pushed" : ` (a local repository: committed, not pushed; push it, e.g. git -C ${target.location} push)`;
    if (result.commit !== undefined) steps.ok(`KubernetesCluster ${name} removed: ${path} deleted in ${where}, ${result.commit.slice(0, 12)}${pushed}`);
    else steps.ok(`KubernetesCluster ${name} ${path} in ${where}: ${result.before === undefined ? "already absent" : "would be removed"}`);
  }
  io.out(`Cluster ${name} is deregistered${dryRun ? " (dry run)" : ""}. The namespace ${ns} is left in place.\n`);
}

// ---------------------------------------------------------------------------------------------
// credentials and reissue

interface ReissueFlags extends MgmtFlags {
  readonly remoteContext: string;
  readonly kubeconfig?: string;
  readonly agentNamespace: string;
  readonly timeout: string;
  readonly dryRun?: boolean;
}

/**
 * Mints a single-use bootstrap credential for `name` in the server's identity store (the Secret
 * relay-identity-<name> in the management cluster; only the sha256 is stored). With `reissue`, the
 * cluster's certificates are revoked first; without it, a cluster holding a live certificate is refused.
 */
async function mintCredential(mgmt: ClusterClient, mns: string, name: string, reissue: boolean, dryRun: boolean, steps: Steps): Promise<string> {
  const where = `${mns} (context ${mgmt.context})`;
  if (dryRun) {
    steps.ok(`${reissue ? "certificates of " + name + " would be revoked and a" : "a"} single-use bootstrap credential for ${name} would be minted in ${where}`);
    return "(dry run)";
  }
  const ids = createClusterIdentities(createKubernetesRecordStore(mgmt.kc, mns));
  const minted = await call(mgmt, `writing the identity record of ${name} in ${mns}`, () =>
    ids.mintCredential(name, { reissue, ...(reissue ? { reason: "re-issued with gitmesh cluster reissue" } : {}) }).catch((err: unknown) => {
      if (err instanceof LiveIdentityError) return err;
      throw err;
    }),
  );
  if (minted instanceof LiveIdentityError) {
    throw new StepError(minted.message, `if its agent lost that certificate (reinstalled, secret deleted), re-issue: gitmesh cluster reissue ${name} --remote-context <ctx>`);
  }
  steps.ok(
    `${reissue ? `certificates of ${name} revoked; ` : ""}single-use bootstrap credential for ${name} minted in ${where}, valid until ${new Date(minted.expiresAtMs).toISOString()} (value not shown)`,
  );
  return minted.credential;
}

async function reissue(name: string, flags: ReissueFlags, io: CliIo): Promise<void> {
  if (!isValidClusterName(name)) throw new UsageError(`cluster name "${name}" is not valid: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit`);
  if (!DNS_LABEL.test(flags.agentNamespace)) throw new UsageError(`--agent-namespace "${flags.agentNamespace}" is not a valid namespace name`);
  if (!DNS_LABEL.test(flags.mgmtNamespace)) throw new UsageError(`--mgmt-namespace "${flags.mgmtNamespace}" is not a valid namespace name`);
  const timeoutMs = parseDuration(flags.timeout);
  if (timeoutMs === undefined) throw new UsageError(`--timeout must be a duration like 90s or 5m, got "${flags.timeout}"`);
  const dryRun = flags.dryRun === true;
  const steps = createSteps(io);
  const ns = flags.agentNamespace;
  const S = RELAY_SECRETS;
  io.out(`Re-issuing the identity of cluster ${name}${dryRun ? " (dry run: nothing is changed)" : ""}\n`);
  const kc = loadKubeconfig(flags.kubeconfig);
  const mgmtContext = flags.mgmtContext ?? kc.getCurrentContext();
  if (mgmtContext === "") throw new StepError("no management context: the kubeconfig has no current context", "pass --mgmt-context <ctx>");
  const mgmt = clientFor(kc, mgmtContext, "management");
  const remote = clientFor(kc, flags.remoteContext, "remote");
  const at = `${ns} (context ${remote.context})`;
  // Reachability of the remote cluster first: a revocation nobody can recover from is worse than none.
  if ((await call(remote, `reading namespace ${ns}`, () => remote.kube.get(KINDS.Namespace, undefined, ns))) === undefined) {
    throw new StepError(`namespace ${ns} not found in the remote cluster (context ${remote.context})`, `is the agent installed there? gitmesh cluster register ${name} …`);
  }
  const before = await call(remote, `reading ${S.clientTls.name}`, () => loadClientCredentials(remote.kube, ns));
  const credential = await mintCredential(mgmt, flags.mgmtNamespace, name, true, dryRun, steps);
  const written = await ensureSecret(remote, ns, S.identityToken.name, S.identityToken.keys.token, credential, dryRun);
  steps.ok(`bootstrap credential ${S.identityToken.name} in ${at}: ${written === "unchanged" ? "unchanged" : dryRun ? `would be ${written}` : written}`);
  if (dryRun) return;

  // The agent's streams are closed (at once on the replica that sees the revocation first, within 15 s
  // on the others); it drops the revoked certificate, reads the new credential and registers.
  const started = Date.now();
  steps.note(`waiting up to ${formatDuration(timeoutMs)} for the agent's new client certificate in ${at}…`);
  for (;;) {
    const creds = await call(remote, `reading ${S.clientTls.name}`, () => loadClientCredentials(remote.kube, ns));
    if (creds !== undefined && creds.certPem !== before?.certPem) {
      const san = new X509Certificate(creds.certPem).subjectAltName ?? "";
      if (!san.includes(`URI:${CLUSTER_URI_PREFIX}${name}`)) throw new StepError(`${S.clientTls.name} in ${at} is not a certificate for cluster ${name} (${san || "no SAN"})`);
      steps.ok(`agent registered again: new client certificate for ${name}, valid until ${new Date(creds.notAfterMs).toISOString()} (after ${formatDuration(Date.now() - started)})`);
      break;
    }
    if (Date.now() - started >= timeoutMs) {
      throw new StepError(
        `no new client certificate from the agent after ${formatDuration(timeoutMs)}; the old one is revoked and the new bootstrap credential is left in place`,
        `check the agent: kubectl --context ${remote.context} -n ${ns} logs deploy/gitmesh-agent; then run this command again`,
      );
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  const removed = await deleteSecret(remote, ns, S.identityToken.name, false);
  steps.ok(`bootstrap credential ${S.identityToken.name} ${removed ? "removed from" : "already absent in"} ${at}`);
  io.out(`Cluster ${name} holds a new identity; its previous certificates are refused.\n`);
}

function lastLines(text: string): string {
  const lines = stripCredentials(text).trim().split("\n");
  return lines.slice(-3).join(" / ") || "(no output)";
}
