/**
 * A real Prometheus (Debian's) holding an hour of bookinfo's Istio metrics in two clusters (backfilled
 * with promtool) and scraping the test's exporter every second for what comes after.
 */
import { join } from "node:path";
import { startPrometheus, type RunningPrometheus } from "../observability/prometheus-tools.js";
import { backfill, BOOKINFO_EDGES, startIstioExporter, type DeclaredEdge, type IstioExporter } from "./istio-exporter.js";

export interface TrafficPrometheus {
  readonly prometheus: RunningPrometheus;
  readonly exporter: IstioExporter;
  stop(): Promise<void>;
}

export async function startTrafficPrometheus(dir: string, options: { readonly edges?: readonly DeclaredEdge[]; readonly extraArgs?: readonly string[] } = {}): Promise<TrafficPrometheus> {
  const edges = options.edges ?? BOOKINFO_EDGES;
  const now = Date.now() / 1000;
  const t0 = now - 3 * 3600;
  backfill(dir, join(dir, "data"), edges, t0, now - 75 * 60, now - 1);
  const exporter = await startIstioExporter(() => edges, t0);
  const prometheus = await startPrometheus(
    dir,
    { global: { scrape_interval: "1s", evaluation_interval: "1s" }, scrape_configs: [{ job_name: "istio-bookinfo", honor_labels: true, static_configs: [{ targets: [`127.0.0.1:${String(exporter.port)}`] }] }] },
    options.extraArgs ?? [],
  );
  return {
    prometheus,
    exporter,
    async stop() {
      await prometheus.stop();
      await exporter.stop();
    },
  };
}

/** Waits until Prometheus answers queries over its loaded blocks (it replays them at start). */
export async function untilReady(url: string, fetchOptions: RequestInit = {}): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const res = await fetch(`${url}/-/ready`, { ...fetchOptions, signal: AbortSignal.timeout(2000) });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`Prometheus at ${url} not ready after 30 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
