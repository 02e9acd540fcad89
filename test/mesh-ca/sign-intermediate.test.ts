// Istio intermediate CAs over the real relay: the agent's createCacerts (src/agent, through its
// index.ts) with the relay adapter, against a real relay server (TLS on loopback) wired to a real mesh
// CA, writing `cacerts` into the Kubernetes emulator.
import { execFileSync } from "node:child_process";
import { createPublicKey, generateKeyPairSync, X509Certificate } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgentMetrics, createCacerts, createIntermediateCsr, createKubeClient, withFieldOwner, type KubeObject } from "../../src/agent/index.js";
import { createMemoryLogger } from "../../src/core/index.js";
import { generateMeshRoot, type MeshRoot } from "../../src/mesh-ca/index.js";
import { createRelayIntermediateSigner, createSelfSignedCa, IntermediateSigningError, RELAY_METRICS, type RelayClientCredentials } from "../../src/relay/index.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { metricValue, newClient, testPki } from "../relay/helpers.js";
import { issuedCertificate, opensslText, opensslVerify, startMeshCaRelay } from "./helpers.js";

let kube: StartedKube;
let root: MeshRoot;
let relay: Awaited<ReturnType<typeof startMeshCaRelay>>;
const outputs = new Map<string, readonly unknown[]>();
const creds = new Map<string, RelayClientCredentials>();

const alphaIssued = issuedCertificate("alpha", { ttlDays: 30, orgName: "Istio" });

async function register(cluster: string): Promise<RelayClientCredentials> {
  const client = newClient(relay.address, cluster, { token: relay.token });
  try {
    return await client.register();
  } finally {
    await client.close();
  }
}

function signer(cluster: string, address = relay.address) {
  return createRelayIntermediateSigner({ address, credentials: () => creds.get(cluster), rootCaPem: testPki().rootCaCertPem, logger: createMemoryLogger(`signer-${cluster}`).logger });
}

function agentCacerts(cluster: string, address?: string) {
  const client = createKubeClient(kube.newKubeConfig());
  return createCacerts({ cluster, reader: client, writer: withFieldOwner(client), signer: signer(cluster, address), metrics: createAgentMetrics(new Registry()), logger: createMemoryLogger("cacerts").logger });
}

const secretData = (name = "cacerts") => {
  const s = kube.emulator.get("v1", "Secret", "istio-system", name);
  if (!s) return undefined;
  return Object.fromEntries(Object.entries(s.data as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, "base64").toString()]));
};

const keyPem = () => generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs1", format: "pem" }).toString();

beforeAll(async () => {
  [kube, root] = await Promise.all([startKube({ seed: [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "istio-system" } }] }), generateMeshRoot({ keyBits: 2048 })]);
  outputs.set("alpha", [alphaIssued]);
  outputs.set("beta", []);
  relay = await startMeshCaRelay(root, outputs);
  creds.set("alpha", await register("alpha"));
  creds.set("beta", await register("beta"));
}, 60_000);

afterAll(async () => {
  await relay.server.stop();
  await kube.stop();
});

