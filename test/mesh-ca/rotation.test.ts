// Rotation of the mesh root, as src/mesh-ca/README.md documents it, driven by the RootTrustPolicy in
// Git (its IssuedCertificate is what changes): (1) the new root is added to the trust bundle
// (passiveCertificateAuthorities), (2) it becomes the signing root with the old one passive, (3) the
// old one is removed. At each step the agent (createCacerts over the real relay) re-issues on its own
// and writes the bundle; the secretRef root is read from a Kubernetes Secret (emulator) by the
// server's reader, the generated root from shared storage.
import { X509Certificate } from "node:crypto";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgentMetrics, createCacerts, createKubeClient, withFieldOwner, type KubeObject } from "../../src/agent/index.js";
import { createMemoryLogger } from "../../src/core/index.js";
import { createMeshRootResolver, generateMeshRoot, type MeshRoot, type MeshRootPem } from "../../src/mesh-ca/index.js";
import { createRelayIntermediateSigner, type RelayClientCredentials } from "../../src/relay/index.js";
import { createKubernetesCaSecretReader } from "../../src/server/index.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { newClient, testPki } from "../relay/helpers.js";
import { issueCert, issuedCertificate, opensslVerify, opensslVerifyError, startMeshCaRelay } from "./helpers.js";

let kube: StartedKube;
let oldRoot: MeshRoot;
let newRoot: MeshRoot;
let relay: Awaited<ReturnType<typeof startMeshCaRelay>>;
let creds: RelayClientCredentials;
const outputs = new Map<string, readonly unknown[]>();

const b64 = (s: string) => Buffer.from(s).toString("base64");
const NEW_ROOT_REF = { secretRef: { name: "mesh-root-2027", namespace: "gloo-mesh" } };
const PEM = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The IssuedCertificate the translation renders for alpha at a step of the rotation. */
function step(ca: unknown, passiveCas: unknown[]) {
  const base = issuedCertificate("alpha", { trustDomain: "alpha" });
  return { ...base, spec: { ...base.spec, ca, ...(passiveCas.length > 0 ? { passiveCas } : {}) } };
}

const cacerts = () => {
  const client = createKubeClient(kube.newKubeConfig());
  const signer = createRelayIntermediateSigner({ address: relay.address, credentials: () => creds, rootCaPem: testPki().rootCaCertPem, logger: createMemoryLogger("signer").logger });
  return createCacerts({ cluster: "alpha", reader: client, writer: withFieldOwner(client), signer, metrics: createAgentMetrics(new Registry()), logger: createMemoryLogger("cacerts").logger });
};
const secret = () => {
  const s = kube.emulator.get("v1", "Secret", "istio-system", "cacerts")!;
  return Object.fromEntries(Object.entries(s.data as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, "base64").toString()]));
};
const certsIn = (bundle: string) => [...bundle.matchAll(PEM)].map((m) => new X509Certificate(m[0]));
const same = (a: X509Certificate, pem: string) => a.raw.equals(new X509Certificate(pem).raw);

/** Applies one step: the agent reconciles the new IssuedCertificate; returns the written cacerts. */
async function apply(issued: ReturnType<typeof step>) {
  outputs.set("alpha", [issued]);
  expect(await cacerts().reconcile([issued as unknown as KubeObject])).toEqual([]);
  return secret();
}

beforeAll(async () => {
  [kube, oldRoot, newRoot] = await Promise.all([
    startKube({ seed: [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "istio-system" } }, { apiVersion: "v1", kind: "Namespace", metadata: { name: "gloo-mesh" } }] }),
    generateMeshRoot({ keyBits: 2048, commonName: "mesh root 2026" }),
    generateMeshRoot({ keyBits: 2048, commonName: "mesh root 2027" }),
  ]);
  // The new root, supplied by the operator as Gloo documents it (Istio plug-in CA keys).
  kube.emulator.seed([{ apiVersion: "v1", kind: "Secret", metadata: { name: "mesh-root-2027", namespace: "gloo-mesh" }, type: "Opaque", data: { "ca-cert.pem": b64(newRoot.certPem), "ca-key.pem": b64(newRoot.keyPem), "root-cert.pem": b64(newRoot.certPem) } }]);
  // The generated root is the old one, in shared storage.
  let stored: MeshRootPem | undefined = { certPem: oldRoot.certPem, keyPem: oldRoot.keyPem };
  const resolveRoot = createMeshRootResolver({
    generated: { load: () => Promise.resolve(stored), save: (r) => Promise.resolve(void (stored ??= r)) },
    readSecret: createKubernetesCaSecretReader(kube.newKubeConfig()),
    logger: createMemoryLogger("roots").logger,
  });
  relay = await startMeshCaRelay(resolveRoot, outputs, ["alpha"]);
  const client = newClient(relay.address, "alpha", { token: relay.token });
  creds = await client.register();
  await client.close();
}, 60_000);

