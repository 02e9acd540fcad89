/**
 * The agent's configuration: parsed ONCE by the composition root (`gitmesh agent`) from flags and
 * environment variables that match the chart values, validated, frozen. Problems are returned as
 * messages that say what to fix, never thrown.
 */
import { configResult, createConfigReader, DNS1123_LABEL, isLogLevel, MASS_DELETION_DEFAULTS, type LogLevel } from "../core/index.js";
import { isValidClusterName } from "../relay/index.js";
import type { LabelSelector } from "../discovery/index.js";

export interface AgentConfig {
  /** relay.serverAddress: host:port of the management server's relay. */
  readonly relayAddress: string;
  /** relay.cluster: this cluster's name. */
  readonly cluster: string;
  /** relay.authority: TLS server name of the relay (default `gitmesh-server.gitmesh`). */
  readonly authority: string;
  /** Namespace of the agent: relay secrets and the leader Lease (default `gitmesh`). */
  readonly namespace: string;
  /** This replica's identity for leader election (default: POD_NAME or hostname). */
  readonly identity: string;
  /** Path of a kubeconfig; undefined = in-cluster config (or the default kubeconfig outside a cluster). */
  readonly kubeconfig: string | undefined;
  /** Namespace of the Istio control plane (mesh config ConfigMaps; default `istio-system`). */
  readonly istioNamespace: string;
  /** Discovery selectors (`k=v,k2=v2` each; a namespace matching any is discovered); undefined = mesh config's / every namespace. */
  readonly discoverySelectors: readonly LabelSelector[] | undefined;
  /** Largest share of owned objects one output may delete (default 0.5). */
  readonly maxPruneFraction: number;
  /** Deletions always allowed whatever the share (default 2). */
  readonly pruneAlwaysAllowed: number;
  /** HTTP port for /healthz, /readyz, /metrics (default 9977). */
  readonly httpPort: number;
  /** Leader Lease timings (defaults 15 s / 10 s / 2 s). */
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  /**
   * Full resync period of drift repair: every desired object re-checked against a fresh list (default
   * 5 min, as controller-runtime's SyncPeriod; 0 turns it off; chart resyncPeriod).
   */
  readonly resyncPeriodMs: number;
  /** Quiet time before a discovery flush (default 100 ms; a flush is incremental, milliseconds). */
  readonly debounceMs: number;
  /** Leader election Lease name in `namespace` (default `gitmesh-agent`; chart leaderElection.leaseName). */
  readonly leaseName: string;
  /** Relay secret names in `namespace` (chart relay.rootTlsSecret, relay.tokenSecret, relay.clientTlsSecret). */
  readonly relaySecrets: { readonly rootTls: string; readonly token: string; readonly clientTls: string };
  /** Whether the agent writes Istio's `cacerts` secret (default true; chart istio.writeCacerts). */
  readonly writeCacerts: boolean;
  /** Inventory ConfigMap name in `namespace` (default `gitmesh-agent-inventory`; chart inventory.configMapName). */
  readonly inventoryName: string;
  /** Log level (default info; chart logLevel). */
  readonly logLevel: LogLevel;
  /** RootTrustPolicy autoRestartPods: restart istiod and injected workloads after writing cacerts (chart autoRestartPods grants the RBAC; default false). */
  readonly autoRestartPods: boolean;
  /**
   * The cluster owner's brake (chart `suspend`): the agent applies, prunes and repairs nothing and
   * NACKs every output with AGENT_SUSPENDED_KEY (the server shows the cluster suspended); discovery,
   * the relay connection and status stay live. Default false.
   */
  readonly suspend: boolean;
  /**
   * With autoRestartPods: the only namespaces whose Deployments/StatefulSets/DaemonSets are restarted
   * (chart istio.restartNamespaces, where it grants `patch`); an injected namespace outside is named in
   * a warning and left alone. Undefined (no chart value given): every injected namespace.
   */
  readonly restartNamespaces?: readonly string[];
  /** Install Istio from IstioLifecycleManager / GatewayLifecycleManager output (chart lifecycle.enabled grants the RBAC; default false). */
  readonly manageIstioInstall: boolean;
  /** Namespaces where the agent writes the rate limiter's configuration (RateLimitServerConfig ConfigMaps; chart rateLimit.configNamespaces grants the RBAC; default none: such output is refused). */
  readonly rateLimitConfigNamespaces: readonly string[];
}

