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
//   (one truth, #35) commits that are accepted, rejected, hit a transient error, and are refused by an
//       agent: at every step the five views agree — /api/status (`sync`, decided by
//       src/server/cluster-sync.ts), the commit view API, `gitmesh check` (the real CLI), the demo's
//       wait condition (`converged`), and the Fleet and Commits pages in real Chromium; the Commits
//       page lists the rejected commit with its errors, every commit with its message and author;
//   (d) a cluster removed from Git no longer counts towards a commit's convergence;
//   (e) the Git host (a local GitHub that validates every request against GitHub's OpenAPI description)
//       shows each commit's journey as the status gitmesh/apply: pending while a cluster has not applied
//       it, success once every registered cluster did, failure for a rejected commit (file:line) and
//       for a NACK that needs a person (which cluster), never for a transient failure; and the audit
//       branch, held back while cluster9 had no agent (named in the API, check and the UI), is written
//       once cluster9 leaves Git.
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { chromium, type Browser, type Page } from "playwright-core";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../../src/agent/index.js";
import { converged } from "../../src/cli/demo.js";
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
  sync: { state: string; why?: string; summary: string; commit: string | null };
  commit: string | null;
  output: { version: number; sourceCommit: string } | null;
  applied: { version: number; sourceCommit: string } | null;
  errors: { count: number; first: string[] };
}
interface Status {
  ready: boolean;
  commit: { sha: string } | null;
  rejected: { commit: string } | null;
  audit: { branch: string | null; lastCommit: string | null; heldBack: { reason: string; clusters: string[]; since: string } | null };
  clusters: ClusterView[];
}
interface CommitView {
  commit: string;
  subject: string | null;
  author: string | null;
  inForce: boolean;
  rejected: { at: string; errorCount: number; errors: string[] } | null;
  applied: number;
  clusters: Record<string, { appliedAtMs?: number; unchanged?: boolean; registered: boolean; state: string; summary?: string }>;
}
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const AUDIT = "gitmesh-audit";
let browser: Browser | undefined;
let fleetPage: Page;
let commitsPage: Page;
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
function check(...args: string[]): Promise<{ code: number | null; out: string }> {
  const tokenFile = join(tmp, "read-token");
  writeFileSync(tokenFile, server?.apiTokens?.read ?? "");
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["bin/gitmesh.js", "check", "--server", `127.0.0.1:${String(httpPort)}`, "--token-file", tokenFile, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.on("close", (code) => resolve({ code, out }));
  });
}

/** Screenshots for a reviewer's eye (.tmp/screenshots, not compared). */
const shot = async (page: Page, name: string) => {
  mkdirSync(".tmp/screenshots", { recursive: true });
  await page.screenshot({ path: join(".tmp/screenshots", `status-truth-${name}.png`), fullPage: true });
};
/** A cluster's sync as one word: `state` or `state:why`. */
const word = (s: { state: string; why?: string | undefined }) => (s.why ? `${s.state}:${s.why}` : s.state);
const fleetStates = () => fleetPage.locator("tr[data-cluster]").evaluateAll((rows) => Object.fromEntries(rows.map((r) => [r.getAttribute("data-cluster"), r.getAttribute("data-sync")])));
const commitStates = (sha: string) => commitsPage.locator(`tr[data-commit="${sha}"] td[data-cluster]`).evaluateAll((cells) => Object.fromEntries(cells.map((c) => [c.getAttribute("data-cluster"), c.getAttribute("data-state")])));

/**
 * The five views agree on every cluster's state with the commit in force `sha` (`expected`: cluster →
 * `state` or `state:why`): /api/status, the commit view API (one and the list), `gitmesh check` (the
 * real CLI), the demo's wait condition, and the Fleet and Commits pages. The API views and check are
 * read within one stable moment (the status read before and after says the same); the pages, which
 * follow the server's events, must come to show the same.
 */
