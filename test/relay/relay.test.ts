import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { RELAY_METRICS, REJECTION_REASONS, createCsr, createSelfSignedCa, encodeChunks, signClientCertificate, stateChecksum, type RelayClient } from "../../src/relay/index.js";
import type { DiscoveryAck, DiscoveryUpdate } from "../../src/relay/gen/gitmesh/relay/v1/relay.js";
import { TOKEN, channelOptions, clientKey, enc, metricValue, mtlsCredentials, newClient, startServer, state, statusOf, testPki, until, certFor, rejectionsLogged, useRelayCleanup } from "./helpers.js";

const { server, client, rawClient, defer } = useRelayCleanup();
function newClientWithoutToken(address: string, cluster: string, extra: Parameters<typeof newClient>[2]): RelayClient {
  const c = newClient(address, cluster, extra, false);
  defer(() => c.close());
  return c;
}

describe("relay registration and streaming", () => {
  it("registers, pushes discovery (full then delta), delivers output (full then delta) and records ACK/NACK", async () => {
    const discovered: { version: number; full: boolean; size: number }[] = [];
    const acks: { version: number; sourceCommit: string }[] = [];
    const nacks: { version: number; errors: readonly { key: string; message: string }[] }[] = [];
    const s = await server({
      onDiscovery: (e) => void discovered.push({ version: e.version, full: e.full, size: e.state.size }),
      onAck: (e) => void acks.push(e),
      onNack: (e) => void nacks.push(e),
    });
    const outputs: { version: number; full: boolean; complete: boolean; sourceCommit: string; keys: string[]; changed: string[]; payloadBytes: number }[] = [];
    const creds: string[] = [];
    const c = client(s.address, "alpha", {
      onCredentials: (x) => void creds.push(x.certPem),
      onOutput: (e) => {
        outputs.push({ version: e.version, full: e.full, complete: e.complete, sourceCommit: e.sourceCommit, keys: [...e.state.keys()].sort(), changed: [...e.delta.upserts.keys(), ...e.delta.removed], payloadBytes: e.payloadBytes });
        return e.state.has("bad/x") ? { ack: false, errors: [{ key: "bad/x", message: "admission webhook denied" }] } : { ack: true };
      },
    });
    void c.pushDiscovery(state({ "service/ns/a": { port: 80 }, "service/ns/b": { port: 81 } })); // resolves once acknowledged
    c.connect();
    await c.synced();
    expect(creds).toHaveLength(1);
    expect(creds[0]).toContain("BEGIN CERTIFICATE");
    expect(s.server.discoveryState("alpha")?.state.size).toBe(2);

    await c.pushDiscoveryDelta({ upserts: state({ "service/ns/c": { port: 82 } }), removed: ["service/ns/a"] });
    const ds = s.server.discoveryState("alpha")!;
    expect([...ds.state.keys()].sort()).toEqual(["service/ns/b", "service/ns/c"]);
    expect(ds.checksum).toBe(stateChecksum(state({ "service/ns/b": { port: 81 }, "service/ns/c": { port: 82 } })));
    expect(discovered.map((d) => d.full)).toEqual([true, false]);

    s.server.publishOutput("alpha", { version: 1, sourceCommit: "c0ffee1", complete: true, resources: state({ "VirtualService/ns/a": { a: 1 }, "DestinationRule/ns/a": { b: 1 } }) });
    await until(() => acks.length === 1, "ack of version 1");
    s.server.publishOutput("alpha", { version: 2, sourceCommit: "c0ffee2", complete: false, resources: state({ "VirtualService/ns/a": { a: 2 }, "DestinationRule/ns/a": { b: 1 } }) });
    await until(() => acks.length === 2, "ack of version 2");
    expect(outputs[0]).toMatchObject({ version: 1, full: true, complete: true, sourceCommit: "c0ffee1" });
    expect(outputs[1]).toMatchObject({ version: 2, full: false, complete: false, sourceCommit: "c0ffee2", keys: ["DestinationRule/ns/a", "VirtualService/ns/a"], changed: ["VirtualService/ns/a"] });
    // What the relay sent for each update: its compressed chunk payloads (the full state, then the one changed key).
    const payload = (upserts: Map<string, Uint8Array>) => encodeChunks({ upserts, removed: [] }, 1024 * 1024).reduce((n, c) => n + c.payload.length, 0);
    expect(outputs.map((o) => o.payloadBytes)).toEqual([payload(state({ "VirtualService/ns/a": { a: 1 }, "DestinationRule/ns/a": { b: 1 } })), payload(state({ "VirtualService/ns/a": { a: 2 } }))]);
    expect(s.server.appliedVersions().get("alpha")).toMatchObject({ version: 2, sourceCommit: "c0ffee2" });

    s.server.publishOutput("alpha", { version: 3, sourceCommit: "c0ffee3", complete: true, resources: state({ "bad/x": {} }) });
    await until(() => nacks.length === 1, "nack of version 3");
    expect(nacks[0]).toMatchObject({ version: 3, errors: [{ key: "bad/x", message: "admission webhook denied" }] });
    expect(s.server.appliedVersions().get("alpha")?.version).toBe(2);
    expect(await metricValue(s.registry, RELAY_METRICS.pushClientsConnected, { cluster: "alpha" })).toBe(1);
    expect(await metricValue(s.registry, RELAY_METRICS.pullClientsConnected, { cluster: "alpha" })).toBe(1);
    expect(await metricValue(s.registry, RELAY_METRICS.pushClientsWarmed, { cluster: "alpha" })).toBe(1);
    expect(await metricValue(s.registry, RELAY_METRICS.outputAcks, { result: "nack" })).toBe(1);
    expect(s.server.connectedClusters()).toEqual([{ cluster: "alpha", push: true, pull: true, warmed: true }]);
    expect(s.mem.text()).not.toContain(TOKEN);
  });

  it("chunks and compresses a large snapshot and reassembles it exactly", async () => {
    const s = await server({ maxMessageBytes: 256 * 1024 });
    const big = new Map<string, Uint8Array>();
    for (let i = 0; i < 3000; i++) big.set(`service/ns/svc-${i}`, enc({ i, labels: { app: `svc-${i}`, pad: "x".repeat(300) } }));
    const c = client(s.address, "beta", { maxMessageBytes: 256 * 1024, chunkBytes: 64 * 1024 });
    const acked = c.pushDiscovery(big);
    c.connect();
    await acked;
    await c.synced();
    expect(s.server.discoveryState("beta")?.checksum).toBe(stateChecksum(big));
    expect(await metricValue(s.registry, RELAY_METRICS.streamBytes, { direction: "received" })).toBeLessThan(1_000_000 / 4);
  });
});