/** Raw values: flags win over environment variables (the root merges them). */
export interface AgentConfigInput {
  readonly relayAddress?: string | undefined;
  readonly cluster?: string | undefined;
  readonly authority?: string | undefined;
  readonly namespace?: string | undefined;
  readonly identity?: string | undefined;
  readonly kubeconfig?: string | undefined;
  readonly istioNamespace?: string | undefined;
  readonly discoverySelectors?: readonly string[] | undefined;
  readonly maxPruneFraction?: string | undefined;
  readonly pruneAlwaysAllowed?: string | undefined;
  readonly httpPort?: string | undefined;
  readonly leaseDurationMs?: string | undefined;
  readonly renewDeadlineMs?: string | undefined;
  readonly retryPeriodMs?: string | undefined;
  readonly debounceMs?: string | undefined;
  /** A duration: `300s`, `5m`, `1h30m`, `0` (off). */
  readonly resyncPeriod?: string | undefined;
  readonly leaseName?: string | undefined;
  readonly rootTlsSecret?: string | undefined;
  readonly tokenSecret?: string | undefined;
  readonly clientTlsSecret?: string | undefined;
  readonly writeCacerts?: string | undefined;
  /** JSON list of Kubernetes label selectors (what the chart passes: `[{"matchLabels":{...}}, {"matchExpressions":[...]}]`). */
  readonly discoverySelectorsJson?: string | undefined;
  readonly inventoryName?: string | undefined;
  readonly logLevel?: string | undefined;
  readonly autoRestartPods?: string | undefined;
  readonly suspend?: string | undefined;
  /** Comma-separated namespace names; absent: every injected namespace. */
  readonly restartNamespaces?: string | undefined;
  readonly manageIstioInstall?: string | undefined;
  /** Comma-separated namespace names. */
  readonly rateLimitConfigNamespaces?: string | undefined;
}

/**
 * The NACK an agent suspended by its chart value answers every output with (contract with src/server
 * cluster-sync.ts AGENT_SUSPENDED_KEY: the server shows the cluster "suspended", not "refused").
 */
export const AGENT_SUSPENDED_KEY = "gitmesh.io/agent-suspended";
/** "suspended since <UTC> by the cluster owner (…)": the server prints it as the cluster's suspension. */
export function agentSuspendedMessage(sinceMs: number): string {
  return `suspended since ${new Date(sinceMs).toISOString()} by the cluster owner (agent chart value suspend: true; nothing is applied, pruned or repaired there until it is set back to false)`;
}

/** Environment variables the root reads (chart: relay.serverAddress → GITMESH_RELAY_SERVER_ADDRESS, …). */
export const AGENT_ENV = {
  relayAddress: "GITMESH_RELAY_SERVER_ADDRESS",
  cluster: "GITMESH_RELAY_CLUSTER",
  authority: "GITMESH_RELAY_AUTHORITY",
  namespace: "POD_NAMESPACE",
  identity: "POD_NAME",
  kubeconfig: "KUBECONFIG",
  istioNamespace: "GITMESH_ISTIO_NAMESPACE",
  discoverySelectorsJson: "GITMESH_DISCOVERY_SELECTORS",
  maxPruneFraction: "GITMESH_MAX_PRUNE_FRACTION",
  pruneAlwaysAllowed: "GITMESH_PRUNE_ALWAYS_ALLOWED",
  httpPort: "GITMESH_AGENT_HTTP_PORT",
  leaseName: "GITMESH_LEADER_ELECTION_LEASE",
  resyncPeriod: "GITMESH_RESYNC_PERIOD",
  rootTlsSecret: "GITMESH_RELAY_ROOT_TLS_SECRET",
  tokenSecret: "GITMESH_RELAY_TOKEN_SECRET",
  clientTlsSecret: "GITMESH_RELAY_CLIENT_TLS_SECRET",
  writeCacerts: "GITMESH_WRITE_CACERTS",
  inventoryName: "GITMESH_INVENTORY_CONFIGMAP",
  logLevel: "GITMESH_LOG_LEVEL",
  autoRestartPods: "GITMESH_AUTO_RESTART_PODS",
  suspend: "GITMESH_AGENT_SUSPEND",
  restartNamespaces: "GITMESH_RESTART_NAMESPACES",
  manageIstioInstall: "GITMESH_MANAGE_ISTIO_INSTALL",
  rateLimitConfigNamespaces: "GITMESH_RATE_LIMIT_CONFIG_NAMESPACES",
} as const;

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const OPERATORS = new Set(["In", "NotIn", "Exists", "DoesNotExist"]);

