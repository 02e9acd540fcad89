// End to end: what the operator sees is true (#13). A real management server (Git over HTTP, the relay
// on real gRPC/mTLS, the HTTP API, the standalone pipeline) with real agents on Kubernetes API
// emulators for cluster1 and cluster2, and a third registered cluster (cluster9) whose agent is never
// installed. `gitmesh check` runs as a separate process against the server's HTTP port.
//
// The tests run in order on one fleet:
//   (a) cluster9 is "waiting for its agent", not STALE, and check says how to install it;
//   (b) a commit that leaves every output unchanged (a comment) is applied at once: its commit view
//       counts both clusters, and each cluster shows that it runs the new commit;
//   (c) a route to a Service that does not exist (an HTTP 500 route in every cluster) makes the commit
//       "applied with errors": /api/status per cluster, /api/diagnostics `errors: true`, check exit 1
//       naming the file:line;
//   (d) a cluster removed from Git no longer counts towards a commit's convergence;
//   (e) the Git host (a local GitHub that validates every request against GitHub's OpenAPI description)
//       shows each commit's journey as the status gitmesh/apply: pending while a cluster has not applied
//       it, success once every registered cluster did, failure for a rejected commit (file:line) and
//       for a NACK (which cluster).
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../../src/agent/index.js";
import { silentLogger } from "../../src/core/index.js";
import { createInProcessAgent } from "../../src/devtools/index.js";
import { RELAY_SECRETS } from "../../src/relay/index.js";
import { createCommitStatusPoster } from "../../src/git-host/index.js";
import { createManagementServer, createMemorySecretStore, createQueuePipeline, parseServerConfig, type ManagementServer } from "../../src/server/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { freePort } from "../helpers/ports.js";
import { repoFiles } from "../helpers/repo-files.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeGitHub, type FakeGitHub } from "../git-host/fake-github.js";

const TOKEN = "status-truth-bootstrap-token-0123";
const LIVE = ["cluster1", "cluster2"] as const;
const b64 = (s: string) => Buffer.from(s).toString("base64");

let git: GitServer;
let gh: FakeGitHub;
/** Commits the fake GitHub knows (it answers 422 for a status on any other, as GitHub does). */
const knownCommits: string[] = [];
const GH_TOKEN = "ghs_status_token_0123456789abcdef";
/** Commits files and tells the fake GitHub about the new commit (a push to GitHub would). */
const commit = async (files: Record<string, string | null>, message: string) => {
  const sha = await git.commitFiles("mesh", files, message);
  knownCommits.push(sha);
  return sha;
};
const tempDir = useTempDirs("gitmesh-status-truth-");
let tmp = "";
let httpPort: number;
let server: ManagementServer | undefined;
const kubes = new Map<string, StartedKube>();
const agents: Agent[] = [];

interface ClusterView {
  name: string;
  connected: boolean;
  stale: boolean;
  waitingForAgent: boolean;
  registered: boolean;
  inSync: boolean;
  commit: string | null;
  output: { version: number; sourceCommit: string } | null;
  applied: { version: number; sourceCommit: string } | null;
  errors: { count: number; first: string[] };
}
interface Status {
  commit: { sha: string } | null;
  clusters: ClusterView[];
}
interface CommitView {
  commit: string;
  applied: number;
  clusters: Record<string, { appliedAtMs?: number; unchanged?: boolean; registered: boolean }>;
}
const base = () => `http://127.0.0.1:${String(httpPort)}`;
const getJson = async <T,>(path: string): Promise<T> => {
  const res = await fetch(`${base()}${path}`, { signal: AbortSignal.timeout(10_000), headers: { authorization: `Bearer ${server?.apiTokens?.read ?? ""}` } });
  if (!res.ok) throw new Error(`${path}: HTTP ${String(res.status)}`);
  return (await res.json()) as T;
};
const status = () => getJson<Status>("/api/status");
const view = (s: Status, c: string) => s.clusters.find((x) => x.name === c)!;
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
/** The commit is in force and both live clusters run their newest output. */
const settled = (sha: string) =>
  poll(`commit ${sha.slice(0, 12)} in force, outputs applied`, async () => {
    const s = await status();
    return s.commit?.sha === sha && LIVE.every((c) => view(s, c).connected && view(s, c).applied !== null && view(s, c).applied?.version === view(s, c).output?.version) ? s : undefined;
  });
function check(): Promise<{ code: number | null; out: string }> {
  const tokenFile = join(tmp, "read-token");
  writeFileSync(tokenFile, server?.apiTokens?.read ?? "");
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["bin/gitmesh.js", "check", "--server", `127.0.0.1:${String(httpPort)}`, "--token-file", tokenFile], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.on("close", (code) => resolve({ code, out }));
  });
}

