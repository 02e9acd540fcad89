/**
 * An agent in this process against an emulated cluster, for the demo and benchmarks: the real agent
 * code (createAgent: discovery, apply, relay link) with a short discovery debounce so a trial converges
 * quickly; the same composition as `gitmesh agent` (createRelayAgent), so Istio intermediates are
 * signed by the server over the relay here too. Leader election uses Kubernetes' own timings (15 s
 * Lease, 10 s renew deadline, 2 s retry) as the chart does: a first leader takes the Lease at once, and
 * short leases only lose it on a busy machine (3 s leases were lost 21 times in one demo, #35).
 */
import { KubeConfig } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import type { Logger } from "../core/index.js";
import { createRelayAgent, parseAgentConfig, type Agent } from "../agent/index.js";
import type { KubeEmulator } from "../kube-emulator/index.js";

export interface InProcessAgentOptions {
  readonly cluster: string;
  readonly emulator: KubeEmulator;
  /** `host:port` of the relay. */
  readonly relayAddress: string;
  readonly logger: Logger;
  /** Discovery debounce (default 50 ms). */
  readonly debounceMs?: number;
  /**
   * Leader election timings in ms (default Kubernetes': 15 000 / 10 000 / 2 000, as the chart runs
   * the agent). Only a test of fast failover wants shorter ones, and passes them here.
   */
  readonly leaderElection?: { readonly leaseDurationMs: number; readonly renewDeadlineMs: number; readonly retryPeriodMs: number };
  /** The chart value `suspend` (default false): apply, prune and repair nothing. */
  readonly suspend?: boolean;
  /** The drift watcher's periodic full resync, in whole seconds (default the chart's 5 min). */
  readonly resyncPeriodSeconds?: number;
}

export function createInProcessAgent(options: InProcessAgentOptions): Agent {
  const { cluster, logger } = options;
  const { config, problems } = parseAgentConfig(
    {
      relayAddress: options.relayAddress,
      cluster,
      httpPort: "0",
      ...(options.leaderElection === undefined
        ? {}
        : { leaseDurationMs: String(options.leaderElection.leaseDurationMs), renewDeadlineMs: String(options.leaderElection.renewDeadlineMs), retryPeriodMs: String(options.leaderElection.retryPeriodMs) }),
      debounceMs: String(options.debounceMs ?? 50),
      ...(options.suspend === true ? { suspend: "true" } : {}),
      ...(options.resyncPeriodSeconds === undefined ? {} : { resyncPeriod: `${String(options.resyncPeriodSeconds)}s` }),
    },
    { identity: `${cluster}-agent` },
  );
  if (!config) throw new Error(`agent configuration: ${problems.join("; ")}`);
  const kc = new KubeConfig();
  kc.loadFromString(JSON.stringify(options.emulator.kubeconfigObject()));
  // Shorter reconnect backoff than production so a trial converges quickly after a server restart.
  return createRelayAgent({ config, kc, registry: new Registry(), logger, relayClient: { backoff: { initialMs: 100, maxMs: 1000 } } });
}
