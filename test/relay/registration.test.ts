// Registration and certificates on their own (real TLS on 127.0.0.1:0): bootstrap registration, the
// one-live-identity rule, renewal, revocation and re-issue.
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { certificateNotAfterMs, createClusterIdentities, createCsr, createMemoryRecordStore, RELAY_METRICS, type ClusterRecordStore } from "../../src/relay/index.js";
import type { CertificateResponse } from "../../src/relay/gen/gitmesh/relay/v1/relay.js";
import { createRegistration } from "../../src/relay/registration.js";
import { clientKey, metricValue, registrationClient, rejectionsLogged, serveParts, testPki, useRelayCleanup, type PartDeps } from "./helpers.js";

const { defer, rawClient } = useRelayCleanup();
const FLEET = "fleet-token-for-registration-tests";

const registrationPart = (deps: PartDeps) => createRegistration({ ...deps, pki: testPki(), token: FLEET, certificateLifetimeMs: 3600_000 });

function unary<Res>(send: (cb: (err: grpc.ServiceError | null, res: Res) => void) => void): Promise<Res> {
  return new Promise((resolve, reject) => send((err, res) => (err ? reject(err) : resolve(res))));
}

async function setUp(identities?: ReturnType<typeof createClusterIdentities>) {
  const s = await serveParts(registrationPart, { defer, ...(identities ? { identities } : {}) });
  const reg = registrationClient(s.address);
  defer(() => reg.close());
  const register = (cluster: string, token: string, csrPem = createCsr(cluster, clientKey()).csrPem) =>
    unary<CertificateResponse>((cb) => reg.register({ cluster, token, csrPem }, cb));
  const renew = (certPem: string, cluster = "") => unary<CertificateResponse>((cb) => rawClient(s.address, certPem).renew({ cluster, csrPem: createCsr(cluster || "x", clientKey()).csrPem }, cb));
  return { ...s, register, renew };
}

describe("registration", () => {
  it("a per-cluster credential registers its cluster once; a bad CSR is refused before the credential is consumed", async () => {
    const s = await setUp();
    const { credential } = await s.identities.mintCredential("alpha");
    await expect(s.register("alpha", credential, "not a CSR")).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringMatching(/PKCS#10/) });
    await expect(s.register("beta", credential)).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
    const res = await s.register("alpha", `${credential}\n`);
    expect(res.caPem).toBe(testPki().rootCaCertPem);
    expect(res.notAfterMs).toBe(certificateNotAfterMs(res.certificatePem));
    expect((await s.identities.read("alpha")).issued?.notAfterMs).toBe(res.notAfterMs);
    await expect(s.register("alpha", credential)).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED, details: expect.stringMatching(/gitmesh cluster reissue alpha/) });
    expect(await metricValue(s.registry, RELAY_METRICS.certificatesIssued, { kind: "register" })).toBe(1);
    expect(rejectionsLogged(s, "bad_token")).toHaveLength(2);
    expect(s.mem.text()).not.toContain(credential);
  });

  it("one live identity: the fleet token registers a cluster that has none, never a second one; an unregistered cluster is refused", async () => {
    const s = await setUp();
    await s.register("beta", FLEET);
    await expect(s.register("beta", FLEET)).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED, details: expect.stringMatching(/already holds a valid client certificate/) });
    await expect(s.register("delta", FLEET)).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED, details: expect.stringMatching(/KubernetesCluster named "delta"/) });
    await expect(s.register("Not_A_Name", FLEET)).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    expect(rejectionsLogged(s, "identity_in_use")).toHaveLength(1);
  });

  it("renews for the caller's own cluster over mTLS, and refuses a renewal naming another cluster", async () => {
    const s = await setUp();
    const first = await s.register("gamma", FLEET);
    const renewed = await s.renew(first.certificatePem);
    expect(renewed.certificatePem).not.toBe(first.certificatePem);
    expect(await metricValue(s.registry, RELAY_METRICS.certificatesIssued, { kind: "renew" })).toBe(1);
    await expect(s.renew(renewed.certificatePem, "alpha")).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED, details: expect.stringMatching(/names cluster "alpha"/) });
  });

  it("revoke refuses every certificate issued so far and hands back the refusal for open streams; reissue also mints a credential that registers", async () => {
    const s = await setUp();
    const cert = (await s.register("alpha", FLEET)).certificatePem;
    const rejection = await s.part.revoke("alpha", "lost laptop");
    expect(rejection).toMatchObject({ reason: "certificate_revoked", message: expect.stringMatching(/\(lost laptop\)/) });
    await expect(s.renew(cert)).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED });
    const next = (await s.register("alpha", FLEET)).certificatePem;
    const minted = await s.part.reissue("alpha");
    expect(minted.rejection.reason).toBe("certificate_revoked");
    await expect(s.renew(next)).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED });
    expect((await s.register("alpha", minted.credential)).certificatePem).toContain("BEGIN CERTIFICATE");
  });

  it("answers UNAVAILABLE (the agent retries) when the identity store is unreachable", async () => {
    const down: ClusterRecordStore = { ...createMemoryRecordStore(), describe: "down", get: () => Promise.reject(new Error("connection refused")) };
    const s = await setUp(createClusterIdentities(down));
    await expect(s.register("alpha", "some-credential")).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE, details: expect.stringMatching(/identity store \(down\) is unreachable/) });
  });
});
