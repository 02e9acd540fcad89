/**
 * The mesh root CA (RootTrustPolicy `mgmtServerCa`): generated once and persisted through a storage
 * callback (`generated`), or supplied by the user as PEM (`secretRef`). Either way the result is a
 * validated MeshRoot that createMeshCa signs with.
 */
import { createPrivateKey, createPublicKey, X509Certificate } from "node:crypto";
import { NeedsHumanError } from "../core/index.js";
import { forge, forgePublicKeyOf, generateRsaKeyPem, NOT_BEFORE_BACKDATE_MS, randomSerial, signNatively } from "../pki/index.js";

/** Defaults of a generated root, as Gloo Mesh's `mgmtServerCa.generated`. */
export const MESH_ROOT_DEFAULTS = {
  keyBits: 4096,
  lifetimeDays: 365,
  orgName: "gloo-mesh",
  commonName: "gitmesh mesh root CA",
} as const;

/** Keys of the Secret/files a mesh root is kept in (Istio's cacerts naming). */
export const MESH_ROOT_KEYS = {
  cert: "ca-cert.pem",
  key: "ca-key.pem",
  /** Certificates above `cert`, up to and including the top root (only for a supplied intermediate). */
  chain: "cert-chain.pem",
} as const;

/** The CA that signs intermediates: a self-signed root, or a supplied CA with the chain above it. */
export interface MeshRoot {
  /** PEM certificate of the signing CA. */
  readonly certPem: string;
  /** PEM private key of the signing CA. */
  readonly keyPem: string;
  /** PEM certificates above certPem up to the top root, nearest first; empty when certPem is self-signed. */
  readonly chainPems: readonly string[];
  /** Where it came from (logs, status). */
  readonly source: "generated" | "secretRef";
}

/** The mesh root's configuration is unusable (bad PEM, key not matching, not a CA, expired). Needs a human. */
export class MeshCaConfigError extends NeedsHumanError {}

export interface GenerateMeshRootOptions {
  /** RSA modulus length (default 4096). */
  readonly keyBits?: number;
  /** Validity (default 365 days). */
  readonly lifetimeDays?: number;
  /** Subject O (default "gloo-mesh"). */
  readonly orgName?: string;
  readonly commonName?: string;
  readonly now?: number;
}

