// End to end: what gets deleted, and what is held back and reported. A real management server
// (Git over HTTP, the relay on real gRPC/mTLS, the HTTP API) and real agents (the agent's own code:
// discovery informers, server-side apply, prune) on Kubernetes API emulators, all in this process so
// that one workspace can be made to fail (the pipeline's translator seam) and the server's state can
// be lost (a new server without the old one's memory, as after a restart of Redis and the server).
//
// Four clusters are registered in Git; only cluster1 and cluster2 have agents (cluster3 and cluster4
// never report). Workspaces (test/queue/holds-fixture.ts): apps and team span cluster1+cluster2,
// shared spans every cluster. The tests run in order on one fleet:
//   (a) after state loss, a VirtualService removed from Git is pruned where its inputs are complete;
//       one of the workspace that spans the silent clusters is held and reported, inSync false;
//   (b) a permanently failing workspace holds only its own deletions;
//   (c) FREEZE_CONFIG keeps the frozen table's VirtualService in the cluster, unchanged;
//   (d) a commit with `Gitmesh-Allow-Deletion: cluster1` lets a mass deletion through on cluster1, not on cluster2;
//       a later commit that only carries `Gitmesh-Allow-Deletion: cluster2` lets it through there.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../../src/agent/index.js";
import { NeedsHumanError, silentLogger } from "../../src/core/index.js";
import { createInProcessAgent } from "../../src/devtools/index.js";
import { RELAY_SECRETS } from "../../src/relay/index.js";
import { createManagementServer, createMemorySecretStore, createQueuePipeline, parseServerConfig, type ManagementServer } from "../../src/server/index.js";
import { assembleCluster, translateWorkspace } from "../../src/translate/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { freePort } from "../helpers/ports.js";
import { clusterSeed, meshFiles, vsKey, type MeshSpec } from "../queue/holds-fixture.js";

const TOKEN = "completeness-bootstrap-token-0123";
const LIVE = ["cluster1", "cluster2"] as const;
const REGISTERED = ["cluster1", "cluster2", "cluster3", "cluster4"];
const b64 = (s: string) => Buffer.from(s).toString("base64");

let git: GitServer;
let tmp: string;
let relayPort: number;
let httpPort: number;
const secrets = createMemorySecretStore();
let server: ManagementServer | undefined;
const kubes = new Map<string, StartedKube>();
const agents: Agent[] = [];
/** Workspaces whose translation throws (the seam of a permanently failing workspace). */
const failing = new Set<string>();
/** Every gitmesh-managed object deleted in a live cluster: cluster/kind/namespace/name. */
const deletions: string[] = [];

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
      dataDir: join(tmp, `server-${String(Date.now())}`),
    },
    { identity: "completeness" },
  );
  if (!config) throw new Error(problems.join("; "));
  const pipeline = createQueuePipeline({
    logger: silentLogger,
    debounceMs: 20,
    translators: {
      translateWorkspace: (ws, desired, discovery) => {
        if (failing.has(ws)) throw new NeedsHumanError(`workspace ${ws} cannot be translated (test)`);
        return translateWorkspace(ws, desired, discovery);
      },
      assembleCluster,
    },
  });
  const s = createManagementServer({ config, pipeline, secrets, registry: new Registry(), logger: silentLogger, dataDir: join(tmp, "data") });
  await s.start();
  return s;
}

