/**
 * An agent in this process against an emulated cluster, for the demo and benchmarks: the real agent
 * code (createAgent: discovery, apply, relay link) with short leader-election and debounce timings so
 * a trial converges quickly,; Istio intermediates are signed by the server over the relay.
 */
import { KubeConfig } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import type { Logger } from "../core/index.js";
import { createAgent, createKubeClient, createRelayLinkFactory, createRelaySigner, parseAgentConfig, withFieldOwner, type Agent } from "../agent/index.js";
import type { KubeEmulator } from "../kube-emulator/index.js";

export interface InProcessAgentOptions {
  readonly cluster: string;
  readonly emulator: KubeEmulator;
  /** `host:port` of the relay. */
  readonly relayAddress: string;
  readonly logger: Logger;
  /** Discovery debounce (default 50 ms). */
  readonly debounceMs?: number;
}

export function createInProcessAgent(options: InProcessAgentOptions): Agent {
  const { cluster, logger } = options;
  const { config, problems } = parseAgentConfig(
    { relayAddress: options.relayAddress, cluster, httpPort: "0", leaseDurationMs: "3000", renewDeadlineMs: "2000", retryPeriodMs: "300", debounceMs: String(options.debounceMs ?? 50) },
    { identity: `${cluster}-agent` },
  );
  if (!config) throw new Error(`agent configuration: ${problems.join("; ")}`);
  const kc = new KubeConfig();
  kc.loadFromString(JSON.stringify(options.emulator.kubeconfigObject()));
  const client = createKubeClient(kc);
  return createAgent({
    config,
    kc,
    relay: createRelayLinkFactory({
      reader: client,
      writer: withFieldOwner(client),
      namespace: config.namespace,
      address: config.relayAddress,
      cluster,
      authority: config.authority,
      secretNames: config.relaySecrets,
      client: { backoff: { initialMs: 100, maxMs: 1000 } },
      logger,
    }),
    registry: new Registry(),
    // The server signs Istio intermediates (RootTrustPolicy) over the relay, as for `gitmesh agent`.
    signer: createRelaySigner({ reader: client, namespace: config.namespace, address: config.relayAddress, authority: config.authority, logger: logger.child("intermediate-signer") }),
    logger,
  });
}
