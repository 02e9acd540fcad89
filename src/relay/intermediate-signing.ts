/**
 * Istio intermediate CAs for the mesh (Relay.SignIntermediate, mTLS; README "Protocol flow" 4). The agent
 * generates the intermediate key in its cluster and sends only a PKCS#10 CSR; the caller's cluster (from
 * its certificate, peer-gate.ts) and the CSR go to `signIntermediate` (src/mesh-ca
 * `createMeshCa(...).signIntermediate`), which decides what that cluster may get. Its refusals become
 * relay refusals. Without the option: UNIMPLEMENTED (`mesh_ca_not_configured`).
 *
 * State: none.
 */
import * as grpc from "@grpc/grpc-js";
import type { Logger } from "../core/index.js";
import type { SignIntermediateFn } from "../pki/index.js";
import { REJECTION_REASONS } from "./constants.js";
import { RelayRejectedError } from "./errors.js";
import type { SignIntermediateRequest, SignIntermediateResponse } from "./gen/gitmesh/relay/v1/relay.js";
import type { RelayMetrics } from "./metrics.js";
import type { PeerGate } from "./peer-gate.js";
import { assertDecoded, checkNamedCluster, type Malformed, type Refusals, type RequestFields } from "./refusals.js";
import type { RelayHandlers } from "./transport.js";

export interface IntermediateSigningOptions {
  /** Signs with the mesh root CA (src/mesh-ca). Absent: every request is refused with UNIMPLEMENTED. */
  readonly signIntermediate?: SignIntermediateFn | undefined;
  readonly gate: Pick<PeerGate, "identify">;
  readonly refusals: Pick<Refusals, "unary">;
  readonly metrics: Pick<RelayMetrics, "certificatesIssued">;
  readonly logger: Logger;
}

export type IntermediateSigning = Pick<RelayHandlers, "signIntermediate">;

/** The mesh CA's refusals, as relay refusals. */
const REFUSALS = {
  not_issued: { reason: REJECTION_REASONS.intermediateNotIssued, code: grpc.status.PERMISSION_DENIED },
  invalid_csr: { reason: REJECTION_REASONS.invalidCsr, code: grpc.status.INVALID_ARGUMENT },
  san_mismatch: { reason: REJECTION_REASONS.sanMismatch, code: grpc.status.INVALID_ARGUMENT },
} as const;

const NOT_CONFIGURED =
  "this management server has no mesh CA configured, so it cannot sign Istio intermediate CAs for RootTrustPolicies; configure the mesh root CA on the server (src/mesh-ca), or remove the RootTrustPolicy";

export function createIntermediateSigning(options: IntermediateSigningOptions): IntermediateSigning {
  async function sign(call: grpc.ServerUnaryCall<SignIntermediateRequest | Malformed, SignIntermediateResponse>, fields: RequestFields): Promise<SignIntermediateResponse> {
    const { cluster } = await options.gate.identify(call, fields);
    const req = call.request;
    assertDecoded(req, "SignIntermediateRequest");
    checkNamedCluster(cluster, req.cluster);
    fields.issuedCertificate = req.issuedCertificate;
    fields.rootTrustPolicy = req.rootTrustPolicy;
    const signIntermediate = options.signIntermediate;
    if (!signIntermediate) throw new RelayRejectedError(REJECTION_REASONS.meshCaNotConfigured, grpc.status.UNIMPLEMENTED, NOT_CONFIGURED);
    if (req.csrPem.trim() === "") {
      throw new RelayRejectedError(REJECTION_REASONS.invalidCsr, grpc.status.INVALID_ARGUMENT, "the request carries no CSR; send the intermediate CA's PEM PKCS#10 CSR in csr_pem");
    }
    const result = await signIntermediate(cluster, { csrPem: req.csrPem, issuedCertificate: req.issuedCertificate, rootTrustPolicy: req.rootTrustPolicy });
    if (!result.ok) {
      const r = REFUSALS[result.refusal];
      throw new RelayRejectedError(r.reason, r.code, result.message);
    }
    options.metrics.certificatesIssued.inc({ kind: "intermediate" });
    options.logger.info("signed an Istio intermediate CA", { ...fields, notAfter: new Date(result.notAfterMs).toISOString() });
    return { certificatePem: result.certPem, chainPem: [...result.chainPems], rootCertPem: result.rootCertPem, notAfterMs: result.notAfterMs };
  }

  return { signIntermediate: options.refusals.unary("SignIntermediate", sign) };
}
