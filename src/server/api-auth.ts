/**
 * Bearer-token authentication of the HTTP API (`/api/*`). Two roles:
 *
 * - `read`: every GET of /api (dashboards, `gitmesh check`);
 * - `admin`: read, plus the mutating actions under /api (re-issue, …).
 *
 * Each route of the HTTP edge declares who may call it (`RouteAccess`): `public` for /healthz,
 * /readyz, /metrics and the webhooks (which carry their own HMAC), or the least role it needs.
 * A token is presented as `Authorization: Bearer <token>`; for safe methods (GET/HEAD) also as the
 * cookie `gitmesh_token` — the hook for a future UI login page (never for mutating requests, so a
 * cross-site form cannot act with a browser's cookie).
 *
 * Tokens are compared in constant time: the candidate and each known token are hashed (SHA-256,
 * equal lengths whatever the input) and compared with timingSafeEqual, against both tokens every
 * time. Tokens never appear in answers or logs; `describe`/`hint` name where they are kept.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { IncomingHttpHeaders } from "node:http";
import type { Logger } from "../core/index.js";
import type { ApiTokenStore } from "./api-token-store.js";
import type { ServerConfig } from "./config.js";

export const API_ROLES = ["read", "admin"] as const;
export type ApiRole = (typeof API_ROLES)[number];
/** Who may call a route: anyone (`public`), or at least this role. */
export type RouteAccess = "public" | ApiRole;

export interface ApiTokens {
  readonly read: string;
  readonly admin: string;
}

/** Shortest token accepted from a file (a generated one is 43 characters: 32 random bytes, base64url). */
export const API_TOKEN_MIN_LENGTH = 32;
/** Cookie a future UI login page may set (GET/HEAD only). */
export const API_TOKEN_COOKIE = "gitmesh_token";
/** Kubernetes Secret holding the tokens (keys `read`, `admin`), created by the chart or the server. */
export const API_TOKEN_SECRET = "gitmesh-api-tokens";

export function generateApiToken(): string {
  return randomBytes(32).toString("base64url");
}

/** Whether a caller with `role` may call a route needing `access`. */
export function allows(role: ApiRole | undefined, access: RouteAccess): boolean {
  if (access === "public") return true;
  if (role === undefined) return false;
  return access === "read" || role === "admin";
}

export type AuthOutcome =
  | { readonly ok: true; readonly role: ApiRole }
  /** missing: no credential at all; malformed: an Authorization header that is not `Bearer <token>`; invalid: an unknown token. */
  | { readonly ok: false; readonly reason: "missing" | "malformed" | "invalid" };

export interface ApiAuth {
  /** Where a caller finds a token (for 401 answers; names a Secret or a file, never a token). */
  readonly hint: string;
  authenticate(headers: IncomingHttpHeaders, method: string): AuthOutcome;
}

const digest = (s: string) => createHash("sha256").update(s, "utf8").digest();
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

export function createApiAuth(options: { readonly tokens: ApiTokens; readonly hint: string }): ApiAuth {
  const read = digest(options.tokens.read);
  const admin = digest(options.tokens.admin);
  const roleOf = (candidate: string): ApiRole | undefined => {
    const d = digest(candidate);
    // Both comparisons always run: the time taken says nothing about which token (if any) matched.
    const isAdmin = timingSafeEqual(d, admin);
    const isRead = timingSafeEqual(d, read);
    return isAdmin ? "admin" : isRead ? "read" : undefined;
  };
  return {
    hint: options.hint,
    authenticate(headers, method) {
      const header = headers.authorization;
      let candidate: string | undefined;
      if (header !== undefined && header !== "") {
        const m = BEARER.exec(header);
        if (!m) return { ok: false, reason: "malformed" };
        candidate = m[1]!;
      } else if (method === "GET" || method === "HEAD") {
        candidate = cookie(headers.cookie, API_TOKEN_COOKIE);
      }
      if (candidate === undefined || candidate === "") return { ok: false, reason: "missing" };
      const role = roleOf(candidate);
      return role === undefined ? { ok: false, reason: "invalid" } : { ok: true, role };
    },
  };
}

function cookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Token files given to the server (`--api-token-file`, `--api-admin-token-file`); each wins over the stored token of its role. */
export interface ApiTokenFiles {
  readonly read?: string | undefined;
  readonly admin?: string | undefined;
}

export class HttpAccessError extends Error {
  readonly code = "HttpAccessError";
}

