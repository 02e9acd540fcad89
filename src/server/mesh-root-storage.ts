/**
 * Where the mesh root CA (RootTrustPolicy `mgmtServerCa.generated`) lives, shared by every replica and
 * kept across restarts, and where `mgmtServerCa.secretRef` Secrets are read from. Chosen by the
 * composition root (cli/server.ts `meshCaWiring`):
 *
 * - Kubernetes (in a pod, or with --kubeconfig): the generated root in Secret `gitmesh-mesh-root-ca`
 *   of the server's namespace, created if absent (409 = another replica won: its root is used);
 *   secretRef Secrets read from the cluster (RBAC: get on them);
 * - Redis (shared by replicas): one key `<prefix>:mesh-ca:root`, written with SET NX;
 * - a directory (standalone, `--pki-dir` or the data directory): ca-cert.pem / ca-key.pem, exclusive
 *   create (src/mesh-ca createFileMeshRootStorage);
 * - secretRef without Kubernetes: `--mesh-ca-secret-dir <dir>`, one directory per Secret,
 *   `<dir>/<namespace>/<name>/<key>` (ca-cert.pem, ca-key.pem, root-cert.pem, cert-chain.pem), as
 *   `kubectl create secret generic --from-file` would take them.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { CoreV1Api, V1ObjectMeta, V1Secret, type KubeConfig } from "@kubernetes/client-node";
import type { RedisClient } from "../queue/index.js";
import { meshRootPemFromSecretData, meshRootPemToSecretData, type MeshRootPem, type MeshRootStorage, type ReadCaSecret } from "../mesh-ca/index.js";

/** Default name of the Secret holding the generated mesh root (server namespace). */
export const MESH_ROOT_SECRET = "gitmesh-mesh-root-ca";

const isPem = (v: unknown): v is MeshRootPem => typeof v === "object" && v !== null && typeof (v as MeshRootPem).certPem === "string" && typeof (v as MeshRootPem).keyPem === "string";

export function createRedisMeshRootStorage(redis: RedisClient, prefix: string): MeshRootStorage {
  const key = `${prefix}:mesh-ca:root`;
  return {
    describe: `Redis key ${key}`,
    async load() {
      const raw = await redis.get(key);
      if (raw === null) return undefined;
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        parsed = undefined;
      }
      // Unusable stored data is not "absent": meshRootFromPem reports it (never a silent new root).
      return isPem(parsed) ? { certPem: parsed.certPem, keyPem: parsed.keyPem } : { certPem: "", keyPem: "" };
    },
    async save(root) {
      // NX: replicas starting together on an empty Redis agree on the first one's root.
      await redis.set(key, JSON.stringify({ certPem: root.certPem, keyPem: root.keyPem }), "NX");
    },
  };
}

const notFound = (err: unknown) => (err as { code?: number }).code === 404;
const decode = (data: Record<string, string> | undefined) => Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]));

export function createKubernetesMeshRootStorage(kc: KubeConfig, namespace: string, name: string = MESH_ROOT_SECRET): MeshRootStorage {
  const api = kc.makeApiClient(CoreV1Api);
  return {
    describe: `Kubernetes Secret ${namespace}/${name}`,
    async load() {
      try {
        // A Secret without a usable pair is not "absent": meshRootFromPem reports it (never a silent new root).
        return meshRootPemFromSecretData(decode((await api.readNamespacedSecret({ name, namespace })).data)) ?? { certPem: "", keyPem: "" };
      } catch (err) {
        if (notFound(err)) return undefined;
        throw err;
      }
    },
    async save(root) {
      const body = new V1Secret();
      body.metadata = Object.assign(new V1ObjectMeta(), { name, namespace, labels: { "app.kubernetes.io/managed-by": "gitmesh-server", "gitmesh.io/mesh-root-ca": "generated" } });
      body.type = "Opaque";
      body.data = Object.fromEntries(Object.entries(meshRootPemToSecretData(root)).map(([k, v]) => [k, Buffer.from(v).toString("base64")]));
      try {
        await api.createNamespacedSecret({ namespace, body });
      } catch (err) {
        // 409: another replica created it first; the caller reloads and uses that one.
        if ((err as { code?: number }).code !== 409) throw err;
      }
    },
  };
}

/** Reads `mgmtServerCa.secretRef` Secrets from Kubernetes. */
export function createKubernetesCaSecretReader(kc: KubeConfig): ReadCaSecret {
  const api = kc.makeApiClient(CoreV1Api);
  return async ({ name, namespace }) => {
    try {
      return decode((await api.readNamespacedSecret({ name, namespace })).data);
    } catch (err) {
      if (notFound(err)) return undefined;
      throw err;
    }
  };
}

const SAFE_SEGMENT = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** Reads `mgmtServerCa.secretRef` Secrets from `<dir>/<namespace>/<name>/<key>` (no Kubernetes). */
export function createDirectoryCaSecretReader(dir: string): ReadCaSecret {
  return async ({ name, namespace }) => {
    // Names come from Git: only DNS-1123 names, never a path outside `dir`.
    if (!SAFE_SEGMENT.test(name) || !SAFE_SEGMENT.test(namespace)) return undefined;
    const secretDir = join(dir, namespace, name);
    let keys: string[];
    try {
      keys = (await readdir(secretDir, { withFileTypes: true })).filter((e) => e.isFile()).map((e) => e.name);
    } catch (err) {
      if ((err as { code?: string }).code === "ENOENT") return undefined;
      throw err;
    }
    const out: Record<string, string> = {};
    for (const k of keys.filter((k) => !k.startsWith("."))) out[k] = await readFile(join(secretDir, k), "utf8");
    return out;
  };
}
