// Insights of a running fleet: a real management server (Git over HTTP, the relay on real gRPC/mTLS,
// the queue pipeline on a real Redis) with real agents on Kubernetes API emulators for cluster1 and
// cluster2 (examples/discovery), configured from examples/repo-layout. Checked through every entry
// point: GET /api/insights, `gitmesh insights --server` (a process), and the Insights page in real
// Chromium. A commit that removes the reviews VirtualDestination's OutlierDetectionPolicy makes the
// multi-cluster insight appear everywhere.
import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../../src/agent/index.js";
import { silentLogger } from "../../src/core/index.js";
import { createInProcessAgent } from "../../src/devtools/index.js";
import type { Insight } from "../../src/insights/index.js";
import { RELAY_SECRETS } from "../../src/relay/index.js";
import { createManagementServer, createMemorySecretStore, createQueuePipeline, parseServerConfig, type ManagementServer } from "../../src/server/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { freePort } from "../helpers/ports.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { repoFiles } from "../helpers/repo-files.js";
import { useTempDirs } from "../helpers/tmp.js";

const TOKEN = "insights-bootstrap-token-0123456789";
const CLUSTERS = ["cluster1", "cluster2"] as const;
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const RESILIENCE = "workspaces/bookinfo-backends/resilience.yaml";
const b64 = (s: string) => Buffer.from(s).toString("base64");
const tempDir = useTempDirs("gitmesh-insights-server-");

interface Answer {
  commit: string | null;
  today: string;
  counts: { error: number; warning: number; info: number };
  insights: Insight[];
}

let tmp = "";
let redis: TestRedis;
let git: GitServer;
let server: ManagementServer | undefined;
let httpPort: number;
let browser: Browser | undefined;
let repo: Record<string, string>;
let first = "";
const kubes: StartedKube[] = [];
const agents: Agent[] = [];
const base = () => `http://127.0.0.1:${String(httpPort)}`;

/** GET /api/insights with the read token (null: without a token). */
async function insights(token: string | null = server?.apiTokens?.read ?? ""): Promise<{ status: number; body: Answer }> {
  const res = await fetch(`${base()}/api/insights`, { signal: AbortSignal.timeout(10_000), headers: token === null ? {} : { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as Answer };
}

async function poll<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 180_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}${last ? ` (${last})` : ""}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The commit is in force and both clusters' discovery is stored (the answer names the commit; certificates are issued). */
const settled = (sha: string) =>
  poll(`insights of ${sha.slice(0, 12)} with both clusters`, async () => {
    const st = (await (await fetch(`${base()}/api/status`, { headers: { authorization: `Bearer ${server!.apiTokens!.read}` } })).json()) as { commit: { sha: string } | null; clusters: { name: string; connected: boolean; applied: unknown }[] };
    if (st.commit?.sha !== sha || !CLUSTERS.every((c) => st.clusters.find((x) => x.name === c)?.applied)) return undefined;
    const a = await insights();
    return a.body.commit === sha ? a.body : undefined;
  });

function cli(...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["bin/gitmesh.js", "insights", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("close", (code) => resolve({ code, out, err }));
  });
}

beforeAll(async () => {
  tmp = tempDir();
  redis = await startRedis();
  git = await startGitServer();
  await git.createRepo("mesh");
  repo = repoFiles("examples/repo-layout");
  first = await git.commitFiles("mesh", repo, "bookinfo on two clusters");
  const relayPort = await freePort();
  httpPort = await freePort();
  const prefix = `insights-${String(process.pid)}`;
  const { config, problems } = parseServerConfig(
    {
      gitUrl: git.url("mesh"),
      relayHost: "127.0.0.1",
      relayPort: String(relayPort),
      httpHost: "127.0.0.1",
      httpPort: String(httpPort),
      pollIntervalSeconds: "1",
      bootstrap: "fleet-token",
      relayToken: TOKEN,
      relayAdditionalSans: "127.0.0.1",
      warmingWindowSeconds: "2",
      redisUrl: redis.url,
      redisPrefix: prefix,
      dataDir: join(tmp, "data"),
    },
    { identity: "insights" },
  );
  if (!config) throw new Error(problems.join("; "));
  const pipeline = createQueuePipeline({ redisUrl: redis.url, prefix: `${prefix}:`, logger: silentLogger, identity: "insights" });
  server = createManagementServer({ config, pipeline, secrets: createMemorySecretStore(), registry: new Registry(), logger: silentLogger, dataDir: join(tmp, "data") });
  await server.start();
  for (const cluster of CLUSTERS) {
    const kube = await startKube({});
    const dir = join("examples/discovery", cluster);
    for (const f of readdirSync(dir).filter((n) => n.endsWith(".yaml"))) await kube.emulator.seedFile(join(dir, f));
    kube.emulator.seed([
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: RELAY_SECRETS.rootTls.name, namespace: "gitmesh" }, data: { [RELAY_SECRETS.rootTls.keys.caCrt]: b64(server.rootCaPem ?? "") } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: RELAY_SECRETS.identityToken.name, namespace: "gitmesh" }, data: { [RELAY_SECRETS.identityToken.keys.token]: b64(TOKEN) } },
    ]);
    kubes.push(kube);
    const agent = createInProcessAgent({ cluster, emulator: kube.emulator, relayAddress: `127.0.0.1:${String(relayPort)}`, logger: silentLogger });
    await agent.start();
    agents.push(agent);
  }
  writeFileSync(join(tmp, "read-token"), server.apiTokens?.read ?? "");
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-background-networking"] });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  for (const a of agents) await a.stop().catch(() => undefined);
  await server?.stop();
  for (const k of kubes) await k.stop();
  await git.stop();
  await redis.stop();
}, 60_000);

