/**
 * The two sides of intermediate-CA signing, independent of the transport that carries them:
 * the agent asks an IntermediateSigner (the relay's createRelayIntermediateSigner is the real one),
 * the server answers with a SignIntermediateFn (src/mesh-ca createMeshCa().signIntermediate).
 */

// --- the server side: what the relay hands to the mesh CA -----------------------------------

/** What an agent asked SignIntermediate to sign (the cluster is passed separately, from its certificate). */
export interface IntermediateCsr {
  /** PEM PKCS#10 CSR of the intermediate CA; the key stays in the workload cluster. */
  readonly csrPem: string;
  /** "<namespace>/<name>" of the IssuedCertificate, or "" when the agent did not name it. */
  readonly issuedCertificate: string;
  /** "<namespace>/<name>" of the RootTrustPolicy, or "" when the agent did not name it. */
  readonly rootTrustPolicy: string;
}

/**
 * Why an intermediate CSR was not signed; the relay maps each to a gRPC status once:
 * not_issued → PERMISSION_DENIED, invalid_csr / san_mismatch → INVALID_ARGUMENT.
 */
export type IntermediateRefusal = "not_issued" | "invalid_csr" | "san_mismatch";

/** The answer of a mesh CA to an intermediate CSR: signed material, or a refusal with a message for the agent's operator. */
export type IntermediateSigningResult =
  | {
      readonly ok: true;
      readonly certPem: string;
      /** Certificates between the intermediate and the root, intermediate-most first (may be empty). */
      readonly chainPems: readonly string[];
      readonly rootCertPem: string;
      readonly notAfterMs: number;
    }
  | { readonly ok: false; readonly refusal: IntermediateRefusal; readonly message: string };

/** Signs an intermediate CSR for `cluster` (the verified identity of the caller); src/mesh-ca createMeshCa().signIntermediate fits. */
export type SignIntermediateFn = (cluster: string, request: IntermediateCsr) => Promise<IntermediateSigningResult>;

// --- the agent side: what cacerts asks of its signer ------------------------------------------

export interface IntermediateSigningRequest {
  readonly cluster: string;
  /** PKCS#10 PEM; the key stays with the agent. */
  readonly csrPem: string;
  /** SPIFFE ids of istiod (URI SANs). */
  readonly hosts: readonly string[];
  readonly ttlDays: number;
  readonly orgName: string;
  /** "<namespace>/<name>" of the RootTrustPolicy that asked for it. */
  readonly rootTrustPolicy: string;
  /** "<namespace>/<name>" of the IssuedCertificate, when the caller knows it. */
  readonly issuedCertificate?: string;
}

export interface SignedIntermediate {
  readonly certPem: string;
  /** Certificates between the intermediate and the root (may be empty), PEM, leaf-most first. */
  readonly chainPems: readonly string[];
  readonly rootCertPem: string;
}

/** Signs intermediate CA CSRs (the management server's root CA, reached through the relay). */
export interface IntermediateSigner {
  signIntermediate(request: IntermediateSigningRequest): Promise<SignedIntermediate>;
}
