// End to end in separate processes: two `gitmesh server` replicas on one real Redis, three
// `gitmesh agent`s (child processes of bin/gitmesh.js) reaching the replicas through a TCP balancer
// (what a Kubernetes Service does), a real Git server and three Kubernetes API emulators in the test
// process. Each test is a row of DESIGN.md's failure table (or the happy path) and checks the objects
// in every emulated cluster against what they were before: nothing lost, nothing wrongly pruned.
//
// The tests run in order and share the fleet (starting it costs most of the time on a 2-core machine).
// Waits poll the replicas' status API with generous, bounded deadlines.
//
// The fleet starts and first converges next to a CPU hog (four busy processes per core, gitmesh issue
// #35 item 9): no lease may be lost on the way (the replicas' leader lock, every agent's Lease), and
// every view agrees (the status API of each replica, `gitmesh check`). The hog stops after that test.
import { execFileSync, spawn } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTcpBalancer, type TcpBalancer } from "../../src/devtools/index.js";
import { signBody } from "../../src/git-sync/index.js";
import { startCpuHog, type CpuHog } from "../helpers/cpu-hog.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { freePort } from "../helpers/ports.js";
import { backendsTimeoutChanges, repoFiles } from "../helpers/repo-files.js";
import { createProcessGroup, type GitmeshProcess } from "../helpers/processes.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

const TOKEN = "e2e-bootstrap-token-0123456789";
const SECRET = "e2e-webhook-secret";
const CLUSTERS: readonly string[] = ["cluster1", "cluster2", "cluster3"];
const b64 = (s: string) => Buffer.from(s).toString("base64");

// ---- processes ----------------------------------------------------------------------------------
type Proc = GitmeshProcess;
const gm = createProcessGroup({ GITMESH_WEBHOOK_SECRET: SECRET });
const procs = gm.procs;
const start = (name: string, args: string[]): Proc => gm.start(name, args);
function run(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["bin/gitmesh.js", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.on("close", (code) => resolve({ code, out }));
  });
}
const poll = <T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs?: number, everyMs?: number): Promise<T> => gm.poll(what, probe, timeoutMs, everyMs);

// ---- the fleet ----------------------------------------------------------------------------------
interface Replica {
  readonly name: string;
  readonly relayPort: number;
  readonly httpPort: number;
  readonly base: string;
  proc?: Proc;
}
let redis: TestRedis;
let hog: CpuHog | undefined;
let git: GitServer;
let balancer: TcpBalancer;
let tmp: string;
const replicas: Replica[] = [];
const kubes = new Map<string, StartedKube>();
const agents = new Map<string, Proc>();

function startReplica(r: Replica): void {
  r.proc = start(`server ${r.name}`, [
    "server", "--identity", r.name, "--redis-url", redis.url, "--git-url", git.url("mesh"),
    "--relay-host", "127.0.0.1", "--relay-port", String(r.relayPort), "--http-host", "127.0.0.1", "--http-port", String(r.httpPort),
    "--pki-dir", join(tmp, "pki"), "--bootstrap", "fleet-token", "--relay-token", TOKEN, "--additional-sans", "127.0.0.1",
    "--warming-window", "90", "--poll-interval", "2", "--data-dir", join(tmp, `data-${r.name}`), "--log-format", "json",
  ]);
}
function startAgent(cluster: string): Proc {
  const p = start(`agent ${cluster}`, ["agent", "--relay-address", `127.0.0.1:${String(balancer.port)}`, "--cluster", cluster, "--kubeconfig", join(tmp, `${cluster}.kubeconfig`), "--http-port", "0", "--identity", `${cluster}-agent`]);
  agents.set(cluster, p);
  return p;
}
const alive = () => replicas.filter((r) => r.proc !== undefined && r.proc.child.exitCode === null && r.proc.child.signalCode === null);