describe("insights of a running fleet", () => {
  it("GET /api/insights needs the read token and answers the analysis of the commit in force, with file:line", { timeout: 240_000 }, async () => {
    expect((await insights(null)).status).toBe(401);
    const a = await settled(first);
    expect(a.today).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    // examples/repo-layout: the ratings routes have no RetryTimeoutPolicy (route-table-ratings.yaml), the
    // reviews VirtualDestination has its OutlierDetectionPolicy, and both clusters run Istio 1.29.
    const ratings = readFileSync("examples/repo-layout/workspaces/bookinfo-backends/route-table-ratings.yaml", "utf8").split("\n");
    const lineOfRoute = (name: string) => ratings.findIndex((l) => l.trim() === `- name: ${name}`) + 1;
    const timeouts = a.insights.filter((i) => i.code === "ROUTE_WITHOUT_TIMEOUT" && i.file === "workspaces/bookinfo-backends/route-table-ratings.yaml");
    expect(timeouts.map((i) => i.line).sort()).toEqual([lineOfRoute("ratings-jason"), lineOfRoute("ratings")].sort());
    expect(timeouts[0]).toMatchObject({ severity: "info", workspace: "bookinfo-backends" });
    const codes = new Set(a.insights.map((i) => i.code));
    for (const absent of ["MULTICLUSTER_NO_OUTLIER_DETECTION", "ISTIO_VERSION_SKEW", "ISTIO_END_OF_LIFE", "CERTIFICATE_EXPIRING"]) expect(codes.has(absent as Insight["code"]), absent).toBe(false);
    expect(a.counts.error).toBe(0);
  });

  it("gitmesh insights --server prints the server's insights and exits 0 without an error insight; 2 without a token", { timeout: 150_000 }, async () => {
    const r = await cli("--server", `127.0.0.1:${String(httpPort)}`, "--token-file", join(tmp, "read-token"));
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^info +ROUTE_WITHOUT_TIMEOUT +- +bookinfo-backends +workspaces\/bookinfo-backends\/route-table-ratings\.yaml:\d+$/m);
    expect(r.out).toMatch(/^ok: 0 errors, /m);
    const refused = await cli("--server", `127.0.0.1:${String(httpPort)}`);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain("answered 401");
  });

  it("a commit that drops the reviews OutlierDetectionPolicy: the multi-cluster insight appears in the API, the CLI and the Insights page, which filters", async () => {
    const page: Page = await browser!.newPage();
    await page.goto(`${base()}/`);
    await page.getByLabel("API token").fill(server!.apiTokens!.read);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByTestId("clusters").waitFor();
    await page.getByRole("link", { name: "Insights" }).click();
    await page.getByTestId("insights").waitFor();
    await expect.poll(() => page.locator('tr[data-code="ROUTE_WITHOUT_TIMEOUT"]').count()).toBeGreaterThan(0);
    expect(await page.locator('tr[data-code="MULTICLUSTER_NO_OUTLIER_DETECTION"]').count()).toBe(0);

    const resilience = repo[RESILIENCE]!;
    const withoutOutliers = resilience.slice(0, resilience.indexOf("---\n# OutlierDetectionPolicy"));
    expect(withoutOutliers).toContain("kind: FailoverPolicy");
    const sha = await git.commitFiles("mesh", { [RESILIENCE]: withoutOutliers }, "drop the outlier detection of reviews");
    const a = await settled(sha);
    const vd = a.insights.find((i) => i.code === "MULTICLUSTER_NO_OUTLIER_DETECTION");
    expect(vd).toMatchObject({ severity: "warning", workspace: "bookinfo-backends", object: { kind: "VirtualDestination", name: "reviews" }, file: "workspaces/bookinfo-backends/virtual-destination-reviews.yaml" });
    expect(vd!.message).toContain("cluster1, cluster2");

    const r = await cli("--server", `127.0.0.1:${String(httpPort)}`, "--token-file", join(tmp, "read-token"), "--code", "MULTICLUSTER_NO_OUTLIER_DETECTION", "--json");
    expect(r.code, r.err).toBe(0);
    expect((JSON.parse(r.out) as Answer).insights.map((i) => i.code)).toEqual(["MULTICLUSTER_NO_OUTLIER_DETECTION"]);

    // The page follows the server's events: the new insight shows up without a reload.
    await expect.poll(() => page.locator('tr[data-code="MULTICLUSTER_NO_OUTLIER_DETECTION"]').count(), { timeout: 30_000 }).toBe(1);
    await page.getByTestId("filter-severity").selectOption("warning");
    await expect.poll(() => page.locator("tr[data-severity]").evaluateAll((rows) => [...new Set(rows.map((r) => r.getAttribute("data-severity")))])).toEqual(["warning"]);
    await page.getByTestId("filter-severity").selectOption("");
    await page.getByTestId("filter-code").selectOption("ROUTE_WITHOUT_TIMEOUT");
    await expect.poll(() => page.locator("tr[data-code]").evaluateAll((rows) => [...new Set(rows.map((r) => r.getAttribute("data-code")))])).toEqual(["ROUTE_WITHOUT_TIMEOUT"]);
    const link = page.locator('tr[data-code="ROUTE_WITHOUT_TIMEOUT"] td a, tr[data-code="ROUTE_WITHOUT_TIMEOUT"] td span.where').first();
    expect(await link.textContent()).toMatch(/^workspaces\/.+\.yaml:\d+$/);
    await page.getByTestId("filter-code").selectOption("");
    await page.getByTestId("filter-cluster").selectOption({ index: 0 });
    mkdirSync(".tmp/screenshots", { recursive: true });
    await page.screenshot({ path: ".tmp/screenshots/insights.png", fullPage: true });
    await page.close();
  }, 360_000);
});
