/**
 * createAgent: wires the parts. Every replica runs leader election and the HTTP endpoint; only
 * the leader runs discovery, the relay link, apply/prune, drift repair and cacerts — started in
 * that order when it becomes leader and stopped in reverse order when it stops being leader.
 * Ownership lives in the inventory ConfigMap (inventory.ts), read by each new leader. Writes to the
 * cluster are refused as soon as this replica is not a leader with a fresh Lease (applier canWrite),
 * and /readyz says not ready when the Lease cannot be reached.
 *
 * Two brakes stop apply, prune and drift repair: the chart value `suspend` (the cluster owner's, local:
 * outputs are NACKed, no drift watcher runs) and the server's hold (a suspension through its API or
 * gitmesh.yaml, told over the relay: the link keeps outputs until it ends, the drift watcher watches but
 * repairs nothing, and on release it repairs what drifted meanwhile).
 */
import type { KubeConfig } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import { describeError, type Logger } from "../core/index.js";
import type { OutputHold } from "../relay/index.js";
import { createApplier, type Applier, type ResourceError } from "./applier.js";
import { createCacerts, type IntermediateSigner } from "./cacerts.js";
import { AGENT_SUSPENDED_KEY, agentSuspendedMessage, type AgentConfig } from "./config.js";
import { createDiscovery, type Discovery } from "./discovery.js";
import { createDriftWatcher } from "./drift.js";
import { createAgentHttp } from "./http.js";
import { createInventory } from "./inventory.js";
import { createKubeClient, withFieldOwner, writableKinds, type FieldOwnerWriter, type KubeReader } from "./kube.js";
import { createLeaderElector, type LeaderElector } from "./leader.js";
import { createAgentMetrics, initAgentKindLabels, type AgentMetrics } from "./metrics.js";
import { currentClientCredentials } from "./relay-link.js";
import type { RelayLink, RelayLinkFactory } from "./relay-link.js";
import { createWorkloadRestarter, RESTART_FIELD_MANAGER } from "./workload-restart.js";
import { createRunnableManager, type BackoffOptions, type Runnable, type RunnableManager } from "./runnable.js";

export interface AgentOptions {
  readonly config: AgentConfig;
  readonly kc: KubeConfig;
  /** Opens the relay link when this replica becomes leader (createRelayLinkFactory in production). */
  readonly relay: RelayLinkFactory;
  /** Signs Istio intermediate CSRs; without it certificate requests are NACKed (see cacerts.ts). */
  readonly signer?: IntermediateSigner;
  readonly registry: Registry;
  /** Informer restart backoff (default 200 ms doubling to 30 s). */
  readonly backoff?: BackoffOptions;
  readonly logger: Logger;
}

export interface Agent {
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly isLeader: boolean;
  readonly httpPort: number | undefined;
  readonly metrics: AgentMetrics;
  /** Leader-only parts (undefined on a standby). */
  readonly discovery: Discovery | undefined;
  readonly applier: Applier | undefined;
  readonly relayLink: RelayLink | undefined;
}

