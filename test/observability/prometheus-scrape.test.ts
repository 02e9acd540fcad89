// The shipped dashboard against a running system (#37): a real `gitmesh server` (real Redis, Git over
// HTTP, the relay on gRPC/mTLS) and two real `gitmesh agent` processes on Kubernetes API emulators,
// scraped by Debian's Prometheus started by the test on loopback (its config written here, its TSDB in
// a temporary directory). The fleet converges a commit, rejects a broken one, converges the next; then
// every query of files/dashboards/gitmesh.json, with Grafana's variables filled in as Grafana would,
// returns data from the Prometheus HTTP API, and the values that tell the story are the true ones.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { freePort } from "../helpers/ports.js";
import { createProcessGroup } from "../helpers/processes.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { backendsTimeoutChanges, repoFiles } from "../helpers/repo-files.js";
import { createKubeClient } from "../../src/agent/index.js";
import { metricNameProblem } from "../../src/core/index.js";
import { asGrafanaSends, dashboardJson, dashboardQueries, startPrometheus, type RunningPrometheus } from "./prometheus-tools.js";

const TOKEN = "observability-bootstrap-token-0123";
const CLUSTERS = ["cluster1", "cluster2"] as const;
const b64 = (s: string) => Buffer.from(s).toString("base64");
const VERSION = (JSON.parse(readFileSync("package.json", "utf8")) as { version: string }).version;

const gm = createProcessGroup();
let tmp: string;
let redis: TestRedis;
let git: GitServer;
let prometheus: RunningPrometheus;
let serverBase: string;
const kubes: StartedKube[] = [];
const agentPorts = new Map<string, number>();
const timeouts = backendsTimeoutChanges();

