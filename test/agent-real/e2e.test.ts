// push → server → relay → agent → real API server, in separate processes: a real Git server, one
// `gitmesh server` (standalone, in memory), and two `gitmesh agent` replicas of cluster1 authenticated
// as the agent's ServiceAccount bound by the agent chart's RBAC (default values) against a real
// kube-apiserver + etcd seeded with examples/discovery/cluster1. The configuration is
// examples/repo-layout with cluster1 as the only registered cluster.
//
// The tests run in order and share the processes. Each checks the cluster against the server's
// output (nothing missing, nothing extra) and that no object gitmesh created was deleted and made
// again behind its back (uids kept), per DESIGN.md's Agent and Failure-behaviour sections.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ISTIO_KINDS } from "../../src/agent/index.js";
import { signBody } from "../../src/git-sync/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { freePort } from "../helpers/ports.js";
import { createProcessGroup, type GitmeshProcess } from "../helpers/processes.js";
import { backendsTimeoutChanges, repoFiles } from "../helpers/repo-files.js";
import { AGENT_NAMESPACE, getObject, startAgentCluster, type AgentCluster } from "./cluster.js";

/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are untyped JSON here */
type Obj = Record<string, any>;

const TOKEN = "e2e-real-bootstrap-token-0123456789";
const SECRET = "e2e-real-webhook-secret";
const b64 = (s: string) => Buffer.from(s).toString("base64");

const gm = createProcessGroup({ GITMESH_WEBHOOK_SECRET: SECRET });
let git: GitServer;
let cluster: AgentCluster;
let tmp: string;
let relayPort: number;
let base: string;
const agents = new Map<string, GitmeshProcess>();

function startAgent(identity: string): GitmeshProcess {
  const p = gm.start(`agent ${identity}`, [
    "agent", "--relay-address", `127.0.0.1:${String(relayPort)}`, "--cluster", "cluster1", "--kubeconfig", cluster.agent.kubeconfigPath,
    "--namespace", AGENT_NAMESPACE, "--http-port", "0", "--identity", identity,
    // debug: a drift left alone under a server hold is logged at debug only (the suspension test reads it)
    "--log-level", "debug",
  ]);
  agents.set(identity, p);
  return p;
}

// ---- the server's view -------------------------------------------------------------------------
interface ClusterView {
  name: string;
  connected: boolean;
  inSync: boolean;
  output: { version: number; sourceCommit: string; resources: number; complete: boolean } | null;
  applied: { version: number; sourceCommit: string } | null;
  frozen?: string[];
  pruneHeld?: { reason: string; objects: string[] } | null;
}
interface Status {
  ready: boolean;
  commit: { sha: string } | null;
  clusters: ClusterView[];
}
const readToken = () => readFileSync(join(tmp, "pki", "api-token-read"), "utf8").trim();
const getJson = async <T>(url: string): Promise<T> => {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000), headers: { authorization: `Bearer ${readToken()}` } });
  if (!res.ok) throw new Error(`${url}: HTTP ${String(res.status)}`);
  return (await res.json()) as T;
};
const status = () => getJson<Status>(`${base}/api/status`);
const view = async () => (await status()).clusters.find((c) => c.name === "cluster1");
/** cluster1 applied the output of `sha`, which every push here changes (or, without `sha`, its newest output). */
const converged = (sha?: string) => async () => {
  const s = await status();
  if (!s.ready || (sha !== undefined && s.commit?.sha !== sha)) return undefined;
  const c = s.clusters.find((x) => x.name === "cluster1");
  if (!c?.connected || !c.output || !c.applied || !c.inSync || !c.output.complete || c.output.resources === 0) return undefined;
  if (sha !== undefined && c.output.sourceCommit !== sha) return undefined;
  return c.applied.sourceCommit === c.output.sourceCommit && c.applied.version === c.output.version ? c : undefined;
};
interface OutputDoc {
  version: number;
  sourceCommit: string;
  resources: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; spec?: unknown }[];
}
const outputOf = () => getJson<OutputDoc>(`${base}/api/clusters/cluster1/output`);
const pushHint = async (sha: string) => {
  const body = JSON.stringify({ ref: "refs/heads/main", sha });
  return fetch(`${base}/webhooks/generic`, { method: "POST", headers: { "x-signature-256": signBody(SECRET, body) }, body });
};

