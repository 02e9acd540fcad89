/** A self-signed certificate for TLS test servers and clients (a CA of its own; `ip` as subjectAltName). */
import { forge, forgePublicKeyOf, generateRsaKeyPem, randomSerial, signNatively } from "../../src/pki/index.js";

export async function selfSigned(cn: string, ip?: string): Promise<{ keyPem: string; certPem: string }> {
  const keyPem = await generateRsaKeyPem(2048);
  const cert = forge.pki.createCertificate();
  cert.publicKey = forgePublicKeyOf(keyPem);
  cert.serialNumber = randomSerial();
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 3_600_000);
  const name = [{ name: "commonName", value: cn }];
  cert.setSubject(name);
  cert.setIssuer(name);
  cert.setExtensions([{ name: "basicConstraints", cA: true }, ...(ip === undefined ? [] : [{ name: "subjectAltName", altNames: [{ type: 7, ip }] }])]);
  signNatively(cert, keyPem);
  return { keyPem, certPem: forge.pki.certificateToPem(cert) };
}