afterAll(async () => {
  await relay.server.stop();
  await kube.stop();
});

describe("rotating the mesh root through the RootTrustPolicy", () => {
  const workloadOf = (data: Record<string, string>) => issueCert({ certPem: data["ca-cert.pem"]!, keyPem: data["ca-key.pem"]! }, { uri: "spiffe://alpha/ns/bookinfo/sa/reviews" });
  let before: Record<string, string>;
  let step1: Record<string, string>;

  it("0. generated root: cacerts trusts only it", async () => {
    before = await apply(step({ generated: {} }, []));
    const roots = certsIn(before["root-cert.pem"]!);
    expect(roots).toHaveLength(1);
    expect(same(roots[0]!, oldRoot.certPem)).toBe(true);
  });

  it("1. the new root is added to the trust bundle (passive): re-issued by the old root, root-cert.pem holds both", async () => {
    const data = await apply(step({ generated: {} }, [NEW_ROOT_REF]));
    expect(data["ca-cert.pem"]).not.toBe(before["ca-cert.pem"]);
    const roots = certsIn(data["root-cert.pem"]!);
    expect(roots.map((r) => r.subject)).toEqual(["O=gloo-mesh\nCN=mesh root 2026", "O=gloo-mesh\nCN=mesh root 2027"]);
    expect(opensslVerify(oldRoot.certPem, data["ca-cert.pem"]!)).toContain("OK");
    // cert-chain.pem ends with the root that issued it, not with the whole bundle
    const chain = certsIn(data["cert-chain.pem"]!);
    expect(chain).toHaveLength(2);
    expect(same(chain[1]!, oldRoot.certPem)).toBe(true);
    before = data;
    step1 = data;
  });

  it("2. the new root signs, the old one stays trusted: workloads of both generations verify against the bundle", async () => {
    const oldGeneration = workloadOf(before);
    const data = await apply(step(NEW_ROOT_REF, [{ generated: {} }]));
    const roots = certsIn(data["root-cert.pem"]!);
    expect(roots.map((r) => r.subject)).toEqual(["O=gloo-mesh\nCN=mesh root 2027", "O=gloo-mesh\nCN=mesh root 2026"]);
    expect(opensslVerify(newRoot.certPem, data["ca-cert.pem"]!)).toContain("OK");
    expect(opensslVerifyError(oldRoot.certPem, data["ca-cert.pem"]!)).toMatch(/unable to get local issuer certificate/);
    const newGeneration = workloadOf(data);
    // a proxy trusting the bundle accepts both generations during the rotation
    expect(opensslVerify(data["root-cert.pem"]!, newGeneration.certPem, [data["ca-cert.pem"]!])).toContain("OK");
    expect(opensslVerify(data["root-cert.pem"]!, oldGeneration.certPem, [before["ca-cert.pem"]!])).toContain("OK");
    before = data;
  });

  it("3. the old root is removed: re-issued, root-cert.pem holds only the new root, the old generation no longer verifies", async () => {
    const underNewRoot = workloadOf(before);
    const underOldRoot = workloadOf(step1);
    const data = await apply(step(NEW_ROOT_REF, []));
    const roots = certsIn(data["root-cert.pem"]!);
    expect(roots).toHaveLength(1);
    expect(same(roots[0]!, newRoot.certPem)).toBe(true);
    expect(data["ca-cert.pem"]).not.toBe(before["ca-cert.pem"]);
    expect(opensslVerify(data["root-cert.pem"]!, underNewRoot.certPem, [before["ca-cert.pem"]!])).toContain("OK");
    expect(opensslVerifyError(data["root-cert.pem"]!, underOldRoot.certPem, [step1["ca-cert.pem"]!])).toMatch(/unable to get (local )?issuer certificate/);
    // nothing changes: the secret is current and left alone
    const again = await apply(step(NEW_ROOT_REF, []));
    expect(again["ca-cert.pem"]).toBe(data["ca-cert.pem"]);
  });

  it("a secretRef that does not exist is an error for a human, and nothing is written", async () => {
    const missing = step({ secretRef: { name: "no-such-root", namespace: "gloo-mesh" } }, []);
    outputs.set("alpha", [missing]);
    const errors = await cacerts().reconcile([missing]);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).toMatch(/gloo-mesh\/no-such-root does not exist/);
  });
});