interface Status { ready: boolean; commit: { sha: string } | null; rejected: { commit: string } | null; clusters: { name: string; sync: { state: string; commit: string | null } }[] }
const status = async (): Promise<Status> => {
  const token = readFileSync(join(tmp, "pki", "api-token-read"), "utf8").trim();
  const res = await fetch(`${serverBase}/api/status`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new Error(`/api/status: HTTP ${String(res.status)}`);
  return (await res.json()) as Status;
};
/** Every cluster runs `sha` (the one truth: cluster-sync.ts via /api/status). */
const convergedOn = (sha: string) => async () => {
  const st = await status();
  return st.commit?.sha === sha && CLUSTERS.every((c) => st.clusters.find((x) => x.name === c)?.sync.state === "in-sync");
};
/** A query's single value as a number (throws when the result is not one sample). */
const scalar = async (expr: string): Promise<number> => {
  const r = await prometheus.query(expr);
  if (r.length !== 1) throw new Error(`${expr}: ${String(r.length)} samples, expected 1`);
  return Number(r[0]!.value[1]);
};

/**
 * Another controller (field manager "argo-rollouts") keeps rewriting the hosts of a VirtualService the
 * agent owns; the agent repairs it each time until it sees a fight and backs off.
 */
async function driftFight(kube: StartedKube): Promise<void> {
  const vs = kube.emulator.list("networking.istio.io/v1", "VirtualService").find((o) => (o.metadata as { labels?: Record<string, string> }).labels?.["gitmesh.io/managed"] === "true");
  if (!vs) throw new Error("no gitmesh-managed VirtualService in cluster1");
  const md = vs.metadata as { name: string; namespace: string };
  const spec = vs.spec as { hosts: string[] };
  const hostsNow = () => JSON.stringify((kube.emulator.get("networking.istio.io/v1", "VirtualService", md.namespace, md.name)?.spec as { hosts?: string[] } | undefined)?.hosts);
  const other = createKubeClient(kube.newKubeConfig());
  for (let i = 0; i < 6; i++) {
    await other.apply({ apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: md.name, namespace: md.namespace }, spec: { hosts: [...spec.hosts, `fight-${String(i)}.example.com`] } }, { fieldManager: "argo-rollouts", force: true });
    const repaired = await gm.poll("repair", () => Promise.resolve(hostsNow() === JSON.stringify(spec.hosts)), 8000).then(() => true, () => false);
    if (!repaired) return; // backing off: the fight is detected
  }
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "gitmesh-observability-"));
  redis = await startRedis();
  git = await startGitServer();
  await git.createRepo("mesh");
  await git.commitFiles("mesh", repoFiles("examples/repo-layout"), "bookinfo on two clusters");
  const relayPort = await freePort();
  const httpPort = await freePort();
  serverBase = `http://127.0.0.1:${String(httpPort)}`;
  gm.start("server", [
    "server", "--identity", "obs", "--redis-url", redis.url, "--git-url", git.url("mesh"),
    "--relay-host", "127.0.0.1", "--relay-port", String(relayPort), "--http-host", "127.0.0.1", "--http-port", String(httpPort),
    "--pki-dir", join(tmp, "pki"), "--bootstrap", "fleet-token", "--relay-token", TOKEN, "--additional-sans", "127.0.0.1",
    "--poll-interval", "1", "--data-dir", join(tmp, "data"), "--log-format", "json",
  ]);
  await gm.poll("server healthy", async () => (await fetch(`${serverBase}/healthz`)).ok);
  const rootCa = readFileSync(join(tmp, "pki", "root-ca.crt"), "utf8");
  for (const cluster of CLUSTERS) {
    const kube = await startKube({});
    const dir = join("examples/discovery", cluster);
    for (const f of readdirSync(dir).filter((n) => n.endsWith(".yaml"))) await kube.emulator.seedFile(join(dir, f));
    kube.emulator.seed([
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-root-tls-secret", namespace: "gitmesh" }, data: { "ca.crt": b64(rootCa) } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-identity-token-secret", namespace: "gitmesh" }, data: { token: b64(TOKEN) } },
    ]);
    await kube.emulator.writeKubeconfig(join(tmp, `${cluster}.kubeconfig`));
    kubes.push(kube);
    const port = await freePort();
    agentPorts.set(cluster, port);
    gm.start(`agent ${cluster}`, ["agent", "--relay-address", `127.0.0.1:${String(relayPort)}`, "--cluster", cluster, "--kubeconfig", join(tmp, `${cluster}.kubeconfig`), "--http-port", String(port), "--identity", `${cluster}-agent`]);
  }
  // Scrapes every second, as a test can wait for; the rules of production are the charts' (rules.test.ts).
  prometheus = await startPrometheus(tmp, {
    global: { scrape_interval: "1s", scrape_timeout: "1s", evaluation_interval: "1s" },
    scrape_configs: [
      { job_name: "gitmesh-server", static_configs: [{ targets: [`127.0.0.1:${String(httpPort)}`] }] },
      { job_name: "gitmesh-agent", static_configs: [{ targets: [...agentPorts.values()].map((p) => `127.0.0.1:${String(p)}`) }] },
    ],
  });
}, 180_000);

afterAll(async () => {
  await prometheus.stop();
  await gm.stopAll();
  for (const k of kubes) await k.stop();
  await git.stop();
  await redis.stop();
  rmSync(tmp, { recursive: true, force: true });
}, 60_000);

