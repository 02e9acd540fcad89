/**
 * Where the API tokens (roles `read` and `admin`) are kept between restarts: the same places as the
 * relay bootstrap token (pki-storage.ts), chosen the same way by the composition root.
 *
 * - Kubernetes: the Secret `gitmesh-api-tokens` (keys `read`, `admin`) in the server's namespace;
 *   the chart creates it once and mounts it, so the server normally reads the mounted files and this
 *   store is only used outside the chart (`--kubeconfig`);
 * - a directory (`--pki-dir`): files `api-token-read` and `api-token-admin`, mode 0600;
 * - Redis (shared by every replica): one key, written with SET NX so replicas agree;
 * - memory (standalone trials): regenerated on every start.
 *
 * `saveIfAbsent` never overwrites: whoever stored first wins, and the stored tokens are returned.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CoreV1Api, V1ObjectMeta, V1Secret, type KubeConfig } from "@kubernetes/client-node";
import type { RedisClient } from "../queue/index.js";
import type { ApiTokens } from "./api-auth.js";

export interface ApiTokenStore {
  /** Where the tokens are kept, for logs and 401 answers (never a token). */
  readonly describe: string;
  load(): Promise<Partial<ApiTokens> | undefined>;
  /** Stores the tokens unless some are stored already; returns what is stored. */
  saveIfAbsent(tokens: ApiTokens): Promise<Partial<ApiTokens>>;
}

const clean = (v: string | undefined | null): string | undefined => v?.trim() || undefined;
const partial = (read: string | undefined, admin: string | undefined): Partial<ApiTokens> => ({ ...(read ? { read } : {}), ...(admin ? { admin } : {}) });

export function createDirectoryApiTokenStore(dir: string): ApiTokenStore {
  const files = { read: join(dir, "api-token-read"), admin: join(dir, "api-token-admin") };
  const read = (f: string) => readFile(f, "utf8").then(clean, () => undefined);
  const load = async () => {
    const tokens = partial(await read(files.read), await read(files.admin));
    return Object.keys(tokens).length === 0 ? undefined : tokens;
  };
  return {
    describe: `files ${files.read} and ${files.admin}`,
    load,
    async saveIfAbsent(tokens) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      // wx: a file another replica (or an operator) wrote first is kept.
      for (const role of ["read", "admin"] as const) await writeFile(files[role], tokens[role] + "\n", { mode: 0o600, flag: "wx" }).catch(() => undefined);
      return (await load()) ?? {};
    },
  };
}

export function createRedisApiTokenStore(redis: RedisClient, prefix: string): ApiTokenStore {
  const key = `${prefix}:api:tokens`;
  const load = async () => {
    const raw = await redis.get(key);
    if (!raw) return undefined;
    const v = JSON.parse(raw) as { read?: string; admin?: string };
    return partial(clean(v.read), clean(v.admin));
  };
  return {
    describe: `Redis key ${key}`,
    load,
    async saveIfAbsent(tokens) {
      await redis.set(key, JSON.stringify({ read: tokens.read, admin: tokens.admin }), "NX");
      return (await load()) ?? {};
    },
  };
}

export function createMemoryApiTokenStore(): ApiTokenStore {
  let stored: ApiTokens | undefined;
  return {
    describe: "memory (regenerated on every start; use --pki-dir, Redis or --api-token-file to keep them)",
    load: () => Promise.resolve(stored),
    saveIfAbsent: (t) => Promise.resolve((stored ??= t)),
  };
}

/** The Secret `name` (keys `read`, `admin`) in `namespace` (RBAC: get; create when the chart does not bring it). */
export function createKubernetesApiTokenStore(kc: KubeConfig, namespace: string, name: string): ApiTokenStore {
  const api = kc.makeApiClient(CoreV1Api);
  const load = async (): Promise<Partial<ApiTokens> | undefined> => {
    try {
      const s = await api.readNamespacedSecret({ name, namespace });
      const get = (k: string) => clean(s.data?.[k] === undefined ? undefined : Buffer.from(s.data[k], "base64").toString("utf8"));
      return partial(get("read"), get("admin"));
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  };
  return {
    describe: `Kubernetes Secret ${name} (keys read, admin) in namespace ${namespace}`,
    load,
    async saveIfAbsent(tokens) {
      const body = new V1Secret();
      body.metadata = Object.assign(new V1ObjectMeta(), { name, namespace, labels: { "app.kubernetes.io/managed-by": "gitmesh-server" } });
      body.type = "Opaque";
      body.data = { read: Buffer.from(tokens.read).toString("base64"), admin: Buffer.from(tokens.admin).toString("base64") };
      try {
        await api.createNamespacedSecret({ namespace, body });
      } catch (err) {
        if ((err as { code?: number }).code !== 409) throw err;
      }
      return (await load()) ?? {};
    },
  };
}
