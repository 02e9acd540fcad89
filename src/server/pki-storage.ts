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
 */
import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CoreV1Api, V1ObjectMeta, V1Secret, type KubeConfig } from "@kubernetes/client-node";
import type { Redis } from "ioredis";
import { relayPkiFromSecrets, relayPkiToSecrets, RELAY_SECRETS, type RelayPki, type RelayPkiStorage } from "../relay/index.js";

/** PKI storage plus the bootstrap token. */
export interface RelaySecretStore extends RelayPkiStorage {
  /** Where it is kept, for logs and `--help` (never a secret). */
  readonly describe: string;
  loadToken(): Promise<string | undefined>;
  /** Stores a token only if none is stored; returns the stored one. */
  saveTokenIfAbsent(token: string): Promise<string>;
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
  const read = (name: string) => readFile(join(dir, name), "utf8").catch(() => undefined);
  const write = async (name: string, content: string, exclusive = false) => {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeFile(join(dir, name), content, { mode: 0o600, flag: exclusive ? "wx" : "w" });
  };
  return {
    describe: `directory ${dir}`,
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

export function createRedisSecretStore(redis: Redis, prefix: string): RelaySecretStore {
  const pkiKey = `${prefix}:relay:pki`;
  const tokenKey = `${prefix}:relay:token`;
  return {
    describe: `Redis key ${pkiKey}`,
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
