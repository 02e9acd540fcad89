// The whole agent (leader election, discovery, relay link, apply/prune) against the emulator and a
// real relay server on loopback with real TLS.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { createMemoryLogger } from "../../src/core/index.js";
import { createRelayServer, generateKeyPem, generateRelayPki, type RelayPki, type RelayServer, type OutputAckEvent, type OutputNackEvent } from "../../src/relay/index.js";
import { createAgent, createKubeClient, createRelayLinkFactory, parseAgentConfig, withFieldOwner, type Agent, type KubeObject } from "../../src/agent/index.js";
import { eventually, startKube, type StartedKube } from "../helpers/kube.js";
import { agentClusterSeed, dr, metricValue, vs } from "./helpers.js";

const TOKEN = "bootstrap-token-0123456789abcdef";
let pki: RelayPki;
let clientKey: string;
beforeAll(() => {
  pki = generateRelayPki({ additionalSans: ["127.0.0.1"] });
  clientKey = generateKeyPem();
});

const enc = new TextEncoder();
const resources = (objs: readonly KubeObject[]) => new Map(objs.map((o) => [`${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`, enc.encode(JSON.stringify(o))]));

interface Env {
  kube: StartedKube;
  server: RelayServer;
  serverRegistry: Registry;
  port: number;
  acks: OutputAckEvent[];
  nacks: OutputNackEvent[];
  agents: Agent[];
}
let env: Env | undefined;
const registries = new Map<Agent, Registry>();

async function startServer(port = 0) {
  const serverRegistry = new Registry();
  const acks: OutputAckEvent[] = [];
  const nacks: OutputNackEvent[] = [];
  const server = createRelayServer({
    pki,
    token: TOKEN,
    isClusterRegistered: (c) => c === "cluster1",
    logger: createMemoryLogger("relay-server").logger,
    registry: serverRegistry,
    host: "127.0.0.1",
    port,
    onAck: (e) => acks.push(e),
    onNack: (e) => nacks.push(e),
  });
  const bound = await server.start();
  return { server, serverRegistry, port: bound, acks, nacks };
}

async function setup(): Promise<Env> {
  const kube = await startKube({
    seed: await agentClusterSeed("cluster1", { rootCaPem: pki.rootCaCertPem, token: TOKEN }),
  });
  const s = await startServer();
  env = { kube, ...s, agents: [] };
  return env;
}

function agent(e: Env, identity: string): Agent {
  const { config, problems } = parseAgentConfig(
    { relayAddress: `127.0.0.1:${e.port}`, cluster: "cluster1", httpPort: "0", leaseDurationMs: "1000", renewDeadlineMs: "800", retryPeriodMs: "150", debounceMs: "20" },
    { identity },
  );
  expect(problems).toEqual([]);
  const logger = createMemoryLogger(identity).logger;
  const registry = new Registry();
  const kc = e.kube.newKubeConfig();
  const client = createKubeClient(kc);
  const a = createAgent({
    config: config!,
    kc,
    relay: createRelayLinkFactory({
      reader: client,
      writer: withFieldOwner(client),
      namespace: config!.namespace,
      address: config!.relayAddress,
      cluster: config!.cluster,
      client: { backoff: { initialMs: 50, maxMs: 300 }, keyPem: clientKey },
      logger,
    }),
    registry,
    backoff: { initialMs: 20, maxMs: 200 },
    logger,
  });
  e.agents.push(a);
  registries.set(a, registry);
  return a;
}

afterEach(async () => {
  if (!env) return;
  for (const a of env.agents) await a.stop();
  await env.server.stop();
  await env.kube.stop();
  env = undefined;
});

const vsNames = (e: Env) => e.kube.emulator.list("networking.istio.io/v1", "VirtualService", "bookinfo").map((o) => (o.metadata as { name: string }).name).sort();