describe("a real Prometheus scraping a running server and two agents", () => {
  it("scrapes every process, and every dashboard query returns data after a converged, a rejected and a converged commit", async () => {
    const first = (await git.revParse("mesh", "refs/heads/main"))!;
    await gm.poll("first commit applied in both clusters", convergedOn(first), 150_000);
    const bad = await git.commitFiles("mesh", { "workspaces/broken.yaml": "apiVersion: networking.gloo.solo.io/v2\nkind: RouteTable\nmetadata: {name: [oops\n" }, "broken yaml");
    await gm.poll("broken commit rejected", async () => (await status()).rejected?.commit === bad, 60_000);
    await gm.poll("Prometheus sees the rejected commit", async () => (await prometheus.query("gitmesh_server_commit_rejected == 1")).length === 1, 30_000);
    const fixed = await git.commitFiles("mesh", { "workspaces/broken.yaml": null, ...timeouts.next() }, "longer backend timeout");
    await gm.poll("fixed commit applied in both clusters", convergedOn(fixed), 120_000);

    await driftFight(kubes[0]!);
    await gm.poll("Prometheus sees the drift fight", async () => (await prometheus.query("sum(gitmesh_agent_drift_fights_total) > 0")).length === 1, 30_000);

    // every target up, then a few more scrapes so that every rate() window holds two samples
    await gm.poll("every target scraped", async () => {
      const t = await prometheus.targets();
      return t.length === 3 && t.every((x) => x.health === "up") ? t : undefined;
    }, 30_000);
    await gm.poll("the fixed commit's convergence scraped", async () => (await prometheus.query('gitmesh_server_cluster_sync{state="in-sync"} == 1')).length === 2 && (await prometheus.query("gitmesh_server_commit_rejected == 0")).length === 1, 30_000);
    await new Promise((r) => setTimeout(r, 3000));

    const queries = dashboardQueries(dashboardJson());
    expect(queries.length).toBeGreaterThanOrEqual(20);
    const empty: string[] = [];
    for (const q of queries) {
      const result = await prometheus.query(asGrafanaSends(q.expr));
      if (result.length === 0) empty.push(`${q.panel} ${q.refId}: ${q.expr}`);
    }
    expect(empty, `dashboard queries without data (Prometheus ${prometheus.url})`).toEqual([]);
  }, 420_000);

  it("the values behind the panels are the fleet's", async () => {
    // fleet convergence: both clusters in sync, two registered, connected and warmed
    expect(await scalar('sum(max by (cluster) (gitmesh_server_cluster_sync{state="in-sync"}))')).toBe(2);
    expect(await scalar("max(gitmesh_server_clusters_registered)")).toBe(2);
    expect(await scalar("sum(gitmesh_server_clusters_connected)")).toBe(2);
    // one rejected commit, at least two accepted; two convergences observed per cluster
    expect(await scalar('max(gitmesh_server_commits_total{result="rejected"})')).toBe(1);
    expect(await scalar('max(gitmesh_server_commits_total{result="accepted"})')).toBeGreaterThanOrEqual(2);
    expect(await scalar("max(gitmesh_server_convergence_seconds_count)")).toBeGreaterThanOrEqual(4);
    expect(await scalar('sum(gitmesh_relay_pull_clients_connected)')).toBe(2);
    expect(await scalar('sum(gitmesh_relay_stream_bytes_total{direction="sent"})')).toBeGreaterThan(0);
    expect(await scalar('sum(gitmesh_agent_applies_total{result="ok"})')).toBeGreaterThan(0);
    expect(await scalar("sum(gitmesh_pipeline_translation_seconds_count)")).toBeGreaterThan(0);
    // the fight in cluster1: repairs, then one fight, on a VirtualService
    expect(await scalar('sum(gitmesh_agent_drift_fights_total{kind="VirtualService"})')).toBe(1);
    expect(await scalar('sum(gitmesh_agent_drift_repairs_total{kind="VirtualService"})')).toBeGreaterThanOrEqual(3);
    // certificates: the relay client certificate and the Istio intermediate (RootTrustPolicy) of both agents, in the future
    const expiry = await prometheus.query("gitmesh_agent_certificate_expiry_timestamp_seconds - time()");
    expect(expiry.map((s) => s.metric.certificate).sort()).toEqual(["istio-intermediate", "istio-intermediate", "relay-client", "relay-client"]);
    for (const s of expiry) expect(Number(s.value[1])).toBeGreaterThan(0);
    // build info: the package version on the server and both agents, the Node.js running them
    const builds = await prometheus.query("gitmesh_build_info");
    expect(builds.map((b) => b.metric.job).sort()).toEqual(["gitmesh-agent", "gitmesh-agent", "gitmesh-server"]);
    for (const b of builds) expect(b.metric).toMatchObject({ version: VERSION, commit: "unknown", node: process.version });
  }, 60_000);

  it("every metric a server or an agent exposes follows the one naming rule (Node's default process_/nodejs_ metrics aside)", async () => {
    const metadata = await prometheus.metadata();
    const names = Object.keys(metadata).filter((n) => !/^(process|nodejs)_/.test(n) && !n.startsWith("scrape_") && !n.startsWith("prometheus_") && n !== "up");
    expect(names.length).toBeGreaterThan(40);
    const problems = names.flatMap((n) => metadata[n]!.map((m) => metricNameProblem(n, m.type))).filter((p) => p !== undefined);
    expect(problems).toEqual([]);
    // the rule can fail
    expect(metricNameProblem("relay_push_clients_connected", "gauge")).toMatch(/gitmesh_</);
    expect(metricNameProblem("gitmesh_agent_applies", "counter")).toMatch(/_total/);
  }, 60_000);
});
