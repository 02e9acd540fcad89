// The agent's requests to the API server go over kept-alive, bounded connections (kube-connections.ts),
// counted where they arrive: the emulator's accepted TCP connections, and TLS handshakes at a
// TLS-terminating proxy in front of it.
import { connect, type Socket } from "node:net";
import * as http from "node:http";
import * as https from "node:https";
import { createServer as createTlsServer, type Server as TlsServer } from "node:tls";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { KubeConfig } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { createMemoryLogger } from "../../src/core/index.js";
import { createAgentMetrics, createApplier, createConnectionPool, createInventory, createKubeClient, withFieldOwner, type KubeObject } from "../../src/agent/index.js";
import { selfSigned } from "../helpers/self-signed.js";
import { eventually, startKube, type StartedKube } from "../helpers/kube.js";
import { dr, output, vs } from "./helpers.js";
import { startStallProxy } from "./stall-proxy.js";

let kube: StartedKube;
const NAMESPACES = ["a", "b", "c"];

beforeEach(async () => {
  kube = await startKube();
  kube.emulator.seed([{ apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } }, ...NAMESPACES.map((name) => ({ apiVersion: "v1", kind: "Namespace", metadata: { name } }))]);
});
afterEach(async () => {
  await kube.stop();
});

const objects = (n: number): KubeObject[] => Array.from({ length: n }, (_, i) => (i % 2 === 0 ? vs(`r-${i}`, NAMESPACES[i % 3]!, `h${i}.example.com`) : dr(`r-${i}`, NAMESPACES[i % 3]!, `h${i}.example.com`)));

function applierOver(kc: KubeConfig, options: { maxSockets: number; concurrency: number; idleTimeoutMs?: number }) {
  const client = createKubeClient(kc, { connections: { maxSockets: options.maxSockets, ...(options.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: options.idleTimeoutMs }) } });
  const writer = withFieldOwner(client);
  const logger = createMemoryLogger("agent").logger;
  const inventory = createInventory({ reader: client, writer, namespace: "gitmesh", cluster: "cluster1" });
  const applier = createApplier({ cluster: "cluster1", reader: client, writer, inventory, concurrency: options.concurrency, metrics: createAgentMetrics(new Registry()), logger });
  return { client, applier };
}