/**
 * The tokens in force: a token file wins for its role; otherwise the stored token; otherwise one is
 * generated and stored once (replicas starting together agree: the store keeps the first).
 */
export async function resolveApiTokens(store: ApiTokenStore, files: ApiTokenFiles = {}): Promise<{ tokens: ApiTokens; generated: boolean }> {
  const fromFile = async (role: ApiRole, path: string | undefined): Promise<string | undefined> => {
    if (path === undefined) return undefined;
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (err) {
      throw new HttpAccessError(`cannot read the API ${role} token file ${path}: ${(err as { code?: string }).code ?? "error"}`);
    }
    const token = text.trim();
    if (token.length < API_TOKEN_MIN_LENGTH || /\s/.test(token)) throw new HttpAccessError(`the API ${role} token in ${path} must be one word of at least ${String(API_TOKEN_MIN_LENGTH)} characters (generate one with: openssl rand -base64 32)`);
    return token;
  };
  const given = { read: await fromFile("read", files.read), admin: await fromFile("admin", files.admin) };
  let generated = false;
  let stored: Partial<ApiTokens> = {};
  if (given.read === undefined || given.admin === undefined) {
    stored = (await store.load()) ?? {};
    if (stored.read === undefined || stored.admin === undefined) {
      stored = await store.saveIfAbsent({ read: stored.read ?? generateApiToken(), admin: stored.admin ?? generateApiToken() });
      generated = true;
    }
  }
  const read = given.read ?? stored.read;
  const admin = given.admin ?? stored.admin;
  if (read === undefined || admin === undefined) throw new HttpAccessError(`the API tokens in ${store.describe} lack the ${read === undefined ? "read" : "admin"} token`);
  if (read === admin) throw new HttpAccessError("the API read and admin tokens are the same: give each role its own token");
  return { tokens: { read, admin }, generated };
}

/** What the HTTP edge needs from the configuration: the authenticator (null: API open), the tokens, TLS material. */
export interface HttpAccess {
  readonly auth: ApiAuth | null;
  readonly tokens: ApiTokens | undefined;
  readonly tls: { readonly certPem: string; readonly keyPem: string } | undefined;
}

/**
 * Reads the token files and TLS files of the configuration, resolves the tokens (files, the store, or
 * generated once), and logs where they are — never what they are.
 */
export async function prepareHttpAccess(config: Pick<ServerConfig, "apiAuth" | "apiTokenFiles" | "apiTokenSecret" | "httpTls" | "kubernetesSecrets" | "namespace">, store: ApiTokenStore, log: Logger): Promise<HttpAccess> {
  let tls: HttpAccess["tls"];
  if (config.httpTls) {
    const read = (what: string, path: string) =>
      readFile(path, "utf8").catch((err: unknown) => {
        throw new HttpAccessError(`cannot read the HTTP TLS ${what} ${path}: ${(err as { code?: string }).code ?? "error"}`);
      });
    tls = { certPem: await read("certificate", config.httpTls.certFile), keyPem: await read("key", config.httpTls.keyFile) };
  }
  if (!config.apiAuth) {
    log.warn("API authentication is OFF: anyone who reaches the HTTP port reads rendered output and discovery (--no-api-auth; trials only)");
    return { auth: null, tokens: undefined, tls };
  }
  const { tokens, generated } = await resolveApiTokens(store, config.apiTokenFiles);
  const fromFiles = config.apiTokenFiles.read !== undefined && config.apiTokenFiles.admin !== undefined;
  const where = config.kubernetesSecrets
    ? `the read token: kubectl -n ${config.namespace} get secret ${config.apiTokenSecret} -o jsonpath='{.data.read}' | base64 -d`
    : fromFiles
      ? "the tokens are in the files given to the server (--api-token-file, --api-admin-token-file)"
      : `the tokens are in ${store.describe}`;
  log.info(generated ? "API tokens generated and stored (roles read, admin)" : "API tokens loaded (roles read, admin)", {
    storage: fromFiles ? "token files" : store.describe,
    ...(config.apiTokenFiles.read !== undefined ? { readTokenFile: config.apiTokenFiles.read } : {}),
    ...(config.apiTokenFiles.admin !== undefined ? { adminTokenFile: config.apiTokenFiles.admin } : {}),
  });
  return { auth: createApiAuth({ tokens, hint: where }), tokens, tls };
}
