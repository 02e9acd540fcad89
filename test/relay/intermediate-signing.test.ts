// Intermediate signing on its own (real mTLS on 127.0.0.1:0): the caller's cluster comes from its
// certificate, the mesh CA's answer and refusals travel back as statuses. The mesh CA is the part's own
// seam (a SignIntermediateFn); src/mesh-ca's tests sign for real through the whole server.
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import type { IntermediateCsr, IntermediateSigningResult } from "../../src/pki/index.js";
import { RELAY_METRICS } from "../../src/relay/index.js";
import type { SignIntermediateRequest, SignIntermediateResponse } from "../../src/relay/gen/gitmesh/relay/v1/relay.js";
import { createIntermediateSigning } from "../../src/relay/intermediate-signing.js";
import { certFor, metricValue, rejectionsLogged, serveParts, useRelayCleanup } from "./helpers.js";

const { defer, rawClient } = useRelayCleanup();

async function setUp(answer?: (cluster: string, req: IntermediateCsr) => IntermediateSigningResult) {
  const asked: { cluster: string; req: IntermediateCsr }[] = [];
  const signIntermediate = answer && ((cluster: string, req: IntermediateCsr) => (asked.push({ cluster, req }), Promise.resolve(answer(cluster, req))));
  const s = await serveParts((deps) => createIntermediateSigning({ ...deps, signIntermediate }), { defer });
  const sign = (cluster: string, req: Partial<SignIntermediateRequest>) =>
    new Promise<SignIntermediateResponse>((resolve, reject) =>
      rawClient(s.address, certFor(cluster)).signIntermediate({ cluster: "", csrPem: "CSR", issuedCertificate: "istio-system/ic", rootTrustPolicy: "gitmesh/root", ...req }, (err, res) => (err ? reject(err) : resolve(res))),
    );
  return { ...s, sign, asked };
}

const signed: IntermediateSigningResult = { ok: true, certPem: "INTERMEDIATE", chainPems: ["MIDDLE"], rootCertPem: "ROOT", notAfterMs: 42 };

describe("intermediate signing", () => {
  it("hands the CSR to the mesh CA with the cluster of the caller's certificate and answers its material", async () => {
    const s = await setUp(() => signed);
    expect(await s.sign("beta", {})).toEqual({ certificatePem: "INTERMEDIATE", chainPem: ["MIDDLE"], rootCertPem: "ROOT", notAfterMs: 42 });
    expect(s.asked).toEqual([{ cluster: "beta", req: { csrPem: "CSR", issuedCertificate: "istio-system/ic", rootTrustPolicy: "gitmesh/root" } }]);
    expect(await metricValue(s.registry, RELAY_METRICS.certificatesIssued, { kind: "intermediate" })).toBe(1);
  });

  it("maps the mesh CA's refusals to statuses; an empty CSR or another cluster's name never reaches it", async () => {
    const s = await setUp((_c, req) => (req.issuedCertificate === "istio-system/other" ? { ok: false, refusal: "not_issued", message: "not yours" } : { ok: false, refusal: "san_mismatch", message: "wrong SANs" }));
    await expect(s.sign("alpha", { issuedCertificate: "istio-system/other" })).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED, details: "not yours" });
    await expect(s.sign("alpha", {})).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: "wrong SANs" });
    await expect(s.sign("alpha", { csrPem: "  " })).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringMatching(/carries no CSR/) });
    await expect(s.sign("alpha", { cluster: "beta" })).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED, details: expect.stringMatching(/names cluster "beta"/) });
    expect(s.asked).toHaveLength(2);
    expect(rejectionsLogged(s, "intermediate_not_issued")[0]?.fields).toMatchObject({ cluster: "alpha", issuedCertificate: "istio-system/other", rootTrustPolicy: "gitmesh/root" });
  });

  it("without a mesh CA answers UNIMPLEMENTED saying how to configure one", async () => {
    const s = await setUp();
    await expect(s.sign("alpha", {})).rejects.toMatchObject({ code: grpc.status.UNIMPLEMENTED, details: expect.stringMatching(/no mesh CA configured/) });
    expect(rejectionsLogged(s, "mesh_ca_not_configured")).toHaveLength(1);
  });
});
