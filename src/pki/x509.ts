/**
 * X.509 building blocks shared by the relay PKI (src/relay) and the mesh certificate authority
 * (src/mesh-ca): node-forge builds the structures, node:crypto holds the keys and computes the RSA
 * signature itself (forge's pure-JS RSA is about 50x slower, which matters with 4096-bit roots and
 * with a thousand agents re-registering after a restart).
 */
import { createPrivateKey, createPublicKey, generateKeyPair, randomBytes, sign as nodeSign } from "node:crypto";
import { createRequire } from "node:module";
import { promisify } from "node:util";
import type * as Forge from "node-forge";

// node-forge is CommonJS with a dynamically built export object: load it with require so that every
// namespace (pki, md, asn1) is present regardless of the ESM interop heuristics.
export const forge = createRequire(import.meta.url)("node-forge") as typeof Forge;

/** Certificates are backdated by this much to tolerate clock skew between server and clusters. */
export const NOT_BEFORE_BACKDATE_MS = 60_000;

/** First byte of the serial numbers of client certificates that carry their issue time. */
export const STAMPED_SERIAL_MARKER = 0x47;

/**
 * A 16-byte serial number. The first byte is never 0x00 and below 0x80: a positive INTEGER whose DER
 * needs no padding byte (forge would write the hex as is, and OpenSSL rejects a leading 0x00 that is not
 * needed — about one random serial in 256 made an unparseable certificate).
 *
 * Relay client certificates carry their issue time in milliseconds (`issuedAtMs`): marker 0x47, 6 bytes
 * big-endian ms since the epoch, 9 random bytes. Revocation compares that time with the deregistration
 * time (validity dates have only whole seconds). Without it the first byte is never the marker.
 */
export function randomSerial(issuedAtMs?: number): string {
  const b = randomBytes(16);
  if (issuedAtMs === undefined) {
    b[0] = (b[0]! % 0x7f) + 1; // 0x01..0x7f
    if (b[0] === STAMPED_SERIAL_MARKER) b[0] = STAMPED_SERIAL_MARKER + 1;
  } else {
    b[0] = STAMPED_SERIAL_MARKER;
    b.writeUIntBE(Math.floor(issuedAtMs), 1, 6);
  }
  return b.toString("hex");
}

/** The forge public key of a PEM private key. */
export function forgePublicKeyOf(keyPem: string): Forge.pki.PublicKey {
  return forge.pki.publicKeyFromPem(createPublicKey(keyPem).export({ type: "spki", format: "pem" }).toString());
}

/**
 * Signs a forge certificate or CSR with node:crypto instead of forge's pure-JS RSA (about 50x faster,
 * which matters for a server that signs CSRs of a thousand agents after a restart, and for 4096-bit
 * roots). forge hands the "message digest" the DER of the to-be-signed structure through `update` and
 * then asks the key to sign it; this pair collects the bytes and signs them natively with
 * sha256WithRSAEncryption.
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

/** OID of the X.509 nameConstraints extension (RFC 5280 §4.2.1.10). */
export const NAME_CONSTRAINTS_OID = "2.5.29.30";

/**
 * A critical nameConstraints extension permitting only URIs whose host is one of `trustDomains`
 * (forge does not encode this extension: written here with forge.asn1).
 *
 *   NameConstraints ::= SEQUENCE { permittedSubtrees [0] IMPLICIT GeneralSubtrees }
 *   GeneralSubtree  ::= SEQUENCE { base GeneralName }            -- minimum 0 (DEFAULT, omitted)
 *   GeneralName     ::= uniformResourceIdentifier [6] IMPLICIT IA5String
 *
 * RFC 5280 matches a URI constraint against the URI's host, and OpenSSL, BoringSSL and Go do so: a
 * constraint "cluster1" permits spiffe://cluster1/... and nothing else (a leading "." would permit
 * sub-domains; SPIFFE trust domains are exact, so none is used). Other name types (DNS names of
 * istiod's serving certificate) stay unconstrained.
 */
export function uriNameConstraintsExtension(trustDomains: readonly string[]): { id: string; critical: true; value: Forge.asn1.Asn1 } {
  const { asn1 } = forge;
  // Context-specific tags [6] (uniformResourceIdentifier) and [0] (permittedSubtrees) are plain numbers, not asn1.Type members.
  const tag = (n: number) => n as unknown as Forge.asn1.Type;
  const subtrees = trustDomains.map((td) =>
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [asn1.create(asn1.Class.CONTEXT_SPECIFIC, tag(6), false, forge.util.encodeUtf8(td))]),
  );
  const value = asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [asn1.create(asn1.Class.CONTEXT_SPECIFIC, tag(0), true, subtrees)]);
  return { id: NAME_CONSTRAINTS_OID, critical: true, value };
}
