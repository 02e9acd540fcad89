/**
 * `npm run bench -- web-overview`: the web UI's page weight and the time to first render of the fleet
 * overview with a generated fleet of 100 clusters, in real Chromium. The server side is the real HTTP
 * edge (createServerHttp + createWebRoutes serving dist/web) over an API whose status answers 100
 * generated cluster views of the real shape; the figure is what an operator waits for in the browser
 * (navigation → every cluster row on screen), not the server's status computation (bench/e2e has that).
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Registry } from "prom-client";
import { chromium } from "playwright-core";
import { createMemoryLogger } from "../../src/core/index.js";
import { createWebhookHandlers } from "../../src/git-sync/index.js";
import { createApiAuth, createServerHttp, createWebRoutes, generateApiToken, type ServerApi } from "../../src/server/index.js";
import { round, type Benchmark, type Figure } from "../harness.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const CLUSTERS = 100;

function fleet(n: number) {
  const at = new Date().toISOString();
  return Array.from({ length: n }, (_, i) => {
    const name = `cluster-${String(i).padStart(3, "0")}`;
    return {
      name,
      registered: true,
      skipWarming: false,
      connected: i % 17 !== 0,
      streams: { push: true, pull: true },
      replica: i % 17 !== 0 ? `gitmesh-server-${String(i % 3)}` : null,
      stale: i % 17 === 0,
      waitingForAgent: false,
      lastSeen: at,
      warmed: true,
      discovery: { checksum: "x", at, services: 40 + (i % 9), workloads: 60 + (i % 13) },
      output: { version: 7, sourceCommit: "c".repeat(40), complete: true, resources: 300 + i, published: null, diagnostics: 0 },
      applied: { version: i % 17 === 0 ? 6 : 7, sourceCommit: "c".repeat(40), at },
      commit: "c".repeat(40),
      errors: { count: 0, first: [] },
      pruneHeld: null,
      frozen: [],
      cutOff: null,
      inSync: i % 17 !== 0,
    };
  });
}

export const benchmark: Benchmark = {
  name: "web-overview",
  description: `web UI: page weight, and first render of the fleet overview with ${String(CLUSTERS)} clusters in Chromium`,
  async run(ctx) {
    ctx.log("building the UI");
    execFileSync(process.execPath, ["node_modules/vite/bin/vite.js", "build", "web", "--config", "web/vite.config.mjs", "--logLevel", "warn"], { cwd: root, stdio: "pipe" });
    const token = generateApiToken();
    const clusters = fleet(CLUSTERS);
    const none = () => Promise.resolve(undefined);
    const status = { replica: "gitmesh-server-0", ready: true, readiness: "ok", pipeline: { mode: "redis" }, store: "redis", warming: null, source: { repository: "https://github.com/example/mesh-config.git", ref: "main", path: "", lastError: null }, commit: { sha: "c".repeat(40), committedAt: new Date().toISOString(), syncedAt: null, from: "git" }, leader: true, rejected: null, audit: { branch: "gitmesh/rendered", lastCommit: null }, clusters };
    const api: ServerApi = { healthy: () => true, readiness: () => ({ ready: true, reason: "ok" }), status: () => Promise.resolve(status), clusters: () => Promise.resolve({ clusters }), cluster: none, clusterInput: none, clusterOutput: none, commits: none, commit: none, diagnostics: none, resources: none, diff: none, insights: none };
    const { logger } = createMemoryLogger("bench");
    const http = createServerHttp({ api, registry: new Registry(), webhooks: createWebhookHandlers({ logger, onPush: () => "accepted" }), logger, host: "127.0.0.1", port: 0, auth: createApiAuth({ tokens: { read: token, admin: generateApiToken() }, hint: "bench" }), routes: createWebRoutes() });
    const url = `http://127.0.0.1:${String(await http.start())}/`;
    const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", args: ["--no-sandbox", "--disable-background-networking"] });
    try {
      const renders: number[] = [];
      let bytes = { html: 0, js: 0, css: 0 };
      for (let i = 0; i < Math.max(3, ctx.runs); i++) {
        const page = await browser.newPage();
        // Signed in already: the token where the login page keeps it.
        await page.addInitScript({ content: `sessionStorage.setItem("gitmesh.token", ${JSON.stringify(token)})` });
        const seen = { html: 0, js: 0, css: 0 };
        // Bytes on the wire (compressed where the server compresses), as a browser transfers them.
        page.on("requestfinished", (req) => {
          void req.sizes().then(async (sz) => {
            const type = (await req.response())?.headers()["content-type"] ?? "";
            if (type.startsWith("text/html")) seen.html += sz.responseBodySize;
            else if (type.startsWith("text/javascript")) seen.js += sz.responseBodySize;
            else if (type.startsWith("text/css")) seen.css += sz.responseBodySize;
          }).catch(() => undefined);
        });
        const start = Date.now();
        await page.goto(url);
        await page.locator(`tr[data-cluster="cluster-${String(CLUSTERS - 1).padStart(3, "0")}"]`).waitFor();
        renders.push(Date.now() - start);
        await page.waitForLoadState("networkidle");
        bytes = seen;
        await page.close();
      }
      const sorted = [...renders].sort((a, b) => a - b);
      const figures: Figure[] = [
        { label: "transferred: HTML", value: round(bytes.html / 1024, 1), unit: "KiB" },
        { label: "transferred: JavaScript (gzip; the YAML view loads on demand)", value: round(bytes.js / 1024, 1), unit: "KiB" },
        { label: "transferred: CSS (gzip)", value: round(bytes.css / 1024, 1), unit: "KiB" },
        { label: `navigation → ${String(CLUSTERS)} cluster rows rendered, median`, value: sorted[Math.floor(sorted.length / 2)]!, unit: "ms" },
        { label: `navigation → ${String(CLUSTERS)} cluster rows rendered, min`, value: sorted[0]!, unit: "ms" },
      ];
      return figures;
    } finally {
      await browser.close();
      await http.stop();
    }
  },
};
