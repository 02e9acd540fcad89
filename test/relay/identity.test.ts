// Cluster identity (issue #11) through the real relay server over TLS on loopback: per-cluster
// single-use credentials, one live identity per cluster, revocations in shared stores (Redis, a
// directory, Kubernetes Secrets on the API emulator) that survive restarts and reach other replicas,
// atomic consumption across replicas, CSR checks, and discovery limits against compression bombs.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import * as grpc from "@grpc/grpc-js";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCsr, createClusterIdentities, generateKeyPem, REJECTION_REASONS, RELAY_METRICS, snapshotFromRelayState, type ClusterRecordStore } from "../../src/relay/index.js";
import type { DiscoveryUpdate } from "../../src/relay/gen/gitmesh/relay/v1/relay.js";
import { createDirectoryRecordStore, createKubernetesRecordStore, createRedisRecordStore } from "../../src/server/index.js";
import { forge } from "../../src/pki/index.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { certFor, clientKey, metricValue, rejectionsLogged, state, statusOf, testPki, until, useRelayCleanup } from "./helpers.js";

const { server, client, rawClient } = useRelayCleanup();

let redis: TestRedis;
let kube: StartedKube;
let dir: string;
const conns: Redis[] = [];
beforeAll(async () => {
  redis = await startRedis();
  kube = await startKube({ seed: [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } }] });
  dir = mkdtempSync(join(tmpdir(), "relay-identity-"));
}, 60_000);
afterAll(async () => {
  for (const c of conns) c.disconnect();
  await redis.stop();
  await kube.stop();
  rmSync(dir, { recursive: true, force: true });
});
const redisStore = (prefix: string): ClusterRecordStore => {
  const c = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  conns.push(c);
  return createRedisRecordStore(c, prefix);
};

const grpcErr = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e as grpc.ServiceError);

