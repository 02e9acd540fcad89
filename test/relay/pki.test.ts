// Client certificates issued natively (#39): the same bytes node-forge built before, and the CSR checks
// that guard registration (RSA ≥ 2048 bits, a self-signature that verifies, well-formed DER).
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, X509Certificate } from "node:crypto";
import type * as Forge from "node-forge";
import { describe, expect, it } from "vitest";
import { forge, NOT_BEFORE_BACKDATE_MS, signNatively } from "../../src/pki/index.js";
import { bitString, children, DER_NULL, explicit, oid, readTlv, sequence, set, tlv, unsignedInteger } from "../../src/pki/der.js";
import { checkClientCsr, createCsr, generateKeyPem, signClientCertificate } from "../../src/relay/index.js";
import { clusterOfPeerCertificate, InvalidCsrError } from "../../src/relay/pki.js";
import { clientKey, testPki } from "./helpers.js";

/** The client certificate as src/relay/pki.ts built it with node-forge before #39, for a given serial. */
function forgeClientCertificate(ca: { certPem: string; keyPem: string }, cluster: string, csrPem: string, lifetimeMs: number, now: number, serialHex: string): string {
  const csr = forge.pki.certificationRequestFromPem(csrPem);
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const cert = forge.pki.createCertificate();
  cert.publicKey = csr.publicKey as Forge.pki.PublicKey;
  cert.serialNumber = serialHex;
  cert.validity.notBefore = new Date(now - NOT_BEFORE_BACKDATE_MS);
  cert.validity.notAfter = new Date(Math.floor((now + lifetimeMs) / 1000) * 1000);
  cert.setSubject([{ name: "commonName", value: cluster }, { name: "organizationName", value: "gitmesh" }]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: "basicConstraints", cA: false },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", clientAuth: true },
    { name: "subjectAltName", altNames: [{ type: 6, value: `spiffe://gitmesh/cluster/${cluster}` }] },
  ]);
  signNatively(cert, ca.keyPem);
  return forge.pki.certificateToPem(cert);
}

const pem = (der: Uint8Array, label: string) => `-----BEGIN ${label}-----\n${Buffer.from(der).toString("base64")}\n-----END ${label}-----\n`;

/** A CSR built by hand: subject CN, the given SubjectPublicKeyInfo, signed by `signWith` under `algOid`. */
function handCsr(spkiDer: Buffer, algorithm: Buffer, signWith: (tbs: Buffer) => Buffer): string {
  const info = sequence(unsignedInteger(Buffer.from([0])), sequence(set(sequence(oid("2.5.4.3"), tlv(0x13, Buffer.from("alpha"))))), spkiDer, explicit(0));
  return pem(sequence(info, algorithm, bitString(signWith(info))), "CERTIFICATE REQUEST");
}

