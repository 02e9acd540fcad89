// End to end: suspend and resume (#38). A real management server (Git over HTTP, the relay on real
// gRPC/mTLS, the HTTP API, the pipeline and the suspensions in a real Redis) and real agents (the agent's
// own code: informers, server-side apply, prune, drift repair) on Kubernetes API emulators, in this
// process so that the server can be restarted on the same Redis. The tests run in order on one fleet:
//   (a) the admin token suspends cluster2 (the read token is refused); a commit that adds one route table
//       and removes another converges on cluster1 while cluster2 keeps exactly what it ran (nothing
//       applied, nothing pruned), and every view says "suspended since … by … (reason)"; cluster2's agent
//       is told it is held, and an operator's hand edit of an owned VirtualService there (an incident
//       hotfix) stays across several of the agent's drift resyncs, and no view claims it was repaired;
//   (b) the suspension survives a restart of the server (same Redis): still nothing delivered there, and
//       the reconnected agent, told the hold on subscribe, still leaves the hand edit alone;
//   (c) resume: cluster2 is brought to the commit in force (added there, removed there), in sync, and
//       the hand edit is put back;
//   (d) gitmesh.yaml `suspend` holds cluster1 (actor: the commit); its agent leaves a hand edit alone; the
//       API cannot lift it; a commit that removes it does, and the hand edit is put back;
//   (e) the agent's own chart value `suspend: true`: it applies, prunes and repairs nothing, and the
//       server shows the cluster suspended by the cluster owner; with the value back to false it converges;
//   (f) the CLI processes: `gitmesh suspend --all` holds the whole fleet (a commit reaches no cluster),
//       `gitmesh check` says so and exits 1, the read token cannot resume (exit 1), usage errors exit 2,
//       `gitmesh resume --all` lets the fleet converge.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { Registry, type Counter } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../../src/agent/index.js";
import { silentLogger } from "../../src/core/index.js";
import { createInProcessAgent } from "../../src/devtools/index.js";
import { RELAY_SECRETS } from "../../src/relay/index.js";
import { createManagementServer, createMemorySecretStore, createQueuePipeline, createRedisSuspensionStore, parseServerConfig, type ManagementServer } from "../../src/server/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { freePort } from "../helpers/ports.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { clusterSeed, meshFiles, vsKey, type MeshSpec } from "../queue/holds-fixture.js";

const TOKEN = "suspend-bootstrap-token-0123456789";
const CLUSTERS = ["cluster1", "cluster2"] as const;
const PREFIX = `suspend-${String(process.pid)}`;
const b64 = (s: string) => Buffer.from(s).toString("base64");
/** The agents' periodic drift resync (the chart default is 5 min): a held hand edit is shown to outlive several. */
const DRIFT_RESYNC_SECONDS = 2;

let git: GitServer;
let redis: TestRedis;
let redisClient: Redis;
let tmp: string;
let relayPort: number;
let httpPort: number;
const secrets = createMemorySecretStore();
let server: ManagementServer | undefined;
let registry: Registry;
const kubes = new Map<string, StartedKube>();
const agents = new Map<string, Agent>();

async function startServer(): Promise<ManagementServer> {
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
      auditBranch: "",
      webhookDebounceMs: "20",
      dataDir: join(tmp, "data"),
    },
    { identity: "suspend" },
  );
  if (!config) throw new Error(problems.join("; "));
  const pipeline = createQueuePipeline({ redisUrl: redis.url, prefix: `${PREFIX}:`, logger: silentLogger, debounceMs: 20 });
  registry = new Registry();
  const s = createManagementServer({ config, pipeline, secrets, registry, logger: silentLogger, dataDir: join(tmp, "data"), suspensions: createRedisSuspensionStore(redisClient, PREFIX) });
  await s.start();
  return s;
}

function startAgent(cluster: string, suspend = false): Promise<void> {
  const agent = createInProcessAgent({ cluster, emulator: kubes.get(cluster)!.emulator, relayAddress: `127.0.0.1:${String(relayPort)}`, logger: silentLogger, suspend, resyncPeriodSeconds: DRIFT_RESYNC_SECONDS });
  agents.set(cluster, agent);
  return agent.start();
}