describe("per-cluster bootstrap credentials", () => {
  it("are bound to one cluster, single-use, expiring; a trailing newline is tolerated; a bad CSR does not burn one", async () => {
    let clock = Date.now();
    const identities = createClusterIdentities(redisStore("cred"), { now: () => clock });
    const s = await server({ identities, token: undefined });
    const alpha = await identities.mintCredential("alpha");
    // alpha's credential cannot register beta
    const cross = await grpcErr(client(s.address, "beta", { token: alpha.credential }).register());
    expect(cross?.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(cross?.details).toMatch(/not valid for cluster "beta"/);
    // a 1024-bit RSA CSR and a CSR with a corrupted signature: INVALID_ARGUMENT, and the credential survives
    const weak = await grpcErr(client(s.address, "alpha", { token: alpha.credential, keyPem: generateKeyPem(1024) }).register());
    expect(weak?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(weak?.details).toMatch(/1024 bits; at least 2048/);
    const raw = new (await import("../../src/relay/gen/gitmesh/relay/v1/relay.js")).RegistrationClient(s.address, grpc.credentials.createSsl(Buffer.from(testPki().rootCaCertPem)), { "grpc.ssl_target_name_override": "gitmesh-server.gitmesh" });
    const csr = forge.pki.certificationRequestFromPem(createCsr("alpha", clientKey()).csrPem);
    const sig = Buffer.from(csr.signature as string, "binary");
    sig[10] = sig[10]! ^ 0xff;
    csr.signature = sig.toString("binary");
    const corrupted = forge.pki.certificationRequestToPem(csr);
    const bad = await new Promise<grpc.ServiceError | null>((resolve) => raw.register({ cluster: "alpha", token: alpha.credential, csrPem: corrupted }, (err) => resolve(err)));
    raw.close();
    expect(bad?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(bad?.details).toMatch(/signature does not verify/);
    // the genuine registration, with the newline a token file leaves
    const creds = await client(s.address, "alpha", { token: `${alpha.credential}\n` }).register();
    expect(creds.certPem).toContain("BEGIN CERTIFICATE");
    // single use
    const again = await grpcErr(client(s.address, "alpha", { token: alpha.credential }).register());
    expect(again?.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(again?.details).toMatch(/already used/);
    // expiry: a credential for gamma used after its 24 h
    const gamma = await identities.mintCredential("gamma", { ttlMs: 60_000 });
    clock += 61_000;
    const expired = await grpcErr(client(s.address, "gamma", { token: gamma.credential }).register());
    expect(expired?.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(await metricValue(s.registry, RELAY_METRICS.rejections, { reason: REJECTION_REASONS.badToken })).toBe(3);
    expect(await metricValue(s.registry, RELAY_METRICS.rejections, { reason: REJECTION_REASONS.invalidRequest })).toBe(2);
    for (const c of [alpha.credential, gamma.credential]) expect(s.mem.text()).not.toContain(c);
    // only a hash is stored
    const stored = (await identities.read("alpha")) as Record<string, unknown>;
    expect(JSON.stringify(stored)).not.toContain(alpha.credential);
  });

  it("one live identity: a fleet token cannot register a cluster whose agent holds a valid certificate; minting needs reissue", async () => {
    const identities = createClusterIdentities(redisStore("live"));
    const s = await server({ identities });
    const agent = client(s.address, "alpha");
    agent.connect();
    await agent.synced();
    const err = await grpcErr(client(s.address, "alpha").register());
    expect(err?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(err?.details).toMatch(/already holds a valid client certificate.*gitmesh cluster reissue alpha.*POST \/api\/clusters\/alpha\/reissue/);
    expect(rejectionsLogged(s, REJECTION_REASONS.identityInUse)).toHaveLength(1);
    await expect(identities.mintCredential("alpha")).rejects.toThrow(/gitmesh cluster reissue alpha/);
    expect(agent.status()).toMatchObject({ connected: true, sessions: 1 });
    // renewal needs only the current certificate
    await agent.renew();
    expect(await metricValue(s.registry, RELAY_METRICS.certificatesIssued, { kind: "renew" })).toBe(1);
  });

  it("a certificate the store never recorded (issued before it existed, or the store was lost) becomes the live identity when it connects", async () => {
    const s = await server({ identities: createClusterIdentities(redisStore("observe")) });
    const call = rawClient(s.address, certFor("beta")).pullOutput();
    call.on("error", () => undefined);
    call.write({ cluster: "beta", version: 0, ack: false, errors: [], resync: false, report: false, repairs: [], acceptsHold: false });
    await until(() => s.server.connectedClusters().some((c) => c.cluster === "beta" && c.pull), "beta connected");
    const err = await grpcErr(client(s.address, "beta").register());
    expect(err?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(rejectionsLogged(s, REJECTION_REASONS.identityInUse)).toHaveLength(1);
    call.end();
  });

  it("a credential is consumed once even when two replicas race for it", async () => {
    const store = redisStore("race");
    const a = await server({ identities: createClusterIdentities(store), token: undefined });
    const b = await server({ identities: createClusterIdentities(redisStore("race")), token: undefined });
    for (let round = 0; round < 3; round++) {
      const cluster = ["alpha", "beta", "gamma"][round]!;
      const { credential } = await createClusterIdentities(store).mintCredential(cluster);
      const results = await Promise.allSettled([a, b, a, b].map((s) => client(s.address, cluster, { token: credential }).register()));
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    }
  });
});

describe("revocations in the shared store", () => {
  const stores: [string, () => ClusterRecordStore][] = [
    ["Redis", () => redisStore("revoke")],
    ["a directory", () => createDirectoryRecordStore(join(dir, "identities"))],
    ["Kubernetes Secrets", () => createKubernetesRecordStore(kube.newKubeConfig(), "gitmesh")],
  ];
  for (const [name, make] of stores) {
    it(`survive a restart (${name}): the revoked certificate stays refused, a new registration works`, async () => {
      const first = await server({ identities: createClusterIdentities(make()) });
      const old = await client(first.address, "beta").register();
      await first.server.revoke("beta", "test");
      await first.server.stop();
      // a new server process on the same store
      const second = await server({ identities: createClusterIdentities(make()) });
      const st = await statusOf(rawClient(second.address, old.certPem).pushDiscovery());
      expect(st.code).toBe(grpc.status.PERMISSION_DENIED);
      expect(st.details).toMatch(/revoked at .*\(test\)/);
      expect(rejectionsLogged(second, REJECTION_REASONS.certificateRevoked)).toHaveLength(1);
      const fresh = await client(second.address, "beta").register();
      const call = rawClient(second.address, fresh.certPem).pullOutput();
      call.on("error", () => undefined);
      call.write({ cluster: "beta", version: 0, ack: false, errors: [], resync: false, report: false, repairs: [], acceptsHold: false });
      await until(() => second.server.connectedClusters().some((c) => c.cluster === "beta" && c.pull), "new certificate accepted");
      call.end();
    });
  }

  it("reach the other replicas: a revocation on one closes the agent's streams on another", async () => {
    const a = await server({ identities: createClusterIdentities(redisStore("replicas")), revalidateIntervalMs: 200 });
    const b = await server({ identities: createClusterIdentities(redisStore("replicas")), revalidateIntervalMs: 200 });
    const agent = client(b.address, "gamma");
    agent.connect();
    await agent.synced();
    const { credential } = await a.server.reissue("gamma");
    await until(() => rejectionsLogged(b, REJECTION_REASONS.certificateRevoked).length > 0 && !b.server.connectedClusters().some((c) => c.cluster === "gamma" && c.push), "stream closed on replica b");
    expect(credential).toMatch(/^gmbc_/);
  });
});

describe("a token corrected while the agent runs", () => {
  it("is read again on the next registration attempt (no restart)", async () => {
    const identities = createClusterIdentities(redisStore("reread"));
    const s = await server({ identities, token: undefined });
    let current: string | undefined = "wrong-credential";
    const agent = client(s.address, "alpha", { token: () => current });
    agent.connect();
    await until(() => agent.status().lastError?.code === grpc.status.UNAUTHENTICATED, "first attempt refused");
    current = `${(await identities.mintCredential("alpha")).credential}\n`;
    await agent.synced();
    expect(agent.status().connected).toBe(true);
  });
});

describe("discovery limits", () => {
  it("a compression bomb spread over small chunks is refused (RESOURCE_EXHAUSTED), logged and counted; other agents unaffected", async () => {
    const s = await server();
    const good = client(s.address, "gamma");
    void good.pushDiscovery(state({ a: 1 }));
    good.connect();
    await good.synced();
    const { certPem } = await client(s.address, "alpha").register();
    const bomb = rawClient(s.address, certPem).pushDiscovery();
    const st = statusOf(bomb);
    // 25 chunks of 4 MiB of zeros: ~100 KiB on the wire, 100 MiB decompressed
    const piece = gzipSync(Buffer.alloc(4 * 1024 * 1024 - 64));
    for (let i = 0; i < 25; i++) bomb.write({ cluster: "", version: 1, baseVersion: 0, full: true, checksum: "x", chunk: { index: i, count: 25, payload: piece } } satisfies DiscoveryUpdate);
    const err = await st;
    expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(err.details).toMatch(/decompresses \d+ times its compressed size/);
    expect(rejectionsLogged(s, REJECTION_REASONS.messageTooLarge).some((r) => r.fields.cluster === "alpha")).toBe(true);
    expect(s.server.discoveryState("alpha")).toBeUndefined();
    await good.pushDiscoveryDelta({ upserts: state({ b: 2 }), removed: [] });
    expect(s.server.discoveryState("gamma")?.state.size).toBe(2);
  });

  it("a state above maxDiscoveryBytes for one cluster is refused", async () => {
    const s = await server({ maxDiscoveryBytes: 64 * 1024 });
    const c = client(s.address, "alpha");
    const big = new Map(Array.from({ length: 100 }, (_, i) => [`service/ns/s${i}`, new TextEncoder().encode(JSON.stringify({ pad: "y".repeat(1000), i }))] as [string, Uint8Array]));
    void c.pushDiscovery(big);
    c.connect();
    await until(() => c.status().lastError?.code === grpc.status.RESOURCE_EXHAUSTED, "refused");
    expect(c.status().lastError?.details).toMatch(/above the server's limit of 65536 bytes per cluster/);
    expect(s.server.discoveryState("alpha")).toBeUndefined();
  });

  it("a null or missing discovery header is reported, never thrown", () => {
    const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
    expect(snapshotFromRelayState(new Map([["snapshot", enc(null)]]), "alpha")).toMatchObject({ ok: false, message: expect.stringMatching(/must be an object naming the cluster, got null/) });
    expect(snapshotFromRelayState(new Map([["service/ns/a", enc({ name: "a" })]]), "alpha")).toMatchObject({ ok: false });
    expect(snapshotFromRelayState(new Map([["snapshot", enc({})]]), "alpha")).toMatchObject({ ok: false, message: expect.stringMatching(/names cluster/) });
  });
});
