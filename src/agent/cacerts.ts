/**
 * Istio intermediate CA for a certificate-issuance request (`internal.gitmesh.io/v1
 * IssuedCertificate`, rendered from a RootTrustPolicy): the agent generates the intermediate key
 * IN THE CLUSTER, sends only a CSR to a signer, and writes Istio's `cacerts` secret (ca-cert.pem,
 * ca-key.pem, cert-chain.pem, root-cert.pem) in the control plane's namespace. The private key
 * never leaves the cluster.
 *
 * The CSR is signed by an IntermediateSigner (owned by src/relay: createRelayIntermediateSigner calls
 * Relay.SignIntermediate); `createAgent` only handles requests when a signer is configured
 * (otherwise it NACKs them with a clear message).
 *
 * The key is generated off the event loop (node:crypto generateKeyPair runs in libuv's thread pool:
 * a 4096-bit RSA key takes seconds of CPU, during which Lease renewals must go on), and the CSR is
 * signed with node:crypto too.
 *
 * Re-issue: when the certificate passed `renewAt` of its lifetime, when the hosts differ, or when the
 * IssuedCertificate names other roots (`ca`, `passiveCas`: a root rotation) than the ones the secret
 * was issued for (annotation `gitmesh.io/issued-for`, a digest of them). `root-cert.pem` is the
 * trust bundle the mesh CA returned (the signing root first, then the passive roots during a
 * rotation); `cert-chain.pem` ends with the one root that issued the chain.
 *
 * `autoRestartPods: true` on the IssuedCertificate: after writing, istiod and the injected workloads
 * of that mesh are restarted (workload-restart.ts), when a restarter is configured.
 */
import { createHash, createPublicKey, generateKeyPair, X509Certificate } from "node:crypto";
import { createRequire } from "node:module";
import { promisify } from "node:util";
import type * as Forge from "node-forge";
import { describeError, type Logger } from "../core/index.js";
import type { ResourceError } from "./applier.js";
import { KINDS, messageOf, objectKey, type FieldOwnerWriter, type KubeObject, type KubeReader } from "./kube.js";
import { AGENT_CERTIFICATES, type AgentMetrics } from "./metrics.js";
import { signNatively, type IntermediateSigner, type IntermediateSigningRequest, type SignedIntermediate } from "../pki/index.js";
import type { WorkloadRestarter } from "./workload-restart.js";

const generateKeyPairAsync = promisify(generateKeyPair);

/** Annotation on `cacerts`: digest of the hosts and roots (ca, passiveCas) the secret was issued for. */
export const ISSUED_FOR_ANNOTATION = "gitmesh.io/issued-for";

// node-forge is CommonJS with a dynamically built export object: load it with require.
const forge = createRequire(import.meta.url)("node-forge") as typeof Forge;

/** The signer types live in src/pki (the relay's createRelayIntermediateSigner is the real signer). */
export type { IntermediateSigner, IntermediateSigningRequest, SignedIntermediate };

export interface CacertsOptions {
  readonly cluster: string;
  readonly reader: KubeReader;
  readonly writer: FieldOwnerWriter;
  readonly signer: IntermediateSigner;
  /** Renew when this fraction of the certificate's lifetime has passed (default: the request's secretRotationGracePeriodRatio, else 2/3). */
  readonly renewAtFraction?: number;
  readonly metrics?: AgentMetrics;
  /** Restarts istiod and injected workloads after a write, for requests with autoRestartPods (absent: such requests are only logged). */
  readonly restarter?: WorkloadRestarter;
  readonly now?: () => number;
  readonly logger: Logger;
}

export interface Cacerts {
  /** Makes sure every requested `cacerts` secret exists and is current; errors per request. */
  reconcile(requests: readonly KubeObject[]): Promise<ResourceError[]>;
}

interface RequestSpec {
  hosts?: string[];
  secret?: { name?: string; namespace?: string };
  certOptions?: { ttlDays?: number; rsaKeySizeBytes?: number; orgName?: string; secretRotationGracePeriodRatio?: number };
  rootTrustPolicy?: { name?: string; namespace?: string };
  ca?: unknown;
  passiveCas?: unknown;
  mesh?: { namespace?: string; revision?: string };
  autoRestartPods?: boolean;
}

/** Digest of what a secret is issued for: hosts and roots. A change means re-issue. */
function issuedFor(spec: RequestSpec): string {
  const canonical = JSON.stringify({ hosts: [...(spec.hosts ?? [])].sort(), ca: spec.ca ?? { generated: {} }, passiveCas: spec.passiveCas ?? [] }, (_k, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1))) : v,
  );
  return createHash("sha256").update(canonical).digest("hex").slice(0, 32);
}

