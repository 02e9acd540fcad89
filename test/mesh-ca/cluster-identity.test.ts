// The mesh CA signs only what the management plane assigned, and what it signs cannot reach beyond
// it. The outputs are the real translation of a repository (test/fixtures/translate/dest-root-trust:
// cluster3's agent reports cluster1's trust domain in its discovery); the requests go over the real
// relay (TLS on loopback, client certificates from registration) to the real mesh CA; certificates
// are checked with the openssl CLI.
import { generateKeyPairSync } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createIntermediateCsr } from "../../src/agent/index.js";
import { createMemoryLogger } from "../../src/core/index.js";
import { generateMeshRoot, type MeshRoot } from "../../src/mesh-ca/index.js";
import { createRelayIntermediateSigner, IntermediateSigningError, RELAY_METRICS, type RelayClientCredentials } from "../../src/relay/index.js";
import { loadCase, runCase } from "../translate/golden.js";
import { metricValue, newClient, testPki } from "../relay/helpers.js";
import { issueCert, opensslText, opensslVerify, opensslVerifyError, startMeshCaRelay } from "./helpers.js";

const CLUSTERS = ["cluster1", "cluster2", "cluster3"];
let root: MeshRoot;
let relay: Awaited<ReturnType<typeof startMeshCaRelay>>;
const outputs = new Map<string, readonly unknown[]>();
const creds = new Map<string, RelayClientCredentials>();
let diagnostics: string;

const keyPem = () => generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs1", format: "pem" }).toString();
const signer = (cluster: string) => createRelayIntermediateSigner({ address: relay.address, credentials: () => creds.get(cluster), rootCaPem: testPki().rootCaCertPem, logger: createMemoryLogger(`signer-${cluster}`).logger });
const ask = (cluster: string, csrPem: string, issuedCertificate = "") =>
  signer(cluster)
    .signIntermediate({ cluster, csrPem, hosts: [], ttlDays: 30, orgName: "gloo-mesh", rootTrustPolicy: "gloo-mesh/root-trust", ...(issuedCertificate ? { issuedCertificate } : {}) })
    .then(
      (ok) => ({ ok, err: undefined }),
      (err: unknown) => ({ ok: undefined, err: err as IntermediateSigningError }),
    );

const CLUSTER1_ISTIOD = "spiffe://cluster1.local/ns/istio-system/sa/istiod-1-29";

beforeAll(async () => {
  root = await generateMeshRoot({ keyBits: 2048 });
  const { result, diagnostics: d } = runCase(loadCase("dest-root-trust"));
  diagnostics = d;
  for (const c of CLUSTERS) outputs.set(c, result.clusters.get(c)?.resources ?? []);
  relay = await startMeshCaRelay(root, outputs, CLUSTERS);
  for (const c of CLUSTERS) {
    const client = newClient(relay.address, c, { token: relay.token });
    try {
      creds.set(c, await client.register());
    } finally {
      await client.close();
    }
  }
}, 60_000);

afterAll(async () => {
  await relay.server.stop();
});

