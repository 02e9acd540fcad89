/**
 * The traffic graph: the workloads of every cluster (one column per cluster) and the edges between
 * them from Istio's metrics in the server's Prometheus (GET /api/traffic), cross-cluster edges drawn
 * apart; request rate, 5xx rate and p99 per edge; filters by workspace, cluster and namespace (kept in
 * the URL); each destination linked to the Gloo resources that route to it. Without a Prometheus the
 * page says how to configure one.
 */
import { useApi } from "../live.js";

interface Ref { cluster: string; namespace: string; workload: string }
interface GlooRouteRef { kind: string; namespace: string; name: string; file?: string; via: string }
interface Edge {
  source: Ref;
  destination: Ref & { service: string };
  crossCluster: boolean;
  requestsPerSecond: number;
  errorRate: number | null;
  p99Ms: number | null;
  tcpSentBytesPerSecond: number;
  tcpReceivedBytesPerSecond: number;
  routedBy: GlooRouteRef[];
}
interface Node extends Ref { workspace: string | null; inboundRequestsPerSecond: number }
type Traffic =
  | { configured: false; message: string }
  | { configured: true; source: string; window: string; at: string; nodes: Node[]; edges: Edge[]; clusters: string[]; namespaces: string[]; workspaces: string[] };

const key = (r: Ref) => `${r.cluster}/${r.namespace}/${r.workload}`;
const rate = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 1 ? n.toFixed(1) : n.toPrecision(2));
const pct = (r: number | null) => (r === null ? "–" : `${(r * 100).toFixed(1)}%`);
const bytes = (n: number) => (n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB/s` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB/s` : `${n.toFixed(0)} B/s`);

