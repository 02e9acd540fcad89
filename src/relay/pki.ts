/**
 * Relay PKI with node-forge: the root CA (signs the server certificate), the server certificate, the
 * signing CA (signs agent CSRs), CSRs and client certificates. Keys are generated with node:crypto
 * (native, fast) and handled as PEM; node-forge builds and signs the X.509 structures.
 *
 * Identity of a client certificate: subject CN = cluster name, and URI SAN
 * spiffe://gitmesh/cluster/<name>; both must agree.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign as nodeSign, X509Certificate } from "node:crypto";
import { createRequire } from "node:module";
import type { PeerCertificate } from "node:tls";
import type * as Forge from "node-forge";

// node-forge is CommonJS with a dynamically built export object: load it with require so that every
// namespace (pki, md, asn1) is present regardless of the ESM interop heuristics.
const forge = createRequire(import.meta.url)("node-forge") as typeof Forge;
import { CLUSTER_URI_PREFIX, RELAY_DEFAULTS, RELAY_SECRETS } from "./constants.js";

/** All the server-side PKI material, as PEM. */
export interface RelayPki {
  /** Root CA certificate (relay-root-tls-secret ca.crt): agents verify the server against it. */
  readonly rootCaCertPem: string;
  /** Root CA key; absent with bring-your-own PKI (only needed to generate the server certificate). */
  readonly rootCaKeyPem?: string;
  /** Server certificate chain and key (relay-server-tls-secret). */
  readonly serverCertPem: string;
  readonly serverKeyPem: string;
  /** Signing CA certificate and key (relay-tls-signing-secret): signs agent CSRs; the server trusts client certificates it signed. */
  readonly signingCaCertPem: string;
  readonly signingCaKeyPem: string;
}

export interface KeyPairPem {
  readonly certPem: string;
  readonly keyPem: string;
}

/** Client certificates are backdated by this much to tolerate clock skew between server and agent. */
export const NOT_BEFORE_BACKDATE_MS = 60_000;

let lastParsed: { pem: string; cert: Forge.pki.Certificate } | undefined;
/** The signing CA is parsed once, not for every CSR. */
function parsedCertificate(pem: string): Forge.pki.Certificate {
  if (lastParsed?.pem !== pem) lastParsed = { pem, cert: forge.pki.certificateFromPem(pem) };
  return lastParsed.cert;
}

/** A fresh RSA key (2048 bits by default) as PKCS#1 PEM. */
export function generateKeyPem(bits = 2048): string {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: bits });
  return privateKey.export({ type: "pkcs1", format: "pem" }).toString();
}

/** First byte of the serial numbers of client certificates that carry their issue time. */
const STAMPED_SERIAL_MARKER = 0x47;

/**
 * A 16-byte serial number. The first byte is never 0x00 and below 0x80: a positive INTEGER whose DER
 * needs no padding byte (forge would write the hex as is, and OpenSSL rejects a leading 0x00 that is not
 * needed — about one random serial in 256 made an unparseable certificate).
 *
 * Client certificates carry their issue time in milliseconds: marker 0x47, 6 bytes big-endian ms since
 * the epoch, 9 random bytes. Revocation compares that time with the deregistration time (validity
 * dates have only whole seconds).
 */