describe("a cluster gets an intermediate only for the identity Git assigns it", () => {
  it("the translation issues from Git: cluster3 reporting cluster1's trust domain gets no IssuedCertificate, and an error says why", () => {
    const hostsOf = (c: string) => (outputs.get(c) as { kind: string; spec: { hosts: string[] } }[]).filter((r) => r.kind === "IssuedCertificate").flatMap((r) => r.spec.hosts);
    expect(hostsOf("cluster1")).toEqual([CLUSTER1_ISTIOD]);
    expect(hostsOf("cluster2")).toEqual(["spiffe://cluster2.local/ns/istio-system/sa/istiod-1-29"]);
    expect(hostsOf("cluster3")).toEqual([]);
    expect(diagnostics).toMatch(/error TRUST_DOMAIN_MISMATCH: cluster "cluster3" reports the trust domain "cluster1.local" .* but Git assigns it "cluster3"/);
  });

  it("cluster3, with its own valid client certificate, asking for cluster1's istiod identity is refused (PERMISSION_DENIED), logged and counted", async () => {
    const before = await metricValue(relay.registry, RELAY_METRICS.rejections, { reason: "intermediate_not_issued" });
    const csr = createIntermediateCsr(keyPem(), [CLUSTER1_ISTIOD], "gloo-mesh");
    // naming cluster1's IssuedCertificate does not help: the lookup is in the caller's own output
    for (const named of ["", "istio-system/istiod-1-29-istio-system-cluster1"]) {
      const { ok, err } = await ask("cluster3", csr, named);
      expect(ok).toBeUndefined();
      expect(err).toBeInstanceOf(IntermediateSigningError);
      expect(err!.grpcCode).toBe(grpc.status.PERMISSION_DENIED);
      expect(err!.message).toMatch(/cluster "cluster3" asked for .* but its output holds no matching IssuedCertificate/);
    }
    expect(await metricValue(relay.registry, RELAY_METRICS.rejections, { reason: "intermediate_not_issued" })).toBe(before + 2);
    expect(relay.mem.records.filter((r) => r.msg === "relay rejected a request" && r.fields.cluster === "cluster3" && r.fields.reason === "intermediate_not_issued")).toHaveLength(2);
  });

  it("cluster2, which holds its own IssuedCertificate, asking for cluster1's identity is refused (INVALID_ARGUMENT, san_mismatch), logged and counted", async () => {
    const before = await metricValue(relay.registry, RELAY_METRICS.rejections, { reason: "san_mismatch" });
    for (const sans of [[CLUSTER1_ISTIOD], ["spiffe://cluster2.local/ns/istio-system/sa/istiod-1-29", CLUSTER1_ISTIOD]]) {
      const { err } = await ask("cluster2", createIntermediateCsr(keyPem(), sans, "gloo-mesh"));
      expect(err!.grpcCode).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err!.message).toMatch(/allows exactly the URI SANs \[spiffe:\/\/cluster2\.local\/ns\/istio-system\/sa\/istiod-1-29\]/);
    }
    expect(await metricValue(relay.registry, RELAY_METRICS.rejections, { reason: "san_mismatch" })).toBe(before + 2);
    expect(relay.mem.records.some((r) => r.msg === "relay rejected a request" && r.fields.cluster === "cluster2" && r.fields.reason === "san_mismatch")).toBe(true);
  });

  it("an IssuedCertificate whose hosts leave its assigned trust domain is never signed (a steered rendering is refused, not trusted)", async () => {
    const own = (outputs.get("cluster2") as { kind: string; spec: Record<string, unknown> }[]).find((r) => r.kind === "IssuedCertificate")!;
    const steered = { ...own, spec: { ...own.spec, hosts: [CLUSTER1_ISTIOD] } };
    const saved = outputs.get("cluster2")!;
    outputs.set("cluster2", [steered]);
    try {
      const { err } = await ask("cluster2", createIntermediateCsr(keyPem(), [CLUSTER1_ISTIOD], "gloo-mesh"));
      expect(err!.grpcCode).toBe(grpc.status.PERMISSION_DENIED);
    } finally {
      outputs.set("cluster2", saved);
    }
  });
});

describe("issued intermediates are name-constrained to their trust domain, with pathlen 0", () => {
  let intermediate: { certPem: string; keyPem: string };

  beforeAll(async () => {
    const key = keyPem();
    const { ok } = await ask("cluster1", createIntermediateCsr(key, [CLUSTER1_ISTIOD], "gloo-mesh"));
    intermediate = { certPem: ok!.certPem, keyPem: key };
    expect(ok!.rootCertPem).toBe(root.certPem);
  });

  it("carries a critical nameConstraints extension permitting only URIs of cluster1.local, CA:TRUE pathlen:0, keyCertSign/cRLSign", () => {
    const text = opensslText(intermediate.certPem);
    expect(text).toMatch(/X509v3 Name Constraints: critical\s+Permitted:\s+URI:cluster1\.local\s/);
    expect(text).toMatch(/X509v3 Basic Constraints: critical\s+CA:TRUE, pathlen:0/);
    expect(text).toMatch(/X509v3 Key Usage: critical\s+Certificate Sign, CRL Sign/);
    expect(opensslVerify(root.certPem, intermediate.certPem)).toContain("OK");
  });

  it("a workload certificate of the assigned trust domain verifies (openssl verify -x509_strict)", () => {
    const leaf = issueCert(intermediate, { uri: "spiffe://cluster1.local/ns/x/sa/y" });
    expect(opensslVerify(root.certPem, leaf.certPem, [intermediate.certPem])).toMatch(/OK/);
  });

  it("a leaked intermediate cannot mint another trust domain's identity: permitted subtree violation", () => {
    for (const uri of ["spiffe://cluster2.local/ns/x/sa/y", "spiffe://cluster1.local.evil/ns/x/sa/y", "spiffe://sub.cluster1.local/ns/x/sa/y"]) {
      const leaf = issueCert(intermediate, { uri });
      expect(opensslVerifyError(root.certPem, leaf.certPem, [intermediate.certPem]), uri).toMatch(/permitted subtree violation/);
    }
  });

  it("nor a CA below it: path length constraint exceeded", () => {
    const sub = issueCert(intermediate, { uri: "spiffe://cluster1.local/ns/x/sa/sub-ca", ca: true, commonName: "sub CA" });
    const leaf = issueCert(sub, { uri: "spiffe://cluster1.local/ns/x/sa/y" });
    expect(opensslVerifyError(root.certPem, leaf.certPem, [intermediate.certPem, sub.certPem])).toMatch(/path length constraint exceeded/);
  });
});
