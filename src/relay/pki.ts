/**
 * Relay PKI: the root CA (signs the server certificate), the server certificate, the signing CA (signs
 * agent CSRs), CSRs and client certificates. Keys are generated with node:crypto and handled as PEM;
 * node-forge builds the CAs, the server certificate and the agents' CSRs (rare), node:crypto signs them.
 * What the server does per registration — check the agent's CSR, issue its client certificate — is
 * native: a DER walk and node:crypto (src/pki/der.ts), no node-forge (#39).
 *
 * Identity of a client certificate: subject CN = cluster name, and URI SAN
 * spiffe://gitmesh/cluster/<name>; both must agree.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, X509Certificate, type KeyObject } from "node:crypto";
import type { PeerCertificate } from "node:tls";
import { CLUSTER_URI_PREFIX, RELAY_DEFAULTS, RELAY_SECRETS } from "./constants.js";
import {
  bitString,
  children,
  DER_NULL,
  DER_TRUE,
  DerError,
  derToPem,
  explicit,
  forge,
  forgePublicKeyOf,
  NOT_BEFORE_BACKDATE_MS,
  octetString,
  oid,
  oidText,
  pemToDer,
  printableString,
  randomSerial,
  readTlv,
  sequence,
  set,
  signNatively,
  STAMPED_SERIAL_MARKER,
  time,
  tlv,
  unsignedInteger,
} from "../pki/index.js";

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

/** A fresh RSA key (2048 bits by default) as PKCS#1 PEM. */
export function generateKeyPem(bits = 2048): string {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: bits });
  return privateKey.export({ type: "pkcs1", format: "pem" }).toString();
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
  cert.publicKey = forgePublicKeyOf(keyPem);
  cert.serialNumber = randomSerial();
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
  signNatively(cert, keyPem);
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
  cert.publicKey = forgePublicKeyOf(keyPem);
  cert.serialNumber = randomSerial();
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
  signNatively(cert, ca.keyPem);
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
  csr.publicKey = forgePublicKeyOf(keyPem);
  csr.setSubject([{ name: "commonName", value: cluster }]);
  signNatively(csr, keyPem);
  return { csrPem: forge.pki.certificationRequestToPem(csr), keyPem };
}

export interface ClientCertificateOptions {
  readonly cluster: string;
  readonly csrPem: string;
  /** The result of checkClientCsr(csrPem) when the caller already checked it (not checked twice). */
  readonly checked?: CheckedCsr;
  readonly lifetimeMs: number;
  readonly now?: number;
}

/** Thrown for a CSR that cannot be parsed, whose key is too weak, or whose signature does not verify. */
export class InvalidCsrError extends Error {
  readonly code = "InvalidCsrError";
}

/** Smallest RSA modulus accepted in a client CSR. */
export const MIN_RSA_BITS = 2048;

/** A client CSR that passed checkClientCsr: its public key (SubjectPublicKeyInfo DER) and size. */
export interface CheckedCsr {
  readonly spkiDer: Buffer;
  readonly bits: number;
}

/** PKCS#1 v1.5 RSA signature algorithms a CSR may be signed with → their hash. */
const CSR_SIGNATURE_HASHES: Readonly<Record<string, string>> = {
  "1.2.840.113549.1.1.5": "sha1",
  "1.2.840.113549.1.1.14": "sha224",
  "1.2.840.113549.1.1.11": "sha256",
  "1.2.840.113549.1.1.12": "sha384",
  "1.2.840.113549.1.1.13": "sha512",
};

/**
 * Parses a client CSR and checks it: PEM PKCS#10, an RSA key of at least 2048 bits, and a
 * self-signature (PKCS#1 v1.5, SHA-1/2) that verifies. Throws InvalidCsrError (never anything else)
 * for a bad CSR. Native (node:crypto and a bounds-checked DER walk, src/pki/der.ts): node-forge's
 * pure-JS parsing and RSA verification were the larger part of the server's CPU per registration (#39).
 * ECDSA keys are not accepted.
 */