export function createAgent(options: AgentOptions): Agent {
  const { config, logger } = options;
  const client = createKubeClient(options.kc);
  const reader: KubeReader = client;
  const metrics = createAgentMetrics(options.registry, { clientCertificateNotAfterMs: async () => (await currentClientCredentials(reader, config.namespace, config.relaySecrets))?.notAfterMs });
  // The chart value `suspend`: since this process started with it.
  const suspendedSinceMs = Date.now();
  metrics.suspended.set(config.suspend ? 1 : 0);
  if (config.suspend) logger.warn("agent suspended (chart suspend: true): discovery and the relay stay live; nothing is applied, pruned or repaired");
  initAgentKindLabels(metrics, writableKinds(config));
  const writer: FieldOwnerWriter = withFieldOwner(client);
  let leaderParts: { manager: RunnableManager; discovery: Discovery; applier: Applier; link: () => RelayLink | undefined } | undefined;

  const restarter = config.autoRestartPods ? createWorkloadRestarter({ reader, writer: withFieldOwner(client, RESTART_FIELD_MANAGER), ...(config.restartNamespaces ? { namespaces: config.restartNamespaces } : {}), logger: logger.child("restart") }) : undefined;
  const cacerts = options.signer && config.writeCacerts
    ? createCacerts({ cluster: config.cluster, reader, writer, signer: options.signer, metrics, ...(restarter ? { restarter } : {}), logger: logger.child("cacerts") })
    : undefined;

  async function startLeading(signal: AbortSignal) {
    metrics.leader.set(1);
    // A new leader reads the inventory afresh (another replica may have written it since).
    const inventory = createInventory({ reader, writer, namespace: config.namespace, name: config.inventoryName, cluster: config.cluster });
    const applier = createApplier({
      cluster: config.cluster,
      reader,
      writer,
      inventory,
      canWrite: () => !signal.aborted && elector.isLeader,
      maxPruneFraction: config.maxPruneFraction,
      pruneAlwaysAllowed: config.pruneAlwaysAllowed,
      manageIstioInstall: config.manageIstioInstall,
      rateLimitConfigNamespaces: config.rateLimitConfigNamespaces,
      metrics,
      logger: logger.child("apply"),
    });
    let link: RelayLink | undefined;
    /** The server's hold on this cluster, as the relay last told this leader. */
    let serverHold: OutputHold | undefined;
    const discovery = createDiscovery({
      kc: options.kc,
      reader,
      cluster: config.cluster,
      istioNamespace: config.istioNamespace,
      ...(config.discoverySelectors ? { discoverySelectors: config.discoverySelectors } : {}),
      debounceMs: config.debounceMs,
      onSnapshot: (r) => {
        metrics.discoveryPushes.inc();
        link?.pushDiscovery(r.state);
      },
      ...(options.backoff ? { backoff: options.backoff } : {}),
      metrics,
      logger: logger.child("discovery"),
    });
    const relayPart: Runnable = {
      name: "relay",
      async start() {
        link = await options.relay({
          onConnection: (c) => metrics.relayConnected.set(c ? 1 : 0),
          onHold: (hold) => {
            const was = serverHold;
            serverHold = hold;
            metrics.serverSuspended.set(hold ? 1 : 0);
            if (hold && !was) logger.warn("cluster held by the management server: nothing is applied, pruned or repaired until it is resumed", { hold: hold.summary });
            else if (!hold && was) {
              logger.warn("cluster no longer held by the management server: drift repair resumes and the newest output is applied", { was: was.summary });
              // What drifted while held (an operator's hotfix) is repaired now, not at the next periodic resync.
              void drift.resync();
            }
          },
          onOutput: async (output) => {
            // The cluster owner's brake: nothing applied or pruned; the server shows the cluster suspended.
            if (config.suspend) {
              metrics.suspendedOutputs.inc();
              logger.info("output not applied: this agent is suspended (chart suspend: true)", { version: output.version, sourceCommit: output.sourceCommit });
              return { ack: false, errors: [{ key: AGENT_SUSPENDED_KEY, message: agentSuspendedMessage(suspendedSinceMs), transient: false }] };
            }
            const outcome = await applier.applyOutput(output);
            const errors: ResourceError[] = [...outcome.errors];
            if (outcome.certificateRequests.length > 0) {
              if (cacerts) errors.push(...(await cacerts.reconcile(outcome.certificateRequests)));
              else {
                const why = config.writeCacerts ? "this agent has no intermediate CA signer configured" : "this agent runs with writeCacerts=false (chart istio.writeCacerts)";
                errors.push(...outcome.certificateRequests.map((r) => ({ key: `${r.kind}/${r.metadata.namespace ?? ""}/${r.metadata.name}`, message: `${why}; cacerts not written` })));
              }
            }
            return { ack: errors.length === 0, errors };
          },
        });
        const current = discovery.current();
        if (current) link.pushDiscovery(current.state);
      },
      async stop() {
        const l = link;
        link = undefined;
        metrics.relayConnected.set(0);
        await l?.close();
      },
    };
    const drift = createDriftWatcher({ kc: options.kc, reader, cluster: config.cluster, applier, kinds: writableKinds(config), resyncPeriodMs: config.resyncPeriodMs, metrics, held: () => serverHold !== undefined, onRepair: (r) => link?.reportDriftRepair?.(r), ...(options.backoff ? { backoff: options.backoff } : {}), logger: logger.child("drift") });
    // Suspended: no drift repair either (nothing is applied there); discovery and the relay stay live.
    const manager = createRunnableManager(config.suspend ? [discovery, relayPart] : [discovery, relayPart, drift], logger);
    leaderParts = { manager, discovery, applier, link: () => link };
    signal.addEventListener("abort", () => void manager.stop(), { once: true });
    await manager.start();
  }

  async function stopLeading() {
    metrics.leader.set(0);
    metrics.relayConnected.set(0);
    metrics.serverSuspended.set(0); // a standby is told nothing; the next leader is told on subscribe
    const parts = leaderParts;
    leaderParts = undefined;
    await parts?.manager.stop();
    restarter?.stop();
  }

  const elector: LeaderElector = createLeaderElector({
    reader,
    writer,
    namespace: config.namespace,
    name: config.leaseName,
    identity: config.identity,
    leaseDurationMs: config.leaseDurationMs,
    renewDeadlineMs: config.renewDeadlineMs,
    retryPeriodMs: config.retryPeriodMs,
    onStartedLeading: startLeading,
    onStoppedLeading: stopLeading,
    onLeadershipChange: (leading) => metrics.leader.set(leading ? 1 : 0),
    logger: logger.child("leader"),
  });

  const http = createAgentHttp({
    port: config.httpPort,
    registry: options.registry,
    logger: logger.child("http"),
    notReadyReason: () => {
      if (!elector.leaseReachable) return `the leader Lease ${config.namespace}/${config.leaseName} could not be read or renewed within the renew deadline`;
      if (!elector.isLeader) return undefined; // a standby is ready to take over
      if (!leaderParts?.discovery.synced) return "informers have not listed yet";
      return undefined;
    },
  });
  const root = createRunnableManager([http, elector], logger);

  return {
    async start() {
      try {
        await root.start();
      } catch (err) {
        logger.error("agent failed to start", { error: describeError(err) });
        throw err;
      }
    },
    stop: () => root.stop(),
    get isLeader() {
      return elector.isLeader;
    },
    get httpPort() {
      return http.port;
    },
    metrics,
    get discovery() {
      return leaderParts?.discovery;
    },
    get applier() {
      return leaderParts?.applier;
    },
    get relayLink() {
      return leaderParts?.link();
    },
  };
}
