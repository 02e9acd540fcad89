/**
 * createMeshCa: signs Istio intermediate CA CSRs with the mesh root (DESIGN/gloo-v2-api §2.3 step 3).
 * The agent generated the key in its cluster; only the CSR arrives here. A CSR is signed when
 *  1. it parses and its self-signature verifies (else invalid_csr),
 *  2. the caller's cluster — the identity of its relay client certificate, passed in by the relay,
 *     never read from the message — has a matching IssuedCertificate in its output
 *     (`isIssuanceAllowed`; else not_issued),
 *  3. its URI SANs are exactly that IssuedCertificate's hosts and it asks for nothing else (else
 *     san_mismatch).
 * The IssuedCertificate is the server's own rendering of Git for that cluster (src/translate
 * root-trust.ts: trust domain assigned in Git, never the agent's report); the request can only pick
 * among the caller's own IssuedCertificates.
 * The certificate: CA:true with pathlen 0, key usage keyCertSign + cRLSign, URI SANs = the hosts,
 * a critical name constraint permitting only URIs of the assigned trust domain, O = the
 * IssuedCertificate's orgName, lifetime = its ttlDays (never beyond the root's expiry).
 * The root: the one the IssuedCertificate names (`ca`, resolved by `resolveRoot`); the trust bundle
 * returned as `rootCertPem` is that root followed by the passive roots (rotation).
 * `signIntermediate` has the relay's SignIntermediateFn shape: pass it as the relay server option.
 */
import type * as Forge from "node-forge";
import type { Logger } from "../core/index.js";
import type { IntermediateCsr, IntermediateSigningResult } from "../pki/index.js";
import { ISSUED_CERTIFICATE, type CaRef, type IsIssuanceAllowed } from "./issued.js";
import { topRootPem, type MeshRoot } from "./root.js";
import { forge, NOT_BEFORE_BACKDATE_MS, randomSerial, signNatively, subjectKeyIdBytes, uriNameConstraintsExtension } from "../pki/index.js";

/** The root for a CA reference (see createMeshRootResolver); throws MeshCaConfigError when unusable. */
export type ResolveMeshRoot = (ref: CaRef) => Promise<MeshRoot>;

export interface MeshCaOptions {
  /** Resolves the root an IssuedCertificate names (generated or secretRef). */
  readonly resolveRoot?: ResolveMeshRoot;
  /** One fixed root for every reference (tests, a single-root server); ignored when resolveRoot is given. */
  readonly root?: MeshRoot;
  /** The matching IssuedCertificate of the caller's output, or undefined (see findIssuedCertificate). */
  readonly isIssuanceAllowed: IsIssuanceAllowed;
  /** Smallest RSA modulus accepted in a CSR (default 2048). */
  readonly minKeyBits?: number;
  readonly logger: Logger;
  /** Clock (default Date.now). */
  readonly now?: () => number;
}

export interface MeshCa {
  /**
   * Signs an intermediate CSR for `cluster` (the caller's verified identity). Never throws for a bad
   * request: refusals are results. A function property (not a method), so it can be passed as the
   * relay server's `signIntermediate` option as is.
   */
  readonly signIntermediate: (cluster: string, request: IntermediateCsr) => Promise<IntermediateSigningResult>;
}

const DAY_MS = 86_400_000;

interface ParsedCsr {
  readonly csr: Forge.pki.CertificateSigningRequest;
  readonly sans: string[];
  readonly otherSans: string[];
}

function parseCsr(pem: string, minKeyBits: number): ParsedCsr | string {
  let csr: Forge.pki.CertificateSigningRequest;
  try {
    csr = forge.pki.certificationRequestFromPem(pem);
  } catch (err) {
    return `the CSR is not a PEM PKCS#10 request with an RSA key (${err instanceof Error ? err.message : String(err)})`;
  }
  let verified = false;
  try {
    verified = csr.publicKey !== null && csr.verify();
  } catch {
    verified = false;
  }
  if (!verified) return "the CSR's signature does not verify against its own public key";
  const bits = (csr.publicKey as Forge.pki.rsa.PublicKey).n.bitLength();
  if (bits < minKeyBits) return `the CSR's RSA key has ${String(bits)} bits; at least ${String(minKeyBits)} are required (intermediateCertOptions.rsaKeySizeBytes)`;
  const req = csr.getAttribute({ name: "extensionRequest" }) as { extensions?: { name?: string; altNames?: { type: number; value?: string; ip?: string }[] }[] } | null;
  const altNames = req?.extensions?.find((e) => e.name === "subjectAltName")?.altNames ?? [];
  const sans: string[] = [];
  const otherSans: string[] = [];
  for (const a of altNames) {
    if (a.type === 6 && typeof a.value === "string") sans.push(a.value);
    else otherSans.push(a.ip ?? a.value ?? `type ${String(a.type)}`);
  }
  return { csr, sans, otherSans };
}

const sameSet = (a: readonly string[], b: readonly string[]) => {
  const sa = new Set(a);
  return sa.size === new Set(b).size && a.length === b.length && b.every((x) => sa.has(x));
};