// ---- status and objects ---------------------------------------------------------------------------
interface ClusterView {
  name: string;
  connected: boolean;
  inSync: boolean;
  output: { version: number; sourceCommit: string; complete: boolean } | null;
  applied: { version: number; sourceCommit: string } | null;
  pruneHeld: { reason: string; since: string; objects: string[]; holds: { cause: string; reason: string; objects: string[] }[]; incomplete: string | null } | null;
  frozen: string[];
}
interface Status {
  ready: boolean;
  commit: { sha: string } | null;
  clusters: ClusterView[];
}
/** The read token the server generated (the API needs one). */
const readAuth = () => ({ authorization: `Bearer ${server?.apiTokens?.read ?? ""}` });
const status = async (): Promise<Status> => {
  const res = await fetch(`http://127.0.0.1:${String(httpPort)}/api/status`, { signal: AbortSignal.timeout(10_000), headers: readAuth() });
  if (!res.ok) throw new Error(`status: HTTP ${String(res.status)}`);
  return (await res.json()) as Status;
};
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
/** The commit is in force and every live cluster applied an output of it (ACKed, or NACKed when `nack` allows). */
const applied = (sha: string, allowNack: readonly string[] = []) =>
  poll(`commit ${sha.slice(0, 12)} applied on ${LIVE.join(", ")}`, async () => {
    const s = await status();
    if (s.commit?.sha !== sha) return undefined;
    for (const c of LIVE) {
      if (allowNack.includes(c)) continue;
      const v = view(s, c);
      if (!v.connected || v.output?.sourceCommit !== sha || v.applied?.version !== v.output.version) return undefined;
    }
    return s;
  });
/** The commit is in force and every live cluster applied its newest output (a commit that changes no output keeps the old ones). */
const inForce = (sha: string) =>
  poll(`commit ${sha.slice(0, 12)} in force, outputs applied`, async () => {
    const s = await status();
    return s.commit?.sha === sha && LIVE.every((c) => view(s, c).applied?.version === view(s, c).output?.version) ? s : undefined;
  });
/** Every gitmesh-managed VirtualService in a live cluster: key → spec JSON. */
function virtualServices(cluster: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const o of kubes.get(cluster)!.emulator.list("networking.istio.io/v1", "VirtualService")) {
    const md = o.metadata as { name: string; namespace: string; labels?: Record<string, string> };
    if (md.labels?.["gitmesh.io/managed"] === "true") out.set(`VirtualService/${md.namespace}/${md.name}`, JSON.stringify((o as { spec?: unknown }).spec));
  }
  return out;
}
const has = (cluster: string, ws: string, table: string) => virtualServices(cluster).has(vsKey(ws, table, cluster));
const deleted = (ws: string, table: string) => LIVE.map((c) => `${c}/${vsKey(ws, table, c)}`);

let spec: MeshSpec = {
  clusters: REGISTERED,
  tables: { apps: ["a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"], team: ["t1", "t2"], shared: ["s1", "s2"] },
};
/** Commits the mesh as `next` (files no longer rendered are removed). */
async function commitMesh(next: MeshSpec, message: string): Promise<string> {
  const before = meshFiles(spec);
  const after = meshFiles(next);
  const files: Record<string, string | null> = { ...after };
  for (const path of Object.keys(before)) if (!(path in after)) files[path] = null;
  spec = next;
  return git.commitFiles("mesh", files, message);
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "gitmesh-completeness-"));
  git = await startGitServer();
  await git.createRepo("mesh");
  await git.commitFiles("mesh", meshFiles(spec), "mesh on four registered clusters");
  relayPort = await freePort();
  httpPort = await freePort();
  server = await startServer();
  for (const cluster of LIVE) {
    const kube = await startKube({});
    kube.emulator.seed([
      ...clusterSeed(),
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: RELAY_SECRETS.rootTls.name, namespace: "gitmesh" }, data: { [RELAY_SECRETS.rootTls.keys.caCrt]: b64(server.rootCaPem ?? "") } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: RELAY_SECRETS.identityToken.name, namespace: "gitmesh" }, data: { [RELAY_SECRETS.identityToken.keys.token]: b64(TOKEN) } },
    ]);
    kube.emulator.onChange((e) => {
      const md = e.object.metadata as { name: string; namespace?: string; labels?: Record<string, string> };
      if (e.type === "DELETED" && md.labels?.["gitmesh.io/managed"] === "true") deletions.push(`${cluster}/${String(e.object.kind)}/${md.namespace ?? ""}/${md.name}`);
    });
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
  rmSync(tmp, { recursive: true, force: true });
}, 60_000);

