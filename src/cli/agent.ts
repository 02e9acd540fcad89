/**
 * `gitmesh agent`: the composition root of the cluster agent. Reads flags and environment ONCE
 * (flags win; env names match the Helm chart: relay.serverAddress → GITMESH_RELAY_SERVER_ADDRESS,
 * relay.cluster → GITMESH_RELAY_CLUSTER, relay.authority → GITMESH_RELAY_AUTHORITY, POD_NAMESPACE,
 * POD_NAME, and every other value the chart passes: see AGENT_ENV in src/agent/config.ts), validates
 * and freezes the configuration, builds the clients and runs until SIGINT/SIGTERM.
 */
import { hostname } from "node:os";
import { KubeConfig } from "@kubernetes/client-node";
import type { Command } from "commander";
import { Registry, collectDefaultMetrics } from "prom-client";
import { createLogger, registerBuildInfo } from "../core/index.js";
import { AGENT_ENV, createRelayAgent, parseAgentConfig } from "../agent/index.js";
import { processBuildInfo, UsageError, type CliIo } from "./io.js";
import { untilStopSignal } from "./signals.js";

interface AgentFlags {
  readonly relayAddress?: string;
  readonly cluster?: string;
  readonly authority?: string;
  readonly namespace?: string;
  readonly identity?: string;
  readonly kubeconfig?: string;
  readonly istioNamespace?: string;
  readonly discoverySelector?: string[];
  readonly maxPruneFraction?: string;
  readonly pruneAlwaysAllowed?: string;
  readonly httpPort?: string;
  readonly logLevel?: string;
  readonly autoRestartPods?: boolean;
  readonly suspend?: boolean;
  readonly manageIstioInstall?: boolean;
  readonly rateLimitConfigNamespaces?: string;
}

