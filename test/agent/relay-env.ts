// A real relay server (TLS, gRPC on loopback) and whole agents (createAgent) on one emulated cluster.
import { Registry } from "prom-client";
import type { KubeConfig } from "@kubernetes/client-node";
import { createMemoryLogger } from "../../src/core/index.js";

type MemoryLogger = ReturnType<typeof createMemoryLogger>;
import { createRelayServer, generateKeyPem, generateRelayPki, type OutputAckEvent, type OutputNackEvent, type RelayPki, type RelayServer } from "../../src/relay/index.js";
import { createAgent, createKubeClient, createRelayLinkFactory, parseAgentConfig, type Agent, type AgentConfigInput, type KubeObject, withFieldOwner } from "../../src/agent/index.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import type { KubeEmulatorOptions } from "../../src/kube-emulator/index.js";
import { agentClusterSeed } from "./helpers.js";

export const TOKEN = "bootstrap-token-0123456789abcdef";
let pki: RelayPki | undefined;
let clientKey: string | undefined;
const material = () => {
  pki ??= generateRelayPki({ additionalSans: ["127.0.0.1"] });
  clientKey ??= generateKeyPem();
  return { pki, clientKey };
};

const enc = new TextEncoder();
export const resources = (objs: readonly KubeObject[], extra: Record<string, unknown> = {}) =>
  new Map([...objs.map((o) => [`${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`, enc.encode(JSON.stringify(o))] as const), ...Object.entries(extra).map(([k, v]) => [k, enc.encode(JSON.stringify(v))] as const)]);

export interface RelayEnv {
  kube: StartedKube;
  server: RelayServer;
  acks: OutputAckEvent[];
  nacks: OutputNackEvent[];
  agents: Agent[];
  registries: Map<Agent, Registry>;
  logs: Map<Agent, MemoryLogger>;
  /** Publishes an output version and waits for its ACK or NACK. */
  publish(version: number, objs: readonly KubeObject[], opts?: { complete?: boolean; extra?: Record<string, unknown> }): Promise<{ ack: boolean; errors: readonly { key: string; message: string }[] }>;
  agent(identity: string, overrides?: Partial<AgentConfigInput> & { kc?: KubeConfig }): Agent;
  stop(): Promise<void>;
}

export async function startRelayEnv(kubeOptions: Omit<KubeEmulatorOptions, "port" | "host"> = {}, extraSeed: Record<string, unknown>[] = []): Promise<RelayEnv> {
  const { pki: p, clientKey: key } = material();
  const kube = await startKube({ ...kubeOptions, seed: [...(await agentClusterSeed("cluster1", { rootCaPem: p.rootCaCertPem, token: TOKEN })), ...extraSeed] });
  const acks: OutputAckEvent[] = [];
  const nacks: OutputNackEvent[] = [];
  const server = createRelayServer({
    pki: p,
    token: TOKEN,
    isClusterRegistered: (c) => c === "cluster1",
    logger: createMemoryLogger("relay-server").logger,
    registry: new Registry(),
    host: "127.0.0.1",
    port: 0,
    onAck: (e) => acks.push(e),
    onNack: (e) => nacks.push(e),
  });
  const port = await server.start();
  const env: RelayEnv = {
    kube,
    server,
    acks,
    nacks,
    agents: [],
    registries: new Map(),
    logs: new Map(),
    async publish(version, objs, opts = {}) {
      server.publishOutput("cluster1", { version, sourceCommit: `c${version}`, complete: opts.complete ?? true, resources: resources(objs, opts.extra) });
      const deadline = Date.now() + 20_000;
      for (;;) {
        const a = acks.find((x) => x.version === version);
        if (a) return { ack: true, errors: [] };
        const n = nacks.find((x) => x.version === version);
        if (n) return { ack: false, errors: n.errors };
        if (Date.now() > deadline) throw new Error(`no ACK/NACK for output v${version}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    agent(identity, overrides = {}) {
      const { kc: kcOverride, ...input } = overrides;
      const { config, problems } = parseAgentConfig(
        { relayAddress: `127.0.0.1:${port}`, cluster: "cluster1", httpPort: "0", leaseDurationMs: "1000", renewDeadlineMs: "800", retryPeriodMs: "150", debounceMs: "20", ...input },
        { identity },
      );
      if (!config) throw new Error(problems.join("; "));
      const mem = createMemoryLogger(identity);
      const registry = new Registry();
      const kc = kcOverride ?? kube.newKubeConfig();
      const client = createKubeClient(kc);
      const a = createAgent({
        config,
        kc,
        relay: createRelayLinkFactory({
          reader: client,
          writer: withFieldOwner(client),
          namespace: config.namespace,
          address: config.relayAddress,
          cluster: config.cluster,
          secretNames: config.relaySecrets,
          client: { backoff: { initialMs: 50, maxMs: 300 }, keyPem: key },
          logger: mem.logger,
        }),
        registry,
        backoff: { initialMs: 20, maxMs: 200 },
        logger: mem.logger,
      });
      env.agents.push(a);
      env.registries.set(a, registry);
      env.logs.set(a, mem);
      return a;
    },
    async stop() {
      for (const a of env.agents) await a.stop();
      await server.stop();
      await kube.stop();
    },
  };
  return env;
}
