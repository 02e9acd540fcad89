// The peer gate on its own, over real TLS: who a caller is (its verified certificate only), whether it
// may be served, and the end of a stream at its certificate's expiry.
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { createClusterIdentities, createCsr, createMemoryRecordStore, createSelfSignedCa, RelayRejectedError, signClientCertificate, type ClusterRecordStore } from "../../src/relay/index.js";
import { RelayClient, type CertificateResponse, type DiscoveryAck } from "../../src/relay/gen/gitmesh/relay/v1/relay.js";
import { forge, forgePublicKeyOf, randomSerial, signNatively } from "../../src/pki/index.js";
import { certFor, channelOptions, clientKey, rejectionsLogged, serveParts, statusOf, testPki, until, useRelayCleanup, type PartDeps } from "./helpers.js";

const { defer, rawClient } = useRelayCleanup();

/** Renew answers with who the gate says the caller is; PushDiscovery acks once, when the gate accepts the stream. */
const whoami = ({ gate, refusals }: PartDeps) => ({
  renew: refusals.unary("Renew", async (call, fields): Promise<CertificateResponse> => {
    const id = await gate.identify(call, fields);
    return { certificatePem: id.cluster, caPem: "", notAfterMs: id.issuedAtMs };
  }),
  pushDiscovery: (call: grpc.ServerDuplexStream<unknown, DiscoveryAck>) => {
    call.on("data", () => undefined);
    gate.acceptStream(call, { rpc: "PushDiscovery", peer: call.getPeer() }, (peer) => {
      call.write({ version: 0, resync: false, checksum: "", message: peer.cluster });
      call.on("close", peer.stopExpiry);
    });
  },
});

/**
 * A certificate the relay's own signing CA signed (so TLS verifies it) whose subject CN and URI SANs are
 * chosen freely: what a CA bug or a stolen signing key could produce, and what the gate must refuse.
 */
function certWithNames(cn: string, uris: readonly string[]): string {
  const pki = testPki();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forgePublicKeyOf(clientKey());
  cert.serialNumber = randomSerial(Date.now() - 5000);
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 3600_000);
  cert.setSubject([{ name: "commonName", value: cn }, { name: "organizationName", value: "gitmesh" }]);
  cert.setIssuer(forge.pki.certificateFromPem(pki.signingCaCertPem).subject.attributes);
  cert.setExtensions([
    { name: "basicConstraints", cA: false },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", clientAuth: true },
    ...(uris.length === 0 ? [] : [{ name: "subjectAltName", altNames: uris.map((u) => ({ type: 6, value: u })) }]),
  ]);
  signNatively(cert, pki.signingCaKeyPem);
  return forge.pki.certificateToPem(cert);
}

function renewAs(c: InstanceType<typeof RelayClient>): Promise<CertificateResponse> {
  return new Promise((resolve, reject) => c.renew({ cluster: "", csrPem: "" }, (err, res) => (err ? reject(err) : resolve(res))));
}

