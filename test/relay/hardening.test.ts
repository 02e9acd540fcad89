// Relay hardening over real TLS on loopback: grpc-level oversized messages are logged and counted,
// backpressure towards slow agents, streams closed at certificate expiry, revocation precision.
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { RELAY_METRICS, REJECTION_REASONS, createCsr, encodeChunks, signClientCertificate } from "../../src/relay/index.js";
import { randomBytes, X509Certificate } from "node:crypto";
import type { DiscoveryUpdate, OutputUpdate } from "../../src/relay/gen/gitmesh/relay/v1/relay.js";
import { createChunkAssembler, stateChecksum } from "../../src/relay/wire.js";
import { clientKey, metricValue, state, statusOf, testPki, until, certFor, rejectionsLogged, useRelayCleanup } from "./helpers.js";

const { server, client, rawClient } = useRelayCleanup();

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

describe("backpressure towards an agent that does not read", () => {
  it("buffers at most sendBufferBytes (+ one chunk), coalesces versions, and delivers the latest once the agent reads", async () => {
    const chunkBytes = 32 * 1024;
    const sendBufferBytes = 64 * 1024;
    const s = await server({ chunkBytes, sendBufferBytes });
    const snapshot = () => new Map(Array.from({ length: 4 }, (_, i) => [`res/${i}`, randomBytes(64 * 1024)] as [string, Uint8Array]));
    const versions = 40;
    const snapshots = Array.from({ length: versions }, snapshot);
    s.server.publishOutput("alpha", { version: 1, sourceCommit: "c1", complete: true, resources: snapshots[0]! });

    const call = rawClient(s.address, certFor("alpha")).pullOutput();
    const messages: OutputUpdate[] = [];
    call.on("error", () => undefined); // ended by the server's stop in afterEach
    // a slow agent: it reads the first message, then stops reading for a while
    call.on("data", (u: OutputUpdate) => {
      messages.push(u);
      if (messages.length === 1) call.pause();
    });
    call.write({ cluster: "alpha", version: 0, ack: false, errors: [], resync: false, report: false, repairs: [], acceptsHold: false });
    await until(() => messages.length === 1, "first message");

    // 39 more versions of 256 KiB of incompressible resources each: ~10 MiB if the server queued them all
    let maxBuffered = 0;
    for (let v = 2; v <= versions; v++) {
      s.server.publishOutput("alpha", { version: v, sourceCommit: `c${v}`, complete: true, resources: snapshots[v - 1]! });
      await new Promise((r) => setTimeout(r, 10));
      maxBuffered = Math.max(maxBuffered, await metricValue(s.registry, RELAY_METRICS.outputBufferedBytes, { cluster: "alpha" }));
    }
    await new Promise((r) => setTimeout(r, 300));
    const total = versions * 4 * 64 * 1024;
    const sentWhileStalled = await metricValue(s.registry, RELAY_METRICS.streamBytes, { direction: "sent" });
    // the client's stream buffer (16 messages) and the HTTP/2 flow-control window absorb some bytes, but far from everything
    expect(sentWhileStalled).toBeLessThan(total / 4);
    expect(maxBuffered).toBeGreaterThan(0);
    expect(maxBuffered).toBeLessThanOrEqual(sendBufferBytes + chunkBytes + 1024);
    expect(await metricValue(s.registry, RELAY_METRICS.outputCoalesced)).toBeGreaterThan(versions / 2);

    // the agent reads again: it ends up with exactly the latest version
    const assembler = createChunkAssembler<OutputUpdate>({ maxChunkBytes: 1 << 20, maxStateBytes: 1 << 26 }, (a, b) => a.version === b.version);
    let state = new Map<string, Uint8Array>();
    const received: number[] = [];
    let last: OutputUpdate | undefined;
    let seen = 0;
    const consume = () => {
      for (; seen < messages.length; seen++) {
        const u = messages[seen]!;
        const delta = assembler.push(u, u.chunk);
        if (!delta) continue;
        if (u.full) state = new Map(delta.upserts);
        else {
          for (const k of delta.removed) state.delete(k);
          for (const [k, v] of delta.upserts) state.set(k, v);
        }
        received.push(u.version);
        last = u;
        call.write({ cluster: "alpha", version: u.version, ack: true, errors: [], resync: false, report: false, repairs: [], acceptsHold: false });
      }
    };
    call.resume();
    await until(() => (consume(), s.server.appliedVersions().get("alpha")?.version === versions), "latest version applied");
    expect(last?.checksum).toBe(stateChecksum(snapshots[versions - 1]!));
    expect(stateChecksum(state)).toBe(last?.checksum);
    expect(received.length).toBeLessThan(versions / 2);
    expect(await metricValue(s.registry, RELAY_METRICS.outputBufferedBytes, { cluster: "alpha" })).toBe(0);
  });
});

