// The web UI in real Chromium against a real management server (Git over HTTP, Redis, the HTTP API
// serving the built UI), for what needs no agent:
// - suspend and resume (#38): an admin session suspends a cluster with a reason from its page; the cluster
//   page and the Fleet table say "suspended since … by … (reason)" and the Fleet filter finds it; a
//   read-only session sees the label but no buttons; Resume lifts it (a registered cluster is held whether
//   or not its agent is connected);
// - a server without a Prometheus (#37): /api/traffic and the Traffic page say how to configure one.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { chromium, type Browser, type Page } from "playwright-core";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/core/index.js";
import { createManagementServer, createMemorySecretStore, createQueuePipeline, createRedisSuspensionStore, parseServerConfig, type ManagementServer } from "../../src/server/index.js";
import { meshFiles } from "../queue/holds-fixture.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { freePort } from "../helpers/ports.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const PREFIX = `suspend-ui-${String(process.pid)}`;

describe("web UI against a real server (Chromium)", () => {
  let git: GitServer;
  let redis: TestRedis;
  let redisClient: Redis;
  let server: ManagementServer;
  let browser: Browser;
  let tmp: string;
  let url: string;

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "gitmesh-suspend-ui-"));
    redis = await startRedis();
    redisClient = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    git = await startGitServer();
    await git.createRepo("mesh");
    await git.commitFiles("mesh", meshFiles({ clusters: ["cluster1", "cluster2"], tables: { apps: ["a1"], team: [], shared: [] } }), "mesh on two clusters");
    const httpPort = await freePort();
    const { config, problems } = parseServerConfig(
      { gitUrl: git.url("mesh"), relayHost: "127.0.0.1", relayPort: String(await freePort()), httpHost: "127.0.0.1", httpPort: String(httpPort), pollIntervalSeconds: "1", relayAdditionalSans: "127.0.0.1", warmingWindowSeconds: "0", auditBranch: "", dataDir: join(tmp, "data") },
      { identity: "suspend-ui" },
    );
    if (!config) throw new Error(problems.join("; "));
    const pipeline = createQueuePipeline({ redisUrl: redis.url, prefix: `${PREFIX}:`, logger: silentLogger, debounceMs: 20 });
    server = createManagementServer({ config, pipeline, secrets: createMemorySecretStore(), registry: new Registry(), logger: silentLogger, dataDir: join(tmp, "data"), suspensions: createRedisSuspensionStore(redisClient, PREFIX) });
    await server.start();
    url = `http://127.0.0.1:${String(httpPort)}/`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-background-networking"] });
  }, 120_000);

  afterAll(async () => {
    await (browser as Browser | undefined)?.close();
    await (server as ManagementServer | undefined)?.stop().catch(() => undefined);
    await (git as GitServer | undefined)?.stop();
    await (redisClient as Redis | undefined)?.quit().catch(() => undefined);
    await (redis as TestRedis | undefined)?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }, 60_000);

  /** A page signed in with the read or the admin token (as the login page keeps it), in UTC. */
  const open = async (role: "read" | "admin", hash: string): Promise<Page> => {
    const page = await browser.newPage({ timezoneId: "UTC" });
    await page.addInitScript({ content: `sessionStorage.setItem("gitmesh.token", ${JSON.stringify(server.apiTokens?.[role] ?? "")});` });
    await page.goto(`${url}${hash}`);
    return page;
  };

  it("an admin suspends a cluster from its page with a reason: the page and the Fleet table say who, since when and why, and the filter finds it", async () => {
    const page = await open("admin", "#/clusters/cluster2");
    const controls = page.getByTestId("cluster-suspend");
    await controls.getByLabel("reason to suspend cluster2").fill("incident 42");
    await controls.getByRole("button", { name: "Suspend cluster2" }).click();
    const status = page.getByTestId("cluster-status");
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toMatch(/suspended since \d{4}-\d\d-\d\dT[\d:.]+Z by admin token \(incident 42\)/);
    await controls.getByRole("button", { name: "Resume cluster2" }).waitFor();

    await page.goto(`${url}#/`);
    const row = page.getByTestId("clusters").locator("tbody tr", { hasText: "cluster2" });
    await expect.poll(() => row.locator("[data-sync]").getAttribute("data-sync"), { timeout: 30_000 }).toBe("suspended");
    expect(await row.textContent()).toContain("incident 42");
    await page.getByRole("combobox").filter({ hasText: "every state" }).selectOption("suspended");
    await expect.poll(() => page.getByTestId("clusters").locator("tbody tr").allTextContents(), { timeout: 10_000 }).toEqual([expect.stringContaining("cluster2")]);
    await page.close();
  }, 120_000);

  it("a read-only session sees the label but no suspend or resume button", async () => {
    const page = await open("read", "#/clusters/cluster2");
    await expect.poll(() => page.getByTestId("cluster-status").textContent(), { timeout: 30_000 }).toContain("incident 42");
    expect(await page.getByRole("button", { name: /Suspend|Resume/ }).count()).toBe(0);
    await page.close();
  }, 60_000);

  it("without a Prometheus, /api/traffic and the Traffic page say how to configure one", async () => {
    const res = await fetch(`${url}api/traffic`, { headers: { authorization: `Bearer ${server.apiTokens?.read ?? ""}` } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { configured: boolean; message?: string };
    expect(body.configured).toBe(false);
    expect(body.message).toContain("--prometheus-url");
    const page = await open("read", "#/traffic");
    const note = page.getByTestId("traffic-unconfigured");
    await note.waitFor({ timeout: 30_000 });
    const text = (await note.textContent()) ?? "";
    for (const setting of ["--prometheus-url", "GITMESH_PROMETHEUS_URL", "prometheus.url", "--prometheus-token-file", "--prometheus-ca-file"]) expect(text).toContain(setting);
    await page.close();
  }, 60_000);

  it("Resume lifts it: the label goes, and the page offers Suspend again", async () => {
    const page = await open("admin", "#/clusters/cluster2");
    await page.getByRole("button", { name: "Resume cluster2" }).click();
    await page.getByRole("button", { name: "Suspend cluster2" }).waitFor({ timeout: 30_000 });
    await expect.poll(() => page.getByTestId("cluster-status").textContent(), { timeout: 30_000 }).not.toContain("suspended");
    await page.close();
  }, 60_000);
});
