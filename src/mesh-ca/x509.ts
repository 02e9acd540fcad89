/**
 * X.509 building blocks of the mesh CA (node-forge for the structures, node:crypto for keys and the
 * RSA signature itself — forge's pure-JS RSA is about 50× slower, which matters with 4096-bit roots).
 */
import { createPrivateKey, createPublicKey, generateKeyPair, randomBytes, sign as nodeSign } from "node:crypto";
import { createRequire } from "node:module";
import { promisify } from "node:util";
import type * as Forge from "node-forge";

// node-forge is CommonJS with a dynamically built export object: load it with require.
export const forge = createRequire(import.meta.url)("node-forge") as typeof Forge;

/** Certificates are backdated by this much to tolerate clock skew between server and clusters. */
export const NOT_BEFORE_BACKDATE_MS = 60_000;

const generateKeyPairAsync = promisify(generateKeyPair);

/** A fresh RSA key as PKCS#1 PEM, generated off the event loop. */
export async function generateRsaKeyPem(bits: number): Promise<string> {
  const { privateKey } = await generateKeyPairAsync("rsa", { modulusLength: bits });
  return privateKey.export({ type: "pkcs1", format: "pem" }).toString();
}

/** The forge public key of a PEM private key. */
export function forgePublicKeyOf(keyPem: string): Forge.pki.PublicKey {
  return forge.pki.publicKeyFromPem(createPublicKey(keyPem).export({ type: "spki", format: "pem" }).toString());
}

/** A positive 16-byte serial whose DER needs no padding byte (first byte 0x01..0x7f). */
export function randomSerial(): string {
  const b = randomBytes(16);
  b[0] = (b[0]! % 0x7f) + 1;
  return b.toString("hex");
}

/**
 * Signs a forge certificate with node:crypto (sha256WithRSAEncryption): forge hands the DER of the
 * to-be-signed structure to the "message digest" and asks the "key" to sign it.
 */
export function signNatively(target: { sign(key: Forge.pki.PrivateKey, md: Forge.md.MessageDigest): void }, keyPem: string): void {
  const key = createPrivateKey(keyPem);
  const chunks: string[] = [];
  const md = {
    algorithm: "sha256",
    update(bytes: string) {
      chunks.push(bytes);
      return md;
    },
  };
  const signer = { sign: () => nodeSign("sha256", Buffer.from(chunks.join(""), "binary"), key).toString("binary") };
  target.sign(signer as unknown as Forge.pki.PrivateKey, md as unknown as Forge.md.MessageDigest);
}

/** The subjectKeyIdentifier of a certificate as forge bytes (its extension when present, else computed). */
export function subjectKeyIdBytes(cert: Forge.pki.Certificate): string {
  const ext = cert.getExtension("subjectKeyIdentifier") as { subjectKeyIdentifier?: string } | undefined;
  return ext?.subjectKeyIdentifier ? forge.util.hexToBytes(ext.subjectKeyIdentifier) : cert.generateSubjectKeyIdentifier().getBytes();
}