// ---- the real cluster ----------------------------------------------------------------------------
/** Every gitmesh-managed Istio object in the real cluster (read as the admin): key → object. */
async function objects(): Promise<Map<string, Obj>> {
  const out = new Map<string, Obj>();
  for (const k of ISTIO_KINDS) {
    const r = await cluster.kube.request("GET", `/apis/${k.apiVersion}/${k.plural}`, { query: { labelSelector: "gitmesh.io/managed=true" } });
    if (r.status !== 200) throw new Error(`list ${k.plural}: HTTP ${r.status}: ${r.text}`);
    for (const o of (r.body as Obj).items as Obj[]) out.set(`${k.kind}/${String(o.metadata.namespace ?? "")}/${String(o.metadata.name)}`, o);
  }
  return out;
}
/** The cluster's gitmesh objects are exactly the output's resources, each as the output has it, applied by gitmesh-agent. */
async function expectMatchesOutput(): Promise<Map<string, Obj>> {
  const out = await outputOf();
  const applied = out.resources.filter((r) => r.kind !== "IssuedCertificate");
  const live = await objects();
  expect([...live.keys()].sort()).toEqual(applied.map((r) => `${r.kind}/${r.metadata.namespace ?? ""}/${r.metadata.name}`).sort());
  for (const r of applied) {
    const o = live.get(`${r.kind}/${r.metadata.namespace ?? ""}/${r.metadata.name}`)!;
    expect(o.spec, `${r.kind} ${r.metadata.name}`).toEqual(r.spec);
    expect(((o.metadata.managedFields ?? []) as Obj[]).map((m) => `${String(m.manager)}/${String(m.operation)}`)).toEqual(["gitmesh-agent/Apply"]);
  }
  return live;
}
const uids = (m: Map<string, Obj>) => new Map([...m].map(([k, o]) => [k, String(o.metadata.uid)]));
/** Objects present in both that were deleted and created again (another uid): none may be. */
const recreated = (before: Map<string, string>, after: Map<string, string>) => [...before].filter(([k, u]) => after.has(k) && after.get(k) !== u).map(([k]) => k);
const lease = async () => (await getObject(cluster.kube, `/apis/coordination.k8s.io/v1/namespaces/${AGENT_NAMESPACE}/leases/gitmesh-agent`))?.spec as Obj | undefined;

/** Changes to the bookinfo-backends workspace: it selects cluster1 and cluster2 by name, not cluster3. */
const backends = backendsTimeoutChanges();

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "gitmesh-e2e-real-"));
  git = await startGitServer();
  await git.createRepo("mesh");
  const repo = repoFiles("examples/repo-layout");
  delete repo["clusters/cluster2.yaml"];
  await git.commitFiles("mesh", repo, "bookinfo on cluster1");
  relayPort = await freePort();
  const httpPort = await freePort();
  base = `http://127.0.0.1:${String(httpPort)}`;
  const [c] = await Promise.all([
    startAgentCluster({ discovery: "cluster1" }),
    (async () => {
      gm.start("server", [
        "server", "--identity", "a", "--git-url", git.url("mesh"),
        "--relay-host", "127.0.0.1", "--relay-port", String(relayPort), "--http-host", "127.0.0.1", "--http-port", String(httpPort),
        "--pki-dir", join(tmp, "pki"), "--bootstrap", "fleet-token", "--relay-token", TOKEN, "--additional-sans", "127.0.0.1",
        "--warming-window", "60", "--poll-interval", "2", "--data-dir", join(tmp, "data"), "--log-format", "json",
      ]);
      await gm.poll("server healthy", async () => (await fetch(`${base}/healthz`)).ok, 90_000);
    })(),
  ]);
  cluster = c;
  // What `gitmesh cluster register` / the chart's install leaves in the agent's namespace.
  await cluster.kube.apply([
    { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-root-tls-secret", namespace: AGENT_NAMESPACE }, data: { "ca.crt": b64(readFileSync(join(tmp, "pki", "root-ca.crt"), "utf8")) } },
    { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-identity-token-secret", namespace: AGENT_NAMESPACE }, data: { token: b64(TOKEN) } },
  ]);
  startAgent("agent-a");
  startAgent("agent-b");
}, 240_000);

afterAll(async () => {
  await gm.stopAll();
  // Set in beforeAll, which may have failed half-way.
  await (cluster as AgentCluster | undefined)?.stop();
  await (git as GitServer | undefined)?.stop();
  rmSync(tmp, { recursive: true, force: true });
}, 60_000);

