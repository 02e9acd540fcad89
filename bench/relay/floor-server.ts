/**
 * The floors of the relay bench, each a server in a child process of its own (bench/relay.bench.ts):
 *
 * - `h2`: a bare Node http2 secure server with mutual TLS (the relay's server certificate; client
 *   certificates required and verified against the relay's signing CA). Each client session opens one
 *   bidirectional stream, which the server answers with headers and keeps open. Floor (a): heap and
 *   RSS per connected session.
 * - `register-native`: a TLS server (the relay's server certificate and key, client certificate asked for
 *   but not required, as Register) that reads one PEM CSR per connection, checks its RSA key size and
 *   verifies its self-signature with node:crypto, signs a certificate body of the size the relay issues
 *   with the signing CA's RSA-2048 key (node:crypto, OpenSSL; SHA-256) and answers a certificate.
 *   Floor (b): server CPU per registration, the least any implementation in Node can do.
 * - `register-forge`: the same, checking and signing with the relay's own pki.ts of before #39 (node-forge
 *   parses the CSR and builds the certificate, node:crypto signs it): what the library path costs.
 *
 * argv: mode, PKI (base64 JSON). Messages: {type:"stats"} → ServerStats.
 */
import type * as Forge from "node-forge";
import { createPrivateKey, createPublicKey, sign, verify } from "node:crypto";
import * as http2 from "node:http2";
import * as tls from "node:tls";
import type { RelayPki } from "../../src/relay/index.js";
import { forge, randomSerial, signNatively } from "../../src/pki/index.js";
import { signClientCertificate } from "../../src/relay/pki.js";
import { createCsr } from "../../src/relay/index.js";
import { memoryAfterGc, openFileLimit } from "./spawn.js";

const [mode, pkiArg] = process.argv.slice(2);
const pki = JSON.parse(Buffer.from(pkiArg!, "base64").toString()) as RelayPki;
let connected = 0;
let signed = 0;

/** DER TLV at `at`: where its content starts and where it ends. */
function tlv(der: Buffer, at: number): { tag: number; content: number; end: number } {
  const tag = der[at]!;
  let len = der[at + 1]!;
  let content = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + der[content + i]!;
    content += n;
  }
  return { tag, content, end: content + len };
}
const pemBody = (pem: string) => Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ""), "base64");

// The signing CA key, parsed once; a certificate body of the relay's size (one the relay issued), signed per request.
const caKey = createPrivateKey(pki.signingCaKeyPem);
const template = signClientCertificate({ certPem: pki.signingCaCertPem, keyPem: pki.signingCaKeyPem }, { cluster: "floor-template-cluster", csrPem: createCsr("floor-template-cluster").csrPem, lifetimeMs: 86_400_000 }).certPem;
const templateDer = pemBody(template);
const outer = tlv(templateDer, 0);
const tbs = tlv(templateDer, outer.content);
const tbsBytes = templateDer.subarray(outer.content, tbs.end);

/** Floor (b), native: CSR parsed as DER, key size checked, self-signature verified, a certificate body signed. */
function registerNative(csrPem: string): string {
  const der = pemBody(csrPem);
  const seq = tlv(der, 0);
  const cri = tlv(der, seq.content);
  const alg = tlv(der, cri.end);
  const sig = tlv(der, alg.end);
  // CertificationRequestInfo: version, subject, subjectPKInfo, attributes
  const version = tlv(der, cri.content);
  const subject = tlv(der, version.end);
  const spki = tlv(der, subject.end);
  const key = createPublicKey({ key: der.subarray(subject.end, spki.end), format: "der", type: "spki" });
  if ((key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) throw new Error("weak key");
  if (!verify("sha256", der.subarray(seq.content, cri.end), key, der.subarray(sig.content + 1, sig.end))) throw new Error("bad CSR signature");
  const signature = sign("sha256", tbsBytes, caKey);
  signed++;
  return signature.length > 0 ? template : "";
}

const forgeCa = forge.pki.certificateFromPem(pki.signingCaCertPem);
/**
 * Floor (b), library path: node-forge parses the CSR once, verifies it, builds the certificate the relay
 * issues (same subject, SAN and extensions), node:crypto signs it (signNatively, as src/pki does).
 */
function registerForge(csrPem: string): string {
  const csr = forge.pki.certificationRequestFromPem(csrPem);
  const key = csr.publicKey as Forge.pki.rsa.PublicKey;
  if (key.n.bitLength() < 2048 || !csr.verify()) throw new Error("bad CSR");
  const now = Date.now();
  const cert = forge.pki.createCertificate();
  cert.publicKey = key;
  cert.serialNumber = randomSerial(now);
  cert.validity.notBefore = new Date(now - 60_000);
  cert.validity.notAfter = new Date(now + 86_400_000);
  const cluster = `floor-${signed}`;
  cert.setSubject([{ name: "commonName", value: cluster }, { name: "organizationName", value: "gitmesh" }]);
  cert.setIssuer(forgeCa.subject.attributes);
  cert.setExtensions([
    { name: "basicConstraints", cA: false },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", clientAuth: true },
    { name: "subjectAltName", altNames: [{ type: 6, value: `spiffe://gitmesh/cluster/${cluster}` }] },
  ]);
  signNatively(cert, pki.signingCaKeyPem);
  signed++;
  return forge.pki.certificateToPem(cert);
}

async function listen(): Promise<number> {
  if (mode === "h2") {
    const server = http2.createSecureServer({ key: pki.serverKeyPem, cert: pki.serverCertPem, ca: pki.signingCaCertPem, requestCert: true, rejectUnauthorized: true });
    server.on("session", (s) => {
      connected++;
      s.on("close", () => connected--);
    });
    server.on("stream", (stream) => {
      stream.respond({ ":status": 200 });
      stream.on("data", () => undefined);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return (server.address() as { port: number }).port;
  }
  const work = mode === "register-native" ? registerNative : mode === "register-forge" ? registerForge : undefined;
  if (!work) throw new Error(`unknown floor mode ${String(mode)}`);
  const server = tls.createServer({ key: pki.serverKeyPem, cert: pki.serverCertPem, ca: pki.signingCaCertPem, requestCert: true, rejectUnauthorized: false }, (socket) => {
    let text = "";
    socket.setEncoding("utf8");
    socket.on("error", () => undefined);
    socket.on("data", (d: string) => {
      text += d;
      if (!text.includes("-----END CERTIFICATE REQUEST-----")) return;
      try {
        socket.end(work(text));
      } catch (err) {
        socket.end(`error ${String(err)}`);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", 4096, r));
  return (server.address() as { port: number }).port;
}

const port = await listen();
process.send?.({ type: "ready", port, openFiles: openFileLimit() });
process.on("message", (m: { type: string }) => {
  if (m.type === "stats") process.send?.({ ...memoryAfterGc(), connected, signed });
});