export function createMeshCa(options: MeshCaOptions): MeshCa {
  const log = options.logger;
  const now = options.now ?? Date.now;
  const minKeyBits = options.minKeyBits ?? 2048;
  const fixed = options.root;
  const resolveRoot: ResolveMeshRoot =
    options.resolveRoot ??
    (fixed
      ? () => Promise.resolve(fixed)
      : () => Promise.reject(new Error("createMeshCa needs resolveRoot or root")));

  async function signIntermediate(cluster: string, request: IntermediateCsr): Promise<IntermediateSigningResult> {
    const named = request.issuedCertificate !== "" ? `IssuedCertificate ${request.issuedCertificate}` : request.rootTrustPolicy !== "" ? `RootTrustPolicy ${request.rootTrustPolicy}` : "an IssuedCertificate";
    const parsed = parseCsr(request.csrPem, minKeyBits);
    if (typeof parsed === "string") return { ok: false, refusal: "invalid_csr", message: `${parsed}; the agent sends the PEM CSR of the intermediate key it generated` };
    const grant = await options.isIssuanceAllowed(cluster, { issuedCertificate: request.issuedCertificate, rootTrustPolicy: request.rootTrustPolicy, sans: parsed.sans });
    if (!grant) {
      return {
        ok: false,
        refusal: "not_issued",
        message: `cluster "${cluster}" asked for ${named} but its output holds no matching ${ISSUED_CERTIFICATE.kind}: only meshes selected by a RootTrustPolicy (applyToMeshes) get an intermediate CA; check the policy, or wait until the cluster has received its current output`,
      };
    }
    if (grant.cluster !== cluster) {
      // Never happens with the server's own output (it is looked up by the caller's cluster); refuse anyway.
      return { ok: false, refusal: "not_issued", message: `${ISSUED_CERTIFICATE.kind} ${grant.name} was rendered for cluster "${grant.cluster}", not for the caller "${cluster}"` };
    }
    if (parsed.otherSans.length > 0 || !sameSet(parsed.sans, grant.hosts)) {
      return {
        ok: false,
        refusal: "san_mismatch",
        message: `the CSR asks for SANs [${[...parsed.sans, ...parsed.otherSans].join(", ")}] but ${ISSUED_CERTIFICATE.kind} ${grant.name} allows exactly the URI SANs [${grant.hosts.join(", ")}] (istiod's SPIFFE ids); the agent must build the CSR from the IssuedCertificate's hosts`,
      };
    }
    const root = await resolveRoot(grant.ca ?? { generated: true });
    const passive = await Promise.all(grant.passiveCas.map((ref) => resolveRoot(ref)));
    const signingCert = forge.pki.certificateFromPem(root.certPem);
    const signingNotAfterMs = signingCert.validity.notAfter.getTime();
    const chainPems = root.chainPems.length === 0 ? [] : [root.certPem, ...root.chainPems.slice(0, -1)];
    // Trust bundle: the signing root first, then the passive roots (each once).
    const bundle: string[] = [];
    for (const pem of [topRootPem(root), ...passive.map(topRootPem)]) if (!bundle.some((b) => sameCert(b, pem))) bundle.push(/\n$/.test(pem) ? pem : pem + "\n");
    const t = now();
    const notAfterMs = Math.min(Math.floor((t + grant.ttlDays * DAY_MS) / 1000) * 1000, signingNotAfterMs);
    if (notAfterMs <= t) {
      log.error("the mesh root CA has expired; cannot sign intermediates", { notAfter: new Date(signingNotAfterMs).toISOString() });
      throw new Error("the mesh root CA has expired: rotate the root (RootTrustPolicy mgmtServerCa)");
    }
    const cert = forge.pki.createCertificate();
    cert.publicKey = parsed.csr.publicKey!;
    cert.serialNumber = randomSerial();
    cert.validity.notBefore = new Date(t - NOT_BEFORE_BACKDATE_MS);
    cert.validity.notAfter = new Date(notAfterMs);
    cert.setSubject([
      { name: "organizationName", value: grant.orgName },
      { name: "commonName", value: `intermediate CA ${cluster}` },
    ]);
    cert.setIssuer(signingCert.subject.attributes);
    cert.setExtensions([
      { name: "basicConstraints", cA: true, pathLenConstraint: 0, critical: true },
      { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
      { name: "subjectAltName", altNames: grant.hosts.map((h) => ({ type: 6, value: h })) },
      uriNameConstraintsExtension([grant.trustDomain]),
      { name: "subjectKeyIdentifier" },
      { name: "authorityKeyIdentifier", keyIdentifier: subjectKeyIdBytes(signingCert) },
    ]);
    signNatively(cert, root.keyPem);
    log.info("signed an Istio intermediate CA", { cluster, issuedCertificate: grant.name, hosts: grant.hosts, trustDomain: grant.trustDomain, root: root.source, trustBundle: bundle.length, notAfter: new Date(notAfterMs).toISOString() });
    return { ok: true, certPem: forge.pki.certificateToPem(cert), chainPems, rootCertPem: bundle.join(""), notAfterMs };
  }

  return { signIntermediate };
}

const sameCert = (a: string, b: string) => a.replace(/\s+/g, "") === b.replace(/\s+/g, "");