export function checkClientCsr(csrPem: string): CheckedCsr {
  const der = pemToDer(csrPem, ["CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST"]);
  if (!der) throw new InvalidCsrError("the CSR is not a PEM PKCS#10 request (no CERTIFICATE REQUEST block)");
  let spkiDer: Buffer;
  let hash: string | undefined;
  let signed: Buffer;
  let signature: Buffer;
  try {
    const outer = readTlv(der, 0);
    const [info, alg, sig] = children(der, outer);
    if (outer.tag !== 0x30 || info?.tag !== 0x30 || alg?.tag !== 0x30 || sig?.tag !== 0x03 || sig.end - sig.content < 2 || der[sig.content] !== 0) throw new DerError("not a CertificationRequest");
    const [, subject, spki] = children(der, info);
    if (subject?.tag !== 0x30 || spki?.tag !== 0x30) throw new DerError("not a CertificationRequestInfo");
    spkiDer = der.subarray(spki.start, spki.end);
    hash = CSR_SIGNATURE_HASHES[oidText(der, children(der, alg)[0]!)];
    signed = der.subarray(info.start, info.end);
    signature = der.subarray(sig.content + 1, sig.end);
  } catch (err) {
    throw new InvalidCsrError(`the CSR is not a PEM PKCS#10 request with an RSA key (${err instanceof Error ? err.message : String(err)})`);
  }
  let key: KeyObject;
  try {
    key = createPublicKey({ key: spkiDer, format: "der", type: "spki" });
  } catch {
    throw new InvalidCsrError("the CSR carries no RSA public key");
  }
  if (key.asymmetricKeyType !== "rsa") throw new InvalidCsrError("the CSR carries no RSA public key");
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < MIN_RSA_BITS) throw new InvalidCsrError(`the CSR's RSA key has ${bits} bits; at least ${MIN_RSA_BITS} are required`);
  let verified = false;
  try {
    verified = hash !== undefined && verify(hash, signed, key, signature);
  } catch {
    verified = false;
  }
  if (!verified) throw new InvalidCsrError("the CSR's signature does not verify against its own public key");
  return { spkiDer: Buffer.from(spkiDer), bits };
}

/** The signing CA as issuance needs it: its subject (DER, the issuer of what it signs) and its key, parsed once. */
let lastSigner: { certPem: string; keyPem: string; issuerDer: Buffer; key: KeyObject } | undefined;
function signerOf(ca: KeyPairPem): { issuerDer: Buffer; key: KeyObject } {
  if (lastSigner?.certPem === ca.certPem && lastSigner.keyPem === ca.keyPem) return lastSigner;
  const der = new X509Certificate(ca.certPem).raw;
  const tbs = children(der, readTlv(der, 0))[0]!;
  const fields = children(der, tbs);
  const subject = fields[fields[0]!.tag === 0xa0 ? 5 : 4]!;
  lastSigner = { certPem: ca.certPem, keyPem: ca.keyPem, issuerDer: der.subarray(subject.start, subject.end), key: createPrivateKey(ca.keyPem) };
  return lastSigner;
}

const SHA256_WITH_RSA = sequence(oid("1.2.840.113549.1.1.11"), DER_NULL);
const extension = (id: string, critical: boolean, value: Buffer) => sequence(oid(id), ...(critical ? [DER_TRUE] : []), octetString(value));
/** DNS-1123 names are PrintableString; anything else (never a valid cluster) UTF8String. */
const directoryString = (s: string) => (/^[A-Za-z0-9 '()+,\-./:=?]*$/.test(s) ? printableString(s) : tlv(0x0c, Buffer.from(s, "utf8")));
const rdn = (attrOid: string, value: string) => set(sequence(oid(attrOid), directoryString(value)));

/**
 * Signs a client certificate for `cluster` with the signing CA. Only the CSR's public key is used
 * (after checking the CSR's self-signature, unless the caller passes the CSR it checked); the identity
 * comes from the caller, never from the CSR. Built and signed natively (node:crypto): the same
 * certificate node-forge built before #39, byte for byte (RSA PKCS#1 v1.5 signatures are
 * deterministic; test/relay/pki.test.ts builds both with the same serial and compares).
 */
export function signClientCertificate(signingCa: KeyPairPem, options: ClientCertificateOptions): { certPem: string; notAfterMs: number } {
  const csr = options.checked ?? checkClientCsr(options.csrPem);
  const now = options.now ?? Date.now();
  const signer = signerOf(signingCa);
  const notAfterMs = Math.floor((now + options.lifetimeMs) / 1000) * 1000;
  const tbs = sequence(
    explicit(0, unsignedInteger(Buffer.from([2]))),
    tlv(0x02, Buffer.from(randomSerial(now), "hex")),
    SHA256_WITH_RSA,
    signer.issuerDer,
    sequence(time(now - NOT_BEFORE_BACKDATE_MS), time(notAfterMs)),
    sequence(rdn("2.5.4.3", options.cluster), rdn("2.5.4.10", "gitmesh")),
    csr.spkiDer,
    explicit(
      3,
      sequence(
        extension("2.5.29.19", false, sequence()),
        extension("2.5.29.15", true, Buffer.from([0x03, 0x02, 0x05, 0xa0])), // digitalSignature, keyEncipherment
        extension("2.5.29.37", false, sequence(oid("1.3.6.1.5.5.7.3.2"))), // clientAuth
        extension("2.5.29.17", false, sequence(tlv(0x86, Buffer.from(CLUSTER_URI_PREFIX + options.cluster, "utf8")))),
      ),
    ),
  );
  const certDer = sequence(tbs, SHA256_WITH_RSA, bitString(sign("sha256", tbs, signer.key)));
  return { certPem: derToPem(certDer, "CERTIFICATE"), notAfterMs };
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
