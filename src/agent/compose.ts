/**
 * The agent wired for production: the relay link and the intermediate signer over the relay, both
 * reading the relay Secrets of the agent's namespace. One composition for `gitmesh agent` and for the
 * in-process agents of the demo, the simulator and the benchmarks, so they cannot drift apart.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import type { Registry } from "prom-client";
import type { Logger } from "../core/index.js";
import { createAgent, type Agent } from "./agent.js";
import type { AgentConfig } from "./config.js";
import { createKubeClient, withFieldOwner } from "./kube.js";
import { createRelayLinkFactory, createRelaySigner, type RelayLinkOptions } from "./relay-link.js";

export interface RelayAgentOptions {
  readonly config: AgentConfig;
  readonly kc: KubeConfig;
  readonly registry: Registry;
  readonly logger: Logger;
  /** Relay client tuning (e.g. shorter reconnect backoff for in-process agents). */
  readonly relayClient?: RelayLinkOptions["client"];
}

export function createRelayAgent(options: RelayAgentOptions): Agent {
  const { config, kc, logger } = options;
  const client = createKubeClient(kc);
  const relayAt = { namespace: config.namespace, address: config.relayAddress, authority: config.authority, secretNames: config.relaySecrets };
  return createAgent({
    config,
    kc,
    relay: createRelayLinkFactory({
      ...relayAt,
      reader: client,
      writer: withFieldOwner(client),
      cluster: config.cluster,
      ...(options.relayClient ? { client: options.relayClient } : {}),
      logger,
    }),
    // Istio intermediate CAs (RootTrustPolicy): CSRs signed by the server over Relay.SignIntermediate.
    signer: createRelaySigner({ ...relayAt, reader: client, logger: logger.child("intermediate-signer") }),
    registry: options.registry,
    logger,
  });
}