// ---- status -------------------------------------------------------------------------------------
interface ClusterView {
  name: string;
  connected: boolean;
  stale: boolean;
  replica: string | null;
  inSync: boolean;
  output: { version: number; sourceCommit: string; resources: number; complete: boolean } | null;
  applied: { version: number; sourceCommit: string } | null;
  frozen?: string[];
  pruneHeld?: { reason: string; objects: string[] } | null;
}
interface Status {
  replica: string;
  leader: boolean;
  ready: boolean;
  pipeline: { mode: string };
  warming: { warming: boolean; reason: string } | null;
  commit: { sha: string } | null;
  rejected: { commit: string; errors: number } | null;
  clusters: ClusterView[];
}
/** The API read token the replicas generated once in the shared --pki-dir. */
const readToken = () => readFileSync(join(tmp, "pki", "api-token-read"), "utf8").trim();
const getJson = async <T>(url: string): Promise<T> => {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000), headers: { authorization: `Bearer ${readToken()}` } });
  if (!res.ok) throw new Error(`${url}: HTTP ${String(res.status)}`);
  return (await res.json()) as T;
};
const statusOf = (r: Replica) => getJson<Status>(`${r.base}/api/status`);
const statuses = () => Promise.all(alive().map(statusOf));
/** The view of a cluster from the replica that holds its agent (only it knows what was applied). */
const holderView = (all: Status[], cluster: string) => {
  for (const s of all) {
    const c = s.clusters.find((x) => x.name === cluster);
    if (c?.connected) return c;
  }
  return undefined;
};
const inForce = (all: Status[]) => (all.every((s) => s.commit?.sha === all[0]?.commit?.sha) ? all[0]?.commit?.sha : undefined);

/** Every cluster applied its newest output; `commits` pins the source commit expected per cluster. */
const converged = (commits: Partial<Record<string, string>>, sha?: string) => async () => {
  const all = await statuses();
  if (all.length === 0 || !all.every((s) => s.ready)) return undefined;
  if (sha !== undefined && !all.every((s) => s.commit?.sha === sha)) return undefined;
  for (const cluster of CLUSTERS) {
    const c = holderView(all, cluster);
    if (!c?.output || !c.applied || !c.inSync || !c.output.complete || c.output.resources === 0) return undefined;
    if (c.applied.sourceCommit !== c.output.sourceCommit) return undefined;
    const want = commits[cluster];
    if (want !== undefined && c.output.sourceCommit !== want) return undefined;
  }
  return all;
};

// ---- objects in the clusters ---------------------------------------------------------------------
interface OutputDoc {
  version: number;
  sourceCommit: string;
  resources: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }[];
}
const outputOf = (cluster: string) => getJson<OutputDoc>(`${alive()[0]!.base}/api/clusters/${cluster}/output`);
const kindsSeen = new Map<string, Set<string>>();
/** Every gitmesh-managed Istio object in a cluster: key → spec JSON. */
function objects(cluster: string): Map<string, string> {
  const out = new Map<string, string>();
  const emulator = kubes.get(cluster)!.emulator;
  for (const [apiVersion, kinds] of kindsSeen) {
    for (const kind of kinds) {
      for (const o of emulator.list(apiVersion, kind)) {
        const md = o.metadata as { name: string; namespace?: string; labels?: Record<string, string> };
        if (md.labels?.["gitmesh.io/managed"] !== "true") continue;
        out.set(`${kind}/${md.namespace ?? ""}/${md.name}`, JSON.stringify((o as { spec?: unknown }).spec ?? null));
      }
    }
  }
  return out;
}
const allObjects = () => new Map(CLUSTERS.map((c) => [c, objects(c)]));
/** The objects of a cluster are exactly its output's resources (nothing missing, nothing extra). */
async function expectMatchesOutput(cluster: string): Promise<void> {
  const out = await outputOf(cluster);
  // IssuedCertificates are requests the agent acts on (the cacerts Secret), not objects it applies.
  const applied = out.resources.filter((r) => r.kind !== "IssuedCertificate");
  for (const r of applied) {
    const kinds = kindsSeen.get(r.apiVersion) ?? new Set<string>();
    kinds.add(r.kind);
    kindsSeen.set(r.apiVersion, kinds);
  }
  const want = applied.map((r) => `${r.kind}/${r.metadata.namespace ?? ""}/${r.metadata.name}`).sort();
  expect([...objects(cluster).keys()].sort(), `objects of ${cluster}`).toEqual(want);
}
/** Every gitmesh-managed object deleted in a workload cluster since the fleet started (none may be: no scenario removes config). */
const deletions: string[] = [];
const watchDeletions = (cluster: string, emulator: StartedKube["emulator"]) =>
  emulator.onChange((e) => {
    const md = e.object.metadata as { name: string; namespace?: string; labels?: Record<string, string> };
    if (e.type === "DELETED" && md.labels?.["gitmesh.io/managed"] === "true") deletions.push(`${cluster}/${String(e.object.kind)}/${md.namespace ?? ""}/${md.name}`);
  });
