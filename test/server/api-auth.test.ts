// API authentication attacked through the real HTTP edge on 127.0.0.1 (and HTTPS with a real
// certificate): no token, a wrong token (same length, other lengths, other schemes), the read token on
// an admin action, the cookie on a mutating request, unknown /api paths; open endpoints stay open;
// refusals are logged and counted, and no answer or log line ever holds a token. Token storage:
// generated once (directory, real Redis, the Kubernetes API emulator), token files win, bad files
// are refused with a message.
import { stat, writeFile } from "node:fs/promises";
import { request as httpsRequest } from "node:https";
import { join } from "node:path";
import { Registry } from "prom-client";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import { createWebhookHandlers, signBody } from "../../src/git-sync/index.js";
import { createSelfSignedCa, issueServerCertificate } from "../../src/relay/index.js";
import {
  createApiAuth,
  createDirectoryApiTokenStore,
  createKubernetesApiTokenStore,
  createMemoryApiTokenStore,
  createRedisApiTokenStore,
  createServerHttp,
  generateApiToken,
  prepareHttpAccess,
  resolveApiTokens,
  type Route,
  type ServerApi,
  type ServerHttp,
} from "../../src/server/index.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { useTempDirs } from "../helpers/tmp.js";

const READ = generateApiToken();
const ADMIN = generateApiToken();
const HOOK_SECRET = "webhook-secret-for-auth-test";
const tmp = useTempDirs("gitmesh-api-auth-");

const api: ServerApi = {
  healthy: () => true,
  readiness: () => ({ ready: true, reason: "ok" }),
  status: () => Promise.resolve({ replica: "r1" }),
  clusters: () => Promise.resolve({ clusters: [] }),
  cluster: (name) => Promise.resolve({ name }),
  clusterInput: () => Promise.resolve(undefined),
  clusterOutput: () => Promise.resolve({ cluster: "c1", resources: [] }),
  commits: () => Promise.resolve({ commits: [] }),
  commit: () => Promise.resolve(undefined),
  diagnostics: () => Promise.resolve({ files: [] }),
  resources: () => Promise.resolve({ resources: [] }),
  diff: () => Promise.resolve({}),
  insights: () => Promise.resolve({ insights: [] }),
};

let http: ServerHttp | undefined;
afterEach(async () => {
  await http?.stop();
  http = undefined;
});

