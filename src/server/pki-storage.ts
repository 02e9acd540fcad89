/**
 * Where the relay PKI (root CA, server certificate, signing CA) and the bootstrap token live between
 * restarts, behind relay's `RelayPkiStorage` callback. Chosen by the composition root:
 *
 * - Kubernetes secrets (in a pod, or with --kubeconfig): the chart's relay-root-tls-secret,
 *   relay-server-tls-secret, relay-tls-signing-secret and relay-identity-token-secret in the server's
 *   namespace (created on first start unless the chart brings them: relay.tls.existingSecrets);
 * - a directory (`--pki-dir`): one PEM file per item, mode 0600, and `token`;
 * - Redis (shared by every replica): one key, written with SET NX so that replicas starting together
 *   agree on one PKI;
 * - memory (standalone trials only): regenerated on every start, so agents re-register.
 *
 * Each store also holds the cluster identity records (`records`, src/relay ClusterRecordStore: the hash
 * of each cluster's single-use bootstrap credential, its live certificate, its revocations), written only
 * by compare-and-swap so that replicas agree:
 *
 * - Kubernetes: one Secret `relay-identity-<cluster>` per cluster (label gitmesh.io/relay-identity),
 *   replaced with a resourceVersion precondition, created with create (409 = lost the race), deleted with
 *   a resourceVersion precondition. `gitmesh cluster register` writes the same Secrets with its
 *   management-cluster context;
 * - Redis: hash `<prefix>:relay:identities`, field = cluster, changed by a Lua compare-and-swap;
 * - directory: `identities/<cluster>.json`, one writer process (compare-and-swap inside the process);
 * - memory: lost on restart (standalone trials).
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CoreV1Api, V1DeleteOptions, V1ObjectMeta, V1Preconditions, V1Secret, type KubeConfig } from "@kubernetes/client-node";
import type { RedisClient } from "../queue/index.js";
import { createMemoryRecordStore, isValidClusterName, relayPkiFromSecrets, relayPkiToSecrets, RELAY_SECRETS, type ClusterRecordStore, type RelayPki, type RelayPkiStorage, type StoredRecord } from "../relay/index.js";

/** PKI storage plus the bootstrap token. */
export interface RelaySecretStore extends RelayPkiStorage {
  /** Where it is kept, for logs and `--help` (never a secret). */
  readonly describe: string;
  loadToken(): Promise<string | undefined>;
  /** Stores a token only if none is stored; returns the stored one. */
  saveTokenIfAbsent(token: string): Promise<string>;
  /** Cluster identity records (credentials, live certificates, revocations) in the same storage. */
  readonly records: ClusterRecordStore;
}

/** Serialises compare-and-swap inside one process (directory store). */
function createMutex() {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
}

/** Identity records as files `<dir>/<cluster>.json` (one server process writes them). */
export function createDirectoryRecordStore(dir: string): ClusterRecordStore {
  const exclusive = createMutex();
  const file = (cluster: string) => {
    if (!isValidClusterName(cluster)) throw new Error(`invalid cluster name ${JSON.stringify(cluster)}`);
    return join(dir, `${cluster}.json`);
  };
  const read = (cluster: string) => readFile(file(cluster), "utf8").catch(() => undefined);
  const record = (value: string | undefined): StoredRecord | undefined => (value === undefined ? undefined : { value, revision: value });
  return {
    describe: `directory ${dir}`,
    get: async (cluster) => record(await read(cluster)),
    async list() {
      const out = new Map<string, StoredRecord>();
      const names = await readdir(dir).catch(() => [] as string[]);
      for (const n of names) {
        if (!n.endsWith(".json")) continue;
        const c = n.slice(0, -5);
        const v = isValidClusterName(c) ? await read(c) : undefined;
        if (v !== undefined) out.set(c, { value: v, revision: v });
      }
      return out;
    },
    swap: (cluster, expected, next) =>
      exclusive(async () => {
        if ((await read(cluster)) !== expected) return false;
        if (next === undefined) await rm(file(cluster), { force: true });
        else {
          await mkdir(dir, { recursive: true, mode: 0o700 });
          const tmp = `${file(cluster)}.${randomBytes(4).toString("hex")}.tmp`;
          await writeFile(tmp, next, { mode: 0o600 });
          await rename(tmp, file(cluster));
        }
        return true;
      }),
  };
}