const expectNothingPruned = () => expect(deletions, "gitmesh-managed objects deleted").toEqual([]);
const expectUnchanged = (before: Map<string, Map<string, string>>) => {
  for (const c of CLUSTERS) expect(objects(c), `objects of ${c}`).toEqual(before.get(c));
};

// ---- Istio intermediates (RootTrustPolicy) ------------------------------------------------------
const b64d = (v: unknown) => Buffer.from(String(v), "base64").toString("utf8");
/** The cacerts Secret an agent wrote for its istiod (decoded), or undefined. */
const cacertsOf = (cluster: string): Record<string, string> | undefined => {
  const s = kubes.get(cluster)!.emulator.get("v1", "Secret", "istio-system", "cacerts");
  return s ? Object.fromEntries(Object.entries(s.data as Record<string, string>).map(([k, v]) => [k, b64d(v)])) : undefined;
};
const sameCert = (a: string, b: string) => new X509Certificate(a).raw.equals(new X509Certificate(b).raw);
/** `openssl verify -x509_strict` of an intermediate against a root. */
function opensslVerify(rootPem: string, certPem: string): string {
  const dir = mkdtempSync(join(tmp, "verify-"));
  try {
    writeFileSync(join(dir, "root.pem"), rootPem);
    writeFileSync(join(dir, "cert.pem"), certPem);
    return execFileSync("openssl", ["verify", "-x509_strict", "-CAfile", join(dir, "root.pem"), join(dir, "cert.pem")], { encoding: "utf8" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
/** Every cluster's cacerts: issued for its own trust domain, signed by `rootPem` (the one mesh root). */
function expectOneMeshRoot(rootPem: string): void {
  for (const c of CLUSTERS) {
    const data = cacertsOf(c)!;
    expect(sameCert(data["root-cert.pem"]!, rootPem), `root-cert.pem of ${c}`).toBe(true);
    expect(opensslVerify(rootPem, data["ca-cert.pem"]!), `ca-cert.pem of ${c}`).toContain("OK");
    expect(new X509Certificate(data["ca-cert.pem"]!).subjectAltName).toBe(`URI:spiffe://${c}/ns/istio-system/sa/istiod-1-29`);
  }
}

const pushHint = async (sha: string, r: Replica = alive()[0]!) => {
  const body = JSON.stringify({ ref: "refs/heads/main", sha });
  return fetch(`${r.base}/webhooks/generic`, { method: "POST", headers: { "x-signature-256": signBody(SECRET, body) }, body });
};
const auditCommits = async () => {
  const head = await git.revParse("mesh", "refs/heads/gitmesh/rendered");
  if (head === undefined) return [];
  return (await git.git("mesh", ["log", "--format=%H", "refs/heads/gitmesh/rendered"])).trim().split("\n");
};
/** The source commit each audit commit renders (its Source-Commit trailer), newest first. */
const auditSources = async () => {
  if ((await git.revParse("mesh", "refs/heads/gitmesh/rendered")) === undefined) return [];
  return (await git.git("mesh", ["log", "--format=%(trailers:key=Source-Commit,valueonly,separator=)", "refs/heads/gitmesh/rendered"])).split("\n").map((l) => l.trim()).filter((l) => l !== "");
};
/** Changes to the bookinfo-backends workspace: it selects cluster1 and cluster2 by name, not cluster3. */
const backends = backendsTimeoutChanges();

beforeAll(async () => {
  hog = await startCpuHog();
  tmp = mkdtempSync(join(tmpdir(), "gitmesh-e2e-"));
  redis = await startRedis({ outages: true });
  git = await startGitServer();
  await git.createRepo("mesh");
  // With the RootTrustPolicy: every agent obtains its istiod intermediate from whichever replica it
  // is connected to, and all of them must be signed by the one mesh root (kept with the relay PKI in
  // the shared --pki-dir).
  const repo = repoFiles("examples/repo-layout");
  // cluster3: a third cluster that only the "*" workspace (gateways) selects.
  repo["clusters/cluster3.yaml"] = repo["clusters/cluster2.yaml"]!.replace(/cluster2/g, "cluster3").replace("us-west-2", "eu-west-1").replace("environment: prod", "environment: staging");
  await git.commitFiles("mesh", repo, "bookinfo on three clusters");
  for (const name of ["a", "b"]) {
    const relayPort = await freePort();
    const httpPort = await freePort();
    replicas.push({ name, relayPort, httpPort, base: `http://127.0.0.1:${String(httpPort)}` });
  }
  balancer = await startTcpBalancer({ backends: replicas.map((r) => ({ host: "127.0.0.1", port: r.relayPort })) });
  // Replica a first: it generates the shared PKI (pki-dir) that b then loads.
  startReplica(replicas[0]!);
  await poll("replica a healthy", async () => (await fetch(`${replicas[0]!.base}/healthz`)).ok);
  startReplica(replicas[1]!);
  await poll("replica b healthy", async () => (await fetch(`${replicas[1]!.base}/healthz`)).ok);
  const rootCa = readFileSync(join(tmp, "pki", "root-ca.crt"), "utf8");
  for (const cluster of CLUSTERS) {
    const dir = join("examples/discovery", cluster === "cluster3" ? "cluster2" : cluster);
    const kube = await startKube({});
    // cluster3 runs cluster2's discovery, with its own trust domain (the one Git assigns: its name).
    for (const f of readdirSync(dir).filter((n) => n.endsWith(".yaml"))) {
      if (cluster === "cluster3") kube.emulator.seed(readFileSync(join(dir, f), "utf8").replace(/trustDomain: cluster2/g, "trustDomain: cluster3"), f);
      else await kube.emulator.seedFile(join(dir, f));
    }
    kube.emulator.seed([
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-root-tls-secret", namespace: "gitmesh" }, data: { "ca.crt": b64(rootCa) } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-identity-token-secret", namespace: "gitmesh" }, data: { token: b64(TOKEN) } },
    ]);
    await kube.emulator.writeKubeconfig(join(tmp, `${cluster}.kubeconfig`));
    kubes.set(cluster, kube);
    watchDeletions(cluster, kube.emulator);
    startAgent(cluster);
  }
}, 300_000);

afterAll(async () => {
  await hog?.stop();
  await Promise.all(procs.map((p) => p.kill()));
  await balancer.stop();
  for (const k of kubes.values()) await k.stop();
  await git.stop();
  await redis.stop();
  rmSync(tmp, { recursive: true, force: true });
}, 60_000);

describe("two server replicas, three agents, real Redis and Git, in separate processes", () => {
  let first: string;
  let meshRoot: string;

  it("under a CPU hog: converges the first commit on every cluster with no lease lost; one audit commit; the status API and gitmesh check agree", async () => {
    first = (await git.revParse("mesh", "refs/heads/main"))!;
    const all = await poll("first convergence", converged({ cluster1: first, cluster2: first, cluster3: first }, first), 300_000);
    // No lease lost under the hog: the replicas' leader lock and each agent's Lease (one term each).
    const lockLost = replicas.flatMap((r) => (r.proc?.output() ?? "").split("\n").filter((l) => l.includes('"lock lost"')));
    expect(lockLost, "server leader lock lost").toEqual([]);
    for (const [cluster, agent] of agents) {
      expect(agent.output().split("\n").filter((l) => l.includes("stopped leading")), `${cluster} agent lost its Lease`).toEqual([]);
      const lease = kubes.get(cluster)!.emulator.get("coordination.k8s.io/v1", "Lease", "gitmesh", "gitmesh-agent")?.spec as { holderIdentity?: string; leaseTransitions?: number } | undefined;
      expect(lease, `${cluster} agent Lease`).toMatchObject({ holderIdentity: `${cluster}-agent`, leaseTransitions: 0 });
    }
    // The views agree: every replica's status says so (converged above), and `gitmesh check` against each replica too.
    for (const r of alive()) {
      const check = await run(["check", "--server", r.base, "--token-file", join(tmp, "pki", "api-token-read")]);
      expect(check.code, check.out).toBe(0);
      for (const c of CLUSTERS) expect(check.out).toContain(c);
    }
    for (const c of CLUSTERS) await expectMatchesOutput(c);
    for (const c of CLUSTERS) expect(objects(c).size, c).toBeGreaterThan(0);
    // Both replicas answer for themselves; the agents are spread over them by the balancer.
    expect(all.map((s) => s.replica).sort()).toEqual(["a", "b"]);
    expect(all.every((s) => s.pipeline.mode === "redis")).toBe(true);
    const audit = await poll("audit commit", async () => ((await auditCommits()).length > 0 ? auditCommits() : undefined));
    expect(audit).toHaveLength(1);
    const tree = await git.git("mesh", ["ls-tree", "-r", "--name-only", audit[0]!]);
    for (const c of CLUSTERS) expect(tree).toMatch(new RegExp(`^clusters/${c}/.+\\.yaml$`, "m"));
    expectNothingPruned();
    await hog?.stop();
    hog = undefined;
  }, 360_000);

  it("RootTrustPolicy: every cluster's istiod intermediate, signed by whichever replica its agent reached, chains to the one mesh root", async () => {
    await poll("cacerts in every cluster", () => Promise.resolve(CLUSTERS.every((c) => cacertsOf(c) !== undefined)), 120_000);
    meshRoot = readFileSync(join(tmp, "pki", "mesh-ca", "ca-cert.pem"), "utf8");
    expectOneMeshRoot(meshRoot);
    // Which replica holds each agent depends on how the round-robin balancer interleaved the agents'
    // connections (registration, streams, signing), so it is not asserted here; whichever signed, the
    // root is the one in the shared PKI directory (two replicas creating it together: test/mesh-ca/shared-root.test.ts).
    const replicasOfAgents = new Set((await statuses()).flatMap((s) => s.clusters.filter((c) => c.connected).map((c) => c.replica)));
    expect(replicasOfAgents.size).toBeGreaterThanOrEqual(1);
  }, 150_000);

  it("a push converges on the clusters it affects and nowhere else; the audit branch gets one commit", async () => {
    const before = allObjects();
    const versions = new Map(await Promise.all(CLUSTERS.map(async (c) => [c, (await outputOf(c)).version] as const)));
    const auditBefore = (await auditCommits()).length;
    const sha = await git.commitFiles("mesh", backends.next(), "backends: longer timeout");
    expect((await pushHint(sha)).status).toBe(202);
    await poll("push converged", converged({ cluster1: sha, cluster2: sha }, sha), 90_000);
    for (const c of ["cluster1", "cluster2"]) expect(objects(c), c).not.toEqual(before.get(c));
    // cluster3 is not selected by bookinfo-backends: same output version, same objects.
    expect((await outputOf("cluster3")).version).toBe(versions.get("cluster3"));
    expect(objects("cluster3")).toEqual(before.get("cluster3"));
    for (const c of CLUSTERS) await expectMatchesOutput(c);
    await poll("one audit commit for the push", async () => (await auditCommits()).length === auditBefore + 1);
    expectNothingPruned();

    // The read API tells the commit's journey (the real server, not a stub): accepted, applied on the
    // clusters it changed, no NACK; listed as in force; a short SHA finds it; an unknown one is a 404.
    const base = alive()[0]!.base;
    const view = await poll("commit view shows both applies", async () => {
      const v = await getJson<{ commit: string; inForce: boolean; applied: number; nacked: number; acceptedAt: string | null; clusters: Record<string, unknown> }>(`${base}/api/commits/${sha.slice(0, 12)}`);
      return v.applied >= 2 ? v : undefined;
    });
    expect(view.commit).toBe(sha);
    expect(view.inForce).toBe(true);
    expect(view.nacked).toBe(0);
    expect(Object.keys(view.clusters)).toEqual(expect.arrayContaining(["cluster1", "cluster2"]));
    const list = await getJson<{ inForce: string; commits: { commit: string }[] }>(`${base}/api/commits`);
    expect(list.inForce).toBe(sha);
    expect(list.commits.map((c) => c.commit)).toContain(sha);
    const unknown = await fetch(`${base}/api/commits/0123456789ab`, { headers: { authorization: `Bearer ${readToken()}` } });
    expect(unknown.status).toBe(404);
    // What the server knows of a cluster's discovery: the snapshot its agent sent, with its checksum.
    const input = await getJson<{ cluster: string; checksum: string; snapshot: { services?: { name: string }[] } }>(`${base}/api/clusters/cluster1/input`);
    expect(input.cluster).toBe("cluster1");
    expect(input.checksum).toMatch(/\S/);
    expect(input.snapshot.services?.map((s) => s.name)).toContain("reviews");

    // ... and only one audit commit for it: not after a fixed sleep, but once a later commit converged
    // and got its own audit commit (the writers moved on): a second writer of the first would show by then.
    const later = await git.commitFiles("mesh", backends.next(), "backends: another timeout");
    expect((await pushHint(later)).status).toBe(202);
    await poll("the later push converged", converged({ cluster1: later, cluster2: later }, later), 90_000);
    await poll("the later push's audit commit", async () => ((await auditSources()).includes(later) ? true : undefined));
    const sources = await auditSources();
    expect(sources.filter((s) => s === sha)).toHaveLength(1);
    expect(sources.filter((s) => s === later)).toHaveLength(1);
    expect(await auditCommits()).toHaveLength(auditBefore + 2);
    expectNothingPruned();
  }, 150_000);

  it("rejects a bad commit: nothing changes in any cluster, the status and gitmesh check say why", async () => {
    const good = inForce(await statuses())!;
    const before = allObjects();
    const bad = await git.commitFiles("mesh", { "workspaces/broken.yaml": "apiVersion: networking.gloo.solo.io/v2\nkind: RouteTable\nmetadata: {name: [oops\n" }, "broken yaml");
    const leader = alive()[0]!;
    expect((await pushHint(bad, leader)).status).toBe(202);
    const s = await poll("rejection visible", async () => {
      const st = await statusOf(leader);
      return st.rejected?.commit === bad ? st : undefined;
    });
    expect(s.commit!.sha).toBe(good);
    expect(inForce(await statuses())).toBe(good);
    expectUnchanged(before);
    // /api/diagnostics groups the rejection under the file that caused it.
    const diags = await getJson<{ rejected: string | null; files: { file: string; diagnostics: string[] }[] }>(`${leader.base}/api/diagnostics`);
    expect(diags.rejected).toBe(bad);
    const broken = diags.files.find((f) => f.file === "workspaces/broken.yaml");
    expect(broken?.diagnostics.some((d) => d.startsWith(`rejected ${bad.slice(0, 12)}`))).toBe(true);
    // The API needs the read token: without it check says which flag and where the token is (exit 2).
    const anonymous = await run(["check", "--server", leader.base]);
    expect(anonymous.code).toBe(2);
    expect(anonymous.out).toContain("--token-file");
    expect(anonymous.out).toContain("api-token-read");
    const check = await run(["check", "--server", leader.base.replace("http://", ""), "--token-file", join(tmp, "pki", "api-token-read")]);
    expect(check.code).toBe(1);
    expect(check.out).toContain(`REJECTED   ${bad.slice(0, 12)}`);
    expect(check.out).toMatch(/workspaces\/broken\.yaml:\d+/);
    // The fix: the same desired state as the good commit, so no cluster gets a new output.
    const fix = await git.commitFiles("mesh", { "workspaces/broken.yaml": null }, "remove broken yaml");
    await pushHint(fix, leader);
    await poll("fix in force on every replica", async () => inForce(await statuses()) === fix);
    await poll("still converged", converged({}));
    expectUnchanged(before);
    expectNothingPruned();
  }, 150_000);

  it("FREEZE_CONFIG: a broken route keeps the table's VirtualService in the clusters, unchanged; the status says frozen; the fix releases it", async () => {
    const before = allObjects();
    const path = "workspaces/bookinfo-backends/route-table-ratings.yaml";
    const original = readFileSync(join("examples/repo-layout", path), "utf8");
    const broken = original
      .replace("spec:\n  hosts:", "spec:\n  failureMode: FREEZE_CONFIG\n  hosts:")
      .replace("  http:\n", "  http:\n    - name: broken\n      matchers:\n        - uri: {prefix: /broken}\n      forwardTo:\n        destinations:\n          - ref: {name: not-there, namespace: bookinfo-backends}\n            port: {number: 9080}\n");
    expect(broken).toContain("FREEZE_CONFIG");
    expect(broken).toContain("not-there");
    const sha = await git.commitFiles("mesh", { [path]: broken }, "ratings: a route to a Service that does not exist, table frozen");
    await pushHint(sha);
    await poll("ratings frozen on cluster1 and cluster2, the frozen output applied", async () => {
      const all = await statuses();
      return ["cluster1", "cluster2"].every((c) => {
        const v = holderView(all, c);
        return v?.frozen?.includes("bookinfo-backends/ratings") === true && v.output?.sourceCommit === sha && v.applied?.version === v.output.version && !v.inSync;
      });
    }, 90_000);
    // The VirtualService the table rendered before stays in every cluster, byte for byte.
    expectUnchanged(before);
    expectNothingPruned();
    const fix = await git.commitFiles("mesh", { [path]: original }, "ratings: fixed");
    await pushHint(fix);
    await poll("fix converged, nothing held", converged({ cluster1: fix, cluster2: fix }, fix), 90_000);
    for (const s of await statuses()) for (const c of s.clusters) expect(c.pruneHeld ?? null, `${s.replica}/${c.name}`).toBeNull();
    expectUnchanged(before);
    expectNothingPruned();
  }, 200_000);

  it("refuses a wrong token and a spoofed (unregistered) cluster; nothing is accepted or lost", async () => {
    const before = allObjects();
    const kube = await startKube({});
    kube.emulator.seed([
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-root-tls-secret", namespace: "gitmesh" }, data: { "ca.crt": b64(readFileSync(join(tmp, "pki", "root-ca.crt"), "utf8")) } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-identity-token-secret", namespace: "gitmesh" }, data: { token: b64("wrong-token-wrong-token") } },
    ]);
    kubes.set("intruder", kube);
    await kube.emulator.writeKubeconfig(join(tmp, "intruder.kubeconfig"));
    const intruders = [
      start("intruder cluster1", ["agent", "--relay-address", `127.0.0.1:${String(balancer.port)}`, "--cluster", "cluster1", "--kubeconfig", join(tmp, "intruder.kubeconfig"), "--http-port", "0"]),
      start("intruder cluster9", ["agent", "--relay-address", `127.0.0.1:${String(replicas[1]!.relayPort)}`, "--cluster", "cluster9", "--kubeconfig", join(tmp, "intruder.kubeconfig"), "--http-port", "0"]),
    ];
    try {
      await poll("rejections counted", async () => {
        let n = 0;
        for (const r of alive()) {
          const m = /gitmesh_relay_rejections_total\{reason="bad_token"\} (\d+)/.exec(await (await fetch(`${r.base}/metrics`)).text());
          n += Number(m?.[1] ?? 0);
        }
        return n >= 2;
      });
    } finally {
      await Promise.all(intruders.map((p) => p.kill()));
    }
    expect(kube.emulator.get("v1", "Secret", "gitmesh", "relay-client-tls-secret")).toBeUndefined();
    for (const s of await statuses()) expect(s.clusters.map((c) => c.name)).not.toContain("cluster9");
    expectUnchanged(before);
    await poll("still converged", converged({}));
    expectNothingPruned();
  }, 120_000);

  it("agent disconnect: its cluster keeps its config, nothing is pruned, the status shows it stale", async () => {
    const before = allObjects();
    // Held by one replica, and every replica knows it is not stale.
    await poll("cluster3 held, not stale, on every replica", async () => {
      const views = (await statuses()).map((s) => s.clusters.find((c) => c.name === "cluster3"));
      return views.every((v) => v?.stale === false && v.replica !== null) && new Set(views.map((v) => v?.replica)).size === 1;
    });
    await agents.get("cluster3")!.kill("SIGKILL");
    await poll("cluster3 stale on every replica", async () => {
      const all = await statuses();
      return all.every((s) => s.clusters.find((c) => c.name === "cluster3")?.stale === true);
    });
    // A push meanwhile: the others converge; the disconnected cluster keeps what it had.
    const sha = await git.commitFiles("mesh", backends.next(), "backends: timeout again");
    await pushHint(sha);
    await poll("push converged without cluster3", async () => {
      const all = await statuses();
      return ["cluster1", "cluster2"].every((c) => holderView(all, c)?.applied?.sourceCommit === sha);
    }, 90_000);
    expect(objects("cluster3")).toEqual(before.get("cluster3"));
    startAgent("cluster3");
    await poll("cluster3 back", converged({ cluster1: sha, cluster2: sha }, sha), 90_000);
    expect(objects("cluster3")).toEqual(before.get("cluster3"));
    for (const c of CLUSTERS) await expectMatchesOutput(c);
    expectNothingPruned();
  }, 180_000);

  it("Redis down: outputs still delivered in-process; Redis back: state written back, queue resumes", async () => {
    const before = allObjects();
    await redis.stop();
    await poll("every replica degraded", async () => (await statuses()).every((s) => s.pipeline.mode === "degraded"), 30_000);
    const sha = await git.commitFiles("mesh", backends.next(), "backends: during the outage");
    for (const r of alive()) await pushHint(sha, r);
    await poll("outage push converged", converged({ cluster1: sha, cluster2: sha }, sha), 90_000);
    expect(objects("cluster3")).toEqual(before.get("cluster3"));
    for (const c of CLUSTERS) await expectMatchesOutput(c);
    await redis.start();
    await poll("every replica back on Redis", async () => (await statuses()).every((s) => s.pipeline.mode === "redis"), 60_000);
    // Written back: the emptied Redis holds the desired state and every cluster's output again.
    await poll("state written back", async () => {
      for (const c of CLUSTERS) {
        const out = await outputOf(c);
        if (out.resources.length === 0) return false;
      }
      const st = await statusOf(alive()[0]!);
      return st.commit?.sha === sha;
    }, 30_000);
    const after = allObjects();
    // The queue resumes: a push after the outage converges through Redis.
    const next = await git.commitFiles("mesh", backends.next(), "backends: after the outage");
    await pushHint(next);
    await poll("post-outage push converged", converged({ cluster1: next, cluster2: next }, next), 90_000);
    expect(objects("cluster3")).toEqual(after.get("cluster3"));
    for (const c of CLUSTERS) await expectMatchesOutput(c);
    expectNothingPruned();
  }, 240_000);

  it("replica loss: its agents reconnect to the other replica; nothing lost or pruned; the lease moves", async () => {
    await poll("converged", converged({}), 60_000);
    const before = allObjects();
    // The victim is the lease holder, so the lease must move for Git polling and audit commits to go on.
    const leaderName = await poll("one leader", async () => {
      const leaders = (await statuses()).filter((s) => s.leader);
      return leaders.length === 1 ? leaders[0]!.replica : undefined;
    });
    const victim = replicas.find((r) => r.name === leaderName)!;
    const survivor = replicas.find((r) => r.name !== leaderName)!;
    await victim.proc!.kill("SIGKILL");
    await poll("every agent on the surviving replica", async () => {
      const s = await statusOf(survivor);
      return CLUSTERS.every((c) => s.clusters.find((x) => x.name === c)?.connected === true);
    }, 90_000);
    await poll("converged on the survivor", converged({}), 60_000);
    expectUnchanged(before);
    // The survivor leads now (Git polling, audit): a push converges and is audited.
    const auditBefore = (await auditCommits()).length;
    const sha = await git.commitFiles("mesh", backends.next(), "backends: after replica loss");
    // No webhook: the survivor must poll Git itself once it holds the lease.
    await poll("push converged via polling", converged({ cluster1: sha, cluster2: sha }, sha), 90_000);
    await poll("audit commit by the survivor", async () => (await auditCommits()).length === auditBefore + 1, 30_000);
    for (const c of CLUSTERS) await expectMatchesOutput(c);
    startReplica(victim);
    await poll("replica a back", async () => (await statusOf(victim)).ready, 60_000);
    expectNothingPruned();
  }, 240_000);

  it("full restart of Redis and every replica: warming holds output until clusters resend; nothing deleted", async () => {
    await poll("converged", converged({}), 60_000);
    const before = allObjects();
    await Promise.all(replicas.map((r) => r.proc!.kill("SIGKILL")));
    // While no server runs, mark every cacerts as issued for other roots: each agent re-issues on the
    // first output after the restart, from whichever restarted replica it reaches.
    const issuedBefore = new Map(CLUSTERS.map((c) => [c, cacertsOf(c)!["ca-cert.pem"]!]));
    for (const c of CLUSTERS) {
      const s = kubes.get(c)!.emulator.get("v1", "Secret", "istio-system", "cacerts") as { metadata: { annotations?: Record<string, string> } };
      kubes.get(c)!.emulator.seed([{ ...s, metadata: { ...s.metadata, annotations: { ...(s.metadata.annotations ?? {}), "gitmesh.io/issued-for": "before-the-restart" } } }]);
    }
    await redis.stop();
    await redis.start();
    for (const r of replicas) startReplica(r);
    const all = await poll("replicas up and warmed", async () => {
      const st = await Promise.all(replicas.map(statusOf));
      return st.every((s) => s.ready) ? st : undefined;
    }, 120_000);
    // Warmed because every cluster resent its discovery (or, for a replica that started after some
    // had, because the store already held it), never because the window (90 s) passed.
    for (const s of all) expect(s.warming?.reason, `warming of replica ${s.replica}`).toMatch(/^(discovery|not-needed)$/);
    await poll("converged after the restart", converged({}), 90_000);
    expectUnchanged(before);
    expectNothingPruned();
    // Re-issued after the restart of both replicas, by the same mesh root.
    await poll("cacerts re-issued", () => Promise.resolve(CLUSTERS.every((c) => cacertsOf(c)!["ca-cert.pem"] !== issuedBefore.get(c))), 90_000);
    expectOneMeshRoot(meshRoot);
  }, 300_000);
});
