// The mesh root CA: generated once and reused across restarts through the storage callback; a
// user-supplied root (secretRef) is validated and used, end to end through the relay.
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { createPublicKey, generateKeyPairSync, X509Certificate } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import type * as Forge from "node-forge";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCacerts, createIntermediateCsr, createKubeClient, withFieldOwner, type KubeObject } from "../../src/agent/index.js";
import { createMemoryLogger } from "../../src/core/index.js";
import {
  createFileMeshRootStorage,
  createMeshCa,
  findIssuedCertificate,
  generateMeshRoot,
  loadOrCreateMeshRoot,
  MeshCaConfigError,
  meshRootFromPem,
  meshRootPemFromSecretData,
  type MeshRoot,
  type MeshRootPem,
} from "../../src/mesh-ca/index.js";
import { createRelayIntermediateSigner } from "../../src/relay/index.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { newClient, testPki } from "../relay/helpers.js";
import { issuedCertificate, opensslText, opensslVerify, startMeshCaRelay } from "./helpers.js";

const forge = createRequire(import.meta.url)("node-forge") as typeof Forge;
const keyPem = () => generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs1", format: "pem" }).toString();
const issued = issuedCertificate("alpha", { ttlDays: 400, orgName: "Istio" });

/** An intermediate CA certificate for `key`, signed by `issuer` (what an organisation's PKI hands the platform team). */
function orgIntermediate(issuer: MeshRoot, subjectKeyPem: string): string {
  const cert = forge.pki.createCertificate();
  const k = forge.pki.privateKeyFromPem(subjectKeyPem);
  cert.publicKey = forge.pki.setRsaPublicKey(k.n, k.e);
  cert.serialNumber = "0a1b2c";
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 2 * 365 * 86_400_000);
  cert.setSubject([{ name: "organizationName", value: "Example Corp" }, { name: "commonName", value: "Example mesh CA" }]);
  const issuerCert = forge.pki.certificateFromPem(issuer.certPem);
  cert.setIssuer(issuerCert.subject.attributes);
  cert.setExtensions([
    { name: "basicConstraints", cA: true, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
    { name: "subjectKeyIdentifier" },
    { name: "authorityKeyIdentifier", keyIdentifier: issuerCert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(issuer.keyPem), forge.md.sha256.create());
  return forge.pki.certificateToPem(cert);
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mesh-root-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("generated root (mgmtServerCa.generated)", () => {
  it("is generated once with the Gloo defaults (RSA 4096, 365 days, O=gloo-mesh), persisted, and reused after a restart", async () => {
    const storage = createFileMeshRootStorage(join(dir, "generated"));
    let saves = 0;
    const counted = { load: () => storage.load(), save: async (r: MeshRootPem) => (saves++, storage.save(r)) };
    const first = await loadOrCreateMeshRoot(counted);
    expect(first.created).toBe(true);
    expect(first.root.source).toBe("generated");
    const cert = new X509Certificate(first.root.certPem);
    expect(cert.ca).toBe(true);
    expect(cert.checkIssued(cert)).toBe(true);
    expect(cert.publicKey.asymmetricKeyDetails?.modulusLength).toBe(4096);
    expect(cert.subject).toContain("O=gloo-mesh");
    const days = (Date.parse(cert.validTo) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(364.9);
    expect(days).toBeLessThanOrEqual(365);
    expect(opensslText(first.root.certPem)).toMatch(/Certificate Sign, CRL Sign/);
    // the key file is private
    expect((await stat(join(dir, "generated", "ca-key.pem"))).mode & 0o777).toBe(0o600);

    // restart: a new process loads the same root, nothing is generated or saved
    const second = await loadOrCreateMeshRoot(counted);
    expect(second.created).toBe(false);
    expect(saves).toBe(1);
    expect(second.root.certPem).toBe(first.root.certPem);
    expect(second.root.keyPem).toBe(await readFile(join(dir, "generated", "ca-key.pem"), "utf8"));
    // an intermediate signed after the restart chains to the root every cluster already trusts
    const ca = createMeshCa({ root: second.root, isIssuanceAllowed: (_c, r) => findIssuedCertificate([issued], r), logger: createMemoryLogger("ca").logger });
    const res = await ca.signIntermediate("alpha", { csrPem: createIntermediateCsr(keyPem(), issued.spec.hosts, "Istio"), issuedCertificate: "", rootTrustPolicy: "" });
    if (!res.ok) throw new Error(res.message);
    expect(res.rootCertPem).toBe(first.root.certPem);
    expect(opensslVerify(first.root.certPem, res.certPem)).toContain("OK");
    // ttlDays 400 is capped at the root's expiry (an intermediate never outlives its root)
    expect(res.notAfterMs).toBeLessThanOrEqual(Date.parse(cert.validTo));
  }, 120_000);

  it("refuses to start on a stored root that is unusable instead of generating a new one", async () => {
    const other = await generateMeshRoot({ keyBits: 2048 });
    const mine = await generateMeshRoot({ keyBits: 2048 });
    const storage = { load: () => Promise.resolve({ certPem: mine.certPem, keyPem: other.keyPem }), save: () => Promise.reject(new Error("must not save")) };
    await expect(loadOrCreateMeshRoot(storage)).rejects.toThrow(MeshCaConfigError);
    await expect(loadOrCreateMeshRoot(storage)).rejects.toThrow(/does not belong to the certificate/);
  });
});

describe("user-supplied root (mgmtServerCa.secretRef)", () => {
  let kube: StartedKube;
  let corpRoot: MeshRoot;
  beforeAll(async () => {
    [kube, corpRoot] = await Promise.all([startKube({ seed: [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "istio-system" } }] }), generateMeshRoot({ keyBits: 2048, commonName: "Example Corp root", orgName: "Example Corp" })]);
  }, 60_000);
  afterAll(async () => {
    await kube.stop();
  });

  it("validates the supplied CA: key match, CA flag, chain above it", async () => {
    const k = keyPem();
    const inter = orgIntermediate(corpRoot, k);
    expect(() => meshRootFromPem({ certPem: inter, keyPem: keyPem(), chainPem: corpRoot.certPem })).toThrow(/does not belong to the certificate/);
    expect(() => meshRootFromPem({ certPem: inter, keyPem: k })).toThrow(/not self-signed, so cert-chain\.pem must hold the certificates above it/);
    const unrelated = await generateMeshRoot({ keyBits: 2048 });
    expect(() => meshRootFromPem({ certPem: inter, keyPem: k, chainPem: unrelated.certPem })).toThrow(/did not issue the certificate below it/);
    expect(() => meshRootFromPem({ certPem: "garbage", keyPem: k })).toThrow(MeshCaConfigError);
    const leaf = `${testPki().serverCertPem.split("-----END CERTIFICATE-----")[0] ?? ""}-----END CERTIFICATE-----\n`;
    expect(() => meshRootFromPem({ certPem: leaf, keyPem: testPki().serverKeyPem })).toThrow(/not a CA/);
    // Istio's layout (cert-chain.pem starting with the CA itself) is accepted
    const root = meshRootFromPem({ certPem: inter, keyPem: k, chainPem: inter + corpRoot.certPem });
    expect(root.chainPems).toHaveLength(1);
    expect(root.source).toBe("secretRef");
  });

  it("signs with the supplied CA: the agent's cacerts chains through it to the organisation's root", async () => {
    const k = keyPem();
    const inter = orgIntermediate(corpRoot, k);
    // as read from the Secret the RootTrustPolicy names (Istio cacerts keys)
    const pem = meshRootPemFromSecretData({ "ca-cert.pem": inter, "ca-key.pem": k, "cert-chain.pem": corpRoot.certPem });
    const root = meshRootFromPem(pem!);
    const relay = await startMeshCaRelay(root, new Map([["alpha", [issued]]]));
    try {
      const client = newClient(relay.address, "alpha", { token: relay.token });
      const creds = await client.register();
      await client.close();
      const kc = createKubeClient(kube.newKubeConfig());
      const signer = createRelayIntermediateSigner({ address: relay.address, credentials: () => creds, logger: createMemoryLogger("signer").logger });
      const cacerts = createCacerts({ cluster: "alpha", reader: kc, writer: withFieldOwner(kc), signer, logger: createMemoryLogger("cacerts").logger });
      expect(await cacerts.reconcile([issued as KubeObject])).toEqual([]);
      const s = kube.emulator.get("v1", "Secret", "istio-system", "cacerts")!;
      const data = Object.fromEntries(Object.entries(s.data as Record<string, string>).map(([key, v]) => [key, Buffer.from(v, "base64").toString()]));
      expect(data["root-cert.pem"]).toBe(corpRoot.certPem);
      const cert = new X509Certificate(data["ca-cert.pem"]!);
      expect(cert.checkIssued(new X509Certificate(inter))).toBe(true);
      expect(cert.subjectAltName).toBe(`URI:${issued.spec.hosts[0]!}`);
      expect(data["cert-chain.pem"]).toBe([data["ca-cert.pem"]!, inter, corpRoot.certPem].map((p) => p.trim() + "\n").join(""));
      expect(opensslVerify(corpRoot.certPem, data["ca-cert.pem"]!, [inter])).toContain("OK");
      expect(createPublicKey(data["ca-key.pem"]!).export({ type: "spki", format: "der" }).equals(cert.publicKey.export({ type: "spki", format: "der" }))).toBe(true);
      // pathlen 0 below a CA without a path length limit
      expect(opensslText(data["ca-cert.pem"]!)).toMatch(/CA:TRUE, pathlen:0/);
    } finally {
      await relay.server.stop();
    }
  });
});
