/**
 * A mesh root CA that signs Istio intermediate CA CSRs in-process, for the demo only.
 *
 * GAP: the relay protocol (gitmesh.relay.v1) has no RPC yet for an agent to have its intermediate
 * CSR (from a RootTrustPolicy's IssuedCertificate) signed by the management server; a real agent
 * without a signer NACKs those requests. The demo runs its agents in-process and hands them this
 * signer so the example's RootTrustPolicy converges. The private key of each intermediate still
 * never leaves its cluster: only the CSR is signed here.
 */
import { createRequire } from "node:module";
import type * as Forge from "node-forge";
import type { IntermediateSigner } from "../agent/index.js";
import { createSelfSignedCa } from "../relay/index.js";

const forge = createRequire(import.meta.url)("node-forge") as typeof Forge;

export function createInProcessMeshCa(commonName = "gitmesh-demo-mesh-root"): IntermediateSigner & { readonly rootCertPem: string } {
  const root = createSelfSignedCa({ commonName });
  const rootCert = forge.pki.certificateFromPem(root.certPem);
  const rootKey = forge.pki.privateKeyFromPem(root.keyPem);
  let serial = 1;
  return {
    rootCertPem: root.certPem,
    signIntermediate(req) {
      const csr = forge.pki.certificationRequestFromPem(req.csrPem);
      if (!csr.verify()) return Promise.reject(new Error("the CSR signature does not verify"));
      const cert = forge.pki.createCertificate();
      cert.publicKey = csr.publicKey!;
      cert.serialNumber = (serial++).toString(16).padStart(2, "0");
      cert.validity.notBefore = new Date(Date.now() - 60_000);
      cert.validity.notAfter = new Date(Date.now() + Math.max(1, req.ttlDays) * 86_400_000);
      cert.setSubject(csr.subject.attributes);
      cert.setIssuer(rootCert.subject.attributes);
      cert.setExtensions([
        { name: "basicConstraints", cA: true, critical: true },
        { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
        { name: "subjectAltName", altNames: req.hosts.map((h) => ({ type: 6, value: h })) },
      ]);
      cert.sign(rootKey, forge.md.sha256.create());
      return Promise.resolve({ certPem: forge.pki.certificateToPem(cert), chainPems: [], rootCertPem: root.certPem });
    },
  };
}