function serial(issuedAtMs?: number): string {
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

function publicKeyOf(keyPem: string): Forge.pki.PublicKey {
  return forge.pki.publicKeyFromPem(createPublicKey(keyPem).export({ type: "spki", format: "pem" }).toString());
}

/**
 * Signs a forge certificate or CSR with node:crypto instead of forge's pure-JS RSA (about 50x faster,
 * which matters for a server that signs CSRs of a thousand agents after a restart). forge hands the
 * "message digest" the DER of the to-be-signed structure through `update` and then asks the key to sign
 * it; this pair collects the bytes and signs them natively with sha256WithRSAEncryption.
 */
function sign(target: { sign(key: Forge.pki.PrivateKey, md: Forge.md.MessageDigest): void }, keyPem: string): void {
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

export interface CaOptions {
  readonly commonName: string;
  readonly lifetimeMs?: number;
  readonly now?: number;
}

/** A self-signed CA certificate and key. */
export function createSelfSignedCa(options: CaOptions): KeyPairPem {
  const keyPem = generateKeyPem();
  const now = options.now ?? Date.now();
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKeyOf(keyPem);
  cert.serialNumber = serial();
  cert.validity.notBefore = new Date(now - NOT_BEFORE_BACKDATE_MS);
  cert.validity.notAfter = new Date(now + (options.lifetimeMs ?? RELAY_DEFAULTS.caLifetimeMs));
  const attrs = [{ name: "commonName", value: options.commonName }, { name: "organizationName", value: "gitmesh" }];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.setExtensions([
    { name: "basicConstraints", cA: true, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ]);
  sign(cert, keyPem);
  return { certPem: forge.pki.certificateToPem(cert), keyPem };
}

export interface ServerCertificateOptions {
  /** Name the agents dial (`relay.authority`), default `gitmesh-server.gitmesh`. */
  readonly authority?: string;
  /** Further DNS names or IP addresses for the certificate. */
  readonly additionalSans?: readonly string[];
  readonly lifetimeMs?: number;
  readonly now?: number;
}

/** A server certificate for the relay port, signed by the given CA. */
export function issueServerCertificate(ca: KeyPairPem, options: ServerCertificateOptions = {}): KeyPairPem {
  const keyPem = generateKeyPem();
  const now = options.now ?? Date.now();
  const authority = options.authority ?? RELAY_DEFAULTS.authority;
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKeyOf(keyPem);
  cert.serialNumber = serial();
  cert.validity.notBefore = new Date(now - NOT_BEFORE_BACKDATE_MS);
  cert.validity.notAfter = new Date(now + (options.lifetimeMs ?? RELAY_DEFAULTS.caLifetimeMs));
  cert.setSubject([{ name: "commonName", value: authority }, { name: "organizationName", value: "gitmesh" }]);
  cert.setIssuer(caCert.subject.attributes);
  const sans = [authority, ...(options.additionalSans ?? [])].map((n) =>
    /^[0-9.]+$|:/.test(n) ? { type: 7, ip: n } : { type: 2, value: n },
  );
  cert.setExtensions([
    { name: "basicConstraints", cA: false },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", serverAuth: true },
    { name: "subjectAltName", altNames: sans },
  ]);
  sign(cert, ca.keyPem);
  return { certPem: forge.pki.certificateToPem(cert), keyPem };
}

/** Generates a complete PKI for a first start: root CA, server certificate, separate signing CA. */
export function generateRelayPki(options: ServerCertificateOptions = {}): RelayPki {
  const root = createSelfSignedCa({ commonName: "gitmesh-relay-root-ca", ...(options.now === undefined ? {} : { now: options.now }) });
  const server = issueServerCertificate(root, options);
  const signing = createSelfSignedCa({ commonName: "gitmesh-relay-signing-ca", ...(options.now === undefined ? {} : { now: options.now }) });
  return {
    rootCaCertPem: root.certPem,
    rootCaKeyPem: root.keyPem,
    serverCertPem: server.certPem,
    serverKeyPem: server.keyPem,
    signingCaCertPem: signing.certPem,
    signingCaKeyPem: signing.keyPem,
  };
}

/** Where generated PKI material is kept between restarts (the server issue decides: Kubernetes secrets, files, Redis). */
export interface RelayPkiStorage {
  load(): Promise<RelayPki | undefined>;
  save(pki: RelayPki): Promise<void>;
}

/**
 * The PKI from storage, or — on the very first start only — generated and saved. Never regenerated
 * when storage already holds material (agents keep trusting the same root across restarts).
 */
export async function loadOrCreateRelayPki(storage: RelayPkiStorage, options: ServerCertificateOptions = {}): Promise<{ pki: RelayPki; created: boolean }> {
  const existing = await storage.load();
  if (existing) return { pki: existing, created: false };
  const pki = generateRelayPki(options);
  await storage.save(pki);
  return { pki, created: true };
}

/** Secret name → data key → PEM, in the layout of DESIGN.md (for a storage callback that writes Kubernetes secrets). */
export function relayPkiToSecrets(pki: RelayPki): Record<string, Record<string, string>> {
  const s = RELAY_SECRETS;
  return {
    [s.rootTls.name]: { [s.rootTls.keys.caCrt]: pki.rootCaCertPem, ...(pki.rootCaKeyPem ? { [s.rootTls.keys.tlsKey]: pki.rootCaKeyPem } : {}) },
    [s.serverTls.name]: { [s.serverTls.keys.tlsCrt]: pki.serverCertPem, [s.serverTls.keys.tlsKey]: pki.serverKeyPem, [s.serverTls.keys.caCrt]: pki.rootCaCertPem },
    [s.tlsSigning.name]: { [s.tlsSigning.keys.tlsCrt]: pki.signingCaCertPem, [s.tlsSigning.keys.tlsKey]: pki.signingCaKeyPem },
  };
}

/** The inverse of relayPkiToSecrets; undefined when a required secret or key is missing. */
export function relayPkiFromSecrets(secrets: Readonly<Record<string, Readonly<Record<string, string>> | undefined>>): RelayPki | undefined {
  const s = RELAY_SECRETS;
  const root = secrets[s.rootTls.name];
  const server = secrets[s.serverTls.name];
  const signing = secrets[s.tlsSigning.name];
  const rootCa = root?.[s.rootTls.keys.caCrt];
  const serverCrt = server?.[s.serverTls.keys.tlsCrt];
  const serverKey = server?.[s.serverTls.keys.tlsKey];
  const signingCrt = signing?.[s.tlsSigning.keys.tlsCrt];
  const signingKey = signing?.[s.tlsSigning.keys.tlsKey];
  if (!rootCa || !serverCrt || !serverKey || !signingCrt || !signingKey) return undefined;
  const rootKey = root[s.rootTls.keys.tlsKey];
  return {
    rootCaCertPem: rootCa,
    ...(rootKey ? { rootCaKeyPem: rootKey } : {}),
    serverCertPem: serverCrt,
    serverKeyPem: serverKey,
    signingCaCertPem: signingCrt,
    signingCaKeyPem: signingKey,
  };
}

/** A CSR (PEM) for a cluster, with a fresh key unless one is given. */
export function createCsr(cluster: string, keyPem: string = generateKeyPem()): { csrPem: string; keyPem: string } {
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = publicKeyOf(keyPem);
  csr.setSubject([{ name: "commonName", value: cluster }]);
  sign(csr, keyPem);
  return { csrPem: forge.pki.certificationRequestToPem(csr), keyPem };
}

export interface ClientCertificateOptions {
  readonly cluster: string;
  readonly csrPem: string;
  readonly lifetimeMs: number;
  readonly now?: number;
}

/** Thrown for a CSR that cannot be parsed or whose signature does not verify. */
export class InvalidCsrError extends Error {
  readonly code = "InvalidCsrError";
}

/**
 * Signs a client certificate for `cluster` with the signing CA. Only the CSR's public key is used
 * (after checking the CSR's self-signature); the identity comes from the caller, never from the CSR.
 */
export function signClientCertificate(signingCa: KeyPairPem, options: ClientCertificateOptions): { certPem: string; notAfterMs: number } {
  let csr: Forge.pki.CertificateSigningRequest;
  try {
    csr = forge.pki.certificationRequestFromPem(options.csrPem);
  } catch (err) {
    throw new InvalidCsrError(`the CSR is not a PEM PKCS#10 request with an RSA key (${err instanceof Error ? err.message : String(err)})`);
  }
  if (!csr.publicKey || !csr.verify()) throw new InvalidCsrError("the CSR's signature does not verify against its own public key");
  const now = options.now ?? Date.now();
  const caCert = parsedCertificate(signingCa.certPem);
  const cert = forge.pki.createCertificate();
  cert.publicKey = csr.publicKey;
  cert.serialNumber = serial(now);
  cert.validity.notBefore = new Date(now - NOT_BEFORE_BACKDATE_MS);
  const notAfterMs = Math.floor((now + options.lifetimeMs) / 1000) * 1000;
  cert.validity.notAfter = new Date(notAfterMs);
  cert.setSubject([{ name: "commonName", value: options.cluster }, { name: "organizationName", value: "gitmesh" }]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: "basicConstraints", cA: false },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", clientAuth: true },
    { name: "subjectAltName", altNames: [{ type: 6, value: CLUSTER_URI_PREFIX + options.cluster }] },
  ]);
  sign(cert, signingCa.keyPem);
  return { certPem: forge.pki.certificateToPem(cert), notAfterMs };
}

/** Cluster names: DNS-1123 subdomain, as for a KubernetesCluster's metadata.name. */
export function isValidClusterName(name: string): boolean {
  return name.length > 0 && name.length <= 253 && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name);
}