/** The chart's JSON list of label selectors, checked; a string is the problem. */
function parseSelectorsJson(text: string): LabelSelector[] | string {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return `discovery selectors ${JSON.stringify(text)} are not JSON (${AGENT_ENV.discoverySelectorsJson}; chart discovery.selectors)`;
  }
  if (!Array.isArray(v)) return `discovery selectors must be a JSON list of label selectors (${AGENT_ENV.discoverySelectorsJson})`;
  const out: LabelSelector[] = [];
  for (const [i, sel] of v.entries()) {
    const s = sel as { matchLabels?: unknown; matchExpressions?: unknown } | null;
    const bad = (why: string) => `discovery selector ${i}: ${why}`;
    if (s === null || typeof s !== "object" || Array.isArray(s)) return bad("not an object");
    const ml = s.matchLabels;
    if (ml !== undefined && (ml === null || typeof ml !== "object" || Object.values(ml).some((x) => typeof x !== "string"))) return bad("matchLabels must map strings to strings");
    const me = s.matchExpressions;
    if (me !== undefined) {
      if (!Array.isArray(me)) return bad("matchExpressions must be a list");
      for (const r of me as ({ key?: unknown; operator?: unknown; values?: unknown } | null)[]) {
        if (typeof r?.key !== "string" || typeof r.operator !== "string" || !OPERATORS.has(r.operator)) return bad("each matchExpression needs a key and an operator In, NotIn, Exists or DoesNotExist");
        if (r.values !== undefined && (!Array.isArray(r.values) || r.values.some((x) => typeof x !== "string"))) return bad("matchExpression values must be strings");
      }
    }
    out.push({ ...(ml === undefined ? {} : { matchLabels: ml as Record<string, string> }), ...(me === undefined ? {} : { matchExpressions: me as LabelSelector["matchExpressions"] & object }) });
  }
  return out;
}

const DURATION_UNITS_MS: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };

/** A Go-style duration as Kubernetes tools take it (`90s`, `5m`, `1h30m`, `0`) in milliseconds; undefined when it is not one. */
export function parseDurationMs(text: string): number | undefined {
  const t = text.trim();
  if (t === "0") return 0;
  if (!/^(\d+(\.\d+)?(h|ms|m|s))+$/.test(t)) return undefined;
  let ms = 0;
  for (const m of t.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s)/g)) ms += Number(m[1]) * DURATION_UNITS_MS[m[2]!]!;
  return Math.round(ms);
}

function parseSelector(text: string): LabelSelector | string {
  const matchLabels: Record<string, string> = {};
  for (const part of text.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const m = /^([A-Za-z0-9./_-]+)=([A-Za-z0-9._-]*)$/.exec(part);
    if (!m) return `discovery selector "${text}": "${part}" is not key=value`;
    matchLabels[m[1]!] = m[2]!;
  }
  return { matchLabels };
}