// ---- the API ---------------------------------------------------------------------------------------
interface Suspended {
  scope: string;
  since: string;
  by: string;
  reason: string | null;
  source: string;
  summary: string;
}
interface ClusterView {
  name: string;
  connected: boolean;
  inSync: boolean;
  output: { version: number; sourceCommit: string } | null;
  applied: { version: number; sourceCommit: string } | null;
  discovery: { at: string } | null;
  suspended: Suspended | null;
  sync: { state: string; summary: string; behind?: boolean };
}
interface Status {
  commit: { sha: string } | null;
  clusters: ClusterView[];
}
const base = () => `http://127.0.0.1:${String(httpPort)}`;
const auth = (role: "read" | "admin") => ({ authorization: `Bearer ${server?.apiTokens?.[role] ?? ""}` });
const status = async (): Promise<Status> => {
  const res = await fetch(`${base()}/api/status`, { signal: AbortSignal.timeout(10_000), headers: auth("read") });
  if (!res.ok) throw new Error(`status: HTTP ${String(res.status)}`);
  return (await res.json()) as Status;
};
const view = (s: Status, c: string) => s.clusters.find((x) => x.name === c)!;
const post = async (path: string, role: "read" | "admin", body?: unknown) => {
  const res = await fetch(`${base()}${path}`, { method: "POST", headers: { ...auth(role), "content-type": "application/json" }, ...(body === undefined ? {} : { body: JSON.stringify(body) }), signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
async function poll<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}${last ? ` (${last})` : ""}\n${JSON.stringify(await status().catch(() => null), null, 1).slice(0, 4000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
/** The commit is in force and `clusters` ran its output (in sync, by the server's one answer). */
const inSync = (sha: string, clusters: readonly string[]) =>
  poll(`commit ${sha.slice(0, 12)} in sync on ${clusters.join(", ")}`, async () => {
    const s = await status();
    return s.commit?.sha === sha && clusters.every((c) => view(s, c).sync.state === "in-sync") ? s : undefined;
  });
/** gitmesh-managed VirtualServices in a cluster: key → spec JSON. */
function virtualServices(cluster: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const o of kubes.get(cluster)!.emulator.list("networking.istio.io/v1", "VirtualService")) {
    const md = o.metadata as { name: string; namespace: string; labels?: Record<string, string> };
    if (md.labels?.["gitmesh.io/managed"] === "true") out.set(`VirtualService/${md.namespace}/${md.name}`, JSON.stringify((o as { spec?: unknown }).spec));
  }
  return out;
}
const has = (cluster: string, table: string) => virtualServices(cluster).has(vsKey("apps", table, cluster));
const metric = async (cluster: string, state: string): Promise<number | undefined> => {
  const text = await registry.metrics();
  const m = new RegExp(`^gitmesh_server_cluster_sync\\{cluster="${cluster}",state="${state}"\\} (\\d+)$`, "m").exec(text);
  return m ? Number(m[1]) : undefined;
};

// ---- an operator's hand edit (an incident hotfix) of an owned VirtualService ---------------------------
const HOTFIX_TIMEOUT = "2s";
/** The VirtualService of route table `table` in `cluster`, as its API server holds it. */
function liveVs(cluster: string, table: string): { spec: { http: Record<string, unknown>[] } } | undefined {
  const [ns, name] = vsKey("apps", table, cluster).split("/").slice(1) as [string, string];
  return kubes.get(cluster)!.emulator.get("networking.istio.io/v1", "VirtualService", ns, name) as { spec: { http: Record<string, unknown>[] } } | undefined;
}
/** Whether the hand edit (a timeout on the first route) is in place. */
const hotfixed = (cluster: string, table: string) => liveVs(cluster, table)?.spec.http[0]?.timeout === HOTFIX_TIMEOUT;
/** `kubectl edit` as an operator does it: a merge patch through the API server, field manager kubectl-edit. */
async function handEdit(cluster: string, table: string): Promise<void> {
  const [ns, name] = vsKey("apps", table, cluster).split("/").slice(1) as [string, string];
  const http = liveVs(cluster, table)!.spec.http.map((r, i) => (i === 0 ? { ...r, timeout: HOTFIX_TIMEOUT } : r));
  const res = await fetch(`${kubes.get(cluster)!.url}/apis/networking.istio.io/v1/namespaces/${ns}/virtualservices/${name}?fieldManager=kubectl-edit`, {
    method: "PATCH",
    headers: { "content-type": "application/merge-patch+json" },
    body: JSON.stringify({ spec: { http } }),
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok) throw new Error(`hand edit: HTTP ${String(res.status)} ${await res.text()}`);
  expect(hotfixed(cluster, table)).toBe(true);
}
/** A counter of an agent's, for VirtualServices (or unlabelled). */
async function agentCount(counter: Counter): Promise<number> {
  return (await counter.get()).values.filter((v) => v.labels.kind === undefined || v.labels.kind === "VirtualService").reduce((n, v) => n + v.value, 0);
}
const heldGauge = async (cluster: string) => (await agents.get(cluster)!.metrics.serverSuspended.get()).values[0]?.value ?? 0;
/**
 * The hand edit stays while the agent finds it again and again and leaves it: its drift watcher saw the
 * change and then relisted at least twice (periodic resyncs, every DRIFT_RESYNC_SECONDS) without
 * repairing it, and no view claims a repair.
 */
async function handEditOutlivesResyncs(cluster: string, table: string): Promise<void> {
  const metrics = agents.get(cluster)!.metrics;
  const repairsBefore = await agentCount(metrics.driftRepairs);
  const start = await agentCount(metrics.driftUnrepaired);
  const startedAt = Date.now();
  await poll(`${cluster}'s agent finding the hand edit at least twice more and leaving it`, async () => (await agentCount(metrics.driftUnrepaired)) >= start + 3 && Date.now() - startedAt > DRIFT_RESYNC_SECONDS * 1000);
  expect(hotfixed(cluster, table)).toBe(true);
  expect(await agentCount(metrics.driftRepairs)).toBe(repairsBefore);
  const v = view(await status(), cluster) as ClusterView & { driftRepairs: { key: string }[] };
  expect(v.driftRepairs.some((r) => r.key.endsWith(vsKey("apps", table, cluster)))).toBe(false);
}

/** `gitmesh <args>` as a child process (asynchronous: the server runs in this process). */
function gitmesh(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["bin/gitmesh.js", ...args], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, GITMESH_API_ADMIN_TOKEN: "", GITMESH_API_ADMIN_TOKEN_FILE: "" } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

let spec: MeshSpec = { clusters: [...CLUSTERS], tables: { apps: ["a1", "a2", "a3"], team: [], shared: [] } };
async function commitMesh(next: MeshSpec, message: string): Promise<string> {
  const before = meshFiles(spec);
  const after = meshFiles(next);
  const files: Record<string, string | null> = { ...after };
  for (const path of Object.keys(before)) if (!(path in after)) files[path] = null;
  spec = next;
  return git.commitFiles("mesh", files, message);
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "gitmesh-suspend-"));
  redis = await startRedis();
  redisClient = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  git = await startGitServer();
  await git.createRepo("mesh");
  await git.commitFiles("mesh", meshFiles(spec), "mesh on two clusters");
  relayPort = await freePort();
  httpPort = await freePort();
  server = await startServer();
  for (const cluster of CLUSTERS) {
    const kube = await startKube({});
    kube.emulator.seed([
      ...clusterSeed(),
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: RELAY_SECRETS.rootTls.name, namespace: "gitmesh" }, data: { [RELAY_SECRETS.rootTls.keys.caCrt]: b64(server.rootCaPem ?? "") } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: RELAY_SECRETS.identityToken.name, namespace: "gitmesh" }, data: { [RELAY_SECRETS.identityToken.keys.token]: b64(TOKEN) } },
    ]);
    kubes.set(cluster, kube);
    await startAgent(cluster);
  }
}, 120_000);