/** Identity of a verified peer certificate: CN and URI SAN must both name the same valid cluster. */
export function clusterOfPeerCertificate(peer: PeerCertificate): { cluster: string; issuedAtMs: number } | undefined {
  const cn = peer.subject.CN;
  const sans = (peer.subjectaltname ?? "").split(",").map((s) => s.trim());
  const uris = sans.filter((s) => s.startsWith("URI:" + CLUSTER_URI_PREFIX)).map((s) => s.slice(4 + CLUSTER_URI_PREFIX.length));
  if (typeof cn !== "string" || uris.length !== 1 || uris[0] !== cn || !isValidClusterName(cn)) return undefined;
  return { cluster: cn, issuedAtMs: issuedAtMs(peer.serialNumber, Date.parse(peer.valid_from) + NOT_BEFORE_BACKDATE_MS) };
}

/**
 * Issue time (ms) of a client certificate: from its stamped serial number when that agrees with its
 * notBefore (same second), else the notBefore-based time (whole seconds).
 */
function issuedAtMs(serialHex: string, fromValidity: number): number {
  if (serialHex.length !== 32 || parseInt(serialHex.slice(0, 2), 16) !== STAMPED_SERIAL_MARKER) return fromValidity;
  const stamped = parseInt(serialHex.slice(2, 14), 16);
  return stamped >= fromValidity && stamped < fromValidity + 1000 ? stamped : fromValidity;
}

/** Expiry (ms since epoch) of a PEM certificate. */
export function certificateNotAfterMs(certPem: string): number {
  return Date.parse(new X509Certificate(certPem).validTo);
}
