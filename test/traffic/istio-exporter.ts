/**
 * Istio-format metrics of bookinfo running across two clusters, for a real Prometheus: an exporter on
 * loopback that Prometheus scrapes, and the same series over the past hour written as TSDB blocks with
 * `promtool tsdb create-blocks-from openmetrics` (so "the last hour" is a real hour of data, not the
 * few seconds the test has run). Every counter grows linearly: value(t) = rate · (t − t0), so the rates
 * Prometheus computes are the rates declared here.
 *
 * Series and labels are those of Istio's standard metrics (https://istio.io/latest/docs/reference/config/metrics/),
 * reported by the destination's proxy and also by the source's (reporter="source"), as Istio does.
 */
import { createServer, type Server } from "node:http";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { prometheusBinary } from "../observability/prometheus-tools.js";

export interface Workload {
  readonly cluster: string;
  readonly namespace: string;
  readonly workload: string;
  readonly app: string;
  readonly version: string;
}
export interface DeclaredEdge {
  readonly source: Workload;
  readonly destination: Workload;
  readonly service: string;
  /** Requests per second, and how many of them answer 503. */
  readonly rps: number;
  readonly errorRps: number;
  /** Upper bound (ms, an Istio bucket) under which every request completes, and the next lower bound: p99 lies between them. */
  readonly latencyBucket: number;
  /** TCP bytes per second (a TCP edge has rps 0). */
  readonly tcpSent?: number;
  readonly tcpReceived?: number;
}

const wl = (cluster: string, namespace: string, workload: string, app: string, version = "v1"): Workload => ({ cluster, namespace, workload, app, version });
const svc = (name: string, ns: string) => `${name}.${ns}.svc.cluster.local`;

export const BOOKINFO_EDGES: readonly DeclaredEdge[] = (() => {
  const out: DeclaredEdge[] = [];
  for (const [c, scale] of [["cluster1", 1], ["cluster2", 0.2]] as const) {
    const gw = wl(c, "istio-gateways", "istio-ingressgateway", "istio-ingressgateway", "");
    const pp = wl(c, "bookinfo-frontends", "productpage-v1", "productpage");
    const details = wl(c, "bookinfo-backends", "details-v1", "details");
    const ratings = wl(c, "bookinfo-backends", "ratings-v1", "ratings");
    out.push({ source: gw, destination: pp, service: svc("productpage", "bookinfo-frontends"), rps: 10 * scale, errorRps: 0, latencyBucket: 100 });
    out.push({ source: pp, destination: details, service: svc("details", "bookinfo-backends"), rps: 10 * scale, errorRps: 1 * scale, latencyBucket: 25 });
    out.push({ source: wl(c, "bookinfo-backends", c === "cluster1" ? "reviews-v2" : "reviews-v3", "reviews", c === "cluster1" ? "v2" : "v3"), destination: ratings, service: svc("ratings", "bookinfo-backends"), rps: 3 * scale, errorRps: 0, latencyBucket: 10 });
    out.push({ source: ratings, destination: wl(c, "bookinfo-backends", "mysqldb-v1", "mysqldb"), service: svc("mysqldb", "bookinfo-backends"), rps: 0, errorRps: 0, latencyBucket: 0, tcpSent: 2000 * scale, tcpReceived: 500 * scale });
  }
  const pp1 = wl("cluster1", "bookinfo-frontends", "productpage-v1", "productpage");
  const reviews = svc("reviews", "bookinfo-backends");
  out.push({ source: pp1, destination: wl("cluster1", "bookinfo-backends", "reviews-v1", "reviews"), service: reviews, rps: 4, errorRps: 0, latencyBucket: 25 });
  out.push({ source: pp1, destination: wl("cluster1", "bookinfo-backends", "reviews-v2", "reviews", "v2"), service: reviews, rps: 3, errorRps: 0, latencyBucket: 50 });
  // East-west: productpage in cluster1 reaches reviews-v3 in cluster2 through the east-west gateway; 1 in 5 fail.
  out.push({ source: pp1, destination: wl("cluster2", "bookinfo-backends", "reviews-v3", "reviews", "v3"), service: reviews, rps: 2.5, errorRps: 0.5, latencyBucket: 250 });
  out.push({ source: wl("cluster2", "bookinfo-frontends", "productpage-v1", "productpage"), destination: wl("cluster2", "bookinfo-backends", "reviews-v3", "reviews", "v3"), service: reviews, rps: 2, errorRps: 0, latencyBucket: 50 });
  return out;
})();

const BUCKETS = [0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 600000, 1800000, 3600000];

