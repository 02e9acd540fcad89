/**
 * The agent's configuration: parsed ONCE by the composition root (`gitmesh agent`) from flags and
 * environment variables that match the chart values, validated, frozen. Problems are returned as
 * messages that say what to fix, never thrown.
 */
import { configResult, createConfigReader, DNS1123_LABEL } from "../core/index.js";
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
  /** Quiet time before a discovery flush (default 100 ms; a flush is incremental, milliseconds). */
  readonly debounceMs: number;
  /** RootTrustPolicy autoRestartPods: restart istiod and injected workloads after writing cacerts (chart autoRestartPods grants the RBAC; default false). */
  readonly autoRestartPods: boolean;
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
  readonly autoRestartPods?: string | undefined;
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
  maxPruneFraction: "GITMESH_MAX_PRUNE_FRACTION",
  httpPort: "GITMESH_AGENT_HTTP_PORT",
  autoRestartPods: "GITMESH_AUTO_RESTART_PODS",
} as const;

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
  const config: AgentConfig = {
    relayAddress,
    cluster,
    authority: input.authority || "gitmesh-server.gitmesh",
    namespace,
    identity: input.identity || defaults.identity,
    kubeconfig: input.kubeconfig || undefined,
    istioNamespace,
    discoverySelectors: input.discoverySelectors && input.discoverySelectors.length > 0 ? selectors : undefined,
    maxPruneFraction: read.number(input.maxPruneFraction, "max prune fraction", 0.5, (n) => n >= 0 && n <= 1, "a number between 0 and 1"),
    pruneAlwaysAllowed: read.number(input.pruneAlwaysAllowed, "prune always allowed", 2, (n) => Number.isInteger(n) && n >= 0, "a whole number ≥ 0"),
    httpPort: read.port(input.httpPort, "HTTP port", 9977),
    leaseDurationMs: read.number(input.leaseDurationMs, "lease duration", 15_000, (n) => n >= 1000, "milliseconds ≥ 1000"),
    renewDeadlineMs: read.number(input.renewDeadlineMs, "renew deadline", 10_000, (n) => n >= 500, "milliseconds ≥ 500"),
    retryPeriodMs: read.number(input.retryPeriodMs, "retry period", 2_000, (n) => n >= 100, "milliseconds ≥ 100"),
    debounceMs: read.number(input.debounceMs, "discovery debounce", 100, (n) => n >= 0, "milliseconds ≥ 0"),
    autoRestartPods: read.bool(input.autoRestartPods, `auto restart pods (${AGENT_ENV.autoRestartPods}; chart autoRestartPods)`, false),
  };
  if (config.renewDeadlineMs >= config.leaseDurationMs) problems.push("renew deadline must be shorter than the lease duration");
  if (config.retryPeriodMs >= config.renewDeadlineMs) problems.push("retry period must be shorter than the renew deadline");
  return configResult(config, problems);
}
