// The HTTP edge on a real socket: routing, the one error handler (404/405/400/409/503/500 with a JSON
// body that says what to do), webhooks through the git-sync handlers, and no secret in any answer —
// even when an error message carries credentials. (Authentication: api-auth.test.ts.)
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { createMemoryLogger, NeedsHumanError, RetryLaterError } from "../../src/core/index.js";
import { createWebhookHandlers, signBody } from "../../src/git-sync/index.js";
import { createApiAuth, createDiffService, createServerHttp, generateApiToken, HttpError, type ServerApi, type ServerHttp } from "../../src/server/index.js";

const SECRET = "webhook-secret-value-123";
const READ = generateApiToken();
const READ_AUTH = { headers: { authorization: `Bearer ${READ}` } };
let http: ServerHttp | undefined;
afterEach(async () => {
  await http?.stop();
  http = undefined;
});

function api(overrides: Partial<ServerApi> = {}): ServerApi {
  return {
    healthy: () => true,
    readiness: () => ({ ready: false, reason: "warming: waiting for discovery from cluster2" }),
    status: () => Promise.resolve({ replica: "r1" }),
    clusters: () => Promise.resolve({ clusters: [] }),
    cluster: (name) => Promise.resolve(name === "cluster1" ? { name } : undefined),
    clusterInput: () => Promise.resolve(undefined),
    clusterOutput: () => Promise.resolve(undefined),
    commits: () => Promise.resolve({ commits: [] }),
    commit: () => Promise.resolve(undefined),
    diagnostics: () => Promise.resolve({ files: [] }),
    resources: () => Promise.resolve({ resources: [] }),
    diff: () => Promise.resolve({}),
    insights: () => Promise.resolve({ insights: [] }),
    ...overrides,
  };
}

async function serve(a: ServerApi, onPush: (sha: string) => void = () => undefined) {
  const hint = (sha: string) => {
    onPush(sha);
    return "accepted" as const;
  };
  const mem = createMemoryLogger("http");
  const logger = mem.logger;
  const webhooks = createWebhookHandlers({ genericSecret: SECRET, onPush: (e) => hint(e.sha), logger });
  const counted: string[] = [];
  http = createServerHttp({ api: a, registry: new Registry(), webhooks, logger, host: "127.0.0.1", port: 0, auth: createApiAuth({ tokens: { read: READ, admin: generateApiToken() }, hint: "test" }), onWebhook: (p, s) => counted.push(`${p}:${String(s)}`), maxBodyBytes: 1024 });
  const port = await http.start();
  return { base: `http://127.0.0.1:${String(port)}`, mem, counted };
}