describe("relay rejections (each logged and counted, no token in logs)", () => {
  it("wrong token: UNAUTHENTICATED, no certificate", async () => {
    const s = await server();
    const c = client(s.address, "alpha", { token: "wrong-token" });
    const err = (await c.register().catch((e: unknown) => e)) as grpc.ServiceError;
    expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(err.details).toMatch(/relay-identity-token-secret/);
    expect(rejectionsLogged(s, REJECTION_REASONS.badToken)).toHaveLength(1);
    expect(await metricValue(s.registry, RELAY_METRICS.rejections, { reason: "bad_token" })).toBe(1);
    expect(s.mem.text()).not.toContain("wrong-token");
    expect(s.mem.text()).not.toContain(TOKEN);
  });

  it("unregistered cluster: PERMISSION_DENIED naming the missing KubernetesCluster", async () => {
    const s = await server();
    const err = (await client(s.address, "delta").register().catch((e: unknown) => e)) as grpc.ServiceError;
    expect(err.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(err.details).toMatch(/KubernetesCluster named "delta"/);
    expect(rejectionsLogged(s, REJECTION_REASONS.clusterNotRegistered)).toHaveLength(1);
    expect(await metricValue(s.registry, RELAY_METRICS.rejections, { reason: "cluster_not_registered" })).toBe(1);
    expect(s.mem.text()).not.toContain(TOKEN);
  });

  it("a certificate from another CA and an expired certificate are refused with UNAUTHENTICATED", async () => {
    const s = await server();
    const foreignCa = createSelfSignedCa({ commonName: "evil-ca" });
    const { csrPem } = createCsr("alpha", clientKey());
    const foreign = signClientCertificate(foreignCa, { cluster: "alpha", csrPem, lifetimeMs: 3600_000 });
    const expired = certFor("alpha", 60_000, Date.now() - 3 * 3600_000);
    for (const certPem of [foreign.certPem, expired]) {
      const st = await statusOf(rawClient(s.address, certPem).pushDiscovery());
      expect(st.code).toBe(grpc.status.UNAUTHENTICATED);
      expect(st.details).toMatch(/re-register/);
    }
    // the real client reports it as its last error and keeps retrying
    const c = newClientWithoutToken(s.address, "alpha", { credentials: { certPem: foreign.certPem, keyPem: clientKey(), caPem: testPki().rootCaCertPem, notAfterMs: foreign.notAfterMs } });
    c.connect();
    await until(() => c.status().lastError?.code === grpc.status.UNAUTHENTICATED, "client sees UNAUTHENTICATED");
    expect(s.server.discoveryState("alpha")).toBeUndefined();
    expect(rejectionsLogged(s, REJECTION_REASONS.clientCertificateInvalid).length).toBeGreaterThanOrEqual(3);
    expect(await metricValue(s.registry, RELAY_METRICS.rejections, { reason: "client_certificate_invalid" })).toBeGreaterThanOrEqual(3);
  });

  it("a certificate for cluster alpha sending data for cluster beta is rejected; nothing is accepted", async () => {
    const s = await server();
    const call = rawClient(s.address, certFor("alpha")).pushDiscovery();
    const st = statusOf(call);
    const [chunk] = encodeChunks({ upserts: state({ k: 1 }), removed: [] }, 1 << 20);
    call.write({ cluster: "beta", version: 1, baseVersion: 0, full: true, checksum: stateChecksum(state({ k: 1 })), chunk } satisfies DiscoveryUpdate);
    const err = await st;
    expect(err.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(err.details).toMatch(/names cluster "beta" but the client certificate is for cluster "alpha"/);
    expect(s.server.discoveryState("beta")).toBeUndefined();
    expect(s.server.discoveryState("alpha")).toBeUndefined();
    expect(rejectionsLogged(s, REJECTION_REASONS.clusterMismatch)).toHaveLength(1);
    expect(await metricValue(s.registry, RELAY_METRICS.rejections, { reason: "cluster_mismatch" })).toBe(1);
  });

  it("oversized and malformed messages get RESOURCE_EXHAUSTED / INVALID_ARGUMENT and other agents are unaffected", async () => {
    const s = await server({ maxMessageBytes: 64 * 1024 });
    // a healthy agent streaming alongside
    const good = client(s.address, "gamma", { maxMessageBytes: 64 * 1024 });
    void good.pushDiscovery(state({ a: 1 }));
    good.connect();
    await good.synced();

    // 1. a chunk that decompresses beyond the message limit (gzip bomb) → RESOURCE_EXHAUSTED
    const bomb = rawClient(s.address, certFor("alpha")).pushDiscovery();
    const bombStatus = statusOf(bomb);
    const { gzipSync } = await import("node:zlib");
    bomb.write({ cluster: "", version: 1, baseVersion: 0, full: true, checksum: "x", chunk: { index: 0, count: 1, payload: gzipSync(Buffer.alloc(1 << 20)) } } satisfies DiscoveryUpdate);
    const e1 = await bombStatus;
    expect(e1.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(e1.details).toMatch(/split updates into chunks/);

    // 2. a gRPC message above the max message size → RESOURCE_EXHAUSTED (refused by grpc-js, logged and counted by our interceptor)
    const huge = rawClient(s.address, certFor("alpha")).pushDiscovery();
    const hugeStatus = statusOf(huge);
    huge.write({ cluster: "", version: 1, baseVersion: 0, full: true, checksum: "x", chunk: { index: 0, count: 1, payload: Buffer.alloc(200 * 1024, 7) } } satisfies DiscoveryUpdate);
    const e2 = await hugeStatus;
    expect(e2.code).toBe(grpc.status.RESOURCE_EXHAUSTED);

    // 3. bytes that are not a DiscoveryUpdate at all → INVALID_ARGUMENT
    const Raw = grpc.makeGenericClientConstructor(
      { pushDiscovery: { path: "/gitmesh.relay.v1.Relay/PushDiscovery", requestStream: true, responseStream: true, requestSerialize: (b: Buffer) => b, requestDeserialize: (b: Buffer) => b, responseSerialize: (b: Buffer) => b, responseDeserialize: (b: Buffer) => b } },
      "Raw",
    );
    const raw = new Raw(s.address, mtlsCredentials(certFor("alpha"), clientKey()), channelOptions) as unknown as { pushDiscovery(): grpc.ClientDuplexStream<Buffer, Buffer>; close(): void };
    defer(() => raw.close());
    const garbage = raw.pushDiscovery();
    const gStatus = statusOf(garbage);
    garbage.write(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]));
    const e3 = await gStatus;
    expect(e3.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(e3.details).toMatch(/could not decode a DiscoveryUpdate.*gitmesh\.relay\.v1/);

    // 4. a chunk payload that is not gzip → INVALID_ARGUMENT
    const notGzip = rawClient(s.address, certFor("alpha")).pushDiscovery();
    const nStatus = statusOf(notGzip);
    notGzip.write({ cluster: "", version: 1, baseVersion: 0, full: true, checksum: "x", chunk: { index: 0, count: 1, payload: Buffer.from("plain") } } satisfies DiscoveryUpdate);
    const e4 = await nStatus;
    expect(e4.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(e4.details).toMatch(/not valid gzip/);

    expect(await metricValue(s.registry, RELAY_METRICS.rejections, { reason: "message_too_large" })).toBe(2);
    expect(await metricValue(s.registry, RELAY_METRICS.rejections, { reason: "malformed_message" })).toBe(2);
    expect(rejectionsLogged(s, REJECTION_REASONS.malformedMessage)).toHaveLength(2);
    // the healthy agent's streams are untouched
    await good.pushDiscoveryDelta({ upserts: state({ b: 2 }), removed: [] });
    expect(s.server.discoveryState("gamma")?.state.size).toBe(2);
    expect(good.status().sessions).toBe(1);
  });
});

describe("relay resync, restart, renewal, deregistration", () => {
  it("a checksum mismatch makes the server ask for a full resync and ignore deltas until it arrives", async () => {
    const s = await server();
    const call = rawClient(s.address, certFor("alpha")).pushDiscovery();
    const acks: DiscoveryAck[] = [];
    call.on("data", (a: DiscoveryAck) => acks.push(a));
    call.on("error", () => undefined); // ended by the server's stop in afterEach
    const send = (u: Omit<DiscoveryUpdate, "chunk" | "cluster">, st: Map<string, Uint8Array>, removed: string[] = []) => {
      for (const chunk of encodeChunks({ upserts: st, removed }, 1 << 20)) call.write({ cluster: "alpha", ...u, chunk });
    };
    const s1 = state({ a: 1 });
    send({ version: 1, baseVersion: 0, full: true, checksum: stateChecksum(s1) }, s1);
    send({ version: 2, baseVersion: 1, full: false, checksum: "0".repeat(64) }, state({ b: 2 }));
    send({ version: 3, baseVersion: 2, full: false, checksum: stateChecksum(state({ a: 1, b: 2, c: 3 })) }, state({ c: 3 }));
    const s4 = state({ a: 1, b: 2, c: 3 });
    send({ version: 4, baseVersion: 0, full: true, checksum: stateChecksum(s4) }, s4);
    await until(() => acks.length === 4, "4 acks");
    expect(acks.map((a) => [a.version, a.resync])).toEqual([[1, false], [2, true], [3, true], [4, false]]);
    expect(acks[1]!.message).toMatch(/checksum mismatch/);
    expect(s.server.discoveryState("alpha")?.checksum).toBe(stateChecksum(s4));
    expect(await metricValue(s.registry, RELAY_METRICS.resyncs, { direction: "push" })).toBe(2);
    call.end();
  });

  it("after a server restart, clients reconnect and resync fully (discovery and output)", async () => {
    const first = await startServer();
    const port = first.port;
    const clients = ["alpha", "beta", "gamma"].map((name) => {
      const outputs: number[] = [];
      const c = client(first.address, name, { onOutput: (e) => (outputs.push(e.version), { ack: true }) });
      return { name, c, outputs };
    });
    for (const { c, name } of clients) {
      void c.pushDiscovery(state({ [`service/${name}/x`]: { v: 1 } }));
      c.connect();
    }
    await Promise.all(clients.map(({ c }) => c.synced()));
    // change a state while the server is gone: it must arrive with the resync
    await first.server.stop();
    void clients[0]!.c.pushDiscovery(state({ "service/alpha/x": { v: 2 } }));
    const second = await server({ port });
    for (const { name } of clients) second.server.publishOutput(name, { version: 7, sourceCommit: "abc", complete: true, resources: state({ [`vs/${name}`]: {} }) });
    await until(() => ["alpha", "beta", "gamma"].every((n) => second.server.discoveryState(n) !== undefined), "all clusters resynced");
    await until(() => clients.every(({ outputs }) => outputs.includes(7)), "output after restart");
    expect(second.server.discoveryState("alpha")?.checksum).toBe(stateChecksum(state({ "service/alpha/x": { v: 2 } })));
    for (const { c } of clients) expect(c.status().sessions).toBeGreaterThanOrEqual(2);
    expect(await metricValue(second.registry, RELAY_METRICS.discoveryUpdates, { kind: "full" })).toBe(3);
  });

  it("renews the certificate over mTLS, explicitly and automatically before expiry", async () => {
    const s = await server({ certificateLifetimeMs: 4000 });
    const notAfters: number[] = [];
    const c = client(s.address, "alpha", { renewAtFraction: 0.5, onCredentials: (x) => void notAfters.push(x.notAfterMs) });
    c.connect();
    await c.synced();
    const renewed = await c.renew();
    expect(renewed.notAfterMs).toBeGreaterThanOrEqual(notAfters[0]!);
    await until(() => notAfters.length >= 3, "automatic renewal", 10_000);
    expect(await metricValue(s.registry, RELAY_METRICS.certificatesIssued, { kind: "renew" })).toBeGreaterThanOrEqual(2);
    // a renewed certificate works for new sessions
    const raw = rawClient(s.address, renewed.certPem).pushDiscovery();
    const acks: DiscoveryAck[] = [];
    raw.on("data", (a: DiscoveryAck) => acks.push(a));
    raw.on("error", () => undefined); // ended by the server's stop in afterEach
    const st = state({ z: 1 });
    for (const chunk of encodeChunks({ upserts: st, removed: [] }, 1 << 20)) raw.write({ cluster: "alpha", version: 100, baseVersion: 0, full: true, checksum: stateChecksum(st), chunk });
    await until(() => acks.length === 1, "ack with renewed certificate");
    expect(acks[0]!.resync).toBe(false);
    raw.end();
  });

  it("a revoked cluster is cut off and its certificate refused; its agent registers again with the bootstrap credential", async () => {
    const s = await server();
    const c = client(s.address, "beta");
    c.connect();
    await c.synced();
    const cert = certFor("beta");
    await s.server.revoke("beta", "test");
    const old = await statusOf(rawClient(s.address, cert).pushDiscovery());
    expect(old.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(old.details).toMatch(/revoked/);
    // the real client drops its revoked certificate and registers again with the (fleet) token
    await until(() => c.status().sessions >= 2 && c.status().synced, "client re-registered after the revocation");
    expect(await metricValue(s.registry, RELAY_METRICS.certificatesIssued, { kind: "register" })).toBe(2);
    expect(await metricValue(s.registry, RELAY_METRICS.rejections, { reason: "certificate_revoked" })).toBeGreaterThanOrEqual(2);
  });
});

describe("relay at scale", () => {
  it("200 concurrent clients register, stream discovery and receive their own output", async () => {
    const s = await server();
    const n = 200;
    const got = new Map<string, string>();
    const clients = Array.from({ length: n }, (_, i) => {
      const name = `load-${i}`;
      return client(s.address, name, { onOutput: (e) => (got.set(name, new TextDecoder().decode(e.state.get(`vs/${name}`))), { ack: true }) });
    });
    clients.forEach((c, i) => void c.pushDiscovery(state({ [`service/load-${i}/svc`]: { i } })));
    for (const c of clients) c.connect();
    await Promise.all(clients.map((c) => c.synced()));
    for (let i = 0; i < n; i++) s.server.publishOutput(`load-${i}`, { version: 1, sourceCommit: "sha", complete: true, resources: state({ [`vs/load-${i}`]: { owner: i } }) });
    await Promise.all(clients.map((c, i) => c.pushDiscoveryDelta({ upserts: state({ [`service/load-${i}/other`]: { i } }), removed: [] })));
    await until(() => s.server.appliedVersions().size === n, "all 200 ACKs", 60_000);
    for (let i = 0; i < n; i++) {
      expect(s.server.discoveryState(`load-${i}`)?.checksum).toBe(stateChecksum(state({ [`service/load-${i}/svc`]: { i }, [`service/load-${i}/other`]: { i } })));
      expect(got.get(`load-${i}`)).toBe(JSON.stringify({ owner: i }));
    }
    expect(s.server.connectedClusters().filter((c) => c.push && c.pull && c.warmed)).toHaveLength(n);
  }, 120_000);
});