/** The certificate of `bundle` that issued `pem` (the root to end cert-chain.pem with); the first one when none did. */
function issuerIn(bundle: readonly string[], pem: string): string | undefined {
  const child = new X509Certificate(pem);
  return bundle.find((r) => {
    try {
      const c = new X509Certificate(r);
      return child.checkIssued(c) && child.verify(c.publicKey);
    } catch {
      return false;
    }
  }) ?? bundle[0];
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

/** A CSR for a CA certificate (basicConstraints CA, keyCertSign) with the SPIFFE ids as URI SANs. */
export function createIntermediateCsr(keyPem: string, hosts: readonly string[], orgName: string): string {
  const csr = forge.pki.createCertificationRequest();
  const key = forge.pki.privateKeyFromPem(keyPem);
  csr.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  csr.setSubject([{ name: "organizationName", value: orgName }]);
  csr.setAttributes([
    {
      name: "extensionRequest",
      extensions: [
        { name: "basicConstraints", cA: true, critical: true },
        { name: "keyUsage", keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
        { name: "subjectAltName", altNames: hosts.map((h) => ({ type: 6, value: h })) },
      ],
    },
  ]);
  signNatively(csr, keyPem);
  return forge.pki.certificationRequestToPem(csr);
}

export function createCacerts(options: CacertsOptions): Cacerts {
  const log = options.logger;
  const now = options.now ?? Date.now;

  async function current(namespace: string, name: string, hosts: readonly string[], renewAt: number, digest: string): Promise<boolean> {
    const s = await options.reader.get(KINDS.Secret, namespace, name);
    if (!s || s.metadata.annotations?.[ISSUED_FOR_ANNOTATION] !== digest) return false;
    const encoded = (s.data as Record<string, unknown> | undefined)?.["ca-cert.pem"];
    const pem = typeof encoded === "string" ? Buffer.from(encoded, "base64").toString() : undefined;
    if (!pem) return false;
    try {
      const cert = new X509Certificate(pem);
      const from = Date.parse(cert.validFrom);
      const to = Date.parse(cert.validTo);
      if (now() >= from + (to - from) * renewAt) return false;
      options.metrics?.certificateExpiry.set({ certificate: AGENT_CERTIFICATES.istioIntermediate }, Math.floor(to / 1000));
      const san = cert.subjectAltName ?? "";
      return hosts.every((h) => san.includes(`URI:${h}`));
    } catch {
      return false;
    }
  }

  async function one(req: KubeObject): Promise<void> {
    const spec = (req.spec ?? {}) as RequestSpec;
    const hosts = spec.hosts ?? [];
    const namespace = spec.secret?.namespace ?? req.metadata.namespace ?? "istio-system";
    const name = spec.secret?.name ?? "cacerts";
    const opts = spec.certOptions ?? {};
    const renewAt = options.renewAtFraction ?? (opts.secretRotationGracePeriodRatio !== undefined ? 1 - opts.secretRotationGracePeriodRatio : 2 / 3);
    const digest = issuedFor(spec);
    if (await current(namespace, name, hosts, renewAt, digest)) return;
    const bits = opts.rsaKeySizeBytes ?? 4096;
    const { privateKey } = await generateKeyPairAsync("rsa", { modulusLength: bits });
    const keyPem = privateKey.export({ type: "pkcs1", format: "pem" }).toString();
    const csrPem = createIntermediateCsr(keyPem, hosts, opts.orgName ?? "gloo-mesh");
    const signed = await options.signer.signIntermediate({
      cluster: options.cluster,
      csrPem,
      hosts,
      ttlDays: opts.ttlDays ?? 365,
      orgName: opts.orgName ?? "gloo-mesh",
      rootTrustPolicy: `${spec.rootTrustPolicy?.namespace ?? ""}/${spec.rootTrustPolicy?.name ?? ""}`,
    });
    // The signed certificate must be for OUR key.
    const certKey = new X509Certificate(signed.certPem).publicKey.export({ type: "spki", format: "pem" }).toString();
    const ourKey = createPublicKey(privateKey).export({ type: "spki", format: "pem" }).toString();
    if (certKey !== ourKey) throw new Error("the signer returned a certificate for another key");
    // rootCertPem is the trust bundle (one root, or several during a rotation).
    const bundle = [...signed.rootCertPem.matchAll(PEM_CERT)].map((m) => m[0] + "\n");
    const top = signed.chainPems.length > 0 ? signed.chainPems[signed.chainPems.length - 1]! : signed.certPem;
    const root = issuerIn(bundle, top) ?? signed.rootCertPem;
    const chain = [signed.certPem, ...signed.chainPems, root].map((p) => p.trim() + "\n").join("");
    await options.writer.apply({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, namespace, labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": options.cluster }, annotations: { [ISSUED_FOR_ANNOTATION]: digest } },
      type: "Opaque",
      data: { "ca-cert.pem": b64(signed.certPem), "ca-key.pem": b64(keyPem), "cert-chain.pem": b64(chain), "root-cert.pem": b64(signed.rootCertPem) },
    });
    options.metrics?.cacertsWritten.inc();
    options.metrics?.certificateExpiry.set({ certificate: AGENT_CERTIFICATES.istioIntermediate }, Math.floor(Date.parse(new X509Certificate(signed.certPem).validTo) / 1000));
    log.info("wrote Istio intermediate CA secret", { secret: `${namespace}/${name}`, hosts, trustBundle: bundle.length, notAfter: new X509Certificate(signed.certPem).validTo });
    if (spec.autoRestartPods === true) {
      const mesh = { namespace: spec.mesh?.namespace ?? namespace, revision: spec.mesh?.revision ?? "" };
      if (!options.restarter) {
        log.warn("autoRestartPods is set but this agent was installed without it (agent chart autoRestartPods: true grants the RBAC): restart istiod and the injected workloads yourself", { secret: `${namespace}/${name}` });
      } else {
        // Not awaited: a round waits for istiod's rollout and the rate limit, the reconcile does not.
        options.restarter.request(mesh).catch((err: unknown) => log.error("restarting workloads for the new cacerts failed", { mesh: mesh.namespace, error: describeError(err) }));
      }
    }
  }

  return {
    async reconcile(requests) {
      const errors: ResourceError[] = [];
      for (const r of requests) {
        try {
          await one(r);
        } catch (err) {
          log.error("cannot issue the Istio intermediate CA", { request: objectKey(r), error: describeError(err) });
          errors.push({ key: objectKey(r), message: `certificate issuance failed: ${messageOf(err)}` });
        }
      }
      return errors;
    },
  };
}
