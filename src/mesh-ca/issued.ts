/**
 * Which IssuedCertificate (internal.gitmesh.io/v1, rendered by src/translate from a RootTrustPolicy
 * into a cluster's output) an intermediate CSR is for. The mesh CA asks the server through
 * `isIssuanceAllowed(cluster, request)`; `findIssuedCertificate` is the usual implementation over the
 * cluster's current output.
 */

export const ISSUED_CERTIFICATE = { apiVersion: "internal.gitmesh.io/v1", kind: "IssuedCertificate" } as const;

/** What the mesh CA knows about a request when it asks whether it may sign it. */
export interface IssuanceRequest {
  /** "<namespace>/<name>" of the IssuedCertificate as the agent named it, or "". */
  readonly issuedCertificate: string;
  /** "<namespace>/<name>" of the RootTrustPolicy as the agent named it, or "". */
  readonly rootTrustPolicy: string;
  /** URI SANs of the (signature-verified) CSR. */
  readonly sans: readonly string[];
}

/** A root the IssuedCertificate names (RootTrustPolicy `mgmtServerCa` / `passiveCertificateAuthorities`). */
export type CaRef = { readonly generated: true } | { readonly secretRef: { readonly name: string; readonly namespace: string } };

/** The IssuedCertificate a request is for: its hosts are the only SANs allowed; lifetime and O come from it. */
export interface IssuanceGrant {
  /** "<namespace>/<name>" of the IssuedCertificate (for logs). */
  readonly name: string;
  /** The cluster the management plane rendered it for (spec.mesh.cluster). */
  readonly cluster: string;
  /** The trust domain Git assigns to that cluster (spec.mesh.trustDomain): every host is in it, and the intermediate is name-constrained to it. */
  readonly trustDomain: string;
  /** SPIFFE ids of istiod: the CSR's URI SANs must be exactly these. */
  readonly hosts: readonly string[];
  /** Lifetime of the intermediate (intermediateCertOptions.ttlDays). */
  readonly ttlDays: number;
  /** Subject O of the intermediate (intermediateCertOptions.orgName). */
  readonly orgName: string;
  /** The root the policy asks for (`mgmtServerCa`): generated, or the Secret it names (absent: generated). */
  readonly ca?: CaRef;
  /** Roots trusted next to it during a rotation (`passiveCertificateAuthorities`): in the trust bundle, never used to sign. */
  readonly passiveCas: readonly CaRef[];
}

/**
 * Answers whether `cluster` (the verified identity of the caller) may have the request signed: the
 * matching IssuedCertificate of its output, or undefined when it has none (→ PERMISSION_DENIED).
 */
export type IsIssuanceAllowed = (cluster: string, request: IssuanceRequest) => IssuanceGrant | undefined | Promise<IssuanceGrant | undefined>;

const rec = (v: unknown): Record<string, unknown> => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const str = (v: unknown): string => (typeof v === "string" ? v : "");

const caRefOf = (v: unknown): CaRef | undefined => {
  const ca = rec(v);
  if (ca.secretRef !== undefined) {
    const ref = rec(ca.secretRef);
    return { secretRef: { name: str(ref.name), namespace: str(ref.namespace) } };
  }
  return ca.generated !== undefined ? { generated: true } : undefined;
};

/** SPIFFE trust domain (spiffe-id spec §2.1): what the intermediate's name constraint permits. */
const TRUST_DOMAIN_RE = /^[a-z0-9._-]{1,255}$/;

/** The trust domain of a SPIFFE id, or undefined when it is not one. */
export function trustDomainOfSpiffeId(id: string): string | undefined {
  const m = /^spiffe:\/\/([^/]+)(\/.*)?$/.exec(id);
  return m && TRUST_DOMAIN_RE.test(m[1]!) ? m[1] : undefined;
}

/**
 * An output object as an IssuanceGrant, or undefined when it is not a well-formed IssuedCertificate:
 * among others every host must be a SPIFFE id in the assigned trust domain (spec.mesh.trustDomain),
 * so that the name constraint and the SANs can never disagree.
 */
export function issuanceGrantOf(obj: unknown): IssuanceGrant | undefined {
  const o = rec(obj);
  if (o.apiVersion !== ISSUED_CERTIFICATE.apiVersion || o.kind !== ISSUED_CERTIFICATE.kind) return undefined;
  const meta = rec(o.metadata);
  const spec = rec(o.spec);
  const hosts = Array.isArray(spec.hosts) ? spec.hosts.filter((h): h is string => typeof h === "string") : [];
  const opts = rec(spec.certOptions);
  const ttlDays = typeof opts.ttlDays === "number" && opts.ttlDays >= 1 ? opts.ttlDays : undefined;
  const orgName = str(opts.orgName);
  const mesh = rec(spec.mesh);
  const trustDomain = str(mesh.trustDomain);
  const cluster = str(mesh.cluster);
  if (!str(meta.name) || hosts.length === 0 || ttlDays === undefined || !orgName || !cluster || !TRUST_DOMAIN_RE.test(trustDomain)) return undefined;
  if (!hosts.every((h) => trustDomainOfSpiffeId(h) === trustDomain)) return undefined;
  const ca = caRefOf(spec.ca);
  const passiveCas = (Array.isArray(spec.passiveCas) ? spec.passiveCas : []).map(caRefOf).filter((r): r is CaRef => r !== undefined);
  return { name: `${str(meta.namespace)}/${str(meta.name)}`, cluster, trustDomain, hosts, ttlDays, orgName, ...(ca ? { ca } : {}), passiveCas };
}

const rtpOf = (obj: unknown) => {
  const r = rec(rec(rec(obj).spec).rootTrustPolicy);
  return `${str(r.namespace)}/${str(r.name)}`;
};
const sameSet = (a: readonly string[], b: readonly string[]) => {
  const sa = new Set(a);
  return sa.size === new Set(b).size && b.every((x) => sa.has(x));
};

/**
 * The IssuedCertificate of a cluster's output that a request is for. Candidates: the one the agent
 * named, else those of the RootTrustPolicy it named, else every IssuedCertificate of the output. Among
 * the candidates, the one whose hosts equal the CSR's SANs; failing that the first by name (the mesh
 * CA then refuses the SAN mismatch with INVALID_ARGUMENT). No candidate → undefined (PERMISSION_DENIED).
 */
export function findIssuedCertificate(output: Iterable<unknown>, request: IssuanceRequest): IssuanceGrant | undefined {
  const candidates: IssuanceGrant[] = [];
  for (const obj of output) {
    const grant = issuanceGrantOf(obj);
    if (!grant) continue;
    if (request.issuedCertificate !== "" && grant.name !== request.issuedCertificate) continue;
    if (request.rootTrustPolicy !== "" && rtpOf(obj) !== request.rootTrustPolicy) continue;
    candidates.push(grant);
  }
  candidates.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return candidates.find((g) => sameSet(g.hosts, request.sans)) ?? candidates[0];
}
