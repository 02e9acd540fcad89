// The web UI's edge on a real socket: the page and its assets (public, strict CSP, no path escape, a
// missing build says how to build), and the live event stream (read token required; a change of the
// status becomes one `change` event; a cap on open streams).
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import { createWebhookHandlers } from "../../src/git-sync/index.js";
import { createApiAuth, createEventStream, createServerHttp, createWebRoutes, generateApiToken, type Route, type ServerApi, type ServerHttp } from "../../src/server/index.js";

const READ = generateApiToken();
const none = () => Promise.resolve(undefined);
const api: ServerApi = { healthy: () => true, readiness: () => ({ ready: true, reason: "ok" }), status: none, clusters: none, cluster: none, clusterInput: none, clusterOutput: none, commits: none, commit: none, diagnostics: none, resources: none, diff: none, insights: none };
let http: ServerHttp | undefined;
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  await http?.stop();
  http = undefined;
  for (const c of cleanup.splice(0)) await c();
});

async function serve(routes: Route[]): Promise<string> {
  const { logger } = createMemoryLogger("http");
  http = createServerHttp({ api, registry: new Registry(), webhooks: createWebhookHandlers({ logger, onPush: () => "accepted" }), logger, host: "127.0.0.1", port: 0, auth: createApiAuth({ tokens: { read: READ, admin: generateApiToken() }, hint: "test" }), routes });
  return `http://127.0.0.1:${String(await http.start())}`;
}

async function builtUi(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "gitmesh-web-"));
  cleanup.push(() => rm(root, { recursive: true, force: true }));
  await mkdir(join(root, "assets"));
  await writeFile(join(root, "index.html"), "<!doctype html><div id=app></div><script type=module src=./assets/index-abc.js></script>");
  await writeFile(join(root, "assets", "index-abc.js"), "console.log('ui')");
  await writeFile(join(root, "secret.txt"), "not an asset");
  return root;
}

/** Reads server-sent event names from a stream until `count` arrived. */
async function events(res: Response, count: number): Promise<string[]> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const names: string[] = [];
  while (names.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
    names.splice(0, names.length, ...[...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]!));
  }
  await reader.cancel();
  return names.slice(0, count);
}

describe("web UI edge", () => {
  it("serves the page and hashed assets without a token, with a same-origin CSP; nothing outside assets/", async () => {
    const base = await serve(createWebRoutes({ root: await builtUi() }));
    const page = await fetch(`${base}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id=app>');
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(page.headers.get("cache-control")).toBe("no-cache");
    const js = await fetch(`${base}/assets/index-abc.js`);
    expect([js.status, js.headers.get("content-type"), js.headers.get("cache-control"), js.headers.get("content-encoding")]).toEqual([200, "text/javascript; charset=utf-8", "public, max-age=31536000, immutable", "gzip"]);
    expect(await js.text()).toBe("console.log('ui')");
    const plain = await fetch(`${base}/assets/index-abc.js`, { headers: { "accept-encoding": "identity" } });
    expect([plain.headers.get("content-encoding"), await plain.text()]).toEqual([null, "console.log('ui')"]);
    for (const path of ["/assets/..%2Fsecret.txt", "/assets/../secret.txt", "/secret.txt", "/assets/secret.txt", "/assets/missing.js"]) {
      const r = await fetch(`${base}${path}`);
      expect(r.status, path).toBe(404);
      expect(await r.text(), path).not.toContain("not an asset");
    }
  });

  it("without a build, the page says how to build it (and the API still answers)", async () => {
    const base = await serve(createWebRoutes({ root: join(tmpdir(), "gitmesh-no-such-build") }));
    const page = await fetch(`${base}/`);
    expect(page.status).toBe(503);
    expect(await page.text()).toContain("npm run build");
  });

  it("the event stream needs the read token, and sends one change event per change of the status", async () => {
    let state = { commit: "a" };
    const stream = createEventStream({ fingerprint: () => Promise.resolve(state), intervalMs: 20, logger: createMemoryLogger("events").logger });
    cleanup.push(() => Promise.resolve(stream.close()));
    const base = await serve([stream.route]);
    expect((await fetch(`${base}/api/events`)).status).toBe(401);
    const res = await fetch(`${base}/api/events`, { headers: { authorization: `Bearer ${READ}` } });
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const got = events(res, 2);
    await new Promise((r) => setTimeout(r, 100));
    state = { commit: "b" };
    expect(await got).toEqual(["hello", "change"]);
  });

  it("caps open streams: one more answers 503 with what to do", async () => {
    const stream = createEventStream({ fingerprint: () => Promise.resolve(1), maxStreams: 1, logger: createMemoryLogger("events").logger });
    cleanup.push(() => Promise.resolve(stream.close()));
    const base = await serve([stream.route]);
    const auth = { headers: { authorization: `Bearer ${READ}` } };
    const first = await fetch(`${base}/api/events`, auth);
    expect(first.status).toBe(200);
    const second = await fetch(`${base}/api/events`, auth);
    expect(second.status).toBe(503);
    expect(await second.text()).toContain("too many open event streams");
    await first.body?.cancel();
  });
});