/** A self-signed mesh root CA (defaults: RSA 4096, 365 days, O=gloo-mesh). */
export async function generateMeshRoot(options: GenerateMeshRootOptions = {}): Promise<MeshRoot> {
  const keyPem = await generateRsaKeyPem(options.keyBits ?? MESH_ROOT_DEFAULTS.keyBits);
  const now = options.now ?? Date.now();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forgePublicKeyOf(keyPem);
  cert.serialNumber = randomSerial();
  cert.validity.notBefore = new Date(now - NOT_BEFORE_BACKDATE_MS);
  cert.validity.notAfter = new Date(now + (options.lifetimeDays ?? MESH_ROOT_DEFAULTS.lifetimeDays) * 86_400_000);
  const attrs = [
    { name: "organizationName", value: options.orgName ?? MESH_ROOT_DEFAULTS.orgName },
    { name: "commonName", value: options.commonName ?? MESH_ROOT_DEFAULTS.commonName },
  ];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.setExtensions([
    { name: "basicConstraints", cA: true, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ]);
  signNatively(cert, keyPem);
  return { certPem: forge.pki.certificateToPem(cert), keyPem, chainPems: [], source: "generated" };
}

/**
 * Where the generated root is kept, shared by every replica (the server decides: a Kubernetes Secret,
 * Redis, or a directory for a standalone server). `save` is create-if-absent: it never overwrites a
 * stored root (it may throw or do nothing when one exists; loadOrCreateMeshRoot reloads either way).
 */
export interface MeshRootStorage {
  /** Where it is kept, for logs (never a secret). */
  readonly describe?: string;
  load(): Promise<MeshRootPem | undefined>;
  save(root: MeshRootPem): Promise<void>;
}

/** PEM material as stored or supplied. */
export interface MeshRootPem {
  readonly certPem: string;
  readonly keyPem: string;
  /** PEM bundle of the certificates above certPem (supplied intermediates only). */
  readonly chainPem?: string;
}

const samePem = (a: string, b: string) => a.replace(/\s+/g, "") === b.replace(/\s+/g, "");

/**
 * The root from storage, or — on the very first start only — generated and saved. Never regenerated
 * when storage holds one (every cluster's Istio keeps trusting the same root across restarts and
 * replicas); a stored root that is unusable is an error for a human, not a reason to generate a new
 * one. Replicas starting together on empty storage agree: each saves create-if-absent and then uses
 * what storage holds, so the first one's root wins everywhere.
 */
export async function loadOrCreateMeshRoot(storage: MeshRootStorage, options: GenerateMeshRootOptions = {}): Promise<{ root: MeshRoot; created: boolean }> {
  const stored = (pem: MeshRootPem): MeshRoot => ({ ...meshRootFromPem(pem, `the stored mesh root CA (${storage.describe ?? "storage"})`), source: "generated" });
  const existing = await storage.load();
  if (existing) return { root: stored(existing), created: false };
  const root = await generateMeshRoot(options);
  try {
    await storage.save({ certPem: root.certPem, keyPem: root.keyPem });
  } catch (err) {
    const winner = await storage.load();
    if (!winner) throw err;
    return { root: stored(winner), created: false };
  }
  const winner = await storage.load();
  if (winner && !samePem(winner.certPem, root.certPem)) return { root: stored(winner), created: false };
  return { root, created: true };
}

/** The top (self-signed) root of a MeshRoot: what workloads trust (root-cert.pem). */
export function topRootPem(root: MeshRoot): string {
  return root.chainPems.length === 0 ? root.certPem : root.chainPems[root.chainPems.length - 1]!;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----(\r?\n)?/g;

/** Splits a PEM bundle into its certificates (each keeps its own line ending; one is added when missing). */
export function splitPemCertificates(bundle: string): string[] {
  return [...bundle.matchAll(PEM_CERT)].map((m) => (m[1] === undefined ? m[0] + "\n" : m[0]));
}

/**
 * A user-supplied CA (`mgmtServerCa.secretRef`), validated: one PEM certificate that is a CA
 * (basicConstraints CA:true) and valid now, an RSA private key that matches it, and — when the CA is
 * not self-signed — the chain above it (`chainPem`, nearest first, ending with the top root), each
 * certificate signed by the next. Throws MeshCaConfigError naming `what` and the fix.
 */
export function meshRootFromPem(pem: MeshRootPem, what = "the supplied mesh root CA (secretRef)", now = Date.now()): MeshRoot {
  const fail = (problem: string) => new MeshCaConfigError(`${what} is unusable: ${problem}`);
  const certs = splitPemCertificates(pem.certPem);
  if (certs.length !== 1) throw fail(`${MESH_ROOT_KEYS.cert} must hold exactly one PEM certificate (found ${String(certs.length)}); put the chain above it in ${MESH_ROOT_KEYS.chain}`);
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certs[0]!);
  } catch (err) {
    throw fail(`${MESH_ROOT_KEYS.cert} is not a parsable certificate (${err instanceof Error ? err.message : String(err)})`);
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(pem.keyPem);
  } catch {
    throw fail(`${MESH_ROOT_KEYS.key} is not a PEM private key`);
  }
  if (key.asymmetricKeyType !== "rsa") throw fail(`the key is ${String(key.asymmetricKeyType)}; the mesh CA signs with RSA keys only`);
  if (!createPublicKey(key).export({ type: "spki", format: "der" }).equals(cert.publicKey.export({ type: "spki", format: "der" }))) throw fail(`${MESH_ROOT_KEYS.key} does not belong to the certificate in ${MESH_ROOT_KEYS.cert}`);
  if (!cert.ca) throw fail("the certificate is not a CA (basicConstraints CA:true is required)");
  if (Date.parse(cert.validTo) <= now) throw fail(`the certificate expired at ${new Date(cert.validTo).toISOString()}; supply a current one`);
  if (Date.parse(cert.validFrom) > now + NOT_BEFORE_BACKDATE_MS) throw fail(`the certificate is not valid before ${new Date(cert.validFrom).toISOString()}`);
  const chain = pem.chainPem ? splitPemCertificates(pem.chainPem) : [];
  // Istio's cert-chain.pem starts with the CA itself: tolerate that layout.
  const bare = (p: string) => p.replace(/\s+/g, "");
  if (chain.length > 0 && bare(chain[0]!) === bare(certs[0]!)) chain.shift();
  const selfSigned = cert.checkIssued(cert) && cert.verify(cert.publicKey);
  if (!selfSigned && chain.length === 0) throw fail(`the certificate is not self-signed, so ${MESH_ROOT_KEYS.chain} must hold the certificates above it up to the root`);
  let below = cert;
  for (const [i, c] of chain.entries()) {
    let up: X509Certificate;
    try {
      up = new X509Certificate(c);
    } catch {
      throw fail(`certificate ${String(i + 1)} of ${MESH_ROOT_KEYS.chain} is not parsable`);
    }
    if (!below.checkIssued(up) || !below.verify(up.publicKey)) throw fail(`certificate ${String(i + 1)} of ${MESH_ROOT_KEYS.chain} did not issue the certificate below it (order: nearest first)`);
    below = up;
  }
  if (chain.length > 0 && !(below.checkIssued(below) && below.verify(below.publicKey))) throw fail(`the last certificate of ${MESH_ROOT_KEYS.chain} must be the self-signed root`);
  return { certPem: certs[0]!, keyPem: pem.keyPem, chainPems: chain, source: "secretRef" };
}

/**
 * A Secret's data (decoded strings) → MeshRootPem. Accepts Istio's plug-in CA layout (the format Gloo
 * documents for `mgmtServerCa.secretRef`: ca-cert.pem, ca-key.pem, root-cert.pem, cert-chain.pem) and
 * kubernetes.io/tls keys (tls.crt, tls.key). The chain above the CA is cert-chain.pem, else
 * root-cert.pem when it is not the CA itself.
 */
export function meshRootPemFromSecretData(data: Readonly<Record<string, string | undefined>>): MeshRootPem | undefined {
  const certPem = data[MESH_ROOT_KEYS.cert] ?? data["tls.crt"];
  const keyPem = data[MESH_ROOT_KEYS.key] ?? data["tls.key"];
  if (!certPem || !keyPem) return undefined;
  const rootPem = data["root-cert.pem"];
  const chainPem = data[MESH_ROOT_KEYS.chain] ?? (rootPem && !samePem(rootPem, certPem) ? rootPem : undefined);
  return { certPem, keyPem, ...(chainPem ? { chainPem } : {}) };
}

/** MeshRootPem → Secret data (decoded strings), for a storage callback that writes a Secret. */
export function meshRootPemToSecretData(root: MeshRootPem): Record<string, string> {
  return { [MESH_ROOT_KEYS.cert]: root.certPem, [MESH_ROOT_KEYS.key]: root.keyPem, ...(root.chainPem ? { [MESH_ROOT_KEYS.chain]: root.chainPem } : {}) };
}