export function registerAgent(program: Command, io: CliIo): void {
  program
    .command("agent")
    .summary("run the cluster agent: discovery, relay link, apply and safe prune, drift repair (HTTP :9977)")
    .description("Run the cluster agent: discovery, relay link, apply/prune, drift repair, leader election (HTTP :9977 /healthz /readyz /metrics).")
    .option("--relay-address <host:port>", `relay server address (env ${AGENT_ENV.relayAddress}; chart relay.serverAddress)`)
    .option("--cluster <name>", `this cluster's name (env ${AGENT_ENV.cluster}; chart relay.cluster)`)
    .option("--authority <name>", `TLS server name of the relay (env ${AGENT_ENV.authority}; chart relay.authority; default gitmesh-server.gitmesh)`)
    .option("--namespace <ns>", `agent namespace: relay secrets and leader Lease (env ${AGENT_ENV.namespace}; default gitmesh)`)
    .option("--identity <id>", `replica identity for leader election (env ${AGENT_ENV.identity}; default hostname)`)
    .option("--kubeconfig <path>", `kubeconfig (env ${AGENT_ENV.kubeconfig}); default: in-cluster config`)
    .option("--istio-namespace <ns>", "namespace of the Istio control plane (default istio-system)")
    .option("--discovery-selector <k=v,...>", "discover only namespaces with these labels (repeatable; any matches)", (v: string, prev: string[] | undefined) => [...(prev ?? []), v])
    .option("--max-prune-fraction <0..1>", `largest share of owned objects one output may delete (env ${AGENT_ENV.maxPruneFraction}; default 0.5)`)
    .option("--prune-always-allowed <n>", `deletions always allowed whatever the share (env ${AGENT_ENV.pruneAlwaysAllowed}; default 2)`)
    .option("--http-port <n>", `HTTP port (env ${AGENT_ENV.httpPort}; default 9977)`)
    .option("--auto-restart-pods", `restart istiod and injected workloads after writing cacerts, for RootTrustPolicies with autoRestartPods (env ${AGENT_ENV.autoRestartPods}; chart autoRestartPods)`)
    .option("--suspend", `apply, prune and repair nothing (the cluster owner's brake): every output is answered "suspended", discovery and status stay live (env ${AGENT_ENV.suspend}; chart suspend)`)
    .option("--manage-istio-install", `install Istio from IstioLifecycleManager / GatewayLifecycleManager (Sail operator resources, gateway Deployments, Services, Roles); off: such output is refused with an error (env ${AGENT_ENV.manageIstioInstall}; chart lifecycle.enabled, which grants the RBAC)`)
    .option("--rate-limit-config-namespaces <ns,...>", `namespaces where the agent writes rate limiters' configuration (RateLimitServerConfig → ConfigMap); elsewhere such output is refused with an error (env ${AGENT_ENV.rateLimitConfigNamespaces}; chart rateLimit.configNamespaces, which grants the RBAC there)`)
    .option("--log-level <level>", `debug | info | warn | error (env ${AGENT_ENV.logLevel}; chart logLevel; default info)`)
    .action(async (flags: AgentFlags) => {
      const env = process.env;
      const { config, problems } = parseAgentConfig(
        {
          relayAddress: flags.relayAddress ?? env[AGENT_ENV.relayAddress],
          cluster: flags.cluster ?? env[AGENT_ENV.cluster],
          authority: flags.authority ?? env[AGENT_ENV.authority],
          namespace: flags.namespace ?? env[AGENT_ENV.namespace],
          identity: flags.identity ?? env[AGENT_ENV.identity],
          kubeconfig: flags.kubeconfig ?? env[AGENT_ENV.kubeconfig],
          istioNamespace: flags.istioNamespace ?? env[AGENT_ENV.istioNamespace],
          discoverySelectors: flags.discoverySelector,
          discoverySelectorsJson: env[AGENT_ENV.discoverySelectorsJson],
          maxPruneFraction: flags.maxPruneFraction ?? env[AGENT_ENV.maxPruneFraction],
          pruneAlwaysAllowed: flags.pruneAlwaysAllowed ?? env[AGENT_ENV.pruneAlwaysAllowed],
          httpPort: flags.httpPort ?? env[AGENT_ENV.httpPort],
          leaseName: env[AGENT_ENV.leaseName],
          resyncPeriod: env[AGENT_ENV.resyncPeriod],
          rootTlsSecret: env[AGENT_ENV.rootTlsSecret],
          tokenSecret: env[AGENT_ENV.tokenSecret],
          clientTlsSecret: env[AGENT_ENV.clientTlsSecret],
          writeCacerts: env[AGENT_ENV.writeCacerts],
          inventoryName: env[AGENT_ENV.inventoryName],
          logLevel: flags.logLevel ?? env[AGENT_ENV.logLevel],
          autoRestartPods: flags.autoRestartPods === true ? "true" : env[AGENT_ENV.autoRestartPods],
          restartNamespaces: env[AGENT_ENV.restartNamespaces],
          suspend: flags.suspend === true ? "true" : env[AGENT_ENV.suspend],
          manageIstioInstall: flags.manageIstioInstall === true ? "true" : env[AGENT_ENV.manageIstioInstall],
          rateLimitConfigNamespaces: flags.rateLimitConfigNamespaces ?? env[AGENT_ENV.rateLimitConfigNamespaces],
        },
        { identity: hostname() },
      );
      if (!config) throw new UsageError(`invalid agent configuration:\n  ${problems.join("\n  ")}`);
      const logger = createLogger({ name: "agent", level: config.logLevel });
      const kc = new KubeConfig();
      if (config.kubeconfig !== undefined) kc.loadFromFile(config.kubeconfig);
      else if (env.KUBERNETES_SERVICE_HOST !== undefined) kc.loadFromCluster();
      else kc.loadFromDefault();
      const registry = new Registry();
      collectDefaultMetrics({ register: registry });
      registerBuildInfo(registry, processBuildInfo(process.env));
      const agent = createRelayAgent({ config, kc, registry, logger });
      await agent.start();
      io.out(`gitmesh agent for cluster ${config.cluster} running (HTTP :${String(agent.httpPort)})\n`);
      await untilStopSignal();
      await agent.stop();
    });
}
