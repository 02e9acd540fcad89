// The traffic edges from a real Prometheus (Debian's, on loopback) that holds an hour of Istio-format
// metrics of bookinfo in two clusters and scrapes the test's exporter: per source and destination
// workload, namespace and cluster, request and 5xx rates, p99 and TCP bytes, cross-cluster edges marked.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPrometheusClient, PrometheusRefusedError, PrometheusUnavailableError, trafficEdges, type TrafficEdge } from "../../src/traffic/index.js";
import { freePort } from "../helpers/ports.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startTrafficPrometheus, untilReady, type TrafficPrometheus } from "./fixture.js";

const tmp = useTempDirs("gitmesh-traffic-");
let running: TrafficPrometheus;

beforeAll(async () => {
  running = await startTrafficPrometheus(tmp());
  await untilReady(running.prometheus.url);
});
afterAll(async () => {
  await running.stop();
});

/** Within 5% of what the exporter declares (the last hour joins the backfilled blocks and the live scrapes). */
const near = (actual: number, expected: number, within = 0.05) => expect(Math.abs(actual - expected) / expected).toBeLessThan(within);
const find = (edges: readonly TrafficEdge[], src: string, srcCluster: string, dst: string, dstCluster: string) =>
  edges.find((e) => e.source.workload === src && e.source.cluster === srcCluster && e.destination.workload === dst && e.destination.cluster === dstCluster);

describe("traffic edges from Istio's standard metrics", () => {
  it("reads every edge of bookinfo over the last hour, with the declared rates, errors, p99 and TCP bytes", async () => {
    const client = createPrometheusClient({ url: running.prometheus.url });
    const edges = await trafficEdges(client, { window: "1h" });
    // 4 edges per cluster + 4 reviews edges (one east-west); the source-reported copies are not counted twice.
    expect(edges).toHaveLength(12);
    const details = find(edges, "productpage-v1", "cluster1", "details-v1", "cluster1")!;
    expect(details.destination).toEqual({ cluster: "cluster1", namespace: "bookinfo-backends", workload: "details-v1", service: "details.bookinfo-backends.svc.cluster.local", app: "details" });
    near(details.requestsPerSecond, 10);
    near(details.errorRate!, 0.1);
    expect(details.crossCluster).toBe(false);
    expect(details.p99Ms).toBeGreaterThan(10);
    expect(details.p99Ms).toBeLessThanOrEqual(25);

    const eastWest = find(edges, "productpage-v1", "cluster1", "reviews-v3", "cluster2")!;
    expect(eastWest.crossCluster).toBe(true);
    near(eastWest.requestsPerSecond, 2.5);
    near(eastWest.errorRate!, 0.2);
    expect(eastWest.p99Ms).toBeGreaterThan(100);
    expect(eastWest.p99Ms).toBeLessThanOrEqual(250);
    expect(edges.filter((e) => e.crossCluster)).toHaveLength(1);

    const tcp = find(edges, "ratings-v1", "cluster2", "mysqldb-v1", "cluster2")!;
    expect(tcp.requestsPerSecond).toBe(0);
    expect(tcp.p99Ms).toBeNull();
    expect(tcp.errorRate).toBeNull();
    near(tcp.tcpSentBytesPerSecond, 400);
    near(tcp.tcpReceivedBytesPerSecond, 100);

    // A short window reads the live scrapes of the exporter (every second) alone.
    // Once the window is full of scrapes:
    const scrapes = async () => Number((await running.prometheus.query('count_over_time(up{job="istio-bookinfo"}[15s])'))[0]?.value[1] ?? 0);
    for (let i = 0; i < 80 && (await scrapes()) < 14; i++) await new Promise((r) => setTimeout(r, 500));
    const recent = find(await trafficEdges(client, { window: "15s" }), "istio-ingressgateway", "cluster1", "productpage-v1", "cluster1");
    // (15 s of 1 s scrapes on a shared machine: the scrape timestamps jitter, hence 20%.)
    near(recent!.requestsPerSecond, 10, 0.2);
  });

  it("says what to do when Prometheus cannot be used", async () => {
    const unreachable = createPrometheusClient({ url: `http://127.0.0.1:${String(await freePort())}`, timeoutMs: 2000 });
    const down = await unreachable.query("up").catch((e: unknown) => e);
    expect(down).toBeInstanceOf(PrometheusUnavailableError);
    expect((down as Error).message).toMatch(/cannot be reached \(ECONNREFUSED\); check the URL and that Prometheus runs/);

    // The exporter is an HTTP server but not Prometheus's API.
    const wrong = await createPrometheusClient({ url: running.exporter.url }).query("up").catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(PrometheusRefusedError);
    expect((wrong as Error).message).toContain("is the URL the Prometheus base URL");

    const bad = await createPrometheusClient({ url: running.prometheus.url }).query("sum(rate(").catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(PrometheusRefusedError);
    expect((bad as Error).message).toMatch(/refused the query \(bad_data: /);

    expect(() => createPrometheusClient({ url: "http://admin:secret@prom:9090" })).toThrow(/must not carry credentials/);
    expect(() => createPrometheusClient({ url: "prom:9090" })).toThrow(/http:\/\/ or https:\/\//);
  });
});