describe("push → server → relay → agent → real API server, under the chart's RBAC", () => {
  let first: Map<string, string>;

  it("first apply: every object of the output, applied by gitmesh-agent; the agent registered, stored its certificate and wrote cacerts as its ServiceAccount; one replica leads", async () => {
    const sha = (await git.revParse("mesh", "refs/heads/main"))!;
    await gm.poll("first convergence", converged(sha), 150_000);
    const live = await expectMatchesOutput();
    expect(live.size).toBeGreaterThan(10);
    first = uids(live);
    // Registration wrote the client certificate with a server-side apply of the agent's ServiceAccount.
    const cert = await getObject(cluster.kube, `/api/v1/namespaces/${AGENT_NAMESPACE}/secrets/relay-client-tls-secret`);
    expect(cert?.type).toBe("kubernetes.io/tls");
    expect(Object.keys((cert?.data ?? {}) as Obj)).toEqual(expect.arrayContaining(["tls.crt", "tls.key"]));
    expect(((cert!.metadata.managedFields ?? []) as Obj[]).map((m) => String(m.manager))).toContain("gitmesh-agent");
    // RootTrustPolicy: the istiod intermediate in istio-system (the chart's `cacerts` grant).
    const cacerts = await gm.poll("cacerts written", () => getObject(cluster.kube, "/api/v1/namespaces/istio-system/secrets/cacerts"), 60_000);
    expect(Object.keys(cacerts.data as Obj)).toEqual(expect.arrayContaining(["ca-cert.pem", "ca-key.pem", "root-cert.pem", "cert-chain.pem"]));
    // The inventory and the Lease, in the agent's namespace.
    const inventory = await getObject(cluster.kube, `/api/v1/namespaces/${AGENT_NAMESPACE}/configmaps/gitmesh-agent-inventory`);
    expect(inventory?.data).toMatchObject({ format: "gitmesh.io/inventory-v1", count: String(live.size) });
    const held = await lease();
    expect(["agent-a", "agent-b"]).toContain(held?.holderIdentity);
    expect(held?.leaseDurationSeconds).toBe(15);
  }, 180_000);

  it("a push changes what it changes, and nothing else; nothing is deleted", async () => {
    const before = await objects();
    const sha = await git.commitFiles("mesh", backends.next(), "backends: longer timeout");
    expect((await pushHint(sha)).status).toBe(202);
    await gm.poll("push converged", converged(sha), 90_000);
    const after = await expectMatchesOutput();
    const changed = [...after].filter(([k, o]) => JSON.stringify(o.spec) !== JSON.stringify(before.get(k)?.spec)).map(([k]) => k);
    expect(changed.length).toBeGreaterThan(0);
    expect(changed.every((k) => k.startsWith("VirtualService/"))).toBe(true);
    expect(JSON.stringify(changed.map((k) => after.get(k)!.spec))).toContain(`"timeout":"${String(backends.seconds())}s"`);
    expect(recreated(first, uids(after))).toEqual([]);
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
  }, 120_000);

  it("FREEZE_CONFIG: a broken route keeps the table's VirtualService in the cluster unchanged; status says frozen; the fix releases it", async () => {
    const before = await objects();
    const path = "workspaces/bookinfo-backends/route-table-ratings.yaml";
    const original = readFileSync(join("examples/repo-layout", path), "utf8");
    const broken = original
      .replace("spec:\n  hosts:", "spec:\n  failureMode: FREEZE_CONFIG\n  hosts:")
      .replace("  http:\n", "  http:\n    - name: broken\n      matchers:\n        - uri: {prefix: /broken}\n      forwardTo:\n        destinations:\n          - ref: {name: not-there, namespace: bookinfo-backends}\n            port: {number: 9080}\n");
    expect(broken).toContain("not-there");
    const sha = await git.commitFiles("mesh", { [path]: broken }, "ratings: a route to a Service that does not exist, table frozen");
    await pushHint(sha);
    await gm.poll("ratings frozen, the frozen output applied", async () => {
      const v = await view();
      return v?.frozen?.includes("bookinfo-backends/ratings") === true && v.output?.sourceCommit === sha && v.applied?.version === v.output.version && !v.inSync;
    }, 90_000);
    const during = await objects();
    expect([...during.keys()].sort()).toEqual([...before.keys()].sort());
    for (const [k, o] of during) {
      expect(o.spec, k).toEqual(before.get(k)!.spec);
      expect(o.metadata.resourceVersion, k).toBe(before.get(k)!.metadata.resourceVersion);
    }
    const fix = await git.commitFiles("mesh", { [path]: original }, "ratings: fixed");
    await pushHint(fix);
    await gm.poll("fix converged, nothing held", converged(fix), 90_000);
    expect((await view())?.pruneHeld ?? null).toBeNull();
    const after = await expectMatchesOutput();
    for (const [k, o] of after) expect(o.spec, k).toEqual(before.get(k)!.spec);
    expect(recreated(first, uids(after))).toEqual([]);
  }, 200_000);

  it("suspend (#38) on the real API server: an operator's hand edit of an owned VirtualService stays while the server holds the cluster; resume repairs it and converges", async () => {
    await gm.poll("converged before the suspension", converged(), 90_000);
    const admin = readFileSync(join(tmp, "pki", "api-token-admin"), "utf8").trim();
    const post = (path: string, body?: unknown) =>
      fetch(`${base}${path}`, { method: "POST", signal: AbortSignal.timeout(10_000), headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const vsKey = [...(await objects()).keys()].filter((k) => k.startsWith("VirtualService/")).sort()[0]!;
    const [, ns, name] = vsKey.split("/") as [string, string, string];
    const path = `/apis/networking.istio.io/v1/namespaces/${ns}/virtualservices/${name}`;
    const live = async () => (await getObject(cluster.kube, path)) as Obj;
    const hotfixed = async () => ((await live()).spec.http as Obj[])[0]?.timeout === "7s";
    const uid = String((await live()).metadata.uid);
    const outputs = () => [...agents.values()].map((a) => a.output()).join("\n");
    const heldLines = (): number => outputs().split("\n").filter((l) => l.includes("drift left as it is") && l.includes(`${ns}/${name}`)).length;

    expect((await post("/api/clusters/cluster1/suspend", { reason: "incident 7" })).status).toBe(200);
    await gm.poll("an agent told of the hold", () => Promise.resolve(outputs().includes("cluster held by the management server")), 60_000);
    // `kubectl edit` as an operator does it during the incident: an Update by another field manager.
    const http = ((await live()).spec.http as Obj[]).map((r, i) => (i === 0 ? { ...r, timeout: "7s" } : r));
    // Counted before the edit: the watch event (and its log line) may come before the PATCH's answer.
    const seenBefore = heldLines();
    const edit = await cluster.kube.request("PATCH", path, { body: { spec: { http } }, contentType: "application/merge-patch+json", query: { fieldManager: "kubectl-edit" } });
    expect(edit.status, edit.text).toBe(200);
    await gm.poll("the leader finding the hand edit and leaving it", () => Promise.resolve(heldLines() > seenBefore), 60_000);
    // The watcher saw it and decided: it stays, also a few seconds later (a repair is scheduled within a tick).
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await hotfixed(), "the hand edit was repaired under the hold").toBe(true);
    expect(outputs()).not.toMatch(new RegExp(`drift repaired[^\\n]*${ns}/${name}`));
    const held = (await getJson<{ suspended?: { summary?: string } | null }>(`${base}/api/clusters/cluster1`)).suspended;
    expect(held?.summary ?? "").toMatch(/incident 7/);

    expect((await post("/api/clusters/cluster1/resume")).status).toBe(200);
    await gm.poll("the hand edit repaired after resume", async () => !(await hotfixed()), 60_000);
    expect(outputs()).toContain("cluster no longer held by the management server");
    await gm.poll("converged after resume", converged(), 90_000);
    const after = await expectMatchesOutput();
    expect(String(after.get(vsKey)!.metadata.uid), "repaired in place, not deleted and made again").toBe(uid);
    expect(recreated(first, uids(after))).toEqual([]);
  }, 240_000);

  it("leader failover: the leader is killed; the standby takes the real Lease over after it expires, applies the next push, deletes nothing", async () => {
    const before = await lease();
    const leader = String(before?.holderIdentity);
    const standby = leader === "agent-a" ? "agent-b" : "agent-a";
    const killedAt = Date.now();
    await agents.get(leader)!.kill("SIGKILL");
    const taken = await gm.poll("standby holds the Lease", async () => {
      const l = await lease();
      return l?.holderIdentity === standby ? l : undefined;
    }, 60_000, 200);
    const tookMs = Date.now() - killedAt;
    // client-go's rule: not before the holder's record stayed unchanged for a lease duration (15 s).
    expect(tookMs).toBeGreaterThanOrEqual(12_000);
    expect(taken.leaseTransitions).toBe(Number(before?.leaseTransitions ?? 0) + 1);
    expect(taken.acquireTime).not.toBe(before?.acquireTime);
    console.log(`[agent-real e2e] Lease taken over ${String(tookMs)} ms after the leader was killed`);
    const sha = await git.commitFiles("mesh", backends.next(), "backends: after the failover");
    await pushHint(sha);
    await gm.poll("push converged through the new leader", converged(sha), 90_000);
    const after = await expectMatchesOutput();
    expect(recreated(first, uids(after))).toEqual([]);
    expect(agents.get(standby)!.output()).toContain("became leader");
    startAgent(leader);
  }, 180_000);

  it("configuration removed from Git leaves the cluster: an AccessPolicy's objects are pruned, a FaultInjectionPolicy's fault leaves its route; nothing else changes", async () => {
    await gm.poll("converged", converged(), 60_000);
    const before = await objects();
    const sha = await git.commitFiles("mesh", { "workspaces/bookinfo-backends/fault-injection.yaml": null, "workspaces/bookinfo-frontends/access-policy.yaml": null }, "no more fault injection; productpage access policy removed");
    await pushHint(sha);
    await gm.poll("removal converged", converged(sha), 90_000);
    const after = await expectMatchesOutput();
    // The AccessPolicy's AuthorizationPolicy and PeerAuthentication (DELETE with the uid as precondition).
    const ofPolicy = [...before].filter(([, o]) => o.metadata.labels?.["gitmesh.io/parent-name"] === "productpage-from-gateway").map(([k]) => k);
    expect(ofPolicy.map((k) => k.split("/")[0]).sort()).toEqual(["AuthorizationPolicy", "PeerAuthentication"]);
    expect([...before.keys()].filter((k) => !after.has(k)).sort()).toEqual(ofPolicy.sort());
    // The fault (delay, 503s) lived inside the ratings route: gone from every route; no other object changed.
    const faults = (m: Map<string, Obj>) => [...m].filter(([k, o]) => k.startsWith("VirtualService/") && JSON.stringify(o.spec).includes('"fault"')).map(([k]) => k);
    expect(faults(before).length).toBeGreaterThan(0);
    expect(faults(after)).toEqual([]);
    const changed = [...after].filter(([k, o]) => JSON.stringify(o.spec) !== JSON.stringify(before.get(k)?.spec)).map(([k]) => k);
    expect(changed.sort()).toEqual(faults(before).sort());
    expect(recreated(first, uids(after))).toEqual([]);
  }, 120_000);

  it("mass deletion: removing a whole workspace is refused by the agent (nothing deleted, not applied) until a commit carries Gitmesh-Allow-Deletion: cluster1", async () => {
    await gm.poll("converged", converged(), 60_000);
    const before = await objects();
    const backends = Object.keys(repoFiles("examples/repo-layout")).filter((f) => f.startsWith("workspaces/bookinfo-backends/"));
    const sha = await git.commitFiles("mesh", Object.fromEntries(backends.map((f) => [f, null])), "bookinfo-backends workspace removed");
    await pushHint(sha);
    await gm.poll("the agent refused the output (NACK): not applied", async () => {
      const v = await view();
      return v?.output?.sourceCommit === sha && v.applied?.version !== v.output.version && !v.inSync;
    }, 90_000);
    const out = await outputOf();
    const wanted = new Set(out.resources.filter((r) => r.kind !== "IssuedCertificate").map((r) => `${r.kind}/${r.metadata.namespace ?? ""}/${r.metadata.name}`));
    const doomed = [...before.keys()].filter((k) => !wanted.has(k));
    expect(doomed.length).toBeGreaterThan(before.size / 2);
    // Nothing deleted: the refusal is for the whole prune.
    await new Promise((r) => setTimeout(r, 2000));
    const during = await objects();
    expect([...during.keys()].sort()).toEqual([...before.keys()].sort());
    expect(recreated(uids(before), uids(during))).toEqual([]);

    // The operator confirms with a commit that changes no configuration, only the trailer.
    const confirm = await git.commitFiles("mesh", { "NOTES.md": "bookinfo-backends moved out\n" }, "confirm the backends removal on cluster1\n\nGitmesh-Allow-Deletion: cluster1\n");
    await pushHint(confirm);
    await gm.poll("pruned once allowed", async () => {
      const live = await objects();
      return doomed.every((k) => !live.has(k)) ? live : undefined;
    }, 90_000);
    await gm.poll("converged", converged(), 60_000);
    const after = await expectMatchesOutput();
    expect([...after.keys()].sort()).toEqual([...before.keys()].filter((k) => wanted.has(k)).sort());
  }, 200_000);
});
