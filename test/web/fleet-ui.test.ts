// The web UI at fleet scale, in real Chromium (Debian's chromium driven by playwright-core): 100 clusters
// behind the real HTTP edge (createServerHttp, the built UI from createWebRoutes, the real event stream),
// the real diff service over a real Git repository, and provenance computed by translate's
// contributions over the real translation of a configuration with a delegated child route table and
// retry, fault and outlier detection policies. The cluster views are generated in the API's real shape
// (as bench/web does: a hundred agents do not fit a shared two-core machine), and the status answers
// slowly, as a busy server does. What an operator of a large fleet needs: a page finishes loading under
// a stream of change events; filters narrow fleet, commits and resources; times carry their zone; a NACK
// of 40 objects is one line; the Diff page takes a short SHA and a branch; provenance answers
// "which policies apply to this route?".
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allObjects, loadDesiredState } from "../../src/config/index.js";
import { createMemoryLogger } from "../../src/core/index.js";
import type { DiscoverySnapshot } from "../../src/discovery/index.js";
import { createWebhookHandlers } from "../../src/git-sync/index.js";
import { createApiAuth, createDiffService, createEventStream, createServerHttp, createWebRoutes, generateApiToken, provenanceView, type DiffService, type ServerApi, type ServerHttp } from "../../src/server/index.js";
import { translateAll, type DiscoveryInput } from "../../src/translate/index.js";
import { discoveryFromYaml } from "../translate/helpers.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const CLUSTERS = 100;
const FIXTURES = new URL("../fixtures/translate/", import.meta.url).pathname;
const GIT_ENV = { ...process.env, GIT_AUTHOR_NAME: "Ada Operator", GIT_AUTHOR_EMAIL: "ada@example.test", GIT_COMMITTER_NAME: "Ada Operator", GIT_COMMITTER_EMAIL: "ada@example.test" };
const name = (i: number) => `cluster-${String(i).padStart(3, "0")}`;
/** The cluster whose agent refused the commit in force with 40 per-object errors. */
const REFUSING = name(42);

// The configuration: a root route table delegating to two children, a retry policy on one child route,
// a fault policy on every route of the workspace, an outlier detection policy on reviews.
const CONFIG =
  readFileSync(join(FIXTURES, "delegation-table-weight/input.yaml"), "utf8").replace("  - name: reviews\n", "  - name: reviews\n    labels: {resilience: retry}\n") +
  `
---
apiVersion: resilience.policy.gloo.solo.io/v2
kind: RetryTimeoutPolicy
metadata: {name: retry-reviews, namespace: bookinfo-backends}
spec:
  applyToRoutes: [{route: {labels: {resilience: retry}}}]
  config: {requestTimeout: 5s, retries: {attempts: 3, perTryTimeout: 1s}}
---
apiVersion: resilience.policy.gloo.solo.io/v2
kind: FaultInjectionPolicy
metadata: {name: fault-all, namespace: bookinfo-frontends}
spec:
  config: {abort: {httpStatus: 503, percentage: 1}}
---
apiVersion: resilience.policy.gloo.solo.io/v2
kind: OutlierDetectionPolicy
metadata: {name: outlier-reviews, namespace: bookinfo-backends}
spec:
  applyToDestinations: [{selector: {labels: {app: reviews}}}]
  config: {consecutiveErrors: 2, interval: 5s, baseEjectionTime: 30s, maxEjectionPercent: 50}
`;

/** Discovery of 100 clusters: the fixture's two, and 98 more like its second (bookinfo backends, no gateway). */
function fleetDiscovery(): Map<string, DiscoveryInput> {
  const two = discoveryFromYaml(readFileSync(join(FIXTURES, "delegation-table-weight/discovery.yaml"), "utf8"));
  const out = new Map<string, DiscoveryInput>([["cluster1", two.get("cluster1")!]]);
  for (let i = 2; i <= CLUSTERS; i++) out.set(i === 2 ? "cluster2" : name(i), { ...two.get("cluster2")!, cluster: i === 2 ? "cluster2" : name(i) });
  return out;
}