async function agree(sha: string, expected: Record<string, string>, what: string): Promise<Status> {
  await poll(what, async () => {
    const s = await status();
    return s.commit?.sha === sha && Object.entries(expected).every(([c, w]) => word(view(s, c).sync) === w) ? s : undefined;
  }, 90_000);
  let agreed: Status | undefined;
  for (let attempt = 0; attempt < 5 && agreed === undefined; attempt++) {
    const before = await status();
    const one = await getJson<CommitView>(`/api/commits/${sha}`);
    const list = await getJson<{ inForce: string; commits: CommitView[] }>("/api/commits");
    const r = await check("--output", "json");
    const after = await status();
    const words = (s: Status) => JSON.stringify(Object.keys(expected).map((c) => [word(view(s, c).sync), view(s, c).sync.summary]));
    if (words(before) !== words(after) || words(before) !== words(await status())) continue;
    agreed = before;
    const report = JSON.parse(r.out) as { healthy: boolean; problems: string[]; status: Status };
    expect(list.inForce).toBe(sha);
    const listed = list.commits.find((c) => c.commit === sha)!;
    for (const [c, w] of Object.entries(expected)) {
      const sync = view(before, c).sync;
      expect(word(sync), `${what}: /api/status ${c}`).toBe(w);
      expect(sync.commit).toBe(sha);
      expect(view(before, c).inSync).toBe(sync.state === "in-sync");
      expect({ state: one.clusters[c]?.state, summary: one.clusters[c]?.summary }, `${what}: commit view ${c}`).toEqual({ state: sync.state, summary: sync.summary });
      expect(listed.clusters[c]?.state, `${what}: commit list ${c}`).toBe(sync.state);
      expect(word(view(report.status, c).sync), `${what}: check ${c}`).toBe(w);
      const line = report.problems.find((p) => p.startsWith(`cluster ${c}: `) && !/translation error/.test(p));
      if (sync.state === "in-sync") expect(line, `${what}: check names ${c} although it is in sync`).toBeUndefined();
      else expect(line, `${what}: check's line for ${c}`).toContain(sync.summary);
    }
    expect(converged(before, sha, LIVE), `${what}: the demo's wait condition`).toBe(LIVE.every((c) => expected[c] === "in-sync"));
  }
  if (!agreed) throw new Error(`${what}: the status did not hold still long enough to compare the views`);
  const states = Object.fromEntries(Object.entries(expected).map(([c, w]) => [c, w.split(":")[0]]));
  await expect.poll(async () => Object.fromEntries(Object.entries(await fleetStates()).filter(([c]) => c in expected)), { timeout: 30_000, message: `${what}: Fleet page` }).toEqual(states);
  await expect.poll(async () => Object.fromEntries(Object.entries(await commitStates(sha)).filter(([c]) => c in expected)), { timeout: 30_000, message: `${what}: Commits page` }).toEqual(states);
  return agreed;
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
      auditBranch: AUDIT,
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
  // The server serves the built UI: build the current one (as test/web does), then sign in on two pages.
  execFileSync(process.execPath, ["node_modules/vite/bin/vite.js", "build", "web", "--config", "web/vite.config.mjs", "--logLevel", "warn"], { stdio: "pipe" });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-background-networking"] });
  const signIn = async (hash: string) => {
    const page = await browser!.newPage();
    await page.goto(`${base()}/`);
    await page.getByLabel("API token").fill(server!.apiTokens!.read);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByTestId("clusters").waitFor();
    await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
    return page;
  };
  fleetPage = await signIn("#/");
  commitsPage = await signIn("#/commits");
}, 180_000);

afterAll(async () => {
  await browser?.close();
  for (const a of agents) await a.stop().catch(() => undefined);
  await server?.stop().catch(() => undefined);
  for (const k of kubes.values()) await k.stop();
  await git.stop();
  await gh.close();
}, 60_000);

