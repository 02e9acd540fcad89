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