afterAll(async () => {
  for (const a of agents.values()) await a.stop().catch(() => undefined);
  await server?.stop().catch(() => undefined);
  for (const k of kubes.values()) await k.stop();
  await git.stop();
  await redisClient.quit().catch(() => undefined);
  await redis.stop();
  rmSync(tmp, { recursive: true, force: true });
}, 60_000);

describe("suspend and resume", () => {
  let held: string;
  let first: string;

  it("(a) a suspended cluster keeps what it runs while another converges; every view says who and since when", async () => {
    first = (await inSync((await status()).commit!.sha, CLUSTERS)).commit!.sha;
    expect(CLUSTERS.every((c) => has(c, "a1") && has(c, "a2") && has(c, "a3"))).toBe(true);

    // Only the admin token acts; the body cannot name the actor.
    const refused = await post("/api/clusters/cluster2/suspend", "read", { reason: "incident 4711" });
    expect(refused.status).toBe(403);
    expect((await status()).clusters.every((c) => c.suspended === null)).toBe(true);
    expect((await post("/api/clusters/not-there/suspend", "admin")).status).toBe(404);
    const done = await post("/api/clusters/cluster2/suspend", "admin", { reason: "incident 4711", by: "mallory" });
    expect(done.status).toBe(200);
    expect(done.body.suspended).toMatchObject({ scope: "cluster2", by: "admin token", reason: "incident 4711", source: "api" });

    const cluster2Before = virtualServices("cluster2");
    held = await commitMesh({ ...spec, tables: { ...spec.tables, apps: ["a1", "a3", "a4"] } }, "add a4, remove a2");
    await inSync(held, ["cluster1"]);
    expect(has("cluster1", "a4")).toBe(true);
    expect(has("cluster1", "a2")).toBe(false);

    // cluster2: still connected and discovering, not handed the new output, nothing applied or pruned.
    await new Promise((r) => setTimeout(r, 1500));
    const s = await status();
    const c2 = view(s, "cluster2");
    expect(c2.connected).toBe(true);
    expect(c2.discovery).not.toBeNull();
    expect(c2.output?.sourceCommit).toBe(held);
    expect(c2.applied?.sourceCommit).toBe(first);
    expect(virtualServices("cluster2")).toEqual(cluster2Before);
    expect(c2.inSync).toBe(false);
    expect(c2.sync.state).toBe("suspended");
    expect(c2.sync.behind).toBe(true);
    expect(c2.sync.summary).toMatch(/^suspended since \d{4}-\d\d-\d\dT[\d:.]+Z by admin token \(incident 4711\); runs v\d+ of [0-9a-f]{12}, behind the commit in force/);
    expect(c2.suspended).toMatchObject({ scope: "cluster2", by: "admin token", reason: "incident 4711" });
    // The commit view and the metric read the same answer.
    const commit = (await (await fetch(`${base()}/api/commits/${held}`, { headers: auth("read") })).json()) as { clusters: Record<string, { state: string }> };
    expect(commit.clusters.cluster2?.state).toBe("suspended");
    expect(commit.clusters.cluster1?.state).toBe("in-sync");
    expect(await metric("cluster2", "suspended")).toBe(1);
    expect(await metric("cluster2", "in-sync")).toBe(0);
    expect(await metric("cluster1", "suspended")).toBe(0);

    // cluster2's agent knows it is held; an operator's hotfix of an owned VirtualService stays there.
    await poll("cluster2's agent told it is held", async () => (await heldGauge("cluster2")) === 1);
    expect(await heldGauge("cluster1")).toBe(0);
    await handEdit("cluster2", "a1");
    await handEditOutlivesResyncs("cluster2", "a1");
    expect(view(await status(), "cluster2").sync.state).toBe("suspended");
  }, 120_000);

  it("(b) the suspension survives a restart of the server on the same Redis", async () => {
    await server!.stop();
    server = await startServer();
    await poll("cluster2 reconnected", async () => view(await status(), "cluster2").connected);
    await new Promise((r) => setTimeout(r, 2500)); // warming window and a few follow ticks
    const c2 = view(await status(), "cluster2");
    expect(c2.sync.state).toBe("suspended");
    expect(c2.suspended).toMatchObject({ by: "admin token", reason: "incident 4711" });
    expect(c2.applied?.sourceCommit ?? first).toBe(first);
    expect(has("cluster2", "a2")).toBe(true);
    expect(has("cluster2", "a4")).toBe(false);
    // The reconnected agent was told the hold on subscribe: the hotfix still stays.
    expect(await heldGauge("cluster2")).toBe(1);
    await handEditOutlivesResyncs("cluster2", "a1");
  }, 120_000);

  it("(c) resume brings the cluster to the commit in force", async () => {
    const r = await post("/api/clusters/cluster2/resume", "admin");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ changed: true, suspended: null });
    await inSync(held, CLUSTERS);
    expect(has("cluster2", "a4")).toBe(true);
    expect(has("cluster2", "a2")).toBe(false);
    expect(view(await status(), "cluster2").suspended).toBeNull();
    // Released: the hand edit is put back to what the commit in force renders.
    await poll("cluster2's hand edit put back", async () => !hotfixed("cluster2", "a1") && (await heldGauge("cluster2")) === 0);
    expect(liveVs("cluster2", "a1")?.spec.http[0]).not.toHaveProperty("timeout");
    // Resuming again changes nothing and says so.
    expect((await post("/api/clusters/cluster2/resume", "admin")).body).toMatchObject({ changed: false, suspended: null });
  }, 120_000);

  it("(d) gitmesh.yaml suspend holds a cluster until a commit lifts it; the API cannot", async () => {
    const frozen = await commitMesh({ ...spec, tables: { ...spec.tables, apps: ["a1", "a3", "a4", "a5"] }, settings: "suspend:\n  clusters: [cluster1]\n  reason: change freeze\n" }, "freeze cluster1, add a5");
    await inSync(frozen, ["cluster2"]);
    expect(has("cluster2", "a5")).toBe(true);
    const c1 = view(await status(), "cluster1");
    expect(c1.sync.state).toBe("suspended");
    expect(c1.suspended).toMatchObject({ source: "git", by: `gitmesh.yaml at commit ${frozen.slice(0, 12)}`, reason: "change freeze" });
    expect(has("cluster1", "a5")).toBe(false);
    // The freeze in Git holds the agent as well: a hand edit there stays.
    await poll("cluster1's agent told it is held", async () => (await heldGauge("cluster1")) === 1);
    await handEdit("cluster1", "a1");
    await handEditOutlivesResyncs("cluster1", "a1");
    const r = await post("/api/clusters/cluster1/resume", "admin");
    expect(r.body).toMatchObject({ changed: false, suspended: { source: "git" } });
    expect(String(r.body.next)).toMatch(/gitmesh\.yaml/);

    const lifted = await commitMesh({ ...spec, settings: "" }, "lift the freeze");
    await inSync(lifted, CLUSTERS);
    expect(has("cluster1", "a5")).toBe(true);
    await poll("cluster1's hand edit put back", async () => !hotfixed("cluster1", "a1") && (await heldGauge("cluster1")) === 0);
  }, 120_000);

  it("(e) the agent chart value suspend: nothing applied, pruned or repaired; the server shows it suspended by the cluster owner", async () => {
    await agents.get("cluster2")!.stop();
    await startAgent("cluster2", true);
    const before = await commitMesh({ ...spec, tables: { ...spec.tables, apps: ["a1", "a4", "a5", "a6"] } }, "add a6, remove a3");
    await inSync(before, ["cluster1"]);
    const c2 = await poll("cluster2 suspended by its agent", async () => {
      const v = view(await status(), "cluster2");
      return v.sync.state === "suspended" ? v : undefined;
    });
    expect(c2.sync.summary).toMatch(/^suspended since \d{4}-[\d-]+T[\d:.]+Z by the cluster owner \(agent chart value suspend: true/);
    expect(c2.connected).toBe(true);
    expect(has("cluster2", "a6")).toBe(false);
    expect(has("cluster2", "a3")).toBe(true);
    // Drift on an owned object is not repaired while suspended.
    const emulator = kubes.get("cluster2")!.emulator;
    const [ns, name] = vsKey("apps", "a1", "cluster2").split("/").slice(1) as [string, string];
    expect(emulator.remove("networking.istio.io/v1", "VirtualService", ns, name)).toBe(true);
    await new Promise((r) => setTimeout(r, 1500));
    expect(has("cluster2", "a1")).toBe(false);

    await agents.get("cluster2")!.stop();
    await startAgent("cluster2", false);
    await inSync(before, CLUSTERS);
    expect(has("cluster2", "a1")).toBe(true);
    expect(has("cluster2", "a6")).toBe(true);
    expect(has("cluster2", "a3")).toBe(false);
  }, 120_000);

  it("(f) gitmesh suspend --all and resume --all as processes; check reports the suspended fleet", async () => {
    const adminFile = join(tmp, "admin-token");
    const readFile = join(tmp, "read-token");
    writeFileSync(adminFile, `${server!.apiTokens!.admin}\n`, { mode: 0o600 });
    writeFileSync(readFile, `${server!.apiTokens!.read}\n`, { mode: 0o600 });
    const at = ["--server", base()];

    expect((await gitmesh(["suspend"])).code).toBe(2);
    expect((await gitmesh(["suspend", "cluster1", "--all", ...at, "--token-file", adminFile])).code).toBe(2);
    const noToken = await gitmesh(["suspend", "--all", ...at]);
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toMatch(/admin token/);

    const suspended = await gitmesh(["suspend", "--all", "--reason", "change freeze", ...at, "--token-file", adminFile]);
    expect(suspended.stderr).toBe("");
    expect(suspended.code).toBe(0);
    expect(suspended.stdout).toMatch(/^the whole fleet: suspended since \d{4}-[\d-]+T[\d:.]+Z by admin token \(change freeze\) \[whole fleet\]/);

    const v = await commitMesh({ ...spec, tables: { ...spec.tables, apps: ["a1", "a4", "a5", "a6", "a7"] } }, "add a7 during the freeze");
    await poll("the commit in force", async () => (await status()).commit?.sha === v);
    await new Promise((r) => setTimeout(r, 2000));
    const s = await status();
    for (const c of CLUSTERS) {
      expect(view(s, c).sync.state).toBe("suspended");
      expect(view(s, c).sync.summary).toMatch(/by admin token \(change freeze\) \[whole fleet\]; runs v\d+ of [0-9a-f]{12}, behind the commit in force/);
      expect(has(c, "a7")).toBe(false);
    }
    const check = await gitmesh(["check", ...at, "--token-file", readFile]);
    expect(check.code).toBe(1);
    expect(check.stdout).toMatch(/cluster1 +yes .* suspended/);
    expect(check.stdout).toMatch(/cluster cluster2: suspended since .* by admin token \(change freeze\).*; to resume: gitmesh resume --all/);

    const readOnly = await gitmesh(["resume", "--all", ...at, "--token-file", readFile]);
    expect(readOnly.code).toBe(1);
    expect(readOnly.stderr).toMatch(/answered 403/);
    expect(view(await status(), "cluster1").sync.state).toBe("suspended");

    const resumed = await gitmesh(["resume", "--all", ...at, "--token-file", adminFile]);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(/^the whole fleet: resumed; delivering the output of the commit in force/);
    await inSync(v, CLUSTERS);
    expect(CLUSTERS.every((c) => has(c, "a7"))).toBe(true);
    expect((await gitmesh(["check", ...at, "--token-file", readFile])).code).toBe(0);
  }, 180_000);
});
