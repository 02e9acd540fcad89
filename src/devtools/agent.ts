/**
 * An agent in this process against an emulated cluster, for the demo and benchmarks: the real agent
 * code (createAgent: discovery, apply, relay link) with short leader-election and debounce timings so
 * a trial converges quickly; the same composition as `gitmesh agent` (createRelayAgent), so Istio
 * intermediates are signed by the server over the relay here too.
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
   * Leader election as the chart runs it (15 s Lease, 10 s renew deadline, 2 s retry) instead of the
   * trial's 3 s / 2 s / 300 ms. Benchmarks that run dozens of agents in one process want it: one
   * event-loop stall of 2 s there (a GC of the shared heap) made every agent step down at once and
   * reconnect, which measured the process, not the product.
   */
  readonly productionLeaderElection?: boolean;
}

export function createInProcessAgent(options: InProcessAgentOptions): Agent {
  const { cluster, logger } = options;
  const { config, problems } = parseAgentConfig(
    {
      relayAddress: options.relayAddress,
      cluster,
      httpPort: "0",
      ...(options.productionLeaderElection === true ? {} : { leaseDurationMs: "3000", renewDeadlineMs: "2000", retryPeriodMs: "300" }),
      debounceMs: String(options.debounceMs ?? 50),
    },
    { identity: `${cluster}-agent` },
  );
  if (!config) throw new Error(`agent configuration: ${problems.join("; ")}`);
  const kc = new KubeConfig();
  kc.loadFromString(JSON.stringify(options.emulator.kubeconfigObject()));
  // Shorter reconnect backoff than production so a trial converges quickly after a server restart.
  return createRelayAgent({ config, kc, registry: new Registry(), logger, relayClient: { backoff: { initialMs: 100, maxMs: 1000 } } });
}