describe("completeness per dependency: what is pruned, what is held and said (server + agents on emulators)", () => {
  it("(a) after state loss with two agentless registered clusters: a removal is pruned where its inputs are complete; the rest is held and reported, not in sync", async () => {
    const first = (await git.revParse("mesh", "refs/heads/main"))!;
    await applied(first);
    for (const c of LIVE) expect(virtualServices(c).size, c).toBe(12);
    // State loss: the server goes away with its memory; a new one knows nothing (warming: 2 s window,
    // cluster3 and cluster4 never report).
    await server!.stop();
    server = await startServer();
    await applied(first);
    const before = new Map(LIVE.map((c) => [c, virtualServices(c)]));
    expect(deletions).toEqual([]);

    const sha = await commitMesh({ ...spec, tables: { ...spec.tables, apps: spec.tables.apps!.filter((t) => t !== "a2"), shared: ["s1"] } }, "drop a2 and s2");
    const s = await applied(sha);
    // apps spans cluster1 and cluster2, which both reported: a2 is pruned there.
    await poll("a2 pruned", () => Promise.resolve(LIVE.every((c) => !has(c, "apps", "a2"))));
    expect(deletions.sort()).toEqual(deleted("apps", "a2").sort());
    for (const c of LIVE) {
      // shared spans cluster3 and cluster4, which never reported since the state was lost: s2 stays, unchanged.
      expect(virtualServices(c).get(vsKey("shared", "s2", c)), c).toBe(before.get(c)!.get(vsKey("shared", "s2", c)));
      const v = view(s, c);
      expect(v.output?.complete, c).toBe(true);
      expect(v.inSync, c).toBe(false);
      expect(v.pruneHeld?.objects, c).toEqual([vsKey("shared", "s2", c)]);
      expect(v.pruneHeld?.reason, c).toMatch(/no discovery from cluster\(s\) "cluster3", "cluster4", which workspace "shared" depends on/);
      expect(v.pruneHeld?.since, c).toMatch(/^\d{4}-\d\d-\d\dT/);
    }
    // gitmesh check says so, and exits 1.
    const check = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, ["bin/gitmesh.js", "check", "--server", `http://127.0.0.1:${String(httpPort)}`], {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, GITMESH_API_TOKEN: server?.apiTokens?.read ?? "" },
      });
      let out = "";
      child.stdout.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr.on("data", (d: Buffer) => (out += d.toString()));
      child.on("close", (code) => resolve({ code, out }));
    });
    expect(check.code).toBe(1);
    expect(check.out).toContain(`HELD       cluster1: 1 object(s)`);
    expect(check.out).toContain(vsKey("shared", "s2", "cluster1"));
    expect(check.out).toMatch(/cluster cluster1: applied [0-9a-f]{12} \(v\d+\); 1 deletion\(s\) held back since .*"cluster3", "cluster4"/);
  }, 180_000);

  it("(b) a permanently failing workspace holds only its own deletions, and says so", async () => {
    deletions.length = 0;
    failing.add("team");
    const head = await commitMesh({ ...spec, tables: { ...spec.tables, apps: spec.tables.apps!.filter((t) => t !== "a5"), team: ["t1"] } }, "drop t2 (team is failing) and a5");
    const s = await poll("team failure reported", async () => {
      const st = await applied(head);
      return LIVE.every((c) => view(st, c).pruneHeld?.holds.some((h) => h.cause === "workspace")) ? st : undefined;
    });
    await poll("a5 pruned", () => Promise.resolve(LIVE.every((c) => !has(c, "apps", "a5"))));
    expect(deletions.sort()).toEqual(deleted("apps", "a5").sort());
    for (const c of LIVE) {
      expect(has(c, "team", "t2"), c).toBe(true);
      const hold = view(s, c).pruneHeld!.holds.find((h) => h.cause === "workspace")!;
      expect(hold.reason, c).toContain("workspace team cannot be translated (test)");
      expect(hold.objects, c).toEqual([vsKey("team", "t1", c), vsKey("team", "t2", c)]);
      expect(view(s, c).inSync, c).toBe(false);
    }
  }, 120_000);

  it("(c) FREEZE_CONFIG: a broken route keeps the table's VirtualService in the cluster unchanged; status says frozen", async () => {
    deletions.length = 0;
    const good = await commitMesh({ ...spec, freeze: ["a1"] }, "a1: failureMode FREEZE_CONFIG");
    await inForce(good);
    const before = new Map(LIVE.map((c) => [c, virtualServices(c).get(vsKey("apps", "a1", c))]));
    for (const c of LIVE) expect(before.get(c), c).toBeDefined();
    const broken = await commitMesh({ ...spec, freeze: ["a1"], broken: ["a1"] }, "a1: a route to a Service that does not exist");
    const s = await poll("a1 frozen", async () => {
      const st = await applied(broken);
      return LIVE.every((c) => view(st, c).frozen.includes("apps/a1")) ? st : undefined;
    });
    for (const c of LIVE) {
      expect(virtualServices(c).get(vsKey("apps", "a1", c)), c).toBe(before.get(c));
      const hold = view(s, c).pruneHeld!.holds.find((h) => h.cause === "frozen")!;
      expect(hold.objects, c).toEqual([vsKey("apps", "a1", c)]);
      expect(hold.reason, c).toContain("FREEZE_CONFIG");
      expect(view(s, c).inSync, c).toBe(false);
    }
    expect(deletions).toEqual([]);
  }, 120_000);

  it("(d) Gitmesh-Allow-Deletion: cluster1 lets a mass deletion through on cluster1 only", async () => {
    deletions.length = 0;
    const gone = ["a1", "a3", "a4", "a6", "a7", "a8"];
    const next: MeshSpec = { ...spec, tables: { ...spec.tables, apps: spec.tables.apps!.filter((t) => !gone.includes(t)) }, freeze: [], broken: [] };
    const sha = await commitMesh(next, `drop six apps routes\n\nThe apps team moved to another mesh.\n\nGitmesh-Allow-Deletion: cluster1\n`);
    await applied(sha, ["cluster2"]);
    // cluster1: six of its ten owned VirtualServices deleted (over the agent's 50 % guard, allowed by the commit).
    await poll("cluster1 pruned", () => Promise.resolve(gone.every((t) => !has("cluster1", "apps", t))));
    // cluster2: the guard refuses (the commit does not name it): nothing is deleted there.
    await poll("cluster2 refused the prune", async () => {
      const v = view(await status(), "cluster2");
      return v.output?.sourceCommit === sha && v.applied?.version !== v.output.version;
    });
    for (const t of gone) expect(has("cluster2", "apps", t), t).toBe(true);
    // What each agent was told: the options entry of the output (the API shows it too).
    const optionsOf = async (c: string) => ((await (await fetch(`http://127.0.0.1:${String(httpPort)}/api/clusters/${c}/output`, { headers: readAuth() })).json()) as { options?: unknown }).options;
    expect(await optionsOf("cluster1")).toEqual({ allowMassDeletion: true });
    expect(await optionsOf("cluster2")).toBeUndefined();
    expect(deletions.filter((d) => d.startsWith("cluster2/"))).toEqual([]);
    expect(deletions.filter((d) => d.startsWith("cluster1/")).sort()).toEqual(gone.map((t) => `cluster1/${vsKey("apps", t, "cluster1")}`).sort());

    // The operator confirms for cluster2 with a commit that changes no configuration: only the trailer.
    const confirm = await git.commitFiles("mesh", { "NOTES.md": "apps moved out\n" }, "confirm the apps removal on cluster2\n\nGitmesh-Allow-Deletion: cluster2\n");
    await applied(confirm);
    await poll("cluster2 pruned", () => Promise.resolve(gone.every((t) => !has("cluster2", "apps", t))));
    expect(deletions.filter((d) => d.startsWith("cluster2/")).sort()).toEqual(gone.map((t) => `cluster2/${vsKey("apps", t, "cluster2")}`).sort());
  }, 120_000);
});