/**
 * Identity records in one Redis hash. The compare-and-swap runs as a Lua script (atomic on the server),
 * so replicas never need WATCH on a shared connection.
 */
const REDIS_SWAP = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if ARGV[2] == '0' then
  if cur then return 0 end
else
  if (not cur) or cur ~= ARGV[3] then return 0 end
end
if ARGV[4] == '0' then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], ARGV[5]) end
return 1`;

export function createRedisRecordStore(redis: RedisClient, prefix: string): ClusterRecordStore {
  const key = `${prefix}:relay:identities`;
  return {
    describe: `Redis hash ${key}`,
    async get(cluster) {
      const v = await redis.hget(key, cluster);
      return v === null ? undefined : { value: v, revision: v };
    },
    async list() {
      const all = await redis.hgetall(key);
      return new Map(Object.entries(all).map(([c, v]) => [c, { value: v, revision: v }]));
    },
    async swap(cluster, expected, next) {
      const r = await redis.eval(REDIS_SWAP, 1, key, cluster, expected === undefined ? "0" : "1", expected ?? "", next === undefined ? "0" : "1", next ?? "");
      return r === 1;
    },
  };
}

/** Label on the per-cluster identity Secrets (for listing them in one call). */
export const IDENTITY_SECRET_LABEL = "gitmesh.io/relay-identity";

/** Name of a cluster's identity Secret: `relay-identity-<cluster>`, or a hash for very long names. */
export function identitySecretName(cluster: string): string {
  const name = `relay-identity-${cluster}`;
  return name.length <= 253 ? name : `relay-identity-${createHash("sha256").update(cluster).digest("hex").slice(0, 32)}`;
}

/** Which Secrets a Kubernetes record store keeps (default: the cluster identity records). */
export interface SecretNaming {
  readonly secretName: (key: string) => string;
  /** The label (value "true") its Secrets carry and its list() selects. */
  readonly label: string;
  readonly describe: string;
}

/** The Secret that keeps the API suspensions beside the relay Secrets (durable-suspensions.ts). */
export const SUSPENSION_SECRETS: SecretNaming = { secretName: () => "gitmesh-suspensions", label: "gitmesh.io/suspensions", describe: "Kubernetes secret gitmesh-suspensions" };

const IDENTITY_SECRETS: SecretNaming = { secretName: identitySecretName, label: IDENTITY_SECRET_LABEL, describe: "Kubernetes secrets relay-identity-<cluster>" };

/** Identity records as one Secret per cluster (or records of another kind, `naming`); writes carry a resourceVersion precondition. */
export function createKubernetesRecordStore(kc: KubeConfig, namespace: string, naming: SecretNaming = IDENTITY_SECRETS): ClusterRecordStore {
  const identitySecretName = naming.secretName;
  const api = kc.makeApiClient(CoreV1Api);
  const codeOf = (err: unknown) => (err as { code?: number }).code;
  const valueOf = (s: V1Secret): StoredRecord | undefined => {
    const raw = s.data?.record;
    const rv = s.metadata?.resourceVersion;
    return raw === undefined || rv === undefined ? undefined : { value: Buffer.from(raw, "base64").toString("utf8"), revision: rv };
  };
  const body = (cluster: string, value: string, resourceVersion?: string) => {
    const b = new V1Secret();
    b.metadata = Object.assign(new V1ObjectMeta(), {
      name: identitySecretName(cluster),
      namespace,
      labels: { "app.kubernetes.io/managed-by": "gitmesh-server", [naming.label]: "true" },
      annotations: { "gitmesh.io/cluster": cluster },
      ...(resourceVersion === undefined ? {} : { resourceVersion }),
    });
    b.type = "Opaque";
    b.data = { record: Buffer.from(value).toString("base64") };
    return b;
  };
  return {
    describe: `${naming.describe} in namespace ${namespace}`,
    async get(cluster) {
      try {
        return valueOf(await api.readNamespacedSecret({ name: identitySecretName(cluster), namespace }));
      } catch (err) {
        if (codeOf(err) === 404) return undefined;
        throw err;
      }
    },
    async list() {
      const out = new Map<string, StoredRecord>();
      const list = await api.listNamespacedSecret({ namespace, labelSelector: `${naming.label}=true` });
      for (const s of list.items) {
        const c = s.metadata?.annotations?.["gitmesh.io/cluster"];
        const v = valueOf(s);
        if (c !== undefined && v !== undefined) out.set(c, v);
      }
      return out;
    },
    async swap(cluster, expected, next) {
      const name = identitySecretName(cluster);
      try {
        if (next === undefined) {
          if (expected === undefined) return (await this.get(cluster)) === undefined;
          const options = new V1DeleteOptions();
          options.preconditions = Object.assign(new V1Preconditions(), { resourceVersion: expected });
          await api.deleteNamespacedSecret({ name, namespace, body: options });
        } else if (expected === undefined) {
          await api.createNamespacedSecret({ namespace, body: body(cluster, next) });
        } else {
          await api.replaceNamespacedSecret({ name, namespace, body: body(cluster, next, expected) });
        }
        return true;
      } catch (err) {
        if (codeOf(err) === 409 || codeOf(err) === 404) return false;
        throw err;
      }
    },
  };
}

export function generateToken(): string {
  return randomBytes(24).toString("base64url");
}

const FILES = {
  rootCaCertPem: "root-ca.crt",
  rootCaKeyPem: "root-ca.key",
  serverCertPem: "server.crt",
  serverKeyPem: "server.key",
  signingCaCertPem: "signing-ca.crt",
  signingCaKeyPem: "signing-ca.key",
} as const;

export function createDirectorySecretStore(dir: string): RelaySecretStore {
  const records = createDirectoryRecordStore(join(dir, "identities"));
  const read = (name: string) => readFile(join(dir, name), "utf8").catch(() => undefined);
  const write = async (name: string, content: string, exclusive = false) => {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeFile(join(dir, name), content, { mode: 0o600, flag: exclusive ? "wx" : "w" });
  };
  return {
    describe: `directory ${dir}`,
    records,
    async load() {
      const [rootCaCertPem, rootCaKeyPem, serverCertPem, serverKeyPem, signingCaCertPem, signingCaKeyPem] = await Promise.all(Object.values(FILES).map(read));
      if (!rootCaCertPem || !serverCertPem || !serverKeyPem || !signingCaCertPem || !signingCaKeyPem) return undefined;
      return { rootCaCertPem, ...(rootCaKeyPem ? { rootCaKeyPem } : {}), serverCertPem, serverKeyPem, signingCaCertPem, signingCaKeyPem };
    },
    async save(pki) {
      for (const [k, file] of Object.entries(FILES)) {
        const v = pki[k as keyof RelayPki];
        if (v !== undefined) await write(file, v);
      }
    },
    loadToken: async () => (await read("token"))?.trim() || undefined,
    async saveTokenIfAbsent(token) {
      try {
        await write("token", token + "\n", true);
        return token;
      } catch {
        return (await read("token"))?.trim() ?? token;
      }
    },
  };
}

export function createRedisSecretStore(redis: RedisClient, prefix: string): RelaySecretStore {
  const pkiKey = `${prefix}:relay:pki`;
  const tokenKey = `${prefix}:relay:token`;
  return {
    describe: `Redis key ${pkiKey}`,
    records: createRedisRecordStore(redis, prefix),
    async load() {
      const raw = await redis.get(pkiKey);
      return raw ? (JSON.parse(raw) as RelayPki) : undefined;
    },
    async save(pki) {
      // NX: when two replicas start on an empty Redis, the first one's PKI wins; loadOrCreateRelayPki
      // callers re-load after saving (see loadSharedPki).
      await redis.set(pkiKey, JSON.stringify(pki), "NX");
    },
    loadToken: async () => (await redis.get(tokenKey)) ?? undefined,
    async saveTokenIfAbsent(token) {
      await redis.set(tokenKey, token, "NX");
      return (await redis.get(tokenKey)) ?? token;
    },
  };
}

export function createMemorySecretStore(): RelaySecretStore {
  let pki: RelayPki | undefined;
  let token: string | undefined;
  return {
    describe: "memory (regenerated on every start; use --pki-dir or Redis to keep it)",
    records: createMemoryRecordStore(),
    load: () => Promise.resolve(pki),
    save: (p) => {
      pki ??= p;
      return Promise.resolve();
    },
    loadToken: () => Promise.resolve(token),
    saveTokenIfAbsent: (t) => Promise.resolve((token ??= t)),
  };
}

export interface KubernetesSecretNames {
  readonly root: string;
  readonly server: string;
  readonly signing: string;
  readonly token: string;
}

/** The chart's secrets in the server's namespace (RBAC: get on them, create/update unless brought in). */
export function createKubernetesSecretStore(kc: KubeConfig, namespace: string, names: KubernetesSecretNames): RelaySecretStore {
  const api = kc.makeApiClient(CoreV1Api);
  const byDefault: Record<string, string> = {
    [RELAY_SECRETS.rootTls.name]: names.root,
    [RELAY_SECRETS.serverTls.name]: names.server,
    [RELAY_SECRETS.tlsSigning.name]: names.signing,
  };
  const readSecret = async (name: string): Promise<Record<string, string> | undefined> => {
    try {
      const s = await api.readNamespacedSecret({ name, namespace });
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(s.data ?? {})) out[k] = Buffer.from(v, "base64").toString("utf8");
      return out;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  };
  const createSecret = async (name: string, data: Record<string, string>): Promise<boolean> => {
    const encoded = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")]));
    try {
      const body = new V1Secret();
      body.metadata = Object.assign(new V1ObjectMeta(), { name, namespace, labels: { "app.kubernetes.io/managed-by": "gitmesh-server" } });
      body.type = "Opaque";
      body.data = encoded;
      await api.createNamespacedSecret({ namespace, body });
      return true;
    } catch (err) {
      if ((err as { code?: number }).code === 409) return false;
      throw err;
    }
  };
  return {
    describe: `Kubernetes secrets ${names.root}, ${names.server}, ${names.signing}, ${names.token} in namespace ${namespace}`,
    records: createKubernetesRecordStore(kc, namespace),
    async load() {
      const secrets: Record<string, Record<string, string> | undefined> = {};
      for (const [canonical, actual] of Object.entries(byDefault)) secrets[canonical] = await readSecret(actual);
      return relayPkiFromSecrets(secrets);
    },
    async save(pki) {
      for (const [canonical, data] of Object.entries(relayPkiToSecrets(pki))) await createSecret(byDefault[canonical] ?? canonical, data);
    },
    loadToken: async () => (await readSecret(names.token))?.[RELAY_SECRETS.identityToken.keys.token]?.trim() || undefined,
    async saveTokenIfAbsent(token) {
      await createSecret(names.token, { [RELAY_SECRETS.identityToken.keys.token]: token });
      return (await readSecret(names.token))?.[RELAY_SECRETS.identityToken.keys.token]?.trim() ?? token;
    },
  };
}