describe("relay client certificates", () => {
  const pki = testPki();
  const ca = { certPem: pki.signingCaCertPem, keyPem: pki.signingCaKeyPem };

  it("are byte for byte what node-forge built, for the same serial and time", () => {
    const now = Date.UTC(2026, 10, 29, 12, 34, 56, 789);
    for (const [cluster, lifetimeMs] of [["alpha", 30 * 86_400_000], ["eu-west-1.prod", 3_600_000], ["far", 40 * 365 * 86_400_000]] as const) {
      const { csrPem } = createCsr(cluster, clientKey());
      const native = signClientCertificate(ca, { cluster, csrPem, lifetimeMs, now });
      const serial = new X509Certificate(native.certPem).serialNumber.toLowerCase();
      expect(serial.slice(0, 14)).toBe(`47${now.toString(16).padStart(12, "0")}`);
      expect(native.certPem).toBe(forgeClientCertificate(ca, cluster, csrPem, lifetimeMs, now, serial));
      expect(native.notAfterMs).toBe(Math.floor((now + lifetimeMs) / 1000) * 1000);
    }
  });

  it("chain to the signing CA, carry the CSR's key and the cluster identity the peer gate reads", () => {
    const key = clientKey();
    const { certPem } = signClientCertificate(ca, { cluster: "beta", csrPem: createCsr("beta", key).csrPem, lifetimeMs: 3_600_000 });
    const cert = new X509Certificate(certPem);
    const caCert = new X509Certificate(ca.certPem);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.publicKey.export({ type: "spki", format: "pem" })).toBe(createPublicKey(key).export({ type: "spki", format: "pem" }));
    expect(cert.subject).toBe("CN=beta\nO=gitmesh");
    expect(cert.subjectAltName).toBe("URI:spiffe://gitmesh/cluster/beta");
    expect(cert.keyUsage).toEqual(["1.3.6.1.5.5.7.3.2"]);
    const legacy = cert.toLegacyObject();
    expect(clusterOfPeerCertificate(legacy)?.cluster).toBe("beta");
  });

  it("the CSR is checked: RSA ≥ 2048 bits, a signature that verifies, well-formed DER; ECDSA and garbage refused", () => {
    const reasons = (csrPem: string) => {
      try {
        checkClientCsr(csrPem);
        return "accepted";
      } catch (err) {
        expect(err).toBeInstanceOf(InvalidCsrError);
        return (err as Error).message;
      }
    };
    const good = createCsr("alpha", clientKey()).csrPem;
    expect(checkClientCsr(good).bits).toBe(2048);
    expect(reasons(createCsr("alpha", generateKeyPem(1024)).csrPem)).toMatch(/1024 bits; at least 2048/);
    // one bit of the signature flipped
    const der = Buffer.from(good.replace(/-----[^-]+-----|\s/g, ""), "base64");
    const sig = children(der, readTlv(der, 0))[2]!;
    der[sig.end - 5]! ^= 0x01;
    expect(reasons(pem(der, "CERTIFICATE REQUEST"))).toMatch(/signature does not verify/);
    // the signed part changed (the subject's last letter) under the original signature
    const der2 = Buffer.from(good.replace(/-----[^-]+-----|\s/g, ""), "base64");
    der2[der2.indexOf(Buffer.from("alpha")) + 4] = 0x62;
    expect(reasons(pem(der2, "CERTIFICATE REQUEST"))).toMatch(/signature does not verify/);
    // truncated, empty, not PEM, not base64, a certificate instead of a request
    expect(reasons(pem(der.subarray(0, der.length - 40), "CERTIFICATE REQUEST"))).toMatch(/not a PEM PKCS#10 request/);
    expect(reasons(pem(Buffer.alloc(0), "CERTIFICATE REQUEST"))).toMatch(/not a PEM PKCS#10 request/);
    expect(reasons("not a CSR")).toMatch(/not a PEM PKCS#10 request/);
    expect(reasons("-----BEGIN CERTIFICATE REQUEST-----\n%%%\n-----END CERTIFICATE REQUEST-----\n")).toMatch(/not a PEM PKCS#10 request/);
    expect(reasons(ca.certPem)).toMatch(/not a PEM PKCS#10 request/);
    // an ECDSA key, validly self-signed
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const ecCsr = handCsr(ec.publicKey.export({ type: "spki", format: "der" }), sequence(oid("1.2.840.10045.4.3.2")), (tbs) => sign("sha256", tbs, ec.privateKey));
    expect(reasons(ecCsr)).toMatch(/no RSA public key/);
    // an RSA key under an unknown signature algorithm (RSASSA-PSS OID): refused, not guessed
    const rsa = createPrivateKey(clientKey());
    const pss = handCsr(createPublicKey(rsa).export({ type: "spki", format: "der" }), sequence(oid("1.2.840.113549.1.1.10"), DER_NULL), (tbs) => sign("sha256", tbs, rsa));
    expect(reasons(pss)).toMatch(/signature does not verify/);
    // the same hand-built request under sha256WithRSAEncryption is accepted (the walk reads what forge writes and more)
    const ok = handCsr(createPublicKey(rsa).export({ type: "spki", format: "der" }), sequence(oid("1.2.840.113549.1.1.11"), DER_NULL), (tbs) => sign("sha256", tbs, rsa));
    expect(reasons(ok)).toBe("accepted");
  });
});