describe("peer gate", () => {
  it("names the caller from its verified certificate and records an unknown certificate as the cluster's live identity", async () => {
    const s = await serveParts(whoami, { defer });
    const issuedAt = Date.now() - 1000;
    const res = await renewAs(rawClient(s.address, certFor("alpha", 3600_000, issuedAt)));
    expect(res).toMatchObject({ certificatePem: "alpha", notAfterMs: issuedAt });
    expect((await s.identities.read("alpha")).issued?.issuedAtMs).toBe(issuedAt);
  });

  it("refuses a foreign certificate, no certificate, an unregistered cluster and a revoked certificate, each with the status that says what to fix", async () => {
    const s = await serveParts(whoami, { defer });
    const foreign = signClientCertificate(createSelfSignedCa({ commonName: "evil-ca" }), { cluster: "alpha", csrPem: createCsr("alpha", clientKey()).csrPem, lifetimeMs: 3600_000 }).certPem;
    await expect(renewAs(rawClient(s.address, foreign))).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED, details: expect.stringMatching(/re-register/) });
    await expect(renewAs(rawClient(s.address, certFor("delta")))).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED, details: expect.stringMatching(/KubernetesCluster named "delta"/) });
    const before = certFor("beta", 3600_000, Date.now() - 5000);
    await renewAs(rawClient(s.address, before));
    await s.identities.revoke("beta", "test");
    await expect(renewAs(rawClient(s.address, before))).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED, details: expect.stringMatching(/revoked .*\(test\)/) });
    expect(await renewAs(rawClient(s.address, certFor("beta")))).toMatchObject({ certificatePem: "beta" });
    // Simple TLS (no client certificate) reaches the handler, which refuses it.
    const bare = new RelayClient(s.address, grpc.credentials.createSsl(Buffer.from(testPki().rootCaCertPem)), channelOptions);
    defer(() => bare.close());
    await expect(renewAs(bare)).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED, details: expect.stringMatching(/no valid client certificate/) });
    expect(rejectionsLogged(s, "client_certificate_invalid")).toHaveLength(2);
    expect(rejectionsLogged(s, "cluster_not_registered")).toHaveLength(1);
    expect(rejectionsLogged(s, "certificate_revoked")).toHaveLength(1);
  });

  it("refuses a certificate from its own CA whose CN and URI SAN name different clusters (either way round), or that lacks or doubles the URI SAN", async () => {
    const s = await serveParts(whoami, { defer });
    const uri = (c: string) => `spiffe://gitmesh/cluster/${c}`;
    // The control: the same construction with agreeing names is accepted, so a refusal below is about the names.
    expect(await renewAs(rawClient(s.address, certWithNames("gamma", [uri("gamma")])))).toMatchObject({ certificatePem: "gamma" });
    const forged = [certWithNames("alpha", [uri("beta")]), certWithNames("beta", [uri("alpha")]), certWithNames("alpha", []), certWithNames("alpha", [uri("alpha"), uri("beta")])];
    for (const pem of forged) {
      await expect(renewAs(rawClient(s.address, pem))).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED, details: expect.stringMatching(/must name the same cluster/) });
    }
    expect(rejectionsLogged(s, "client_certificate_invalid")).toHaveLength(forged.length);
    // Neither cluster got a live identity from them.
    expect((await s.identities.read("alpha")).issued).toBeUndefined();
    expect((await s.identities.read("beta")).issued).toBeUndefined();
  });

  it("checks against the last record it saw when the store is unreachable: a seen revocation still holds, an unknown cluster is let through", async () => {
    const memory = createMemoryRecordStore();
    let down = false;
    const flaky: ClusterRecordStore = {
      describe: "flaky",
      get: (c) => (down ? Promise.reject(new Error("store down")) : memory.get(c)),
      list: () => (down ? Promise.reject(new Error("store down")) : memory.list()),
      swap: (c, e, n) => (down ? Promise.reject(new Error("store down")) : memory.swap(c, e, n)),
    };
    const s = await serveParts(whoami, { defer, identities: createClusterIdentities(flaky) });
    const old = certFor("alpha", 3600_000, Date.now() - 5000);
    await renewAs(rawClient(s.address, old));
    await s.identities.revoke("alpha", "test");
    await expect(renewAs(rawClient(s.address, old))).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED });
    down = true;
    await expect(renewAs(rawClient(s.address, old))).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED });
    expect(await renewAs(rawClient(s.address, certFor("gamma")))).toMatchObject({ certificatePem: "gamma" });
    expect(s.mem.records.some((r) => r.msg.startsWith("identity store unreachable"))).toBe(true);
  });

  it("accepts a stream (forgetting the cluster's last refusal) and ends it when its certificate expires", async () => {
    const s = await serveParts(whoami, { defer });
    s.refusals.refuse(new RelayRejectedError("cluster_mismatch", grpc.status.PERMISSION_DENIED, "earlier"), { rpc: "PullOutput", cluster: "alpha" }, () => undefined);
    expect(s.refusals.last().has("alpha")).toBe(true);
    const call = rawClient(s.address, certFor("alpha", 2500)).pushDiscovery();
    const acks: DiscoveryAck[] = [];
    call.on("data", (a: DiscoveryAck) => acks.push(a));
    const ended = statusOf(call);
    await until(() => acks.length === 1, "the accepted stream's ack");
    expect(acks[0]?.message).toBe("alpha");
    expect(s.refusals.last().has("alpha")).toBe(false);
    const st = await ended;
    expect(st.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(st.details).toMatch(/expired/);
    expect(rejectionsLogged(s, "certificate_expired")).toHaveLength(1);
  });
});