describe("status that tells the truth", () => {
  let first = "";
  let commentOnly = "";

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
    expect(r.out).toContain("cluster cluster9: not applied yet — waiting for its agent (it never connected); install it: gitmesh cluster register cluster9");
    // The audit branch waits for cluster9's discovery: named in the API, check and the Fleet page, not silent.
    const held = await poll("audit held back by cluster9", async () => (await status()).audit.heldBack ?? undefined);
    expect(held.clusters).toEqual(["cluster9"]);
    expect(held.reason).toContain("cluster9");
    expect((await status()).audit.lastCommit).toBeNull();
    expect((await check()).out).toMatch(new RegExp(`audit branch ${AUDIT} held back since \\S+ by cluster9: waiting for the discovery of cluster9`));
    await expect.poll(() => fleetPage.getByTestId("audit-held").textContent(), { timeout: 30_000 }).toContain(`audit branch ${AUDIT} held back by cluster9`);
  }, 120_000);

  it("a commit that leaves every output unchanged is applied at once: both clusters counted, both run the new commit", async () => {
    const path = "workspaces/bookinfo-backends/resilience.yaml";
    const text = readFileSync(join("examples/repo-layout", path), "utf8");
    const sha = await commit({ [path]: `# reviewed by the platform team\n${text}` }, "a comment only");
    commentOnly = sha;
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

  it("one truth: accepted, rejected, transient failure, refused by an agent — the five views agree at every step", async () => {
    const waiting = { cluster9: "not-applied:waiting-for-agent" };
    // Accepted: both live clusters apply it.
    const timeoutFile = "workspaces/gateways/retry-timeout-httpbin.yaml";
    const timeoutText = readFileSync(join("examples/repo-layout", timeoutFile), "utf8");
    const accepted = await commit({ [timeoutFile]: timeoutText.replace(/requestTimeout: (\d+)s/, (_m, n: string) => `requestTimeout: ${String(Number(n) + 5)}s`) }, "httpbin: a longer timeout\n\nThe upstream got slower.");
    await agree(accepted, { cluster1: "in-sync", cluster2: "in-sync", ...waiting }, "accepted commit");
    const cv = await getJson<CommitView>(`/api/commits/${accepted}`);
    expect(cv).toMatchObject({ subject: "httpbin: a longer timeout", author: "Test Author <author@example.test>", rejected: null });
    await expect.poll(() => commitsPage.locator(`tr[data-commit="${accepted}"]`).textContent(), { timeout: 30_000 }).toContain("httpbin: a longer timeout");

    // Rejected: the commit in force stays, and stays in sync everywhere; the Commits page lists the rejection with file:line.
    const broken = "workspaces/broken.yaml";
    const rejected = await commit({ [broken]: "apiVersion: networking.gloo.solo.io/v2\nkind: RouteTable\nmetadata: {name: [oops\n" }, "a broken file");
    await poll("rejection seen", async () => ((await status()).rejected?.commit === rejected ? true : undefined));
    await agree(accepted, { cluster1: "in-sync", cluster2: "in-sync", ...waiting }, "rejected commit");
    const listed = (await getJson<{ commits: CommitView[] }>("/api/commits")).commits.find((c) => c.commit === rejected);
    expect(listed).toMatchObject({ subject: "a broken file", author: "Test Author <author@example.test>", inForce: false });
    expect(listed?.rejected?.errors.join("\n")).toMatch(/workspaces\/broken\.yaml:\d+/);
    const rejectedRow = commitsPage.locator(`tr[data-commit="${rejected}"][data-rejected="true"]`);
    await expect.poll(() => rejectedRow.textContent(), { timeout: 30_000 }).toMatch(/a broken file[\s\S]*workspaces\/broken\.yaml:\d+/);

    // A transient error: cluster1's API server fails every VirtualService write (HTTP 500). Not refused:
    // not applied yet, retrying — the server redelivers the output with backoff.
    const kube1 = kubes.get("cluster1")!;
    const vsNames = async () => new Set((await getJson<{ resources: { kind: string; metadata: { name: string; namespace?: string } }[] }>("/api/clusters/cluster1/output")).resources.filter((r) => r.kind === "VirtualService").map((r) => `${r.metadata.namespace ?? ""}/${r.metadata.name}`));
    const before = await vsNames();
    const ratings = readFileSync(join("examples/repo-layout", "workspaces/bookinfo-backends/route-table-ratings.yaml"), "utf8");
    const canary = ratings.replace("name: ratings\n  namespace", "name: ratings-canary\n  namespace").replace("- ratings.bookinfo-backends.svc.cluster.local", "- ratings-canary.bookinfo-backends.svc.cluster.local");
    kube1.emulator.faults.failRequests(undefined, { methods: ["PATCH", "POST", "PUT"], path: "/virtualservices/" });
    const flaky = await commit({ [broken]: null, "workspaces/bookinfo-backends/route-table-ratings-canary.yaml": canary }, "ratings: a canary route table");
    const retrying = await agree(flaky, { cluster1: "not-applied:retrying", cluster2: "in-sync", ...waiting }, "transient failure");
    expect(view(retrying, "cluster1").sync.summary).toMatch(/^not applied yet — retrying \(.*HTTP 500/);
    await shot(fleetPage, "fleet-retrying");
    // A transient failure is not a failure of the commit on the Git host.
    expect((gh.statuses.get(flaky) ?? []).filter((x) => x.context === "gitmesh/apply").map((x) => x.state)).not.toContain("failure");

    // Refused: someone else created the canary's VirtualService in cluster1 meanwhile. Once the API
    // server answers again, the agent will not take over an object it does not own: a person must act.
    const added = [...(await vsNames())].filter((n) => !before.has(n));
    expect(added.length).toBeGreaterThan(0);
    const [ns, name] = added[0]!.split("/") as [string, string];
    const foreign = { apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name, namespace: ns }, spec: { hosts: ["someone-else.example.com"] } };
    const objects = kube1.kc.makeApiClient(CustomObjectsApi);
    await objects.createNamespacedCustomObject({ group: "networking.istio.io", version: "v1", namespace: ns, plural: "virtualservices", body: foreign, fieldManager: "kubectl" });
    kube1.emulator.faults.clear();
    const refused = await agree(flaky, { cluster1: "refused", cluster2: "in-sync", ...waiting }, "refused by cluster1's agent");
    expect(view(refused, "cluster1").sync.summary).toContain("not created by gitmesh");
    const failure = await poll("failure status of the refused commit", () => Promise.resolve((gh.statuses.get(flaky) ?? []).find((x) => x.context === "gitmesh/apply" && x.state === "failure")));
    expect(failure.description).toMatch(/^cluster1 rejected the output: /);
    const refusedCell = commitsPage.locator(`tr[data-commit="${flaky}"] td[data-cluster="cluster1"]`);
    await expect.poll(() => refusedCell.textContent(), { timeout: 30_000 }).toMatch(/^refused: /);
    expect(await refusedCell.getAttribute("title")).toContain("not created by gitmesh");
    await shot(commitsPage, "commits-refused");

    // The person acts (the foreign object goes) and pushes again: every view says in sync.
    await objects.deleteNamespacedCustomObject({ group: "networking.istio.io", version: "v1", namespace: ns, plural: "virtualservices", name });
    const fixed = await commit({ "workspaces/bookinfo-backends/route-table-ratings-canary.yaml": `# owned by gitmesh again\n${canary}`.replace("ratings-canary.bookinfo-backends.svc.cluster.local", "ratings-canary2.bookinfo-backends.svc.cluster.local") }, "ratings canary: another host");
    await agree(fixed, { cluster1: "in-sync", cluster2: "in-sync", ...waiting }, "after the fix");
    // History: the refused commit stays refused at cluster1 and applied at cluster2.
    const past = await getJson<CommitView>(`/api/commits/${flaky}`);
    expect({ c1: past.clusters.cluster1?.state, c2: past.clusters.cluster2?.state }).toEqual({ c1: "refused", c2: "applied" });
    // Earlier commits that both clusters ran stay applied — also the one that left every output unchanged.
    for (const sha of [accepted, commentOnly]) {
      const earlier = await getJson<CommitView>(`/api/commits/${sha}`);
      expect({ sha, c1: earlier.clusters.cluster1?.state, c2: earlier.clusters.cluster2?.state }).toEqual({ sha, c1: "applied", c2: "applied" });
    }
  }, 400_000);

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
    await expect.poll(() => fleetPage.getByTestId("audit-held").count(), { timeout: 60_000 }).toBe(0);
    const success = await poll("success status", () => Promise.resolve(statuses(ok).find((s) => s.state === "success")));
    expect(success.description).toMatch(/^applied on 1 cluster in \d+\.\d s$/);

    // A rejected commit: failure with the first file:line error.
    const bad = await commit({ "workspaces/broken.yaml": "apiVersion: networking.gloo.solo.io/v2\nkind: RouteTable\nmetadata: {name: [oops\n" }, "broken yaml");
    const failure = await poll("failure status of the rejected commit", () => Promise.resolve(statuses(bad).find((s) => s.state === "failure")));
    expect(failure.description).toMatch(/^rejected: workspaces\/broken\.yaml:\d+/);

    // (A NACK that needs a person is a failure, a transient one is not: the one-truth test above.)
    // cluster9 left Git: nothing holds the audit branch back any more.
    const audited = await poll("audit branch written", async () => {
      const st = await status();
      return st.audit.lastCommit !== null && st.audit.heldBack === null ? st : undefined;
    });
    expect(audited.audit.lastCommit).toMatch(/^[0-9a-f]{40}$/);
    expect((await check()).out).not.toContain("held back");
    // Every request the server made was a valid GitHub API call.
    expect(gh.violations).toEqual([]);
    // At most one post per commit and state.
    for (const sha of [first, ok, bad]) expect(new Set(statuses(sha).map((s) => s.state)).size).toBe(statuses(sha).length);
  }, 180_000);
});
