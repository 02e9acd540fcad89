// Shared set-up of the mesh CA tests: IssuedCertificates as src/translate renders them, a relay server
// on 127.0.0.1:0 (real TLS) wired to a real mesh CA, and certificate checks with OpenSSL.
import { execFileSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { createRequire } from "node:module";
import type * as Forge from "node-forge";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { createMemoryLogger } from "../../src/core/index.js";
import { createMeshCa, findIssuedCertificate, type MeshCa, type MeshRoot, type ResolveMeshRoot } from "../../src/mesh-ca/index.js";
import { forgePublicKeyOf, randomSerial, signNatively, type IntermediateCsr, type SignIntermediateFn } from "../../src/pki/index.js";
import { createRelayServer } from "../../src/relay/index.js";

const forge = createRequire(import.meta.url)("node-forge") as typeof Forge;
import { testPki } from "../relay/helpers.js";

/** An IssuedCertificate exactly as src/translate/root-trust.ts emits it. */
export function issuedCertificate(cluster: string, opts: { revision?: string; trustDomain?: string; ttlDays?: number; orgName?: string; rtp?: string } = {}) {
  const revision = opts.revision ?? "1-29";
  const trustDomain = opts.trustDomain ?? `${cluster}.local`;
  return {
    apiVersion: "internal.gitmesh.io/v1",
    kind: "IssuedCertificate",
    metadata: { name: `istiod-${revision}-istio-system-${cluster}`, namespace: "istio-system", labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": cluster } },
    spec: {
      hosts: [`spiffe://${trustDomain}/ns/istio-system/sa/istiod-${revision}`],
      secret: { name: "cacerts", namespace: "istio-system" },
      certOptions: { ttlDays: opts.ttlDays ?? 30, rsaKeySizeBytes: 2048, orgName: opts.orgName ?? "Istio" },
      ca: { generated: {} },
      mesh: { cluster, namespace: "istio-system", revision, trustDomain },
      rootTrustPolicy: { name: opts.rtp ?? "root-trust", namespace: "gloo-mesh" },
    },
  };
}

/** Compile-time check of the README wiring: the mesh CA's signIntermediate IS the relay server option. */
export const meshCaFitsRelayOption = (ca: MeshCa): SignIntermediateFn => ca.signIntermediate;

/** A relay server whose SignIntermediate is the mesh CA, as the server wires it (README "Wiring in the server"). */
export async function startMeshCaRelay(root: MeshRoot | ResolveMeshRoot | undefined, outputs: Map<string, readonly unknown[]>, clusters: readonly string[] = ["alpha", "beta"]) {
  const mem = createMemoryLogger("relay");
  const registry = new Registry();
  /** Every request the server's signer was handed (decoded from the wire). */
  const received: { cluster: string; request: IntermediateCsr }[] = [];
  const meshCa = root
    ? createMeshCa({ ...(typeof root === "function" ? { resolveRoot: root } : { root }), isIssuanceAllowed: (cluster, request) => findIssuedCertificate(outputs.get(cluster) ?? [], request), logger: mem.logger.child("mesh-ca") })
    : undefined;
  const server = createRelayServer({
    pki: testPki(),
    token: "mesh-ca-test-token-0123456789",
    isClusterRegistered: (c) => clusters.includes(c),
    logger: mem.logger,
    registry,
    host: "127.0.0.1",
    port: 0,
    ...(meshCa
      ? {
          signIntermediate: (cluster: string, request: IntermediateCsr) => {
            received.push({ cluster, request });
            return meshCa.signIntermediate(cluster, request);
          },
        }
      : {}),
  });
  const port = await server.start();
  return { server, address: `127.0.0.1:${String(port)}`, registry, mem, received, meshCa, token: "mesh-ca-test-token-0123456789" };
}

/** `openssl verify` of a leaf against a root (and optional untrusted intermediates); returns OpenSSL's output, throws on failure. */
export function opensslVerify(rootPem: string, leafPem: string, untrusted: readonly string[] = []): string {
  const dir = mkdtempSync(join(tmpdir(), "mesh-ca-verify-"));
  try {
    writeFileSync(join(dir, "root.pem"), rootPem);
    writeFileSync(join(dir, "leaf.pem"), leafPem);
    const args = ["verify", "-x509_strict", "-CAfile", join(dir, "root.pem")];
    if (untrusted.length > 0) {
      writeFileSync(join(dir, "untrusted.pem"), untrusted.join(""));
      args.push("-untrusted", join(dir, "untrusted.pem"));
    }
    args.push(join(dir, "leaf.pem"));
    return execFileSync("openssl", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A certificate for a fresh key, signed by `issuer` (forge structure, node:crypto signature): a workload leaf, or a CA. */
export function issueCert(issuer: { certPem: string; keyPem: string }, opts: { uri: string; ca?: boolean; commonName?: string }): { certPem: string; keyPem: string } {
  const keyPem = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs1", format: "pem" }).toString();
  const issuerCert = forge.pki.certificateFromPem(issuer.certPem);
  const cert = forge.pki.createCertificate();
  cert.publicKey = forgePublicKeyOf(keyPem);
  cert.serialNumber = randomSerial();
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  cert.setSubject([{ name: "commonName", value: opts.commonName ?? "workload" }]);
  cert.setIssuer(issuerCert.subject.attributes);
  cert.setExtensions([
    opts.ca ? { name: "basicConstraints", cA: true, critical: true } : { name: "basicConstraints", cA: false, critical: true },
    opts.ca ? { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true } : { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "subjectAltName", altNames: [{ type: 6, value: opts.uri }] },
    { name: "subjectKeyIdentifier" },
    { name: "authorityKeyIdentifier", keyIdentifier: issuerCert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  signNatively(cert, issuer.keyPem);
  return { certPem: forge.pki.certificateToPem(cert), keyPem };
}

/** `openssl verify` that is expected to fail: OpenSSL's error output. */
export function opensslVerifyError(rootPem: string, leafPem: string, untrusted: readonly string[] = []): string {
  try {
    const out = opensslVerify(rootPem, leafPem, untrusted);
    throw new Error(`openssl verify unexpectedly succeeded: ${out}`);
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    if (e.message.startsWith("openssl verify unexpectedly")) throw err;
    return `${e.stdout ?? ""}${e.stderr ?? ""}`;
  }
}

/** `openssl x509 -text` of a certificate. */
export function opensslText(pem: string): string {
  return execFileSync("openssl", ["x509", "-noout", "-text"], { input: pem, encoding: "utf8" });
}
