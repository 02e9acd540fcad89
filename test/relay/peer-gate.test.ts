// The peer gate on its own, over real TLS: who a caller is (its verified certificate only), whether it
// may be served, and the end of a stream at its certificate's expiry.
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { createClusterIdentities, createCsr, createMemoryRecordStore, createSelfSignedCa, RelayRejectedError, signClientCertificate, type ClusterRecordStore } from "../../src/relay/index.js";
import { RelayClient, type CertificateResponse, type DiscoveryAck } from "../../src/relay/gen/gitmesh/relay/v1/relay.js";
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