export function TrafficPage({ params }: { params: URLSearchParams }) {
  const q = new URLSearchParams();
  for (const k of ["workspace", "cluster", "namespace"]) {
    const v = params.get(k);
    if (v) q.set(k, v);
  }
  const { data, error } = useApi<Traffic>(`/api/traffic?${q.toString()}`);
  if (!data) return <p>{error ? `Cannot read the traffic: ${error}` : "Loading…"}</p>;
  if (!data.configured)
    return (
      <section data-testid="traffic-unconfigured">
        <h2>Traffic</h2>
        <p class="warn">{data.message}</p>
      </section>
    );
  const set = (k: string, v: string) => {
    const next = new URLSearchParams(q);
    if (v === "") next.delete(k);
    else next.set(k, v);
    location.hash = `#/traffic${next.size > 0 ? `?${next.toString()}` : ""}`;
  };
  const select = (k: string, label: string, values: string[]) => (
    <label>
      {label}{" "}
      <select aria-label={label} value={params.get(k) ?? ""} onChange={(e) => set(k, (e.target as HTMLSelectElement).value)}>
        <option value="">all</option>
        {values.map((v) => (
          <option key={v} value={v}>
            {v}
          </option>
        ))}
      </select>
    </label>
  );
  // Layout: a column per cluster, its workloads sorted by namespace then name.
  const clusters = [...new Set(data.nodes.map((n) => n.cluster))].sort();
  const colW = 300;
  const rowH = 44;
  const pos = new Map<string, { x: number; y: number }>();
  let rows = 0;
  clusters.forEach((c, i) => {
    const ns = data.nodes.filter((n) => n.cluster === c);
    ns.forEach((n, j) => pos.set(key(n), { x: 20 + i * colW, y: 40 + j * rowH }));
    rows = Math.max(rows, ns.length);
  });
  const width = Math.max(1, clusters.length) * colW;
  const height = 60 + rows * rowH;
  const boxW = 190;
  return (
    <section data-testid="traffic">
      <h2>Traffic</h2>
      <p>
        From <code>{data.source}</code>, rates over the last {data.window} (Istio's standard metrics, as the destination reports them). {data.edges.length} edge
        {data.edges.length === 1 ? "" : "s"}, {data.edges.filter((e) => e.crossCluster).length} across clusters.
      </p>
      <p class="filters">
        {select("workspace", "Workspace", data.workspaces)} {select("cluster", "Cluster", data.clusters)} {select("namespace", "Namespace", data.namespaces)}
      </p>
      <svg width={width} height={height} role="img" aria-label="traffic graph" data-testid="traffic-graph">
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" fill="currentColor" />
          </marker>
        </defs>
        {clusters.map((c, i) => (
          <text key={c} x={20 + i * colW} y={20} class="cluster-title">
            {c}
          </text>
        ))}
        {data.edges.map((e) => {
          const a = pos.get(key(e.source));
          const b = pos.get(key(e.destination));
          if (!a || !b) return null;
          const [x1, y1] = [a.x + boxW, a.y + 14];
          const [x2, y2] = b.x > a.x ? [b.x, b.y + 14] : [b.x + boxW - 20, b.y + 2];
          const bad = (e.errorRate ?? 0) > 0.05;
          return (
            <path
              key={`${key(e.source)}>${key(e.destination)}`}
              d={`M ${x1} ${y1} C ${x1 + 60} ${y1}, ${x2 - 60} ${y2}, ${x2} ${y2}`}
              fill="none"
              stroke={e.crossCluster ? "#7b3fe4" : bad ? "#c0392b" : "#4a7"}
              stroke-width={1 + Math.min(4, Math.log10(1 + e.requestsPerSecond) * 2)}
              stroke-dasharray={e.crossCluster ? "6 4" : undefined}
              marker-end="url(#arrow)"
              class={e.crossCluster ? "edge cross-cluster" : "edge"}
              data-cross-cluster={e.crossCluster ? "true" : "false"}
            >
              <title>{`${key(e.source)} → ${key(e.destination)}: ${rate(e.requestsPerSecond)} req/s, ${pct(e.errorRate)} 5xx, p99 ${e.p99Ms === null ? "–" : `${e.p99Ms.toFixed(0)} ms`}`}</title>
            </path>
          );
        })}
        {data.nodes.map((n) => {
          const p = pos.get(key(n))!;
          return (
            <g key={key(n)} data-node={key(n)}>
              <rect x={p.x} y={p.y} width={boxW} height={28} rx={4} fill="#f4f6fa" stroke="#8893a6" />
              <text x={p.x + 6} y={p.y + 18} font-size="12">
                {n.namespace}/{n.workload}
              </text>
            </g>
          );
        })}
      </svg>
      <table data-testid="traffic-edges">
        <thead>
          <tr>
            <th>source</th>
            <th>destination</th>
            <th>req/s</th>
            <th>5xx</th>
            <th>p99</th>
            <th>TCP</th>
            <th>routed by</th>
          </tr>
        </thead>
        <tbody>
          {data.edges.map((e) => (
            <tr key={`${key(e.source)}>${key(e.destination)}>${e.destination.service}`} data-edge={`${key(e.source)}>${key(e.destination)}`} class={e.crossCluster ? "cross-cluster" : undefined}>
              <td>{key(e.source)}</td>
              <td>
                {key(e.destination)}
                {e.crossCluster && <span class="badge"> cross-cluster</span>}
                <br />
                <small>{e.destination.service}</small>
              </td>
              <td class="num">{rate(e.requestsPerSecond)}</td>
              <td class={(e.errorRate ?? 0) > 0.05 ? "num error" : "num"}>{pct(e.errorRate)}</td>
              <td class="num">{e.p99Ms === null ? "–" : `${e.p99Ms.toFixed(0)} ms`}</td>
              <td class="num">{e.tcpSentBytesPerSecond + e.tcpReceivedBytesPerSecond > 0 ? `${bytes(e.tcpSentBytesPerSecond)} ↑ ${bytes(e.tcpReceivedBytesPerSecond)} ↓` : "–"}</td>
              <td>
                {e.routedBy.length === 0
                  ? "–"
                  : e.routedBy.map((r) => (
                      <a key={`${r.kind}/${r.namespace}/${r.name}`} href={`#/provenance?kind=${encodeURIComponent(r.kind)}&namespace=${encodeURIComponent(r.namespace)}&name=${encodeURIComponent(r.name)}&gloo=1`} title={r.file ?? r.via}>
                        {r.kind} {r.namespace}/{r.name}{" "}
                      </a>
                    ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