describe("web UI at 100 clusters (Chromium)", () => {
  let browser: Browser;
  let http: ServerHttp;
  let diffs: DiffService;
  let url: string;
  let repo: string;
  const token = generateApiToken();
  const commits: { sha: string; subject: string }[] = [];
  /** While true, the event stream says "change" on every tick (100 ms). */
  let storm = false;
  let tick = 0;
  /** Status answers take this long (a busy server). */
  let statusDelayMs = 0;
  const statusRequests: number[] = [];
  /** The VirtualService rendered from the root route table on cluster1's gateway. */
  let rootVs: { namespace: string; name: string };

  beforeAll(async () => {
    repo = mkdtempSync(join(tmpdir(), "gitmesh-fleet-ui-"));
    const git = (...args: string[]) => execFileSync("git", ["-C", repo, ...args], { env: GIT_ENV, encoding: "utf8" }).trim();
    git("init", "-q", "--initial-branch=main");
    mkdirSync(join(repo, "workspaces"));
    const commit = (text: string, subject: string) => {
      writeFileSync(join(repo, "workspaces/bookinfo.yaml"), text);
      git("add", "-A");
      git("commit", "-qm", subject);
      commits.unshift({ sha: git("rev-parse", "HEAD"), subject });
    };
    commit(CONFIG, "bookinfo routes");
    commit(CONFIG.replace("requestTimeout: 5s", "requestTimeout: 7s"), "longer reviews timeout");
    git("checkout", "-qb", "feature/faster");
    commit(CONFIG.replace("requestTimeout: 5s", "requestTimeout: 2s"), "faster reviews timeout");
    git("checkout", "-q", "main");

    const loaded = loadDesiredState([{ path: "workspaces/bookinfo.yaml", content: CONFIG.replace("requestTimeout: 5s", "requestTimeout: 7s") }]);
    expect(loaded.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const discovery = fleetDiscovery();
    const result = translateAll(loaded.state, discovery);
    const outputs = [...result.clusters].map(([cluster, o]) => ({ cluster, resources: o.resources }));
    expect(outputs.length).toBe(CLUSTERS);
    const vs = outputs.find((o) => o.cluster === "cluster1")!.resources.find((r) => r.kind === "VirtualService" && r.metadata.labels["gitmesh.io/parent-name"] === "root")!;
    rootVs = { namespace: vs.metadata.namespace, name: vs.metadata.name };
    const discoveryList = [...discovery].map(([cluster, snapshot]) => ({ cluster, checksum: cluster, snapshot: snapshot as unknown as DiscoverySnapshot }));
    const [inForce, previous] = [commits[1]!.sha, commits[2]!.sha]; // main's two commits; commits[0] is the feature branch
    const at = new Date("2026-11-29T08:01:32Z").toISOString();
    const nackErrors = Array.from({ length: 40 }, (_, i) => ({ key: `VirtualService/bookinfo-frontends/vs-${String(i)}`, message: `admission webhook "validation.istio.io" denied the request: object ${String(i)} is invalid` }));
    const names = [...discovery.keys()].sort();
    const stateOf = (i: number) => (names[i] === REFUSING ? "refused" : i % 10 === 3 ? "not-applied" : "in-sync");
    const clusters = names.map((n, i) => {
      const state = stateOf(i);
      const summary =
        state === "refused"
          ? `refused ${inForce.slice(0, 12)} (v7), a person must act: ${nackErrors[0]!.key}: ${nackErrors[0]!.message} (+39 more)`
          : state === "not-applied"
            ? "not applied yet — waiting for the agent to apply v7"
            : "in sync";
      return {
        name: n,
        registered: true,
        connected: true,
        replica: `gitmesh-server-${String(i % 3)}`,
        stale: false,
        waitingForAgent: false,
        lastSeen: at,
        warmed: true,
        discovery: { checksum: n, at, services: 4, workloads: 3 },
        output: { version: 7, sourceCommit: inForce, complete: true, resources: outputs.find((o) => o.cluster === n)!.resources.length, published: null, diagnostics: 0 },
        applied: { version: state === "in-sync" ? 7 : 6, sourceCommit: state === "in-sync" ? inForce : previous, at },
        commit: state === "in-sync" ? inForce : previous,
        errors: { count: 0, first: [] },
        pruneHeld: null,
        frozen: [],
        cutOff: null,
        driftRepairs: [],
        sync: { state, summary, commit: inForce },
        inSync: state === "in-sync",
      };
    });
    const status = {
      replica: "gitmesh-server-0",
      ready: true,
      readiness: "ok",
      pipeline: { mode: "redis" },
      store: "redis",
      warming: null,
      source: { repository: repo, ref: "main", path: "", lastError: null },
      commit: { sha: inForce, committedAt: at, syncedAt: at, from: "git" },
      leader: true,
      rejected: null,
      audit: { branch: "gitmesh/rendered", lastCommit: null, heldBack: null },
      clusters,
    };
    const progress = (sha: string) =>
      Object.fromEntries(
        names.map((n, i) => {
          const state = sha === inForce ? stateOf(i) : "applied";
          return [n, { version: sha === inForce ? 7 : 6, registered: true, state, ...(state === "refused" ? { nack: { errors: nackErrors } } : state === "in-sync" || state === "applied" ? { appliedAtMs: Date.parse(at) + 1500 } : {}) }];
        }),
      );
    const commitViews = [
      { commit: inForce, subject: "longer reviews timeout", message: "longer reviews timeout", author: "Ada Operator <ada@example.test>", committedAt: at, rejected: null, acceptedAt: at, inForce: true, audit: null, applied: CLUSTERS - 11, nacked: 1, clusters: progress(inForce) },
      { commit: previous, subject: "bookinfo routes", message: "bookinfo routes", author: "Ada Operator <ada@example.test>", committedAt: at, rejected: null, acceptedAt: new Date(Date.parse(at) - 3_600_000).toISOString(), inForce: false, audit: null, applied: CLUSTERS, nacked: 0, clusters: progress(previous) },
      { commit: "d".repeat(40), subject: "broken route table", message: "broken route table", author: "Bob Builder <bob@example.test>", committedAt: at, rejected: { at, errorCount: 1, errors: ["workspaces/broken.yaml:10:5 YAML_SYNTAX"] }, acceptedAt: null, inForce: false, audit: null, applied: 0, nacked: 0, clusters: {} },
    ];
    const resources = allObjects(loaded.state).map((o) => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, namespace: o.metadata.namespace, workspace: o.workspace ?? null, file: o.source.file, line: o.source.line }));
    const { logger } = createMemoryLogger("fleet-ui");
    diffs = createDiffService({ location: { kind: "local", path: repo }, discovery: () => Promise.resolve(discoveryList), logger });
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const api: ServerApi = {
      healthy: () => true,
      readiness: () => ({ ready: true, reason: "ok" }),
      status: async () => {
        statusRequests.push(Date.now());
        await sleep(statusDelayMs);
        return status;
      },
      clusters: () => Promise.resolve({ clusters }),
      cluster: (n) => Promise.resolve(clusters.find((c) => c.name === n)),
      clusterInput: () => Promise.resolve(undefined),
      clusterOutput: (n) => {
        const o = outputs.find((x) => x.cluster === n);
        return Promise.resolve(o && { cluster: n, version: 7, sourceCommit: inForce, complete: true, at, diagnostics: [], resources: o.resources });
      },
      commits: () => Promise.resolve({ inForce, commits: commitViews }),
      commit: (sha) => Promise.resolve(commitViews.find((c) => c.commit.startsWith(sha))),
      diagnostics: () => Promise.resolve({ commit: inForce, rejected: null, errors: false, errorCount: 0, files: [], entries: [] }),
      resources: () => Promise.resolve({ commit: inForce, resources }),
      diff: (b, h) => diffs.diff(b, h),
      provenance: () => Promise.resolve(provenanceView({ commit: inForce, desired: loaded.state, discovery: discoveryList, outputs })),
      insights: () => Promise.resolve({ insights: [] }),
    };
    const events = createEventStream({ fingerprint: () => Promise.resolve(storm ? ++tick : tick), intervalMs: 100, logger });
    http = createServerHttp({ api, registry: new Registry(), webhooks: createWebhookHandlers({ logger, onPush: () => "accepted" }), logger, host: "127.0.0.1", port: 0, auth: createApiAuth({ tokens: { read: token, admin: generateApiToken() }, hint: "test" }), routes: [...createWebRoutes(), events.route] });
    url = `http://127.0.0.1:${String(await http.start())}/`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-background-networking"] });
  }, 240_000);

  afterAll(async () => {
    await (browser as Browser | undefined)?.close();
    await (http as ServerHttp | undefined)?.stop();
    await (diffs as DiffService | undefined)?.close();
    if (repo) rmSync(repo, { recursive: true, force: true });
  });

  /** A signed-in page at `hash`, in UTC unless `zone` is given (an IANA name the page remembers). */
  const open = async (hash: string, zone?: string): Promise<Page> => {
    const page = await browser.newPage({ timezoneId: "America/New_York" });
    await page.addInitScript({ content: `sessionStorage.setItem("gitmesh.token", ${JSON.stringify(token)});${zone ? `localStorage.setItem("gitmesh.zone", ${JSON.stringify(zone)});` : ""}` });
    await page.goto(`${url}${hash}`);
    return page;
  };
  const rows = (page: Page) => page.locator('[data-testid="clusters"] tbody tr');

  it("the Fleet page finishes loading under a stream of change events while each status takes 600 ms; ticks are coalesced, not piled up", async () => {
    storm = true;
    statusDelayMs = 600;
    try {
      const page = await open("#/");
      // A tick every 100 ms, an answer after 600 ms: a page that restarted its request on every tick would never finish.
      await expect.poll(() => rows(page).count(), { timeout: 20_000 }).toBe(CLUSTERS);
      expect(await page.getByTestId("live").textContent()).toBe("live");
      // It keeps following the server — one request at a time: about one per answer, not one per tick.
      const [before, ticksBefore] = [statusRequests.length, tick];
      await expect.poll(() => statusRequests.length - before, { timeout: 30_000 }).toBeGreaterThanOrEqual(3);
      const made = statusRequests.length - before;
      const ticks = tick - ticksBefore;
      expect(made).toBeLessThan(ticks / 3);
      expect(await rows(page).count()).toBe(CLUSTERS);
      await page.close();
    } finally {
      storm = false;
      statusDelayMs = 0;
    }
  });

  it("the fleet filter narrows 100 clusters by name and by state", async () => {
    const page = await open("#/");
    await expect.poll(() => rows(page).count()).toBe(CLUSTERS);
    await page.getByLabel("Filter clusters").fill("cluster-04");
    await expect.poll(() => rows(page).count()).toBe(10);
    expect(await rows(page).first().getAttribute("data-cluster")).toBe("cluster-040");
    await page.getByLabel("Filter clusters").fill("");
    await page.getByLabel("Cluster state").selectOption("refused");
    await expect.poll(() => rows(page).count()).toBe(1);
    expect(await rows(page).first().getAttribute("data-cluster")).toBe(REFUSING);
    await page.getByLabel("Cluster state").selectOption("not-applied");
    await expect.poll(() => rows(page).count()).toBe(10);
    expect(await page.getByTestId("clusters-shown").textContent()).toBe(`10 of ${String(CLUSTERS)} shown`);
    await page.close();
  });

  it("a NACK with 40 errors is one line in the Fleet table, and its disclosure lists all 40", async () => {
    const page = await open("#/");
    const cell = page.locator(`tr[data-cluster="${REFUSING}"] [data-testid="refusal"]`);
    await cell.waitFor();
    const summary = cell.locator("summary");
    expect(await summary.textContent()).toContain("(+39 more)");
    // One line: the row is as tall as a row without an error.
    const [tall, normal] = await Promise.all([page.locator(`tr[data-cluster="${REFUSING}"]`).boundingBox(), page.locator(`tr[data-cluster="${name(41)}"]`).boundingBox()]);
    expect(tall!.height).toBeLessThanOrEqual(normal!.height * 1.5);
    expect(await cell.getByTestId("nack-errors").count()).toBe(0);
    await summary.click();
    await expect.poll(() => cell.locator('[data-testid="nack-errors"] li').count()).toBe(40);
    expect(await cell.locator('[data-testid="nack-errors"] li').nth(39).textContent()).toContain("VirtualService/bookinfo-frontends/vs-39");
    await page.close();
  });

  it("commits: times are shown in UTC with the zone (the browser is in New York), or in the zone the user picks, named", async () => {
    const page = await open("#/commits");
    const first = page.locator('[data-testid="accepted-at"]').first();
    await first.waitFor();
    expect(await first.textContent()).toBe("2026-11-29 08:01:32 UTC");
    await page.getByLabel("Time zone").selectOption("America/New_York");
    await expect.poll(() => first.textContent()).toMatch(/^2026-11-29 03:01:32 (GMT-5|EST) \(America\/New_York\)$/);
    await page.close();
  });

  it("commits: the filter narrows commits by SHA, message or author, and the 100 cluster columns by name", async () => {
    const page = await open("#/commits");
    const commitRows = page.locator('[data-testid="commits"] tbody tr');
    await expect.poll(() => commitRows.count()).toBe(3);
    expect(await page.locator('[data-testid="commits"] thead th').count()).toBe(CLUSTERS + 5);
    await page.getByLabel("Filter commits").fill("bob");
    await expect.poll(() => commitRows.count()).toBe(1);
    expect(await commitRows.first().getAttribute("data-rejected")).toBe("true");
    await page.getByLabel("Filter commits").fill(commits[2]!.sha.slice(0, 8));
    await expect.poll(() => commitRows.count()).toBe(1);
    expect(await commitRows.first().getAttribute("data-commit")).toBe(commits[2]!.sha);
    await page.getByLabel("Filter cluster columns").fill("cluster-09");
    await expect.poll(() => page.locator('[data-testid="commits"] thead th').count()).toBe(10 + 5);
    expect(await commitRows.first().locator("td[data-cluster]").count()).toBe(10);
    await page.close();
  });

  it("the Diff page takes a short SHA and a branch, as gitmesh diff does, and names a revision it cannot find", async () => {
    const [feature, main, first] = commits.map((c) => c.sha) as [string, string, string];
    const page = await open(`#/diff?base=${main.slice(0, 7)}&head=feature/faster`);
    const diff = page.getByTestId("diff");
    await expect.poll(() => diff.textContent().catch(() => ""), { timeout: 90_000 }).toContain("timeout: 2s");
    expect(await diff.textContent()).toContain("timeout: 7s");
    expect(await page.getByTestId("diff-resolved").textContent()).toBe(`${main.slice(0, 12)} → ${feature.slice(0, 12)}`);
    // Typed into the form: a short SHA and the branch name.
    await page.getByLabel("base revision").fill(first.slice(0, 9));
    await page.getByLabel("head revision").fill("main");
    await page.getByRole("button", { name: "Compare" }).click();
    await expect.poll(() => page.getByTestId("diff-resolved").textContent().catch(() => ""), { timeout: 90_000 }).toBe(`${first.slice(0, 12)} → ${main.slice(0, 12)}`);
    await page.getByLabel("head revision").fill("no-such-branch");
    await page.getByRole("button", { name: "Compare" }).click();
    await expect.poll(() => page.locator("p.error").textContent().catch(() => ""), { timeout: 30_000 }).toMatch(/^head: unknown revision no-such-branch/);
    expect(await page.getByTestId("diff").count()).toBe(0);
    await page.close();
  });

  it("resources: the filter narrows by text and kind; a retry policy says where it applies instead of \"0 Istio objects\"", async () => {
    const page = await open("#/provenance");
    const table = page.getByTestId("resources");
    await table.waitFor({ timeout: 60_000 });
    const all = await table.locator("tbody tr").count();
    await page.getByLabel("Resource kind").selectOption("RouteTable");
    await expect.poll(() => table.locator("tbody tr").count()).toBe(3);
    await page.getByLabel("Filter resources").fill("ratings");
    await expect.poll(() => table.locator("tbody tr").count()).toBe(1);
    await page.getByLabel("Resource kind").selectOption("");
    await page.getByLabel("Filter resources").fill("");
    await expect.poll(() => table.locator("tbody tr").count()).toBe(all);
    // The root table renders on the gateway of cluster1 only; the retry policy writes one route there.
    await expect.poll(() => table.locator('tr[data-resource="RetryTimeoutPolicy/bookinfo-backends/retry-reviews"] [data-testid="effect"]').textContent()).toBe("applied to 1 route in 1 cluster");
    expect(await table.locator('tr[data-resource="FaultInjectionPolicy/bookinfo-frontends/fault-all"] [data-testid="effect"]').textContent()).toBe("applied to 4 routes in 1 cluster");
    // reviews runs in all 100 clusters: the outlier policy reaches it everywhere.
    expect(await table.locator('tr[data-resource="OutlierDetectionPolicy/bookinfo-backends/outlier-reviews"] [data-testid="effect"]').textContent()).toBe(`applied to ${String(CLUSTERS)} destinations in ${String(CLUSTERS)} clusters`);
    expect(await table.locator('tr[data-resource="RouteTable/bookinfo-backends/reviews-api"] [data-testid="effect"]').textContent()).toBe("routes in RouteTable bookinfo-frontends/root");
    await page.locator('tr[data-resource="RetryTimeoutPolicy/bookinfo-backends/retry-reviews"] a').first().click();
    await expect.poll(() => page.getByTestId("policy-reach").textContent()).toContain("applied to 1 route in 1 cluster — bookinfo-backends/reviews-api#reviews");
    expect(await page.getByTestId("merged-into").textContent()).toContain("http[].retries, http[].timeout");
    await page.close();
  });

  it("the provenance of a VirtualService lists its route table, the delegated children and the retry and fault policies with the fields each wrote", async () => {
    const page = await open(`#/provenance?${new URLSearchParams({ cluster: "cluster1", kind: "VirtualService", namespace: rootVs.namespace, name: rootVs.name }).toString()}`);
    const list = page.getByTestId("contributions");
    await list.waitFor({ timeout: 60_000 });
    const item = (from: string) => list.locator(`li[data-from="${from}"]`);
    expect(await item("RouteTable/bookinfo-frontends/root").getAttribute("data-role")).toBe("parent");
    expect(await item("RouteTable/bookinfo-backends/reviews-api").getAttribute("data-role")).toBe("delegated-child");
    expect(await item("RouteTable/bookinfo-backends/reviews-api").textContent()).toContain("on route reviews");
    expect(await item("RouteTable/bookinfo-backends/ratings-api").textContent()).toContain("on routes api-fallback, ratings");
    expect(await item("RetryTimeoutPolicy/bookinfo-backends/retry-reviews").textContent()).toMatch(/route policy.*wrote http\[\]\.retries, http\[\]\.timeout on route reviews/);
    expect(await item("FaultInjectionPolicy/bookinfo-frontends/fault-all").textContent()).toMatch(/wrote http\[\]\.fault on routes api-fallback, home, ratings, reviews/);
    await page.close();
  });
});
