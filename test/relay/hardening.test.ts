// Relay hardening over real TLS on loopback: grpc-level oversized messages are logged and counted,
// backpressure towards slow agents, streams closed at certificate expiry, revocation precision.
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, it } from "vitest";
import { RELAY_METRICS, REJECTION_REASONS, createCsr, signClientCertificate, type RelayClient } from "../../src/relay/index.js";
import { RelayClient as GrpcRelayClient, type DiscoveryUpdate } from "../../src/relay/gen/gitmesh/relay/v1/relay.js";
import { channelOptions, clientKey, metricValue, mtlsCredentials, newClient, startServer, state, statusOf, testPki, until } from "./helpers.js";

type Started = Awaited<ReturnType<typeof startServer>>;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
async function server(overrides: Parameters<typeof startServer>[0] = {}): Promise<Started> {
  const s = await startServer(overrides);
  cleanups.push(() => s.server.stop());
  return s;
}
function client(...args: Parameters<typeof newClient>): RelayClient {
  const c = newClient(...args);
  cleanups.push(() => c.close());
  return c;
}
function certFor(cluster: string, lifetimeMs = 3600_000, now = Date.now()) {
  const pki = testPki();
  const { csrPem } = createCsr(cluster, clientKey());
  return signClientCertificate({ certPem: pki.signingCaCertPem, keyPem: pki.signingCaKeyPem }, { cluster, csrPem, lifetimeMs, now }).certPem;
}
function rawClient(address: string, certPem: string, options: grpc.ChannelOptions = {}) {
  const c = new GrpcRelayClient(address, mtlsCredentials(certPem, clientKey()), { ...channelOptions, ...options });
  cleanups.push(() => c.close());
  return c;
}
function rejectionsLogged(s: Started, reason: string) {
  return s.mem.records.filter((r) => r.msg === "relay rejected a request" && r.fields.reason === reason);
}

describe("a gRPC message above the max message size", () => {
  it("is refused with RESOURCE_EXHAUSTED naming the limit and the fix, logged and counted; a healthy agent continues", async () => {
    const s = await server({ maxMessageBytes: 64 * 1024 });
    const good = client(s.address, "gamma", { maxMessageBytes: 64 * 1024 });
    void good.pushDiscovery(state({ a: 1 }));
    good.connect();
    await good.synced();

    const huge = rawClient(s.address, certFor("alpha")).pushDiscovery();
    const hugeStatus = statusOf(huge);
    huge.write({ cluster: "", version: 1, baseVersion: 0, full: true, checksum: "x", chunk: { index: 0, count: 1, payload: Buffer.alloc(200 * 1024, 7) } } satisfies DiscoveryUpdate);
    const err = await hugeStatus;
    expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(err.details).toMatch(/exceeds the relay's max message size of 65536 bytes/);
    expect(err.details).toMatch(/lower the agent's chunk size.*raise the server's maxMessageBytes/);
    expect(await metricValue(s.registry, RELAY_METRICS.rejections, { reason: "message_too_large" })).toBe(1);
    const logged = rejectionsLogged(s, REJECTION_REASONS.messageTooLarge);
    expect(logged).toHaveLength(1);
    expect(logged[0]!.fields).toMatchObject({ cluster: "alpha", rpc: "/gitmesh.relay.v1.Relay/PushDiscovery" });
    // the offending stream is gone, the healthy agent's session is untouched and still accepts deltas
    await until(() => !s.server.connectedClusters().some((c) => c.cluster === "alpha"), "alpha's stream closed");
    await good.pushDiscoveryDelta({ upserts: state({ b: 2 }), removed: [] });
    expect(s.server.discoveryState("gamma")?.state.size).toBe(2);
    expect(good.status().sessions).toBe(1);
  });
});