describe("agent with a real relay", () => {
  it("registers, stores its certificate, pushes discovery, applies/updates/prunes output and ACKs; reuses the certificate on restart", async () => {
    const e = await setup();
    const a = agent(e, "agent-a");
    await a.start();
    await eventually("leader", () => a.isLeader, 10_000);
    const secret = await eventually("client cert stored", () => e.kube.emulator.get("v1", "Secret", "gitmesh", "relay-client-tls-secret"), 20_000);
    expect(Buffer.from((secret.data as Record<string, string>)["tls.crt"]!, "base64").toString()).toContain("BEGIN CERTIFICATE");
    // the server holds the same discovery state the agent built
    await eventually("discovery at the server", () => {
      const s = e.server.discoveryState("cluster1");
      const mine = a.discovery?.current();
      return s !== undefined && mine !== undefined && s.state.size === mine.state.size && s.state.has("service/bookinfo-frontends/productpage");
    }, 20_000);

    e.server.publishOutput("cluster1", { version: 1, sourceCommit: "c1", complete: true, resources: resources([vs("reviews", "bookinfo", "reviews"), vs("ratings", "bookinfo", "ratings"), dr("reviews", "bookinfo", "reviews")]) });
    await eventually("v1 acked", () => e.acks.find((x) => x.version === 1), 20_000);
    expect(vsNames(e)).toEqual(["ratings", "reviews"]);
    e.server.publishOutput("cluster1", { version: 2, sourceCommit: "c2", complete: true, resources: resources([vs("reviews", "bookinfo", "reviews"), dr("reviews", "bookinfo", "reviews")]) });
    await eventually("v2 acked", () => e.acks.find((x) => x.version === 2), 20_000);
    expect(vsNames(e)).toEqual(["reviews"]);

    // a new discovery object reaches the server as a delta
    e.kube.emulator.seed([{ apiVersion: "v1", kind: "Service", metadata: { name: "late", namespace: "bookinfo-backends" }, spec: { ports: [{ port: 80 }] } }]);
    await eventually("delta at the server", () => e.server.discoveryState("cluster1")?.state.has("service/bookinfo-backends/late"), 20_000);

    // restart: the stored certificate is reused (no second registration)
    await a.stop();
    const b = agent(e, "agent-a");
    await b.start();
    await eventually("reconnected", () => b.relayLink?.connected, 20_000);
    expect(await metricValue(e.serverRegistry, "gitmesh_relay_certificates_issued_total", { kind: "register" })).toBe(1);
    await eventually("both streams up at the server", () => e.server.connectedClusters().find((c) => c.cluster === "cluster1" && c.push && c.pull), 20_000);
  });

  it("prunes nothing on a disconnect or an incomplete output; NACKs a mass deletion with the reason", async () => {
    const e = await setup();
    const a = agent(e, "agent-a");
    await a.start();
    const objs = Array.from({ length: 6 }, (_, i) => vs(`r${i}`, "bookinfo", `h${i}`));
    e.server.publishOutput("cluster1", { version: 1, sourceCommit: "c1", complete: true, resources: resources(objs) });
    await eventually("v1 acked", () => e.acks.find((x) => x.version === 1), 20_000);
    expect(vsNames(e)).toHaveLength(6);

    // the relay goes away: the agent keeps everything
    const port = e.port;
    await e.server.stop();
    await eventually("disconnected", () => a.relayLink?.connected === false, 20_000);
    await new Promise((r) => setTimeout(r, 500));
    expect(vsNames(e)).toHaveLength(6);

    // a new server on the same port (no state): an incomplete output with one object prunes nothing
    const s2 = await startServer(port);
    Object.assign(e, s2);
    await eventually("reconnected", () => a.relayLink?.connected, 20_000);
    e.server.publishOutput("cluster1", { version: 2, sourceCommit: "c2", complete: false, resources: resources(objs.slice(0, 1)) });
    await eventually("v2 acked", () => e.acks.find((x) => x.version === 2), 20_000);
    expect(vsNames(e)).toHaveLength(6);
    // a complete one that would delete 5 of 6: refused and NACKed with the reason
    e.server.publishOutput("cluster1", { version: 3, sourceCommit: "c3", complete: true, resources: resources(objs.slice(0, 1)) });
    const nack = await eventually("v3 nacked", () => e.nacks.find((x) => x.version === 3), 20_000);
    expect(nack.errors[0]).toMatchObject({ key: "prune" });
    expect(nack.errors[0]!.message).toMatch(/refusing to delete 5 of 6/);
    expect(vsNames(e)).toHaveLength(6);
    expect(await metricValue(registries.get(a)!, "gitmesh_agent_prune_refused_total", { reason: "mass_deletion" })).toBe(1);
    expect(await metricValue(registries.get(a)!, "gitmesh_agent_prune_refused_total", { reason: "incomplete" })).toBe(1);
  });

  it("fails over: the standby replica becomes leader, connects and applies", async () => {
    const e = await setup();
    const a = agent(e, "agent-a");
    await a.start();
    await eventually("a leads", () => a.isLeader, 10_000);
    const b = agent(e, "agent-b");
    await b.start();
    await new Promise((r) => setTimeout(r, 400));
    expect(b.isLeader).toBe(false);
    expect(b.relayLink).toBeUndefined();
    await a.stop();
    await eventually("b leads and connects", () => b.isLeader && b.relayLink?.connected, 20_000);
    e.server.publishOutput("cluster1", { version: 1, sourceCommit: "c1", complete: true, resources: resources([vs("from-b", "bookinfo", "b")]) });
    await eventually("applied by b", () => vsNames(e).includes("from-b"), 20_000);
  });
});