describe("Relay.SignIntermediate with the mesh CA", () => {
  it("writes a cacerts secret whose CA certificate is signed by the mesh root, for the agent's own key, which never crossed the wire", async () => {
    const cacerts = agentCacerts("alpha");
    expect(await cacerts.reconcile([alphaIssued as KubeObject])).toEqual([]);
    const data = secretData()!;
    expect(Object.keys(data).sort()).toEqual(["ca-cert.pem", "ca-key.pem", "cert-chain.pem", "root-cert.pem"]);
    const cert = new X509Certificate(data["ca-cert.pem"]!);
    const rootCert = new X509Certificate(data["root-cert.pem"]!);
    // root-cert.pem is the mesh root, and it signed ca-cert.pem
    expect(rootCert.raw.equals(new X509Certificate(root.certPem).raw)).toBe(true);
    expect(cert.checkIssued(rootCert)).toBe(true);
    expect(cert.verify(rootCert.publicKey)).toBe(true);
    expect(opensslVerify(data["root-cert.pem"]!, data["ca-cert.pem"]!)).toContain("OK");
    // an intermediate CA, path length 0, certSign/cRLSign, the requested SPIFFE SAN, O from the IssuedCertificate
    expect(cert.ca).toBe(true);
    const text = opensslText(data["ca-cert.pem"]!);
    expect(text).toMatch(/CA:TRUE, pathlen:0/);
    expect(text).toMatch(/Certificate Sign, CRL Sign/);
    expect(cert.subjectAltName).toBe("URI:spiffe://alpha.local/ns/istio-system/sa/istiod-1-29");
    expect(cert.subject).toContain("O=Istio");
    // lifetime = ttlDays of the IssuedCertificate (30 days), capped by nothing here
    const days = (Date.parse(cert.validTo) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);
    // cert-chain.pem = ca-cert + root; ca-key.pem belongs to ca-cert.pem
    expect(data["cert-chain.pem"]).toBe(data["ca-cert.pem"]!.trim() + "\n" + data["root-cert.pem"]!.trim() + "\n");
    const spki = (pem: string) => createPublicKey(pem).export({ type: "spki", format: "der" });
    expect(spki(data["ca-key.pem"]!).equals(cert.publicKey.export({ type: "spki", format: "der" }))).toBe(true);
    // what the server received: one CSR for that key, for alpha (from its certificate), no private key
    expect(relay.received).toHaveLength(1);
    const got = relay.received[0]!;
    expect(got.cluster).toBe("alpha");
    expect(got.request.rootTrustPolicy).toBe("gloo-mesh/root-trust");
    expect(JSON.stringify(got)).not.toMatch(/PRIVATE KEY/);
    expect(got.request.csrPem).toMatch(/^-----BEGIN CERTIFICATE REQUEST-----/);
    const csrKey = opensslCsrPublicKey(got.request.csrPem);
    expect(spki(csrKey).equals(spki(data["ca-key.pem"]!))).toBe(true);
    expect(await metricValue(relay.registry, RELAY_METRICS.certificatesIssued, { kind: "intermediate" })).toBe(1);
    // a current secret is left alone
    expect(await cacerts.reconcile([alphaIssued as KubeObject])).toEqual([]);
    expect(relay.received).toHaveLength(1);
  });

  it("refuses with PERMISSION_DENIED a cluster whose output holds no matching IssuedCertificate, whatever the request names", async () => {
    const before = await metricValue(relay.registry, RELAY_METRICS.rejections, { reason: "intermediate_not_issued" });
    // beta asks for alpha's IssuedCertificate, with alpha's SANs: the identity comes from beta's certificate
    const csrPem = createIntermediateCsr(keyPem(), alphaIssued.spec.hosts, "Istio");
    const err = await signer("beta")
      .signIntermediate({ cluster: "", csrPem, hosts: alphaIssued.spec.hosts, ttlDays: 30, orgName: "Istio", rootTrustPolicy: "gloo-mesh/root-trust", issuedCertificate: "istio-system/istiod-1-29-istio-system-alpha" })
      .then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(IntermediateSigningError);
    expect((err as IntermediateSigningError).grpcCode).toBe(grpc.status.PERMISSION_DENIED);
    expect((err as Error).message).toMatch(/cluster "beta" asked for IssuedCertificate istio-system\/istiod-1-29-istio-system-alpha but its output holds no matching IssuedCertificate/);
    expect(await metricValue(relay.registry, RELAY_METRICS.rejections, { reason: "intermediate_not_issued" })).toBe(before + 1);
    expect(relay.mem.records.some((r) => r.msg === "relay rejected a request" && r.fields.reason === "intermediate_not_issued" && r.fields.cluster === "beta")).toBe(true);
    // and the agent's createCacerts turns it into a per-request error (the NACK), writing nothing
    kube.emulator.seed([{ apiVersion: "v1", kind: "Namespace", metadata: { name: "istio-beta" } }]);
    const betaIssued = { ...alphaIssued, spec: { ...alphaIssued.spec, secret: { name: "cacerts", namespace: "istio-beta" } } };
    const errors = await agentCacerts("beta").reconcile([betaIssued]);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).toMatch(/PERMISSION_DENIED/);
    expect(kube.emulator.get("v1", "Secret", "istio-beta", "cacerts")).toBeUndefined();
  });

  it("refuses a message naming another cluster than the certificate (PERMISSION_DENIED, cluster_mismatch)", async () => {
    const csrPem = createIntermediateCsr(keyPem(), alphaIssued.spec.hosts, "Istio");
    const err = (await signer("beta").signIntermediate({ cluster: "alpha", csrPem, hosts: [], ttlDays: 1, orgName: "x", rootTrustPolicy: "" }).catch((e: unknown) => e)) as IntermediateSigningError;
    expect(err.grpcCode).toBe(grpc.status.PERMISSION_DENIED);
    expect(err.message).toMatch(/names cluster "alpha" but the client certificate is for cluster "beta"/);
  });

  it("refuses with INVALID_ARGUMENT a CSR whose SANs differ from the IssuedCertificate's hosts, and a CSR that is not one", async () => {
    const before = await metricValue(relay.registry, RELAY_METRICS.rejections, { reason: "san_mismatch" });
    const evil = createIntermediateCsr(keyPem(), ["spiffe://alpha.local/ns/default/sa/attacker"], "Istio");
    const err = (await signer("alpha").signIntermediate({ cluster: "alpha", csrPem: evil, hosts: [], ttlDays: 30, orgName: "Istio", rootTrustPolicy: "gloo-mesh/root-trust" }).catch((e: unknown) => e)) as IntermediateSigningError;
    expect(err.grpcCode).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.message).toMatch(/asks for SANs \[spiffe:\/\/alpha\.local\/ns\/default\/sa\/attacker\] but IssuedCertificate istio-system\/istiod-1-29-istio-system-alpha allows exactly the URI SANs \[spiffe:\/\/alpha\.local\/ns\/istio-system\/sa\/istiod-1-29\]/);
    expect(await metricValue(relay.registry, RELAY_METRICS.rejections, { reason: "san_mismatch" })).toBe(before + 1);
    // an extra SAN next to the right one is a mismatch too
    const extra = createIntermediateCsr(keyPem(), [...alphaIssued.spec.hosts, "spiffe://alpha.local/ns/x/sa/y"], "Istio");
    const err2 = (await signer("alpha").signIntermediate({ cluster: "", csrPem: extra, hosts: [], ttlDays: 30, orgName: "Istio", rootTrustPolicy: "" }).catch((e: unknown) => e)) as IntermediateSigningError;
    expect(err2.grpcCode).toBe(grpc.status.INVALID_ARGUMENT);
    // garbage, and a CSR whose signature does not verify
    const bad = (await signer("alpha").signIntermediate({ cluster: "", csrPem: "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n", hosts: [], ttlDays: 1, orgName: "x", rootTrustPolicy: "" }).catch((e: unknown) => e)) as IntermediateSigningError;
    expect(bad.grpcCode).toBe(grpc.status.INVALID_ARGUMENT);
    expect(bad.message).toMatch(/not a PEM PKCS#10 request/);
    const good = createIntermediateCsr(keyPem(), alphaIssued.spec.hosts, "Istio");
    const tampered = tamperCsr(good);
    const bad2 = (await signer("alpha").signIntermediate({ cluster: "", csrPem: tampered, hosts: [], ttlDays: 1, orgName: "x", rootTrustPolicy: "" }).catch((e: unknown) => e)) as IntermediateSigningError;
    expect(bad2.grpcCode).toBe(grpc.status.INVALID_ARGUMENT);
    expect(bad2.message).toMatch(/signature does not verify|not a PEM PKCS#10/);
    expect(await metricValue(relay.registry, RELAY_METRICS.rejections, { reason: "invalid_csr" })).toBeGreaterThanOrEqual(2);
  });

  it("answers UNIMPLEMENTED with a clear message when the server has no mesh CA", async () => {
    const bare = await startMeshCaRelay(undefined, outputs);
    try {
      const c = newClient(bare.address, "alpha", { token: bare.token });
      creds.set("alpha-bare", await c.register());
      await c.close();
      const s = createRelayIntermediateSigner({ address: bare.address, credentials: () => creds.get("alpha-bare"), rootCaPem: testPki().rootCaCertPem, logger: createMemoryLogger("s").logger });
      const csrPem = createIntermediateCsr(keyPem(), alphaIssued.spec.hosts, "Istio");
      const err = (await s.signIntermediate({ cluster: "alpha", csrPem, hosts: alphaIssued.spec.hosts, ttlDays: 30, orgName: "Istio", rootTrustPolicy: "gloo-mesh/root-trust" }).catch((e: unknown) => e)) as IntermediateSigningError;
      expect(err.grpcCode).toBe(grpc.status.UNIMPLEMENTED);
      expect(err.message).toMatch(/no mesh CA configured/);
      expect(await metricValue(bare.registry, RELAY_METRICS.rejections, { reason: "mesh_ca_not_configured" })).toBe(1);
    } finally {
      await bare.server.stop();
    }
  });

  it("refuses a certificate from another CA (UNAUTHENTICATED) and reports a missing certificate on the agent side", async () => {
    const foreign = createSelfSignedCa({ commonName: "alpha" });
    const forged = createRelayIntermediateSigner({ address: relay.address, credentials: () => ({ certPem: foreign.certPem, keyPem: foreign.keyPem, caPem: testPki().rootCaCertPem, notAfterMs: Date.now() + 3_600_000 }), logger: createMemoryLogger("s").logger });
    const csrPem = createIntermediateCsr(keyPem(), alphaIssued.spec.hosts, "Istio");
    const err = (await forged.signIntermediate({ cluster: "alpha", csrPem, hosts: [], ttlDays: 1, orgName: "x", rootTrustPolicy: "" }).catch((e: unknown) => e)) as IntermediateSigningError;
    expect(err.grpcCode).toBe(grpc.status.UNAUTHENTICATED);
    const noCert = createRelayIntermediateSigner({ address: relay.address, credentials: () => undefined, rootCaPem: testPki().rootCaCertPem, logger: createMemoryLogger("s").logger });
    await expect(noCert.signIntermediate({ cluster: "alpha", csrPem: "x", hosts: [], ttlDays: 1, orgName: "x", rootTrustPolicy: "" })).rejects.toThrow(/no relay client certificate/);
  });
});

/** The public key of a CSR, via OpenSSL (independent of node-forge). */
function opensslCsrPublicKey(csrPem: string): string {
  return execFileSync("openssl", ["req", "-noout", "-pubkey"], { input: csrPem, encoding: "utf8" });
}

/** Flips one byte inside the CSR's signed content (the subject), keeping it parsable. */
function tamperCsr(pem: string): string {
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, ""), "base64");
  const i = der.indexOf(Buffer.from("Istio"));
  der[i] = "J".charCodeAt(0);
  return `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString("base64").replace(/(.{64})/g, "$1\n")}\n-----END CERTIFICATE REQUEST-----\n`;
}