beforeAll(async () => {
  tmp = tempDir();
  git = await startGitServer();
  await git.createRepo("mesh");
  const repo = repoFiles("examples/repo-layout");
  repo["clusters/cluster9.yaml"] = repo["clusters/cluster2.yaml"]!.replace(/cluster2/g, "cluster9");
  gh = await startFakeGitHub({ token: GH_TOKEN, owner: "acme", repo: "mesh", pulls: {}, commits: knownCommits });
  await commit(repo, "bookinfo; cluster9 registered, its agent not installed yet");
  const relayPort = await freePort();
  httpPort = await freePort();
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
      dataDir: join(tmp, "data"),
    },
    { identity: "status-truth" },
  );
  if (!config) throw new Error(problems.join("; "));
  const pipeline = createQueuePipeline({ logger: silentLogger, debounceMs: 20 });
  const commitStatus = createCommitStatusPoster({ platform: "github", apiUrl: gh.url, repository: "acme/mesh", token: GH_TOKEN });
  server = createManagementServer({ config, pipeline, secrets: createMemorySecretStore(), registry: new Registry(), logger: silentLogger, dataDir: join(tmp, "data"), commitStatus });
  await server.start();
  for (const cluster of LIVE) {
    const kube = await startKube({});
    const dir = join("examples/discovery", cluster);
    for (const f of readdirSync(dir).filter((n) => n.endsWith(".yaml"))) await kube.emulator.seedFile(join(dir, f));
    kube.emulator.seed([
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: RELAY_SECRETS.rootTls.name, namespace: "gitmesh" }, data: { [RELAY_SECRETS.rootTls.keys.caCrt]: b64(server.rootCaPem ?? "") } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: RELAY_SECRETS.identityToken.name, namespace: "gitmesh" }, data: { [RELAY_SECRETS.identityToken.keys.token]: b64(TOKEN) } },
    ]);
    kubes.set(cluster, kube);
    const agent = createInProcessAgent({ cluster, emulator: kube.emulator, relayAddress: `127.0.0.1:${String(relayPort)}`, logger: silentLogger });
    await agent.start();
    agents.push(agent);
  }
}, 120_000);

afterAll(async () => {
  for (const a of agents) await a.stop().catch(() => undefined);
  await server?.stop().catch(() => undefined);
  for (const k of kubes.values()) await k.stop();
  await git.stop();
  await gh.close();
}, 60_000);