function labelText(labels: Record<string, string>): string {
  return Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`).join(",");
}

/** The series of every edge at time `t` (seconds), as lines `name{labels} value` (no timestamp). */
export function seriesAt(edges: readonly DeclaredEdge[], t: number, t0: number): string[] {
  const dt = t - t0;
  const lines: string[] = [];
  for (const e of edges) {
    for (const reporter of ["destination", "source"]) {
      const common = {
        reporter,
        source_workload: e.source.workload,
        source_workload_namespace: e.source.namespace,
        source_cluster: e.source.cluster,
        source_app: e.source.app,
        source_version: e.source.version,
        source_principal: `spiffe://${e.source.cluster}.local/ns/${e.source.namespace}/sa/bookinfo-${e.source.app}`,
        destination_workload: e.destination.workload,
        destination_workload_namespace: e.destination.namespace,
        destination_cluster: e.destination.cluster,
        destination_app: e.destination.app,
        destination_version: e.destination.version,
        destination_service: e.service,
        destination_service_name: e.service.split(".")[0]!,
        destination_service_namespace: e.service.split(".")[1]!,
        destination_principal: `spiffe://${e.destination.cluster}.local/ns/${e.destination.namespace}/sa/bookinfo-${e.destination.app}`,
        connection_security_policy: reporter === "destination" ? "mutual_tls" : "unknown",
      };
      if (e.rps > 0) {
        for (const [code, rate] of [["200", e.rps - e.errorRps], ["503", e.errorRps]] as const) {
          if (rate <= 0) continue;
          const l = { ...common, request_protocol: "http", response_code: code, response_flags: code === "503" ? "URX" : "-", grpc_response_status: "" };
          lines.push(`istio_requests_total{${labelText(l)}} ${(rate * dt).toFixed(3)}`);
          for (const le of BUCKETS) lines.push(`istio_request_duration_milliseconds_bucket{${labelText({ ...l, le: String(le) })}} ${(le >= e.latencyBucket ? rate * dt : 0).toFixed(3)}`);
          lines.push(`istio_request_duration_milliseconds_bucket{${labelText({ ...l, le: "+Inf" })}} ${(rate * dt).toFixed(3)}`);
          lines.push(`istio_request_duration_milliseconds_count{${labelText(l)}} ${(rate * dt).toFixed(3)}`);
          lines.push(`istio_request_duration_milliseconds_sum{${labelText(l)}} ${(rate * dt * e.latencyBucket * 0.8).toFixed(3)}`);
        }
      }
      if (e.tcpSent !== undefined) lines.push(`istio_tcp_sent_bytes_total{${labelText({ ...common, request_protocol: "tcp", response_flags: "-" })}} ${(e.tcpSent * dt).toFixed(1)}`);
      if (e.tcpReceived !== undefined) lines.push(`istio_tcp_received_bytes_total{${labelText({ ...common, request_protocol: "tcp", response_flags: "-" })}} ${(e.tcpReceived * dt).toFixed(1)}`);
    }
  }
  return lines;
}

/**
 * Writes the series from `from` to `to` (seconds, every `step`) as TSDB blocks into `dataDir`
 * (Prometheus's --storage.tsdb.path), with promtool.
 */
export function backfill(dir: string, dataDir: string, edges: readonly DeclaredEdge[], t0: number, from: number, to: number, step = 15): void {
  const chunks: string[] = [];
  // OpenMetrics wants each metric family's samples together, ordered by time within a series.
  const byName = new Map<string, string[]>();
  for (let t = from; t <= to; t += step) {
    for (const line of seriesAt(edges, t, t0)) {
      const name = line.slice(0, line.indexOf("{"));
      const list = byName.get(name) ?? [];
      list.push(`${line} ${t.toFixed(3)}`);
      byName.set(name, list);
    }
  }
  const family = (name: string) => name.replace(/_(bucket|count|sum)$/, "");
  const families = new Map<string, string[]>();
  for (const [name, lines] of byName) {
    const f = family(name);
    families.set(f, [...(families.get(f) ?? []), ...lines]);
  }
  for (const [, lines] of families) chunks.push(lines.join("\n"));
  const file = join(dir, "backfill.om");
  writeFileSync(file, chunks.join("\n") + "\n# EOF\n");
  const r = spawnSync(prometheusBinary("promtool"), ["tsdb", "create-blocks-from", "openmetrics", "-q", file, dataDir], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`promtool create-blocks-from failed: ${r.stdout}${r.stderr}`);
}

export interface IstioExporter {
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** Serves the series at the time of each scrape on 127.0.0.1:<free port>/metrics. */
export async function startIstioExporter(edges: () => readonly DeclaredEdge[], t0: number): Promise<IstioExporter> {
  const server: Server = createServer((req, res) => {
    if (req.url !== "/metrics") {
      res.writeHead(404).end();
      return;
    }
    const body = ["# TYPE istio_requests_total counter", "# TYPE istio_request_duration_milliseconds histogram", "# TYPE istio_tcp_sent_bytes_total counter", "# TYPE istio_tcp_received_bytes_total counter", ...seriesAt(edges(), Date.now() / 1000, t0)].join("\n") + "\n";
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${String(port)}`,
    port,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
