/**
 * Test helpers around Debian's Prometheus (apt package `prometheus`: /usr/bin/prometheus and
 * /usr/bin/promtool): the rendered rules of a chart, the queries of the shipped dashboard, a real
 * Prometheus on loopback with its data in a temporary directory, and its HTTP query API.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { CHARTS, renderOk } from "../charts/helm.js";
import { freePort } from "../helpers/ports.js";
import { keepOutput } from "../helpers/processes.js";

/** A binary of the prometheus package, or a clear failure naming the package to install. */
export function prometheusBinary(name: "prometheus" | "promtool"): string {
  const found = spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).stdout.trim();
  if (found === "") throw new Error(`${name} is not installed: apt-get install prometheus (scripts/test.mjs installs it)`);
  return found;
}

/** Runs promtool; gives back its exit code and output (stdout + stderr). */
export function promtool(args: readonly string[], cwd: string): { code: number; out: string } {
  const r = spawnSync(prometheusBinary("promtool"), args, { cwd, encoding: "utf8" });
  return { code: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
}

export interface AlertRule {
  readonly alert?: string;
  readonly record?: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}
export interface RuleGroups {
  readonly groups: { readonly name: string; readonly rules: AlertRule[] }[];
}

/** The values each chart cannot render without. */
export const REQUIRED_VALUES = {
  "gitmesh-server": ["--set", "git.url=https://git.example.com/mesh.git"],
  "gitmesh-agent": ["--set", "relay.serverAddress=mgmt.example.com:9900", "--set", "relay.cluster=cluster1"],
} as const;

/** The spec of the chart's PrometheusRule as `helm template` renders it with `sets` (a rules file for promtool). */
export async function renderedRules(chart: "gitmesh-server" | "gitmesh-agent", sets: readonly string[] = []): Promise<RuleGroups> {
  const args = ["--set", "monitoring.prometheusRule.enabled=true", ...sets.flatMap((s) => ["--set", s])];
  args.push(...REQUIRED_VALUES[chart]);
  const { manifests } = await renderOk(chart, args);
  const rule = manifests.find((m) => m.object.kind === "PrometheusRule");
  if (!rule) throw new Error(`${chart} rendered no PrometheusRule`);
  return (rule.object as unknown as { spec: RuleGroups }).spec;
}

export function writeYaml(path: string, value: unknown): string {
  writeFileSync(path, stringify(value, { lineWidth: 0 }));
  return path;
}

/** The dashboard the server chart ships (files/dashboards/gitmesh.json). */
export function dashboardJson(): string {
  return readFileSync(join(CHARTS, "gitmesh-server", "files", "dashboards", "gitmesh.json"), "utf8");
}

export interface DashboardQuery {
  readonly panel: string;
  readonly refId: string;
  readonly expr: string;
}

/** Every PromQL expression of the dashboard's panels (rows included). */
export function dashboardQueries(json: string): DashboardQuery[] {
  interface Panel { title?: string; targets?: { refId?: string; expr?: string }[]; panels?: Panel[] }
  const out: DashboardQuery[] = [];
  const visit = (panels: Panel[] = []) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) if (t.expr !== undefined) out.push({ panel: p.title ?? "", refId: t.refId ?? "", expr: t.expr });
      visit(p.panels);
    }
  };
  visit((JSON.parse(json) as { panels?: Panel[] }).panels);
  return out;
}

/** A dashboard query as Grafana would send it: its variables replaced (every cluster, a 1 minute rate window, a 10 minute range). */
export function asGrafanaSends(expr: string): string {
  return expr.replaceAll("$__rate_interval", "1m").replaceAll("$__range", "10m").replaceAll("$cluster", ".*");
}

export interface RunningPrometheus {
  readonly url: string;
  readonly child: ChildProcess;
  output(): string;
  /** Instant query; the result vector (throws on an API error, with Prometheus's message). */
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  /** Metric metadata from the scrapes: name → types. */
  metadata(): Promise<Record<string, { type: string }[]>>;
  /** Scrape targets and their health. */
  targets(): Promise<{ scrapeUrl: string; health: string; lastError: string }[]>;
  stop(): Promise<void>;
}

/** Starts Prometheus on 127.0.0.1:<free port> with `config` (prometheus.yml), its TSDB in `dir` and `extraArgs` (e.g. --web.config.file). */
export async function startPrometheus(dir: string, config: unknown, extraArgs: readonly string[] = []): Promise<RunningPrometheus> {
  const port = await freePort();
  const configFile = writeYaml(join(dir, "prometheus.yml"), config);
  const child = spawn(prometheusBinary("prometheus"), [
    `--config.file=${configFile}`, `--storage.tsdb.path=${join(dir, "data")}`, `--web.listen-address=127.0.0.1:${String(port)}`, "--log.level=warn", ...extraArgs,
  ], { stdio: ["ignore", "pipe", "pipe"] });
  const output = keepOutput(child);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = `${extraArgs.some((a) => a.startsWith("--web.config.file")) ? "https" : "http"}://127.0.0.1:${String(port)}`;
  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(10_000) });
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== "success") throw new Error(`Prometheus ${path}: ${body.error ?? res.status}`);
    return body.data;
  };
  return {
    url,
    child,
    output,
    query: async (expr) => (await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(`/api/v1/query?query=${encodeURIComponent(expr)}`)).result,
    metadata: () => api<Record<string, { type: string }[]>>("/api/v1/metadata"),
    targets: async () => (await api<{ activeTargets: { scrapeUrl: string; health: string; lastError: string }[] }>("/api/v1/targets")).activeTargets,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