describe("certificate expiry on an open connection", () => {
  it("closes a stream when its peer certificate expires; the agent re-registers and resyncs", async () => {
    // notAfter is whole seconds: a 2.5 s lifetime expires 1.5–2.5 s after issue
    const s = await server({ certificateLifetimeMs: 2500 });
    const registered: number[] = [];
    const c = client(s.address, "alpha", { renewAtFraction: 0, onCredentials: (x) => void registered.push(x.notAfterMs) });
    void c.pushDiscovery(state({ a: 1 }));
    c.connect();
    await c.synced();
    // a raw stream with a short-lived certificate ends with UNAUTHENTICATED naming the expiry
    const raw = rawClient(s.address, certFor("beta", 2000)).pushDiscovery();
    const st = await statusOf(raw);
    expect(st.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(st.details).toMatch(/client certificate expired at .*renews it before expiry/);
    // the real agent's session is cut at expiry; it registers again and resyncs in a new session
    await until(() => registered.length >= 2 && c.status().sessions >= 2 && c.status().synced, "re-registration after expiry", 15_000);
    expect(await metricValue(s.registry, RELAY_METRICS.rejections, { reason: "certificate_expired" })).toBeGreaterThanOrEqual(2);
    expect(rejectionsLogged(s, REJECTION_REASONS.certificateExpired).some((r) => r.fields.cluster === "alpha")).toBe(true);
    expect(s.server.discoveryState("alpha")?.state.size).toBe(1);
  });
});

describe("revocation precision", () => {
  it("a re-registration in the same instant as a revocation is accepted; certificates from before stay refused", async () => {
    const fixed = Date.now();
    const s = await server({ now: () => fixed }); // every server-side time is the same millisecond
    const first = await client(s.address, "beta").register();
    await s.server.revoke("beta", "test");
    const second = await client(s.address, "beta").register();
    // the old certificate is refused, the new one (same clock reading) is accepted
    const old = await statusOf(rawClient(s.address, first.certPem).pushDiscovery());
    expect(old.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(old.details).toMatch(/revoked/);
    const call = rawClient(s.address, second.certPem).pushDiscovery();
    const acks: { version: number; resync: boolean }[] = [];
    call.on("data", (a: { version: number; resync: boolean }) => acks.push(a));
    call.on("error", () => undefined); // ended by the server's stop in afterEach
    const st = state({ z: 1 });
    const [chunk] = encodeChunks({ upserts: st, removed: [] }, 1 << 20);
    call.write({ cluster: "beta", version: 1, baseVersion: 0, full: true, checksum: stateChecksum(st), chunk } satisfies DiscoveryUpdate);
    await until(() => acks.length === 1, "ack with the new certificate");
    expect(acks[0]).toMatchObject({ version: 1, resync: false });
    call.end();
  });

  it("serial numbers always encode as valid DER (no needless leading zero) and client serials carry the issue time", () => {
    const pki = testPki();
    const { csrPem } = createCsr("alpha", clientKey());
    const t = Date.now();
    for (let i = 0; i < 300; i++) {
      const { certPem } = signClientCertificate({ certPem: pki.signingCaCertPem, keyPem: pki.signingCaKeyPem }, { cluster: "alpha", csrPem, lifetimeMs: 60_000, now: t + i });
      const serial = new X509Certificate(certPem).serialNumber; // throws on a malformed certificate
      expect(parseInt(serial.slice(2, 14), 16)).toBe(t + i);
    }
  });
});

describe("drift reports from an agent", () => {
  it("reach the server bounded (count and string lengths), as the agent's own cluster; a real client's report arrives intact", async () => {
    const reports: { cluster: string; repairs: readonly { key: string; why: string; managers: readonly string[] }[] }[] = [];
    const s = await server({ onDriftRepairs: (e) => reports.push(e) });
    // A hostile agent: a thousand repairs with long keys and manager names (within gRPC's message size,
    // which bounds the rest), a wrong `why`, a time in the far future.
    const call = rawClient(s.address, certFor("alpha")).pullOutput();
    call.on("error", () => undefined);
    call.write({ cluster: "alpha", version: 0, ack: false, errors: [], resync: false, report: false, repairs: [], acceptsHold: false });
    call.write({ cluster: "alpha", version: 0, ack: false, errors: [], resync: false, report: true, repairs: Array.from({ length: 1000 }, () => ({ key: "k".repeat(1000), why: "exploded", atMs: 9e15, managers: Array.from({ length: 6 }, () => "m".repeat(150)) })), acceptsHold: false });
    await until(() => reports.length === 1, "the report");
    expect(reports[0]!.cluster).toBe("alpha");
    expect(reports[0]!.repairs).toHaveLength(50);
    expect(reports[0]!.repairs.every((r) => r.key.length === 300 && r.why === "changed" && r.managers.length === 5 && r.managers.every((m) => m.length === 100))).toBe(true);
    call.end();

    const agent = client(s.address, "gamma");
    void agent.pushDiscovery(state({ a: 1 }));
    agent.connect();
    await agent.synced();
    await until(() => s.server.connectedClusters().some((c) => c.cluster === "gamma" && c.pull), "gamma's output stream");
    agent.reportDriftRepairs([{ key: "networking.istio.io/v1/VirtualService/ns/vs", why: "deleted", atMs: Date.now(), managers: [] }]);
    await until(() => reports.length === 2, "gamma's report");
    expect(reports[1]).toMatchObject({ cluster: "gamma", repairs: [{ key: "networking.istio.io/v1/VirtualService/ns/vs", why: "deleted", managers: [] }] });
  });
});
