// The relay as the server runs it (src/server/relay-endpoint.ts), on a real relay over real TLS/gRPC
// on 127.0.0.1:0 with a real agent client: PKI and fleet token generated once and reused, the
// callbacks feeding sessions, discovery and convergence, and clusters removed from Git cut off.
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import { emptySnapshot, type DiscoverySnapshot } from "../../src/discovery/index.js";
import { createFileMeshRootStorage } from "../../src/mesh-ca/index.js";
import { createClusterIdentities, createRelayClient, relayStateFromSnapshot, type RelayClient } from "../../src/relay/index.js";
import { createAgentSessions } from "../../src/server/agent-sessions.js";
import { createRelayEndpoint, type RelayEndpoint, type RelayEndpointOptions } from "../../src/server/relay-endpoint.js";
import { createConvergenceTracker, createMemorySecretStore, createServerMetrics, type RelaySecretStore } from "../../src/server/index.js";
import { useTempDirs } from "../helpers/tmp.js";

const tempDir = useTempDirs("gitmesh-relay-endpoint-");
const config: RelayEndpointOptions["config"] = {
  relayAdditionalSans: ["127.0.0.1"],
  generateCa: true,
  relayAuthority: "gitmesh-server.gitmesh",
  bootstrap: "per-cluster",
  relayToken: undefined,
  relayHost: "127.0.0.1",
  relayPort: 0,
};
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

function setup(overrides: Partial<RelayEndpointOptions> = {}, secrets: RelaySecretStore = createMemorySecretStore()) {
  const registry = new Registry();
  const metrics = createServerMetrics(registry);
  const mem = createMemoryLogger("server");
  const sessions = createAgentSessions({ replica: "r1", metrics, logger: mem.logger });
  const convergence = createConvergenceTracker();
  const registered = new Set(["cluster1"]);
  const discovered: { cluster: string; snapshot: DiscoverySnapshot }[] = [];
  const identities = createClusterIdentities(secrets.records);
  const endpoint: RelayEndpoint = createRelayEndpoint({
    config,
    secrets,
    identities,
    registry,
    sessions,
    convergence,
    metrics,
    isRegistered: (c) => registered.has(c),
    latestOutput: () => undefined,
    onDiscovery: (cluster, snapshot) => Promise.resolve(void discovered.push({ cluster, snapshot })),
    meshRoot: createFileMeshRootStorage(tempDir()),
    logger: mem.logger,
    ...overrides,
  });
  cleanup.push(() => endpoint.stop());
  return { endpoint, secrets, sessions, convergence, registered, discovered, mem };
}

/** A relay client for cluster1 with a freshly minted credential (not connected yet); ACKs every output. */
async function agentClient(endpoint: RelayEndpoint, onVersion: (version: number) => void = () => {}): Promise<RelayClient> {
  const { credential } = await endpoint.mintCredential("cluster1");
  const client = createRelayClient({
    address: `127.0.0.1:${String(endpoint.port)}`,
    cluster: "cluster1",
    rootCaPem: endpoint.rootCaPem!,
    token: credential,
    logger: createMemoryLogger("agent").logger,
    backoff: { initialMs: 50, maxMs: 500 },
    onOutput: (e) => {
      onVersion(e.version);
      return { ack: true };
    },
  });
  cleanup.push(() => client.close());
  return client;
}

const until = async (what: string, pred: () => boolean) => {
  for (let i = 0; i < 1500 && !pred(); i++) await new Promise((r) => setTimeout(r, 20));
  if (!pred()) throw new Error(`timed out waiting for ${what}`);
};