describe("status that tells the truth", () => {
  let first = "";

  it("a registered cluster whose agent never connected is waiting for its agent, not stale; check says how to install it", async () => {
    first = (await git.revParse("mesh", "refs/heads/main"))!;
    const s = await settled(first);
    const nine = view(s, "cluster9");
    expect(nine).toMatchObject({ registered: true, connected: false, waitingForAgent: true, stale: false, inSync: false });
    for (const c of LIVE) expect(view(s, c)).toMatchObject({ waitingForAgent: false, stale: false, commit: first, errors: { count: 0, first: [] } });
    const r = await check();
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/cluster9\s+waiting/);
    expect(r.out).not.toMatch(/cluster9\s+STALE/);
    expect(r.out).toContain("cluster cluster9: waiting for its agent (it never connected); install it: gitmesh cluster register cluster9");
  }, 120_000);

  it("a commit that leaves every output unchanged is applied at once: both clusters counted, both run the new commit", async () => {
    const path = "workspaces/bookinfo-backends/resilience.yaml";
    const text = readFileSync(join("examples/repo-layout", path), "utf8");
    const sha = await commit({ [path]: `# reviewed by the platform team\n${text}` }, "a comment only");
    const s = await poll("new commit in force, both clusters run it", async () => {
      const st = await status();
      return st.commit?.sha === sha && LIVE.every((c) => view(st, c).commit === sha) ? st : undefined;
    });
    // Nothing was sent: the outputs still carry the first commit.
    for (const c of LIVE) expect(view(s, c).output?.sourceCommit).toBe(first);
    const v = await poll("commit view counts both clusters", async () => {
      const cv = await getJson<CommitView>(`/api/commits/${sha}`);
      return cv.applied === LIVE.length ? cv : undefined;
    });
    for (const c of LIVE) expect(v.clusters[c]).toMatchObject({ unchanged: true, registered: true, appliedAtMs: expect.any(Number) as number });
  }, 120_000);

  it("a route to a Service that does not exist: the commit is applied with errors, and every surface says so with file:line", async () => {
    const path = "workspaces/bookinfo-backends/route-table-ratings.yaml";
    const text = readFileSync(join("examples/repo-layout", path), "utf8");
    const typo = text.replace(/( {4}- name: ratings\n[\s\S]*?name: )ratings/, "$1ratngs");
    expect(typo).toContain("ratngs");
    const sha = await commit({ [path]: typo }, "ratings: a typo in the Service name");
    await settled(sha);
    const s = await poll("cluster errors visible", async () => {
      const st = await status();
      return LIVE.every((c) => view(st, c).errors.count > 0) ? st : undefined;
    });
    for (const c of LIVE) expect(view(s, c).errors.first.join("\n")).toContain(path);
    const diags = await getJson<{ errors: boolean; errorCount: number; files: { file: string; diagnostics: string[] }[] }>("/api/diagnostics");
    expect(diags.errors).toBe(true);
    expect(diags.errorCount).toBeGreaterThan(0);
    expect(diags.files.map((f) => f.file)).toContain(path);
    const r = await check();
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/ERRORS {5}cluster1: applied with \d+ translation error\(s\)/);
    expect(r.out).toMatch(new RegExp(`${path.replace(/[.]/g, "\\.")}:\\d+`));
    expect(r.out).toContain("cluster cluster1: applied with");
  }, 120_000);

  it("a cluster removed from Git does not count towards a commit's convergence", async () => {
    const before = (await status()).commit!.sha;
    const counted = await getJson<CommitView>(`/api/commits/${before}`);
    expect(counted.clusters.cluster2?.registered).toBe(true);
    const appliedBefore = counted.applied;
    expect(appliedBefore).toBe(2);
    const sha = await commit({ "clusters/cluster2.yaml": null }, "cluster2 leaves the fleet");
    await poll("removal in force", async () => ((await status()).commit?.sha === sha ? true : undefined));
    const after = await getJson<CommitView>(`/api/commits/${before}`);
    expect(after.clusters.cluster2?.registered).toBe(false);
    expect(after.applied).toBe(appliedBefore - 1);
  }, 120_000);

  it("the Git host shows each commit's journey: pending, success once every registered cluster applied it, failure for a rejection and for a NACK", async () => {
    const statuses = (sha: string) => (gh.statuses.get(sha) ?? []).filter((s) => s.context === "gitmesh/apply");
    // cluster9 never had an agent: the first commit stayed pending (never a false success).
    expect(statuses(first).map((s) => s.state)).toEqual(["pending"]);
    expect(statuses(first)[0]!.description).toMatch(/^accepted; applied on [0-2] of 3 clusters$/);

    // Without cluster9 (never installed) every registered cluster applies the next commit: success.
    const ok = await commit({ "clusters/cluster9.yaml": null }, "cluster9 will not join after all");
    const success = await poll("success status", () => Promise.resolve(statuses(ok).find((s) => s.state === "success")));
    expect(success.description).toMatch(/^applied on 1 cluster in \d+\.\d s$/);

    // A rejected commit: failure with the first file:line error.
    const bad = await commit({ "workspaces/broken.yaml": "apiVersion: networking.gloo.solo.io/v2\nkind: RouteTable\nmetadata: {name: [oops\n" }, "broken yaml");
    const failure = await poll("failure status of the rejected commit", () => Promise.resolve(statuses(bad).find((s) => s.state === "failure")));
    expect(failure.description).toMatch(/^rejected: workspaces\/broken\.yaml:\d+/);

    // A NACK: cluster1 cannot write VirtualServices; the agent reports the failure, the status says which cluster.
    kubes.get("cluster1")!.emulator.faults.failRequests(undefined, { methods: ["PATCH", "POST", "PUT"], path: "/virtualservices/" });
    try {
      const path = "workspaces/bookinfo-backends/route-table-reviews.yaml";
      const text = readFileSync(join("examples/repo-layout", path), "utf8").replace("route: reviews", "route: reviews-v2");
      const nacked = await commit({ "workspaces/broken.yaml": null, [path]: text }, "reviews: relabel the route");
      const nackStatus = await poll("failure status of the NACKed commit", () => Promise.resolve(statuses(nacked).find((s) => s.state === "failure")), 90_000);
      expect(nackStatus.description).toMatch(/^cluster1 rejected the output: /);
    } finally {
      kubes.get("cluster1")!.emulator.faults.clear();
    }
    // Every request the server made was a valid GitHub API call.
    expect(gh.violations).toEqual([]);
    // At most one post per commit and state.
    for (const sha of [first, ok, bad]) expect(new Set(statuses(sha).map((s) => s.state)).size).toBe(statuses(sha).length);
  }, 180_000);
});