export function parseAgentConfig(input: AgentConfigInput, defaults: { identity: string }): { config?: AgentConfig; problems: string[] } {
  const read = createConfigReader();
  const { problems } = read;
  const relayAddress = input.relayAddress ?? "";
  if (!/^[^\s:]+:\d{1,5}$/.test(relayAddress)) problems.push(`relay server address "${relayAddress}" must be host:port (--relay-address or ${AGENT_ENV.relayAddress}; chart relay.serverAddress)`);
  const cluster = input.cluster ?? "";
  if (!isValidClusterName(cluster)) problems.push(`cluster name "${cluster}" must be a DNS-1123 label (--cluster or ${AGENT_ENV.cluster}; chart relay.cluster)`);
  const namespace = input.namespace || "gitmesh";
  if (!DNS1123_LABEL.test(namespace)) problems.push(`namespace "${namespace}" is not a valid namespace name`);
  const istioNamespace = input.istioNamespace || "istio-system";
  if (!DNS1123_LABEL.test(istioNamespace)) problems.push(`Istio namespace "${istioNamespace}" is not a valid namespace name`);
  const selectors: LabelSelector[] = [];
  for (const s of input.discoverySelectors ?? []) {
    const r = parseSelector(s);
    if (typeof r === "string") problems.push(r);
    else selectors.push(r);
  }
  // Flags win over the chart's JSON list.
  if (selectors.length === 0 && input.discoverySelectorsJson !== undefined && input.discoverySelectorsJson.trim() !== "") {
    const r = parseSelectorsJson(input.discoverySelectorsJson);
    if (typeof r === "string") problems.push(r);
    else selectors.push(...r);
  }
  const name = (v: string | undefined, fallback: string, what: string, env: string): string => {
    const n = v || fallback;
    if (!DNS1123_SUBDOMAIN.test(n)) problems.push(`${what} "${n}" is not a valid object name (${env})`);
    return n;
  };
  const writeCacertsText = (input.writeCacerts ?? "true").trim().toLowerCase();
  if (writeCacertsText !== "true" && writeCacertsText !== "false") problems.push(`write cacerts "${input.writeCacerts ?? ""}" must be true or false (${AGENT_ENV.writeCacerts}; chart istio.writeCacerts)`);
  const logLevel = input.logLevel || "info";
  if (!isLogLevel(logLevel)) problems.push(`log level "${logLevel}" must be debug, info, warn or error (--log-level or ${AGENT_ENV.logLevel}; chart logLevel)`);
  const resyncText = input.resyncPeriod ?? "";
  const resyncPeriodMs = resyncText === "" ? 300_000 : parseDurationMs(resyncText);
  if (resyncPeriodMs === undefined || (resyncPeriodMs > 0 && resyncPeriodMs < 1000)) problems.push(`resync period "${resyncText}" must be a duration of at least 1s such as 5m or 300s, or 0 to turn the periodic resync off (${AGENT_ENV.resyncPeriod}; chart resyncPeriod)`);
  const config: AgentConfig = {
    relayAddress,
    cluster,
    authority: input.authority || "gitmesh-server.gitmesh",
    namespace,
    identity: input.identity || defaults.identity,
    kubeconfig: input.kubeconfig || undefined,
    istioNamespace,
    discoverySelectors: selectors.length > 0 ? selectors : undefined,
    maxPruneFraction: read.number(input.maxPruneFraction, "max prune fraction", MASS_DELETION_DEFAULTS.maxFraction, (n) => n >= 0 && n <= 1, "a number between 0 and 1"),
    pruneAlwaysAllowed: read.number(input.pruneAlwaysAllowed, "prune always allowed", MASS_DELETION_DEFAULTS.alwaysAllowed, (n) => Number.isInteger(n) && n >= 0, "a whole number ≥ 0"),
    httpPort: read.port(input.httpPort, "HTTP port", 9977),
    leaseDurationMs: read.number(input.leaseDurationMs, "lease duration", 15_000, (n) => n >= 1000, "milliseconds ≥ 1000"),
    renewDeadlineMs: read.number(input.renewDeadlineMs, "renew deadline", 10_000, (n) => n >= 500, "milliseconds ≥ 500"),
    retryPeriodMs: read.number(input.retryPeriodMs, "retry period", 2_000, (n) => n >= 100, "milliseconds ≥ 100"),
    resyncPeriodMs: resyncPeriodMs ?? 300_000,
    debounceMs: read.number(input.debounceMs, "discovery debounce", 100, (n) => n >= 0, "milliseconds ≥ 0"),
    leaseName: name(input.leaseName, "gitmesh-agent", "leader election Lease name", AGENT_ENV.leaseName),
    relaySecrets: {
      rootTls: name(input.rootTlsSecret, "relay-root-tls-secret", "relay root CA secret name", AGENT_ENV.rootTlsSecret),
      token: name(input.tokenSecret, "relay-identity-token-secret", "relay bootstrap token secret name", AGENT_ENV.tokenSecret),
      clientTls: name(input.clientTlsSecret, "relay-client-tls-secret", "relay client certificate secret name", AGENT_ENV.clientTlsSecret),
    },
    writeCacerts: writeCacertsText !== "false",
    inventoryName: name(input.inventoryName, "gitmesh-agent-inventory", "inventory ConfigMap name", AGENT_ENV.inventoryName),
    logLevel: isLogLevel(logLevel) ? logLevel : "info",
    autoRestartPods: read.bool(input.autoRestartPods, `auto restart pods (${AGENT_ENV.autoRestartPods}; chart autoRestartPods)`, false),
    suspend: read.bool(input.suspend, `suspend (--suspend or ${AGENT_ENV.suspend}; chart suspend)`, false),
    manageIstioInstall: read.bool(input.manageIstioInstall, `manage Istio install (--manage-istio-install or ${AGENT_ENV.manageIstioInstall}; chart lifecycle.enabled)`, false),
    rateLimitConfigNamespaces: [...new Set((input.rateLimitConfigNamespaces ?? "").split(",").map((n) => n.trim()).filter((n) => n !== ""))].sort(),
    ...(input.restartNamespaces === undefined ? {} : { restartNamespaces: [...new Set(input.restartNamespaces.split(",").map((n) => n.trim()).filter((n) => n !== ""))].sort() }),
  };
  for (const ns of config.restartNamespaces ?? []) {
    if (!DNS1123_LABEL.test(ns)) problems.push(`restart namespace "${ns}" is not a namespace name (${AGENT_ENV.restartNamespaces}; chart istio.restartNamespaces)`);
  }
  for (const ns of config.rateLimitConfigNamespaces) {
    if (!DNS1123_LABEL.test(ns)) problems.push(`rate-limit config namespace "${ns}" is not a namespace name (--rate-limit-config-namespaces or ${AGENT_ENV.rateLimitConfigNamespaces}; chart rateLimit.configNamespaces)`);
  }
  if (config.renewDeadlineMs >= config.leaseDurationMs) problems.push("renew deadline must be shorter than the lease duration");
  if (config.retryPeriodMs >= config.renewDeadlineMs) problems.push("retry period must be shorter than the renew deadline");
  return configResult(config, problems);
}