describe("relay endpoint", () => {
  it("generates the PKI once; a second server on the same storage uses it; the fleet token likewise, unless given", async () => {
    const secrets = createMemorySecretStore();
    const fleet = { ...config, bootstrap: "fleet-token" as const };
    const first = setup({ config: fleet }, secrets);
    expect(first.endpoint.rootCaPem).toBeUndefined();
    await first.endpoint.prepare();
    expect(first.endpoint.rootCaPem).toMatch(/BEGIN CERTIFICATE/);
    expect(first.endpoint.token).toMatch(/.{32,}/);
    const second = setup({ config: fleet }, secrets);
    await second.endpoint.prepare();
    expect(second.endpoint.rootCaPem).toBe(first.endpoint.rootCaPem);
    expect(second.endpoint.token).toBe(first.endpoint.token);
    expect(first.mem.records.filter((r) => r.msg === "relay PKI generated")).toHaveLength(1);
    expect(second.mem.records.filter((r) => r.msg === "relay PKI generated")).toHaveLength(0);
    const given = setup({ config: { ...fleet, relayToken: "given-token-given-token-given-token" } }, secrets);
    await given.endpoint.prepare();
    expect(given.endpoint.token).toBe("given-token-given-token-given-token");
    // Per-cluster bootstrap (the default): no fleet token at all.
    const perCluster = setup({}, secrets);
    await perCluster.endpoint.prepare();
    expect(perCluster.endpoint.token).toBeUndefined();
  });

  it("without a stored PKI and with CA generation off, it refuses to start and names the storage", async () => {
    const { endpoint } = setup({ config: { ...config, generateCa: false } });
    await expect(endpoint.prepare()).rejects.toThrow(/no relay PKI found in memory .* CA generation is off/);
    await expect(endpoint.start()).rejects.toThrow(/not prepared/);
  });

  it("an agent registered with its credential: sessions, discovery, ACKs into convergence; removed from Git it is cut off", async () => {
    const { endpoint, sessions, convergence, registered, discovered } = setup();
    await endpoint.prepare();
    await endpoint.start();
    expect(endpoint.port).toBeGreaterThan(0);
    const applied: number[] = [];
    const client = await agentClient(endpoint, (version) => applied.push(version));
    client.connect();
    await client.pushDiscovery(relayStateFromSnapshot(emptySnapshot("cluster1")));
    await until("discovery", () => discovered.length > 0);
    expect(discovered[0]).toEqual({ cluster: "cluster1", snapshot: emptySnapshot("cluster1") });
    await until("both streams", () => sessions.streams("cluster1")?.size === 2);
    expect(sessions.lastSeen("cluster1")).toBeDefined();

    convergence.accepted("c1", Date.now());
    endpoint.server!.publishOutput("cluster1", { version: 1, sourceCommit: "c1", complete: true, resources: new Map() });
    await until("ACK", () => convergence.get("c1")?.clusters.cluster1?.appliedAtMs !== undefined);
    expect(applied).toEqual([1]);

    // Still registered: nothing is cut off.
    endpoint.cutOffRemoved("c2");
    expect(sessions.held()).toEqual(["cluster1"]);
    registered.delete("cluster1");
    endpoint.cutOffRemoved("c3");
    await until("streams closed", () => sessions.held().length === 0);
  });

  it("an agent that connects before its first discovery snapshot is waited for, not reported as unreadable", async () => {
    const { endpoint, sessions, discovered, mem } = setup();
    await endpoint.prepare();
    await endpoint.start();
    const client = await agentClient(endpoint);
    // A new leader's session opens while its informers still list: its first full state is empty.
    client.connect();
    await until("both streams", () => sessions.streams("cluster1")?.size === 2);
    // Not a fixed sleep before asserting that nothing was recorded: the agent's own snapshots are the
    // later positive events. Had the session's empty first state been taken for discovery, it would
    // stand before them in the record (one stream, in order).
    const first: DiscoverySnapshot = { ...emptySnapshot("cluster1"), namespaces: [{ name: "apps", labels: {} }] };
    const second: DiscoverySnapshot = { ...emptySnapshot("cluster1"), namespaces: [{ name: "apps", labels: {} }, { name: "team", labels: {} }] };
    await client.pushDiscovery(relayStateFromSnapshot(first));
    await until("first discovery", () => discovered.length > 0);
    await client.pushDiscovery(relayStateFromSnapshot(second));
    await until("second discovery", () => discovered.length > 1);
    expect(discovered).toEqual([
      { cluster: "cluster1", snapshot: first },
      { cluster: "cluster1", snapshot: second },
    ]);
    expect(mem.records.filter((r) => r.level === "warn" || r.level === "error").map((r) => r.msg)).toEqual([]);
  });
});
