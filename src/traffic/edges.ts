/**
 * The traffic graph from Istio's standard metrics: one edge per (source workload, destination
 * workload and service), each with its request rate, 5xx rate, p99 latency and TCP bytes. The PromQL
 * groups by Istio's standard labels (https://istio.io/latest/docs/reference/config/metrics/):
 * source_workload, source_workload_namespace, source_cluster, destination_workload,
 * destination_workload_namespace, destination_cluster, destination_service (and destination_app), over
 * the series the destination's proxy reports (`reporter="destination"`), so a request counts once.
 */
import type { PrometheusClient } from "./prometheus-client.js";

export interface WorkloadRef {
  readonly cluster: string;
  readonly namespace: string;
  readonly workload: string;
}

export interface DestinationRef extends WorkloadRef {
  /** destination_service: the host the request was sent to (`reviews.bookinfo.svc.cluster.local`). */
  readonly service: string;
  /** destination_app ("" when the workload has no app label). */
  readonly app: string;
}

export interface TrafficEdge {
  readonly source: WorkloadRef;
  readonly destination: DestinationRef;
  /** Source and destination run in different clusters (east-west). */
  readonly crossCluster: boolean;
  readonly requestsPerSecond: number;
  /** Responses with a 5xx code per second. */
  readonly errorsPerSecond: number;
  /** errorsPerSecond / requestsPerSecond; null without requests. */
  readonly errorRate: number | null;
  /** 99th percentile of istio_request_duration_milliseconds; null without requests. */
  readonly p99Ms: number | null;
  /** TCP bytes per second (istio_tcp_sent_bytes_total / istio_tcp_received_bytes_total, as the destination reports them). */
  readonly tcpSentBytesPerSecond: number;
  readonly tcpReceivedBytesPerSecond: number;
}

export interface TrafficQueryOptions {
  /** Rate window, a PromQL duration (default `5m`; `gitmesh diff` asks for `1h`). */
  readonly window?: string;
  /** Which proxy's series to read (default `destination`; `source` also sees calls to destinations without a sidecar). */
  readonly reporter?: "destination" | "source";
  readonly signal?: AbortSignal;
}

const EDGE_LABELS = [
  "source_workload",
  "source_workload_namespace",
  "source_cluster",
  "destination_workload",
  "destination_workload_namespace",
  "destination_cluster",
  "destination_service",
  "destination_app",
] as const;

const DURATION = /^[1-9][0-9]*(ms|s|m|h|d|w|y)$/;

/** The PromQL of each figure of an edge, for a window and a reporter. */
export function trafficQueries(window = "5m", reporter: "destination" | "source" = "destination"): Readonly<Record<"requests" | "errors" | "p99" | "tcpSent" | "tcpReceived", string>> {
  if (!DURATION.test(window)) throw new RangeError(`traffic window ${JSON.stringify(window)} is not a PromQL duration such as 5m or 1h`);
  const by = EDGE_LABELS.join(", ");
  const sel = `reporter="${reporter}"`;
  return {
    requests: `sum by (${by}) (rate(istio_requests_total{${sel}}[${window}]))`,
    errors: `sum by (${by}) (rate(istio_requests_total{${sel},response_code=~"5.."}[${window}]))`,
    p99: `histogram_quantile(0.99, sum by (le, ${by}) (rate(istio_request_duration_milliseconds_bucket{${sel}}[${window}])))`,
    tcpSent: `sum by (${by}) (rate(istio_tcp_sent_bytes_total{${sel}}[${window}]))`,
    tcpReceived: `sum by (${by}) (rate(istio_tcp_received_bytes_total{${sel}}[${window}]))`,
  };
}

const label = (m: Readonly<Record<string, string>>, k: string) => m[k] ?? "";
const isUnknown = (v: string) => v === "" || v === "unknown";

function keyOf(m: Readonly<Record<string, string>>): string {
  return EDGE_LABELS.map((k) => label(m, k)).join("\u0000");
}

/**
 * Every edge of the mesh over the window, sorted (source cluster, namespace, workload, then destination).
 * Five instant queries, run one after the other (a Prometheus shared with dashboards is not flooded).
 */
export async function trafficEdges(client: PrometheusClient, options: TrafficQueryOptions = {}): Promise<TrafficEdge[]> {
  const q = trafficQueries(options.window, options.reporter);
  const signal = options.signal === undefined ? {} : { signal: options.signal };
  const figures = {} as Record<keyof typeof q, Map<string, number>>;
  const labels = new Map<string, Readonly<Record<string, string>>>();
  for (const name of Object.keys(q) as (keyof typeof q)[]) {
    const m = new Map<string, number>();
    for (const s of await client.query(q[name], signal)) {
      const k = keyOf(s.metric);
      m.set(k, (m.get(k) ?? 0) + s.value);
      if (name !== "p99" && !labels.has(k)) labels.set(k, s.metric);
    }
    figures[name] = m;
  }
  const edges: TrafficEdge[] = [];
  for (const [k, m] of labels) {
    const requests = figures.requests.get(k) ?? 0;
    const errors = figures.errors.get(k) ?? 0;
    const p99 = figures.p99.get(k);
    const sent = figures.tcpSent.get(k) ?? 0;
    const received = figures.tcpReceived.get(k) ?? 0;
    if (requests === 0 && sent === 0 && received === 0) continue;
    const source = { cluster: label(m, "source_cluster"), namespace: label(m, "source_workload_namespace"), workload: label(m, "source_workload") };
    const destination = {
      cluster: label(m, "destination_cluster"),
      namespace: label(m, "destination_workload_namespace"),
      workload: label(m, "destination_workload"),
      service: label(m, "destination_service"),
      app: isUnknown(label(m, "destination_app")) ? "" : label(m, "destination_app"),
    };
    edges.push({
      source,
      destination,
      crossCluster: !isUnknown(source.cluster) && !isUnknown(destination.cluster) && source.cluster !== destination.cluster,
      requestsPerSecond: requests,
      errorsPerSecond: errors,
      errorRate: requests > 0 ? errors / requests : null,
      p99Ms: requests > 0 && p99 !== undefined && Number.isFinite(p99) ? p99 : null,
      tcpSentBytesPerSecond: sent,
      tcpReceivedBytesPerSecond: received,
    });
  }
  return edges.sort(compareEdges);
}

const refKey = (r: WorkloadRef) => `${r.cluster}\u0000${r.namespace}\u0000${r.workload}`;

function compareEdges(a: TrafficEdge, b: TrafficEdge): number {
  const x = `${refKey(a.source)}\u0001${refKey(a.destination)}\u0000${a.destination.service}`;
  const y = `${refKey(b.source)}\u0001${refKey(b.destination)}\u0000${b.destination.service}`;
  return x < y ? -1 : x > y ? 1 : 0;
}

export { refKey as workloadKey };
