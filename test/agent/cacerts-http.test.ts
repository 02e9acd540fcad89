// Istio cacerts from a signed CSR (the key stays in the cluster), and the HTTP endpoint.
import { createPublicKey, X509Certificate } from "node:crypto";
import { createRequire } from "node:module";
import type * as Forge from "node-forge";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createAgentHttp, createCacerts, parseAgentConfig, type IntermediateSigner, type IntermediateSigningRequest, type KubeObject } from "../../src/agent/index.js";
import { createSelfSignedCa } from "../../src/relay/index.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { parts } from "./helpers.js";

const forge = createRequire(import.meta.url)("node-forge") as typeof Forge;

/** The management side of the (not yet existing) relay RPC: signs the CSR with a root CA. */
function rootSigner(): IntermediateSigner & { requests: IntermediateSigningRequest[]; rootPem: string } {
  const root = createSelfSignedCa({ commonName: "mesh-root" });
  const requests: IntermediateSigningRequest[] = [];
  return {
    requests,
    rootPem: root.certPem,
    signIntermediate(req) {
      requests.push(req);
      const csr = forge.pki.certificationRequestFromPem(req.csrPem);
      if (!csr.verify()) throw new Error("bad CSR");
      const cert = forge.pki.createCertificate();
      cert.publicKey = csr.publicKey!;
      cert.serialNumber = "01";
      cert.validity.notBefore = new Date(Date.now() - 60_000);
      cert.validity.notAfter = new Date(Date.now() + req.ttlDays * 86_400_000);
      cert.setSubject(csr.subject.attributes);
      cert.setIssuer(forge.pki.certificateFromPem(root.certPem).subject.attributes);
      cert.setExtensions([
        { name: "basicConstraints", cA: true, critical: true },
        { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true },
        { name: "subjectAltName", altNames: req.hosts.map((h) => ({ type: 6, value: h })) },
      ]);
      cert.sign(forge.pki.privateKeyFromPem(root.keyPem), forge.md.sha256.create());
      return Promise.resolve({ certPem: forge.pki.certificateToPem(cert), chainPems: [], rootCertPem: root.certPem });
    },
  };
}

let kube: StartedKube;
beforeEach(async () => {
  kube = await startKube({ seed: [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "istio-system" } }] });
});
afterEach(async () => {
  await kube.stop();
});

const request: KubeObject = {
  apiVersion: "internal.gitmesh.io/v1",
  kind: "IssuedCertificate",
  metadata: { name: "istiod-1-29", namespace: "istio-system" },
  spec: {
    hosts: ["spiffe://cluster.local/ns/istio-system/sa/istiod-1-29"],
    secret: { name: "cacerts", namespace: "istio-system" },
    certOptions: { ttlDays: 30, rsaKeySizeBytes: 2048, orgName: "gloo-mesh" },
    ca: { generated: {} },
    mesh: { cluster: "cluster1", namespace: "istio-system", revision: "1-29", trustDomain: "cluster.local" },
    rootTrustPolicy: { name: "root-trust", namespace: "gloo-mesh" },
  },
};

describe("cacerts", () => {
  it("generates the key locally, sends only a CSR, writes the four cacerts entries, and leaves a current secret alone", async () => {
    const p = parts(kube);
    const signer = rootSigner();
    const cacerts = createCacerts({ cluster: "cluster1", reader: p.client, writer: p.writer, signer, metrics: p.metrics, logger: p.logger });
    expect(await cacerts.reconcile([request])).toEqual([]);
    const s = kube.emulator.get("v1", "Secret", "istio-system", "cacerts")!;
    const data = Object.fromEntries(Object.entries(s.data as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, "base64").toString()]));
    expect(Object.keys(data).sort()).toEqual(["ca-cert.pem", "ca-key.pem", "cert-chain.pem", "root-cert.pem"]);
    const cert = new X509Certificate(data["ca-cert.pem"]!);
    expect(cert.ca).toBe(true);
    expect(cert.subjectAltName).toContain("URI:spiffe://cluster.local/ns/istio-system/sa/istiod-1-29");
    expect(cert.verify(new X509Certificate(signer.rootPem).publicKey)).toBe(true);
    // the key in the secret matches the certificate, and never went to the signer
    expect(createPublicKey(data["ca-key.pem"]!).export({ type: "spki", format: "pem" })).toEqual(cert.publicKey.export({ type: "spki", format: "pem" }));
    expect(JSON.stringify(signer.requests)).not.toContain("PRIVATE KEY");
    expect(data["cert-chain.pem"]).toContain(data["ca-cert.pem"]!.trim());
    expect(data["cert-chain.pem"]).toContain(signer.rootPem.trim());
    expect(data["root-cert.pem"]).toBe(signer.rootPem);
    // second reconcile: still current, nothing re-issued
    expect(await cacerts.reconcile([request])).toEqual([]);
    expect(signer.requests).toHaveLength(1);
  });

  it("reports a signer failure as a per-request error", async () => {
    const p = parts(kube);
    const cacerts = createCacerts({ cluster: "cluster1", reader: p.client, writer: p.writer, signer: { signIntermediate: () => Promise.reject(new Error("relay down")) }, logger: p.logger });
    const errors = await cacerts.reconcile([request]);
    expect(errors).toEqual([{ key: "internal.gitmesh.io/v1/IssuedCertificate/istio-system/istiod-1-29", message: "certificate issuance failed: relay down" }]);
    expect(kube.emulator.get("v1", "Secret", "istio-system", "cacerts")).toBeUndefined();
  });
});

