// The Traffic page in real Chromium against `gitmesh demo --prometheus-url`: a real server, Git server
// and agents on emulated clusters, and Debian's Prometheus holding bookinfo's Istio metrics in two
// clusters (istio-exporter.ts). The page and GET /api/traffic show the workloads of both clusters, the
// east-west edge apart, rates, 5xx and p99, filter by workspace and cluster, and link destinations to
// the RouteTable that routes to them. A screenshot goes to .tmp/screenshots/traffic.png.
import { mkdirSync, readFileSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDemo, type Demo } from "../helpers/demo.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startTrafficPrometheus, untilReady, type TrafficPrometheus } from "./fixture.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const tmp = useTempDirs("gitmesh-traffic-ui-");

describe("traffic graph (API and Chromium)", () => {
  let running: TrafficPrometheus;
  let demo: Demo;
  let browser: Browser;
  let url: string;
  let token: string;

  beforeAll(async () => {
    running = await startTrafficPrometheus(tmp());
    await untilReady(running.prometheus.url);
    demo = startDemo(["--prometheus-url", running.prometheus.url]);
    const m = await demo.waitFor(/Web UI: (http:\/\/127\.0\.0\.1:\d+)\/ — sign in with the token in (\S+?);/, 60_000);
    url = `${m[1]!}/`;
    token = readFileSync(m[2]!, "utf8").trim();
    await demo.waitFor(/Running; Ctrl-C to stop\./, 150_000);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-background-networking"] });
  }, 300_000);
  afterAll(async () => {
    await (browser as Browser | undefined)?.close();
    const d = demo as Demo | undefined;
    if (d) {
      d.interrupt();
      await d.exited;
    }
    await (running as TrafficPrometheus | undefined)?.stop();
  });

  it("GET /api/traffic answers the graph to a read token, and nothing without one", async () => {
    expect((await fetch(`${url}api/traffic`)).status).toBe(401);
    const res = await fetch(`${url}api/traffic?window=1h`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    const g = (await res.json()) as { configured: boolean; clusters: string[]; workspaces: string[]; nodes: { cluster: string; workload: string; workspace: string | null }[]; edges: { source: { workload: string; cluster: string }; destination: { workload: string; cluster: string }; crossCluster: boolean; requestsPerSecond: number; routedBy: { kind: string; name: string }[] }[] };
    expect(g.configured).toBe(true);
    expect(g.clusters).toEqual(["cluster1", "cluster2"]);
    expect(g.workspaces).toEqual(expect.arrayContaining(["bookinfo-backends", "bookinfo-frontends", "gateways"]));
    expect(g.nodes.find((n) => n.cluster === "cluster2" && n.workload === "reviews-v3")?.workspace).toBe("bookinfo-backends");
    const eastWest = g.edges.filter((e) => e.crossCluster);
    expect(eastWest).toHaveLength(1);
    expect(eastWest[0]!.source).toMatchObject({ workload: "productpage-v1", cluster: "cluster1" });
    expect(eastWest[0]!.destination).toMatchObject({ workload: "reviews-v3", cluster: "cluster2" });
    // reviews.bookinfo-backends.svc.cluster.local is routed by the RouteTable reviews (examples/repo-layout)
    expect(eastWest[0]!.routedBy).toEqual(expect.arrayContaining([expect.objectContaining({ kind: "RouteTable", name: "reviews" })]));
    const filtered = (await (await fetch(`${url}api/traffic?window=1h&workspace=bookinfo-frontends`, { headers: { authorization: `Bearer ${token}` } })).json()) as typeof g;
    expect(filtered.edges.every((e) => e.source.workload.startsWith("productpage") || e.destination.workload.startsWith("productpage"))).toBe(true);
    expect(filtered.edges.length).toBeGreaterThan(0);
    const bad = await fetch(`${url}api/traffic?window=forever`, { headers: { authorization: `Bearer ${token}` } });
    expect(bad.status).toBe(400);
  });

  it("GET /api/insights reads the same traffic: a Service that receives requests but no route is named, a routed one is not", async () => {
    const res = await fetch(`${url}api/insights`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    const { insights } = (await res.json()) as { insights: { code: string; object?: { kind: string; name: string; namespace?: string } }[] };
    const unrouted = insights.filter((i) => i.code === "TRAFFIC_WITHOUT_ROUTE").map((i) => `${i.object?.namespace ?? ""}/${i.object?.name ?? ""}`);
    // details is called by productpage (10 req/s per cluster) and no RouteTable or VirtualDestination of
    // examples/repo-layout forwards to it; reviews and ratings have route tables; mysqldb sees TCP only.
    expect(unrouted).toContain("bookinfo-backends/details");
    expect(unrouted).not.toContain("bookinfo-backends/reviews");
    expect(unrouted).not.toContain("bookinfo-backends/ratings");
    expect(unrouted).not.toContain("bookinfo-backends/mysqldb");
  });

  it("the Traffic page draws both clusters, tells the east-west edge apart, and filters by cluster", async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(url);
    await page.getByLabel("API token").fill(token);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByTestId("clusters").waitFor();
    await page.getByRole("link", { name: "Traffic" }).click();
    await page.getByTestId("traffic-edges").waitFor();
    const eastWest = page.locator('tr[data-edge="cluster1/bookinfo-frontends/productpage-v1>cluster2/bookinfo-backends/reviews-v3"]');
    await expect.poll(() => eastWest.count()).toBe(1);
    expect(await eastWest.textContent()).toContain("cross-cluster");
    expect(await eastWest.textContent()).toMatch(/20\.\d%/); // 0.5 of 2.5 req/s fail
    expect(await eastWest.getByRole("link", { name: /RouteTable bookinfo-backends\/reviews/ }).count()).toBe(1);
    expect(await page.locator('svg[data-testid="traffic-graph"] path[data-cross-cluster="true"]').count()).toBe(1);
    expect(await page.locator("svg text.cluster-title").allTextContents()).toEqual(["cluster1", "cluster2"]);
    mkdirSync(".tmp/screenshots", { recursive: true });
    await page.screenshot({ path: ".tmp/screenshots/traffic.png", fullPage: true });
    // Filter: cluster2 only keeps the edges that touch cluster2 (the east-west one among them).
    await page.getByLabel("Cluster").selectOption("cluster2");
    await expect.poll(() => page.url()).toContain("cluster=cluster2");
    // The filtered rows, once they are there (an empty table while the page re-reads would pass `every`).
    await expect.poll(() => page.locator("tr[data-edge]").evaluateAll((rows) => rows.length > 0 && rows.every((r) => (r.getAttribute("data-edge") ?? "").includes("cluster2/")))).toBe(true);
    await expect.poll(() => eastWest.count()).toBe(1);
    // The RouteTable link leads to its provenance.
    await eastWest.getByRole("link", { name: /RouteTable bookinfo-backends\/reviews/ }).click();
    await expect.poll(() => page.url()).toContain("#/provenance?kind=RouteTable");
    await page.close();
  });
});
