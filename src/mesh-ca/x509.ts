/**
 * X.509 building blocks of the mesh CA (node-forge for the structures, node:crypto for keys and the
 * RSA signature itself — forge's pure-JS RSA is about 50× slower, which matters with 4096-bit roots).
 * The helpers it shares with the relay PKI live in src/relay/x509.ts and are re-exported here.
 */
import { generateKeyPair } from "node:crypto";
import { createRequire } from "node:module";
import { promisify } from "node:util";
import type * as Forge from "node-forge";

// node-forge is CommonJS with a dynamically built export object: load it with require.
export const forge = createRequire(import.meta.url)("node-forge") as typeof Forge;

// Serials, backdating and native signing are shared with the relay PKI (one implementation).
export { forgePublicKeyOf, NOT_BEFORE_BACKDATE_MS, randomSerial, signNatively } from "../relay/index.js";

const generateKeyPairAsync = promisify(generateKeyPair);

/** A fresh RSA key as PKCS#1 PEM, generated off the event loop. */
export async function generateRsaKeyPem(bits: number): Promise<string> {
  const { privateKey } = await generateKeyPairAsync("rsa", { modulusLength: bits });
  return privateKey.export({ type: "pkcs1", format: "pem" }).toString();
}

/** The subjectKeyIdentifier of a certificate as forge bytes (its extension when present, else computed). */
export function subjectKeyIdBytes(cert: Forge.pki.Certificate): string {
  const ext = cert.getExtension("subjectKeyIdentifier") as { subjectKeyIdentifier?: string } | undefined;
  return ext?.subjectKeyIdentifier ? forge.util.hexToBytes(ext.subjectKeyIdentifier) : cert.generateSubjectKeyIdentifier().getBytes();
}