describe("agent HTTP", () => {
  it("serves /healthz, /readyz (with the reason when not ready) and /metrics", async () => {
    const p = parts(kube);
    let reason: string | undefined = "informers have not listed yet";
    const http = createAgentHttp({ port: 0, host: "127.0.0.1", registry: p.registry, notReadyReason: () => reason, logger: p.logger });
    await http.start(new AbortController().signal);
    try {
      const url = `http://127.0.0.1:${http.port!}`;
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const notReady = await fetch(`${url}/readyz`);
      expect(notReady.status).toBe(503);
      expect(await notReady.text()).toContain("informers have not listed yet");
      reason = undefined;
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      p.metrics.driftRepairs.inc({ kind: "VirtualService" });
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).toContain('gitmesh_agent_drift_repairs_total{kind="VirtualService"} 1');
      expect(metrics).toContain("gitmesh_agent_relay_connected 0");
      expect((await fetch(`${url}/nope`)).status).toBe(404);
    } finally {
      await http.stop();
    }
  });
});

describe("agent configuration", () => {
  it("validates once and freezes; problems say what to fix", () => {
    const ok = parseAgentConfig({ relayAddress: "mgmt.example.com:9900", cluster: "cluster1", discoverySelectors: ["istio-discovery=enabled,team=a"] }, { identity: "pod-1" });
    expect(ok.problems).toEqual([]);
    expect(ok.config).toMatchObject({ namespace: "gitmesh", httpPort: 9977, maxPruneFraction: 0.5, authority: "gitmesh-server.gitmesh", identity: "pod-1" });
    expect(ok.config!.discoverySelectors).toEqual([{ matchLabels: { "istio-discovery": "enabled", team: "a" } }]);
    expect(Object.isFrozen(ok.config)).toBe(true);
    const bad = parseAgentConfig({ relayAddress: "no-port", cluster: "Bad_Name", maxPruneFraction: "2", discoverySelectors: ["oops"] }, { identity: "x" });
    expect(bad.config).toBeUndefined();
    expect(bad.problems).toHaveLength(4);
    expect(bad.problems.join("\n")).toMatch(/host:port.*relay.serverAddress/);
  });

  it("reads every value the chart passes (the chart's env names), with defaults and clear problems", () => {
    const base = { relayAddress: "mgmt:9900", cluster: "cluster1" };
    const d = parseAgentConfig(base, { identity: "p" }).config!;
    expect(d).toMatchObject({ leaseName: "gitmesh-agent", inventoryName: "gitmesh-agent-inventory", writeCacerts: true, logLevel: "info", relaySecrets: { rootTls: "relay-root-tls-secret", token: "relay-identity-token-secret", clientTls: "relay-client-tls-secret" } });
    expect(d.discoverySelectors).toBeUndefined();
    const c = parseAgentConfig(
      {
        ...base,
        leaseName: "agent-leader",
        inventoryName: "agent-owned",
        rootTlsSecret: "my-root",
        tokenSecret: "my-token",
        clientTlsSecret: "my-client",
        writeCacerts: "false",
        logLevel: "debug",
        pruneAlwaysAllowed: "5",
        discoverySelectorsJson: '[{"matchLabels":{"istio-injection":"enabled"}},{"matchExpressions":[{"key":"team","operator":"In","values":["a","b"]}]}]',
      },
      { identity: "p" },
    ).config!;
    expect(c).toMatchObject({ leaseName: "agent-leader", inventoryName: "agent-owned", writeCacerts: false, logLevel: "debug", pruneAlwaysAllowed: 5, relaySecrets: { rootTls: "my-root", token: "my-token", clientTls: "my-client" } });
    expect(c.discoverySelectors).toEqual([{ matchLabels: { "istio-injection": "enabled" } }, { matchExpressions: [{ key: "team", operator: "In", values: ["a", "b"] }] }]);
    expect(parseAgentConfig({ ...base, discoverySelectorsJson: "[]" }, { identity: "p" }).config!.discoverySelectors).toBeUndefined();
    const bad = parseAgentConfig({ ...base, leaseName: "Not_A_Name", writeCacerts: "maybe", logLevel: "loud", discoverySelectorsJson: '[{"matchExpressions":[{"key":"a","operator":"Equals"}]}]' }, { identity: "p" });
    expect(bad.config).toBeUndefined();
    expect(bad.problems).toEqual([
      "discovery selector 0: each matchExpression needs a key and an operator In, NotIn, Exists or DoesNotExist",
      'write cacerts "maybe" must be true or false (GITMESH_WRITE_CACERTS; chart istio.writeCacerts)',
      'log level "loud" must be debug, info, warn or error (--log-level or GITMESH_LOG_LEVEL; chart logLevel)',
      'leader election Lease name "Not_A_Name" is not a valid object name (GITMESH_LEADER_ELECTION_LEASE)',
    ]);
  });
});
