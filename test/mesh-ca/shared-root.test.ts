// One mesh root for the whole management plane: replicas that start together on empty shared
// storage (real Redis; a Kubernetes Secret in the emulator over real HTTP) agree on one root, sign
// every cluster's intermediate with it, and keep it across restarts. `mgmtServerCa.secretRef`
// without Kubernetes: Secrets as files (--mesh-ca-secret-dir), names from Git never leave the dir.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateKeyPairSync, X509Certificate } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createIntermediateCsr } from "../../src/agent/index.js";
import { createMemoryLogger } from "../../src/core/index.js";
import { createMeshCa, createMeshRootResolver, findIssuedCertificate, generateMeshRoot, MeshCaConfigError, type MeshRootStorage } from "../../src/mesh-ca/index.js";
import { createDirectoryCaSecretReader, createKubernetesMeshRootStorage, createRedisMeshRootStorage } from "../../src/server/index.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { issuedCertificate, opensslVerify } from "./helpers.js";

let redis: TestRedis;
let kube: StartedKube;
const clients: Redis[] = [];

beforeAll(async () => {
  [redis, kube] = await Promise.all([startRedis(), startKube({ seed: [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } }] })]);
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await kube.stop();
  await redis.stop();
});

const keyPem = () => generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs1", format: "pem" }).toString();
const CLUSTERS = ["cluster1", "cluster2", "cluster3"];
const outputs = new Map(CLUSTERS.map((c) => [c, [issuedCertificate(c, { trustDomain: c })]]));

/** A replica's mesh CA over `storage`, as server.ts builds it. */
function replica(storage: MeshRootStorage) {
  const log = createMemoryLogger("mesh-ca").logger;
  return createMeshCa({
    resolveRoot: createMeshRootResolver({ generated: storage, generateOptions: { keyBits: 2048 }, logger: log }),
    isIssuanceAllowed: (cluster, request) => findIssuedCertificate(outputs.get(cluster) ?? [], request),
    logger: log,
  });
}

/** Every cluster's intermediate, each from one of the replicas in turn; returns their root-cert.pem. */
async function signAll(replicas: ReturnType<typeof replica>[]): Promise<string[]> {
  const roots: string[] = [];
  for (const [i, cluster] of CLUSTERS.entries()) {
    const issued = outputs.get(cluster)![0]!;
    const res = await replicas[i % replicas.length]!.signIntermediate(cluster, { csrPem: createIntermediateCsr(keyPem(), issued.spec.hosts, "Istio"), issuedCertificate: "", rootTrustPolicy: "" });
    if (!res.ok) throw new Error(res.message);
    expect(opensslVerify(res.rootCertPem, res.certPem)).toContain("OK");
    roots.push(res.rootCertPem);
  }
  return roots;
}

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;

describe("the generated root is one for every replica, across restarts", () => {
  it("Redis: two replicas starting together agree (SET NX), sign every cluster with it, and so do both after a restart", async () => {
    const connect = () => {
      const c = new Redis(redis.url);
      clients.push(c);
      return c;
    };
    const [a, b] = [replica(createRedisMeshRootStorage(connect(), "t1")), replica(createRedisMeshRootStorage(connect(), "t1"))];
    const roots = await Promise.all([signAll([a, b]), signAll([b, a])]);
    const one = new Set(roots.flat().map(fingerprint));
    expect(one.size).toBe(1);
    // both replicas restarted: new processes, new connections, the same root
    const after = await signAll([replica(createRedisMeshRootStorage(connect(), "t1")), replica(createRedisMeshRootStorage(connect(), "t1"))]);
    expect(new Set(after.map(fingerprint))).toEqual(one);
    // what is stored never contains anything but the root's own PEM (no other key names, no secrets elsewhere)
    expect(await connect().keys("t1:*")).toEqual(["t1:mesh-ca:root"]);
  }, 120_000);

  it("Kubernetes: two replicas creating Secret gitmesh-mesh-root-ca together agree (409 = the other's root), and after a restart", async () => {
    const storage = () => createKubernetesMeshRootStorage(kube.newKubeConfig(), "gitmesh");
    const roots = await Promise.all([signAll([replica(storage())]), signAll([replica(storage())])]);
    const one = new Set(roots.flat().map(fingerprint));
    expect(one.size).toBe(1);
    const secret = kube.emulator.get("v1", "Secret", "gitmesh", "gitmesh-mesh-root-ca")!;
    expect(Object.keys(secret.data as object).sort()).toEqual(["ca-cert.pem", "ca-key.pem"]);
    expect(new Set((await signAll([replica(storage()), replica(storage())])).map(fingerprint))).toEqual(one);
  }, 120_000);

  it("an unusable stored root stops signing with a clear error instead of silently generating another one", async () => {
    const c = new Redis(redis.url);
    clients.push(c);
    await c.set("t2:mesh-ca:root", "{not json");
    const res = await replica(createRedisMeshRootStorage(c, "t2"))
      .signIntermediate("cluster1", { csrPem: createIntermediateCsr(keyPem(), outputs.get("cluster1")![0]!.spec.hosts, "Istio"), issuedCertificate: "", rootTrustPolicy: "" })
      .catch((e: unknown) => e);
    expect(res).toBeInstanceOf(MeshCaConfigError);
    expect(await c.get("t2:mesh-ca:root")).toBe("{not json");
  });
});

describe("mgmtServerCa.secretRef without Kubernetes (--mesh-ca-secret-dir)", () => {
  it("reads <dir>/<namespace>/<name>/ca-cert.pem, ca-key.pem, root-cert.pem; refuses names that would leave the directory", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mesh-ca-secrets-"));
    try {
      const corp = await generateMeshRoot({ keyBits: 2048, commonName: "corp root" });
      mkdirSync(join(dir, "gloo-mesh", "corp-root"), { recursive: true });
      writeFileSync(join(dir, "gloo-mesh", "corp-root", "ca-cert.pem"), corp.certPem);
      writeFileSync(join(dir, "gloo-mesh", "corp-root", "ca-key.pem"), corp.keyPem);
      writeFileSync(join(dir, "gloo-mesh", "corp-root", "root-cert.pem"), corp.certPem);
      const resolve = createMeshRootResolver({ generated: { load: () => Promise.resolve(undefined), save: () => Promise.reject(new Error("not used")) }, readSecret: createDirectoryCaSecretReader(dir), logger: createMemoryLogger("r").logger });
      const root = await resolve({ secretRef: { name: "corp-root", namespace: "gloo-mesh" } });
      expect(root.source).toBe("secretRef");
      expect(fingerprint(root.certPem)).toBe(fingerprint(corp.certPem));
      await expect(resolve({ secretRef: { name: "missing", namespace: "gloo-mesh" } })).rejects.toThrow(/Secret gloo-mesh\/missing does not exist/);
      for (const name of ["..", "../gloo-mesh/corp-root", "corp-root/../corp-root"]) await expect(resolve({ secretRef: { name, namespace: "gloo-mesh" } })).rejects.toThrow(MeshCaConfigError);
      const noReader = createMeshRootResolver({ generated: { load: () => Promise.resolve(undefined), save: () => Promise.resolve() }, logger: createMemoryLogger("r").logger });
      await expect(noReader({ secretRef: { name: "corp-root", namespace: "gloo-mesh" } })).rejects.toThrow(/no Kubernetes access .* and no --mesh-ca-secret-dir/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