async function serve(extra: { tls?: { certPem: string; keyPem: string }; routes?: Route[] } = {}) {
  const mem = createMemoryLogger("http");
  const registry = new Registry();
  const reissued: string[] = [];
  const webhooks = createWebhookHandlers({ genericSecret: HOOK_SECRET, onPush: () => "accepted", logger: mem.logger });
  const reissue: Route = {
    method: "POST",
    pattern: /^\/api\/clusters\/([^/]+)\/reissue$/,
    access: "admin",
    handler: (_q, res, [c]) => {
      reissued.push(c!);
      res.writeHead(202, { "content-type": "application/json" });
      res.end(JSON.stringify({ reissued: c }));
      return Promise.resolve();
    },
  };
  http = createServerHttp({
    api,
    registry,
    webhooks,
    logger: mem.logger,
    host: "127.0.0.1",
    port: 0,
    auth: createApiAuth({ tokens: { read: READ, admin: ADMIN }, hint: "the tokens are in the test" }),
    routes: [reissue, ...(extra.routes ?? [])],
    ...(extra.tls ? { tls: extra.tls } : {}),
  });
  const port = await http.start();
  const base = `${extra.tls ? "https" : "http"}://127.0.0.1:${String(port)}`;
  return { base, mem, registry, reissued };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe("API bearer tokens", () => {
  it("refuses /api without a valid token (401 + WWW-Authenticate), before routing, and never echoes a token", async () => {
    const { base, mem } = await serve();
    const wrongSameLength = READ.slice(0, -1) + (READ.endsWith("A") ? "B" : "A");
    const attempts: [string, Record<string, string>][] = [
      ["no token", {}],
      ["empty bearer", { authorization: "Bearer " }],
      ["wrong token, same length", bearer(wrongSameLength)],
      ["a prefix of the read token", bearer(READ.slice(0, 20))],
      ["the read token with more after it", bearer(READ + "xyz")],
      ["a very long token", bearer("a".repeat(8000))],
      ["basic auth with the token", { authorization: `Basic ${Buffer.from(`x:${READ}`).toString("base64")}` }],
      ["token without scheme", { authorization: READ }],
      ["two tokens", { authorization: `Bearer ${READ} ${ADMIN}` }],
    ];
    for (const [what, headers] of attempts) {
      for (const path of ["/api/status", "/api/clusters/c1/output", "/api", "/api/no-such-route"]) {
        const res = await fetch(`${base}${path}`, { headers });
        const body = await res.text();
        expect(res.status, `${what} on ${path}`).toBe(401);
        expect(res.headers.get("www-authenticate")).toBe('Bearer realm="gitmesh"');
        expect(body).toContain("Authorization: Bearer <token>");
        expect(body).not.toContain(READ);
        expect(body).not.toContain(ADMIN);
        expect(body).not.toContain(wrongSameLength);
      }
    }
    const log = mem.text();
    expect(log).toContain("API request refused");
    expect(log).not.toContain(READ);
    expect(log).not.toContain(ADMIN);
    expect(log).not.toContain(wrongSameLength);
  });

  it("read token reads, may not act (403); admin token does both; a mutating route never takes the cookie", async () => {
    const { base, reissued, mem } = await serve();
    expect((await fetch(`${base}/api/status`, { headers: bearer(READ) })).status).toBe(200);
    expect(await (await fetch(`${base}/api/clusters/c1`, { headers: { authorization: `bearer  ${READ}` } })).json()).toEqual({ name: "c1" });
    const forbidden = await fetch(`${base}/api/clusters/c1/reissue`, { method: "POST", headers: bearer(READ) });
    expect(forbidden.status).toBe(403);
    const text = await forbidden.text();
    expect(text).toContain("needs the admin token");
    expect(text).not.toContain(READ);
    expect(reissued).toEqual([]);

    expect((await fetch(`${base}/api/status`, { headers: bearer(ADMIN) })).status).toBe(200);
    const ok = await fetch(`${base}/api/clusters/c1/reissue`, { method: "POST", headers: bearer(ADMIN) });
    expect(ok.status).toBe(202);
    expect(reissued).toEqual(["c1"]);

    // The cookie (a future UI's login) reads, but a cross-site form posting with it cannot act.
    expect((await fetch(`${base}/api/status`, { headers: { cookie: `theme=dark; gitmesh_token=${READ}` } })).status).toBe(200);
    expect((await fetch(`${base}/api/status`, { headers: { cookie: "gitmesh_token=nope" } })).status).toBe(401);
    expect((await fetch(`${base}/api/clusters/c1/reissue`, { method: "POST", headers: { cookie: `gitmesh_token=${ADMIN}` } })).status).toBe(401);
    expect(reissued).toEqual(["c1"]);
    expect(mem.text()).not.toContain(ADMIN);
  });

  it("keeps /healthz, /readyz, /metrics and HMAC webhooks open; counts refusals by reason in /metrics", async () => {
    const { base } = await serve();
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const body = JSON.stringify({ ref: "refs/heads/main", sha: "b".repeat(40) });
    expect((await fetch(`${base}/webhooks/generic`, { method: "POST", headers: { "x-signature-256": signBody(HOOK_SECRET, body) }, body })).status).toBe(202);
    // A bearer token is no substitute for the webhook's HMAC.
    expect((await fetch(`${base}/webhooks/generic`, { method: "POST", headers: bearer(ADMIN), body })).status).toBe(401);
    // An unknown non-/api path still answers 404 (no token involved).
    expect((await fetch(`${base}/nothing`)).status).toBe(404);
    await fetch(`${base}/api/status`);
    await fetch(`${base}/api/status`, { headers: bearer("x".repeat(43)) });
    await fetch(`${base}/api/status`, { headers: { authorization: "Basic eDp5" } });
    await fetch(`${base}/api/clusters/c1/reissue`, { method: "POST", headers: bearer(READ) });
    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    for (const reason of ["missing", "invalid", "malformed", "forbidden"]) expect(text).toMatch(new RegExp(`gitmesh_server_api_auth_failures_total\\{reason="${reason}"\\} 1`));
    expect(text).not.toContain(READ);
  });

  it("refuses to build an edge whose /api routes are public or whose actions need less than admin", () => {
    const handler = () => Promise.resolve();
    const build = (route: Route) => () => createServerHttp({ api, registry: new Registry(), webhooks: createWebhookHandlers({ onPush: () => "accepted", logger: createMemoryLogger("x").logger }), logger: createMemoryLogger("x").logger, auth: null, routes: [route] });
    expect(build({ method: "POST", pattern: /^\/api\/clusters\/([^/]+)\/reissue$/, access: "read", handler })).toThrow(/must need the admin role/);
    expect(build({ method: "GET", pattern: /^\/api\/secret$/, access: "public", handler })).toThrow(/must need a role/);
    expect(build({ method: "DELETE", pattern: /^\/api\/clusters\/x$/, access: "admin", handler })).not.toThrow();
  });

  it("serves HTTPS with the given certificate: a real TLS request verified against its CA", async () => {
    const ca = createSelfSignedCa({ commonName: "test-http-ca" });
    const cert = issueServerCertificate(ca, { authority: "localhost", additionalSans: ["127.0.0.1"] });
    const { base } = await serve({ tls: cert });
    const get = (path: string, opts: { ca?: string; token?: string }) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpsRequest(`${base}${path}`, { ...(opts.ca ? { ca: opts.ca } : {}), headers: opts.token ? bearer(opts.token) : {} }, (res) => {
          let body = "";
          res.on("data", (d: Buffer) => (body += d.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on("error", reject);
        req.end();
      });
    expect((await get("/api/status", { ca: ca.certPem, token: READ })).status).toBe(200);
    expect((await get("/api/status", { ca: ca.certPem })).status).toBe(401);
    expect((await get("/healthz", { ca: ca.certPem })).body).toBe("ok\n");
    // Without the CA the certificate is not trusted.
    await expect(get("/healthz", {})).rejects.toThrow(/self[- ]signed|unable to verify|certificate/i);
    // Plain HTTP on the TLS port gets no answer.
    await expect(fetch(`${base.replace("https", "http")}/healthz`)).rejects.toThrow();
  });
});

describe("API token storage", () => {
  let redis: TestRedis;
  let kube: StartedKube;
  beforeAll(async () => {
    [redis, kube] = await Promise.all([startRedis(), startKube({ seed: "apiVersion: v1\nkind: Namespace\nmetadata: {name: gitmesh}\n" })]);
  }, 60_000);
  afterAll(async () => {
    await redis.stop().catch(() => undefined);
    await kube.stop();
  });

  it("generates 32-byte tokens once in a directory (mode 0600) and keeps them across restarts", async () => {
    const dir = tmp();
    const first = await resolveApiTokens(createDirectoryApiTokenStore(dir));
    expect(first.generated).toBe(true);
    expect(first.tokens.read).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(first.tokens.admin).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(first.tokens.read).not.toBe(first.tokens.admin);
    expect((await stat(join(dir, "api-token-read"))).mode & 0o777).toBe(0o600);
    const again = await resolveApiTokens(createDirectoryApiTokenStore(dir));
    expect(again).toEqual({ tokens: first.tokens, generated: false });
  });

  it("replicas starting together on one Redis agree on one pair", async () => {
    const clients = [new Redis(redis.url), new Redis(redis.url), new Redis(redis.url)];
    try {
      const all = await Promise.all(clients.map((c) => resolveApiTokens(createRedisApiTokenStore(c, "auth-test"))));
      for (const r of all) expect(r.tokens).toEqual(all[0]!.tokens);
    } finally {
      for (const c of clients) c.disconnect();
    }
  });

  it("creates the Kubernetes Secret gitmesh-api-tokens once and reads it back", async () => {
    const store = createKubernetesApiTokenStore(kube.kc, "gitmesh", "gitmesh-api-tokens");
    const first = await resolveApiTokens(store);
    const secret = kube.emulator.get("v1", "Secret", "gitmesh", "gitmesh-api-tokens") as { data: Record<string, string> } | undefined;
    expect(Buffer.from(secret!.data.read!, "base64").toString()).toBe(first.tokens.read);
    expect(Buffer.from(secret!.data.admin!, "base64").toString()).toBe(first.tokens.admin);
    const again = await resolveApiTokens(createKubernetesApiTokenStore(kube.newKubeConfig(), "gitmesh", "gitmesh-api-tokens"));
    expect(again).toEqual({ tokens: first.tokens, generated: false });
  });

  it("token files win over the store; short, multi-word, missing or equal tokens are refused with a message", async () => {
    const dir = tmp();
    const readFile = join(dir, "read");
    const adminFile = join(dir, "admin");
    const given = { read: generateApiToken(), admin: generateApiToken() };
    await writeFile(readFile, given.read + "\n");
    await writeFile(adminFile, given.admin);
    const store = createMemoryApiTokenStore();
    expect((await resolveApiTokens(store, { read: readFile, admin: adminFile })).tokens).toEqual(given);
    expect(await store.load()).toBeUndefined();
    // One file: the other role comes from the store.
    const mixed = await resolveApiTokens(store, { read: readFile });
    expect(mixed.tokens.read).toBe(given.read);
    expect(mixed.tokens.admin).toBe((await store.load())?.admin);

    await writeFile(join(dir, "short"), "too-short-token");
    await expect(resolveApiTokens(store, { read: join(dir, "short") })).rejects.toThrow(/at least 32 characters/);
    await expect(resolveApiTokens(store, { read: join(dir, "short") })).rejects.not.toThrow(/too-short-token/);
    await writeFile(join(dir, "two"), `${generateApiToken()} ${generateApiToken()}`);
    await expect(resolveApiTokens(store, { admin: join(dir, "two") })).rejects.toThrow(/one word/);
    await expect(resolveApiTokens(store, { read: join(dir, "missing") })).rejects.toThrow(/cannot read the API read token file .*missing: ENOENT/);
    await expect(resolveApiTokens(store, { read: readFile, admin: readFile })).rejects.toThrow(/same/);
  });

  it("prepareHttpAccess logs where the tokens are, never what they are; --no-api-auth is loud", async () => {
    const mem = createMemoryLogger("http");
    const dir = tmp();
    const base = { apiTokenFiles: { read: undefined, admin: undefined }, apiTokenSecret: "gitmesh-api-tokens", httpTls: undefined, kubernetesSecrets: false, namespace: "gitmesh" };
    const access = await prepareHttpAccess({ ...base, apiAuth: true }, createDirectoryApiTokenStore(dir), mem.logger);
    expect(access.auth?.hint).toContain(join(dir, "api-token-read"));
    expect(mem.text()).toContain("API tokens generated and stored");
    expect(mem.text()).not.toContain(access.tokens!.read);
    expect(mem.text()).not.toContain(access.tokens!.admin);
    const k8s = await prepareHttpAccess({ ...base, apiAuth: true, kubernetesSecrets: true }, createDirectoryApiTokenStore(dir), mem.logger);
    expect(k8s.auth?.hint).toContain("kubectl -n gitmesh get secret gitmesh-api-tokens -o jsonpath='{.data.read}' | base64 -d");
    const open = await prepareHttpAccess({ ...base, apiAuth: false }, createDirectoryApiTokenStore(dir), mem.logger);
    expect(open.auth).toBeNull();
    expect(mem.text()).toContain("API authentication is OFF");
    await expect(prepareHttpAccess({ ...base, apiAuth: true, httpTls: { certFile: join(dir, "no.crt"), keyFile: join(dir, "no.key") } }, createMemoryApiTokenStore(), mem.logger)).rejects.toThrow(/cannot read the HTTP TLS certificate/);
  });
});