describe("agent connections to the API server", () => {
  it("applies 300 objects with 16 in flight over at most maxSockets kept-alive connections", async () => {
    const { client, applier } = applierOver(kube.kc, { maxSockets: 4, concurrency: 16 });
    const before = kube.emulator.connectionsAccepted();
    const r = await applier.applyOutput(output(1, objects(300)));
    expect(r.errors).toEqual([]);
    expect(r.applied).toBe(300);
    // 300 applies, the lists of every writable kind, the inventory read and two writes: over 4 sockets.
    const opened = kube.emulator.connectionsAccepted() - before;
    expect(opened).toBeGreaterThan(0);
    expect(opened).toBeLessThanOrEqual(4);
    expect(client.connections.openSockets()).toBeLessThanOrEqual(4);
    expect(kube.emulator.list("networking.istio.io/v1", "VirtualService").length + kube.emulator.list("networking.istio.io/v1", "DestinationRule").length).toBe(300);

    // Ownership, prune and the uid preconditions are unchanged: the next output drops 10 objects.
    const r2 = await applier.applyOutput(output(2, objects(290)));
    expect(r2.errors).toEqual([]);
    expect(r2.pruned).toBe(10);
    expect(r2.unchanged).toBe(290);
    expect(kube.emulator.connectionsAccepted() - before).toBeLessThanOrEqual(4);
  });

  it("a client without the pool's bound would have opened a connection per request: one socket serves many requests in turn", async () => {
    const { applier } = applierOver(kube.kc, { maxSockets: 1, concurrency: 8 });
    const before = kube.emulator.connectionsAccepted();
    const r = await applier.applyOutput(output(1, objects(50)));
    expect(r.errors).toEqual([]);
    expect(kube.emulator.connectionsAccepted() - before).toBe(1);
  });

  it("closes idle sockets itself and opens new ones for the next apply; survives the server dropping every connection", async () => {
    const { client, applier } = applierOver(kube.kc, { maxSockets: 4, concurrency: 8, idleTimeoutMs: 100 });
    expect((await applier.applyOutput(output(1, objects(40)))).errors).toEqual([]);
    await eventually("idle sockets closed by the client", () => client.connections.openSockets() === 0);
    const before = kube.emulator.connectionsAccepted();
    const r2 = await applier.applyOutput(output(2, objects(60)));
    expect(r2.errors).toEqual([]);
    expect(r2.applied).toBe(60);
    expect(kube.emulator.connectionsAccepted() - before).toBeGreaterThan(0);

    // The server goes away with the kept-alive sockets open and comes back: the next apply reconnects.
    expect(client.connections.openSockets()).toBeGreaterThan(0);
    await kube.emulator.faults.goAway();
    await kube.emulator.faults.comeBack();
    await eventually("dropped sockets noticed", () => client.connections.openSockets() === 0);
    const r3 = await applier.applyOutput(output(3, objects(80)));
    expect(r3.errors).toEqual([]);
    expect(r3.applied).toBe(80);
  });

  it("a request that never gets an answer gives its socket back: the others are not starved by the bound", async () => {
    const proxy = await startStallProxy(kube.url);
    try {
      const kc = new KubeConfig();
      kc.loadFromString(kube.emulator.kubeconfig().replace(kube.url, proxy.url));
      const client = createKubeClient(kc, { connections: { maxSockets: 2, requestTimeoutMs: 300 } });
      const cm = { apiVersion: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true };
      expect(await client.get(cm, "a", "warm-up")).toBeUndefined(); // discovery of v1 done before the stall
      proxy.stall((r) => r.path.includes("/configmaps/stalled"));
      // More hung requests than sockets (a black-holed path, or a Lease request the elector gave up on).
      const hung = [1, 2, 3].map(() => client.get(cm, "a", "stalled"));
      for (const h of hung) await expect(h).rejects.toThrow(/no answer from the API server/);
      expect(await client.get(cm, "a", "other")).toBeUndefined();
      expect(client.connections.openSockets()).toBeLessThanOrEqual(2);
    } finally {
      proxy.release();
      await proxy.stop();
    }
  });

  it("over TLS: one handshake per pooled socket, not per request", async () => {
    const { keyPem, certPem } = await selfSigned("kube-emulator", "127.0.0.1");

    // TLS in front of the emulator: each TLS connection is piped to a plain one.
    let handshakes = 0;
    const open = new Set<Socket>();
    const proxy: TlsServer = createTlsServer({ key: keyPem, cert: certPem }, (tls) => {
      handshakes += 1;
      const up = connect(kube.emulator.port, "127.0.0.1");
      open.add(tls).add(up);
      tls.pipe(up).pipe(tls);
      const end = () => (tls.destroy(), up.destroy());
      tls.on("error", end).on("close", end);
      up.on("error", end).on("close", end);
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const port = (proxy.address() as { port: number }).port;
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: "tls", server: `https://127.0.0.1:${String(port)}`, caData: Buffer.from(certPem).toString("base64") }],
        users: [{ name: "u", token: "t" }],
        contexts: [{ name: "tls", cluster: "tls", user: "u" }],
        currentContext: "tls",
      });
      const { applier } = applierOver(kc, { maxSockets: 3, concurrency: 8 });
      const r = await applier.applyOutput(output(1, objects(100)));
      expect(r.errors).toEqual([]);
      expect(r.applied).toBe(100);
      expect(handshakes).toBeGreaterThan(0);
      expect(handshakes).toBeLessThanOrEqual(3);
    } finally {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });
});

describe("connection pool", () => {
  it("shares one agent per set of TLS settings and leaves proxy agents alone", () => {
    const pool = createConnectionPool({ maxSockets: 5 });
    const plain = pool.agentFor(new http.Agent());
    expect(pool.agentFor(new http.Agent())).toBe(plain);
    expect(plain?.maxSockets).toBe(5);
    const a = pool.agentFor(new https.Agent({ ca: "CA-1", rejectUnauthorized: true }));
    expect(pool.agentFor(new https.Agent({ ca: "CA-1", rejectUnauthorized: true }))).toBe(a);
    expect(pool.agentFor(new https.Agent({ ca: "CA-2", rejectUnauthorized: true }))).not.toBe(a);
    expect(pool.agentFor(new https.Agent({ ca: "CA-1", rejectUnauthorized: false }))).not.toBe(a);
    expect(pool.agentFor(new https.Agent({ ca: "CA-1", cert: "client-2", rejectUnauthorized: true }))).not.toBe(a);
    class ProxyAgent extends https.Agent {}
    const proxied = new ProxyAgent();
    expect(pool.agentFor(proxied)).toBe(proxied);
    pool.destroy();
  });
});