describe("server HTTP edge", () => {
  it("GET /api/diff needs both revisions; a malformed one is a 400 and one the repository lacks a 404, each naming it", async () => {
    const service = createDiffService({ location: { kind: "local", path: "/nonexistent" }, discovery: () => Promise.resolve([]), logger: createMemoryLogger("diff").logger });
    const { base } = await serve(api({ diff: (b, h) => service.diff(b, h) }));
    const missing = await fetch(`${base}/api/diff?base=${"a".repeat(40)}`, READ_AUTH);
    expect(missing.status).toBe(400);
    expect(await missing.text()).toContain("both commits are required");
    const malformed = await fetch(`${base}/api/diff?base=a..b&head=${"b".repeat(40)}`, READ_AUTH);
    expect(malformed.status).toBe(400);
    expect(await malformed.text()).toContain('base: \\"a..b\\" is not a revision');
    // A short SHA is taken (as by `gitmesh diff`); this repository has no such commit.
    const short = await fetch(`${base}/api/diff?base=abc1234&head=${"b".repeat(40)}`, READ_AUTH);
    expect(short.status).toBe(404);
    expect(await short.text()).toContain("base: unknown revision abc1234");
    expect((await fetch(`${base}/api/diff?base=abc1234&head=abc1234`)).status).toBe(401);
  });

  it("answers health, readiness with its reason, the API index and a cluster", async () => {
    const { base } = await serve(api());
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.text()).toContain("waiting for discovery from cluster2");
    const index = (await (await fetch(`${base}/api`, READ_AUTH)).json()) as { endpoints: string[] };
    expect(index.endpoints).toContain("GET /api/status");
    expect(await (await fetch(`${base}/api/clusters/cluster1`, READ_AUTH)).json()).toEqual({ name: "cluster1" });
  });

  it("maps client mistakes to 404/405/400/413 with a JSON body saying what to do", async () => {
    const { base } = await serve(api());
    const missing = await fetch(`${base}/api/clusters/nope`, READ_AUTH);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toBe("cluster nope not found");
    const noRoute = await fetch(`${base}/nothing-here`);
    expect(noRoute.status).toBe(404);
    expect(((await noRoute.json()) as { error: { message: string } }).error.message).toContain("see GET /api");
    const wrongMethod = await fetch(`${base}/api/status`, { method: "DELETE", ...READ_AUTH });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("GET");
    const malformed = await fetch(`${base}/api/clusters/%E0%A4%A`, READ_AUTH);
    expect(malformed.status).toBe(400);
    const big = await fetch(`${base}/webhooks/generic`, { method: "POST", body: "x".repeat(4096) });
    expect(big.status).toBe(413);
  });

  it("a client that goes away in the middle of a webhook upload is a warning naming the path, not a server failure", async () => {
    const { base, mem } = await serve(api());
    const { port } = new URL(base);
    const socket = connect(Number(port), "127.0.0.1");
    await new Promise<void>((resolve) => socket.once("connect", resolve));
    socket.write("POST /webhooks/generic HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"ref\":");
    await new Promise((r) => setTimeout(r, 50));
    socket.destroy();
    await expect.poll(() => mem.records.filter((r) => r.msg === "HTTP request aborted by the client"), { timeout: 10_000 }).toHaveLength(1);
    const warned = mem.records.find((r) => r.msg === "HTTP request aborted by the client")!;
    expect(warned.level).toBe("warn");
    expect(warned.fields).toMatchObject({ path: "/webhooks/generic", method: "POST" });
    expect(mem.records.filter((r) => r.level === "error")).toEqual([]);
    // The server goes on answering.
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it("maps infrastructure failures: retry-later → 503 with Retry-After, needs-a-human → 409, bugs → 500 generic and logged", async () => {
    const { base, mem } = await serve(
      api({
        status: () => Promise.reject(new RetryLaterError("Redis is down", 2500)),
        clusters: () => Promise.reject(new NeedsHumanError("cannot read https://user:hunter2-password@git.example.com/repo.git")),
        commits: () => Promise.reject(new Error("bug while reading https://git:supersecret-token@git.example.com/repo.git")),
        diagnostics: () => Promise.reject(new HttpError(400, "bad request")),
      }),
    );
    const retry = await fetch(`${base}/api/status`, READ_AUTH);
    expect(retry.status).toBe(503);
    expect(retry.headers.get("retry-after")).toBe("3");
    const human = await fetch(`${base}/api/clusters`, READ_AUTH);
    expect(human.status).toBe(409);
    const humanText = await human.text();
    expect(humanText).toContain("git.example.com");
    expect(humanText).not.toContain("hunter2-password");
    const bug = await fetch(`${base}/api/commits`, READ_AUTH);
    expect(bug.status).toBe(500);
    const bugText = await bug.text();
    expect(bugText).toContain("internal error");
    expect(bugText).not.toContain("supersecret-token");
    expect(mem.text()).toContain("HTTP request failed");
    expect(mem.text()).not.toContain("supersecret-token");
    expect((await fetch(`${base}/api/diagnostics`, READ_AUTH)).status).toBe(400);
  });

  it("passes signed webhooks to the trigger, refuses unsigned ones, counts both, never echoes the secret", async () => {
    const pushed: string[] = [];
    const { base, counted } = await serve(api(), (sha) => pushed.push(sha));
    const sha = "a".repeat(40);
    const body = JSON.stringify({ ref: "refs/heads/main", sha });
    const ok = await fetch(`${base}/webhooks/generic`, { method: "POST", headers: { "x-signature-256": signBody(SECRET, body) }, body });
    expect(ok.status).toBe(202);
    const bad = await fetch(`${base}/webhooks/generic`, { method: "POST", headers: { "x-signature-256": signBody("wrong", body) }, body });
    expect(bad.status).toBe(401);
    expect(await bad.text()).not.toContain(SECRET);
    expect(pushed).toEqual([sha]);
    expect(counted).toEqual(["generic:202", "generic:401"]);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).not.toContain(SECRET);
  });
});
