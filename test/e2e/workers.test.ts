// Translation apart from the relay, in separate processes: two `gitmesh server --workers 0` replicas
// (relay, Git sync, API, audit; no translation) and `gitmesh worker` processes on one real Redis, a real
// Git server, and three agents (the real agent code, in this process, against Kubernetes API emulators)
// reaching the replicas through a TCP balancer.
//
// What must hold (issue #17): the replicas alone translate nothing and say so; two workers converge
// the fleet; a worker stopped in the middle of a job and killed loses nothing (BullMQ stalled-job
// recovery hands the job to another worker); and the outputs are byte for byte those of the
// in-process pipeline on the same inputs. The tests run in order and share the fleet.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Agent } from "../../src/agent/index.js";
import { loadDesiredState } from "../../src/config/index.js";
import { silentLogger } from "../../src/core/index.js";
import { createInProcessAgent, startTcpBalancer, type TcpBalancer } from "../../src/devtools/index.js";
import { signBody } from "../../src/git-sync/index.js";
import { createPipeline, type OutputEvent } from "../../src/queue/index.js";
import { createRedisStore } from "../../src/store/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { freePort } from "../helpers/ports.js";
import { repoFiles } from "../helpers/repo-files.js";
import { createProcessGroup, type GitmeshProcess } from "../helpers/processes.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

const TOKEN = "workers-bootstrap-token-0123456789";
const SECRET = "workers-webhook-secret";
const CLUSTERS: readonly string[] = ["cluster1", "cluster2", "cluster3"];
const PREFIX = "gitmesh:";
const b64 = (s: string) => Buffer.from(s).toString("base64");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- processes ----------------------------------------------------------------------------------
type Proc = GitmeshProcess;
const gm = createProcessGroup({ GITMESH_WEBHOOK_SECRET: SECRET });
const procs = gm.procs;
const start = (name: string, args: string[]): Proc => gm.start(name, args);
const poll = <T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs?: number, everyMs?: number): Promise<T> => gm.poll(what, probe, timeoutMs, everyMs);

// ---- the fleet ----------------------------------------------------------------------------------
interface Replica {
  readonly name: string;
  readonly relayPort: number;
  readonly httpPort: number;
  readonly base: string;
}
let redis: TestRedis;
let git: GitServer;
let balancer: TcpBalancer;
let tmp: string;
/** Redis as the test reads it: the store the processes share, and BullMQ's lists. */
let client: Redis;
let repo: Record<string, string>;
const replicas: Replica[] = [];
const kubes = new Map<string, StartedKube>();
const agents: Agent[] = [];

function startReplica(r: Replica): Proc {
  return start(`server ${r.name}`, [
    "server", "--identity", r.name, "--redis-url", redis.url, "--git-url", git.url("mesh"), "--workers", "0",
    "--relay-host", "127.0.0.1", "--relay-port", String(r.relayPort), "--http-host", "127.0.0.1", "--http-port", String(r.httpPort),
    "--pki-dir", join(tmp, "pki"), "--bootstrap", "fleet-token", "--relay-token", TOKEN, "--additional-sans", "127.0.0.1",
    "--warming-window", "90", "--poll-interval", "2", "--data-dir", join(tmp, `data-${r.name}`), "--log-format", "json",
  ]);
}
let workerCount = 0;
async function startWorker(concurrency = 2): Promise<Proc & { readonly port: number }> {
  const port = await freePort();
  const name = `w${String(++workerCount)}`;
  // A short job lock: a dead worker's job is handed back within seconds (production default 30 s).
  const p = start(`worker ${name}`, ["worker", "--redis-url", redis.url, "--identity", name, "--concurrency", String(concurrency), "--http-host", "127.0.0.1", "--http-port", String(port), "--job-lock", "2", "--log-format", "json"]);
  await poll(`worker ${name} ready`, async () => (await fetch(`http://127.0.0.1:${String(port)}/readyz`)).ok, 60_000);
  return Object.assign(p, { port });
}

interface Status {
  ready: boolean;
  commit: { sha: string } | null;
  pipeline: { mode: string; queueDepth?: Record<string, number>; translationWorkers: number; workerProcesses?: number };
  clusters: { name: string; connected: boolean; inSync: boolean; output: { sourceCommit: string; complete: boolean; resources: number } | null; applied: { sourceCommit: string } | null }[];
}
const readToken = () => readFileSync(join(tmp, "pki", "api-token-read"), "utf8").trim();
const statusOf = async (r: Replica): Promise<Status> => {
  const res = await fetch(`${r.base}/api/status`, { signal: AbortSignal.timeout(10_000), headers: { authorization: `Bearer ${readToken()}` } });
  if (!res.ok) throw new Error(`${r.base}/api/status: HTTP ${String(res.status)}`);
  return (await res.json()) as Status;
};
/** `sha` is in force, every cluster applied its newest output, and that of `changed` comes from `sha` (seen from the replica holding its agent). */
const converged = (sha: string, changed: readonly string[] = CLUSTERS) => async () => {
  const all = await Promise.all(replicas.map(statusOf));
  if (!all.every((s) => s.ready && s.commit?.sha === sha)) return undefined;
  for (const cluster of CLUSTERS) {
    const c = all.map((s) => s.clusters.find((x) => x.name === cluster)).find((x) => x?.connected);
    if (!c?.output || !c.applied || !c.inSync || !c.output.complete || c.output.resources === 0) return undefined;
    if (c.applied.sourceCommit !== c.output.sourceCommit || (changed.includes(cluster) && c.output.sourceCommit !== sha)) return undefined;
  }
  return all;
};
const pushHint = async (sha: string) => {
  const body = JSON.stringify({ ref: "refs/heads/main", sha });
  return fetch(`${replicas[0]!.base}/webhooks/generic`, { method: "POST", headers: { "x-signature-256": signBody(SECRET, body) }, body });
};

/**
 * The in-process pipeline's outputs for the repository's files and the discovery the fleet stored:
 * what every output in Redis must equal byte for byte.
 */
async function inProcessOutputs(files: Record<string, string>): Promise<Map<string, string>> {
  const { state } = loadDesiredState(Object.entries(files).map(([path, content]) => ({ path, content })));
  const store = createRedisStore({ redis: client, prefix: PREFIX });
  const outputs = new Map<string, OutputEvent>();
  const p = await createPipeline({ onOutput: (e) => void outputs.set(e.cluster, e) });
  try {
    for (const d of await store.listDiscovery()) await p.setDiscovery(d.cluster, d.snapshot);
    await p.setDesiredState({ commit: "reference", ref: "main", state, changedKeys: [] });
    await p.idle();
  } finally {
    await p.close();
  }
  return new Map([...outputs].map(([c, e]) => [c, JSON.stringify(e.resources)]));
}
async function redisOutputs(): Promise<Map<string, string>> {
  const store = createRedisStore({ redis: client, prefix: PREFIX });
  const out = new Map<string, string>();
  for (const c of CLUSTERS) out.set(c, JSON.stringify((await store.getOutput(c))?.resources ?? null));
  return out;
}
const activeJobs = async () => (await client.llen(`${PREFIX}bull:workspace:active`)) + (await client.llen(`${PREFIX}bull:cluster:active`));

let timeout = 5;
/** A change to the bookinfo-backends workspace (it selects cluster1 and cluster2). */
const BACKENDS = ["cluster1", "cluster2"];
async function pushChange(): Promise<string> {
  timeout += 1;
  const path = "workspaces/bookinfo-backends/resilience.yaml";
  repo[path] = readFileSync(join("examples/repo-layout", path), "utf8").replace(/requestTimeout: \d+s/, `requestTimeout: ${String(timeout)}s`);
  const sha = await git.commitFiles("mesh", { [path]: repo[path] }, `timeout ${String(timeout)}s`);
  expect((await pushHint(sha)).status).toBe(202);
  return sha;
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "gitmesh-workers-"));
  redis = await startRedis();
  client = new Redis(redis.url);
  git = await startGitServer();
  await git.createRepo("mesh");
  repo = repoFiles("examples/repo-layout");
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
  await poll("replica a healthy", async () => (await fetch(`${replicas[0]!.base}/healthz`)).ok, 60_000);
  startReplica(replicas[1]!);
  await poll("replica b healthy", async () => (await fetch(`${replicas[1]!.base}/healthz`)).ok, 60_000);
  const rootCa = readFileSync(join(tmp, "pki", "root-ca.crt"), "utf8");
  for (const cluster of CLUSTERS) {
    const dir = join("examples/discovery", cluster === "cluster3" ? "cluster2" : cluster);
    const kube = await startKube({});
    for (const f of readdirSync(dir).filter((n) => n.endsWith(".yaml"))) {
      if (cluster === "cluster3") kube.emulator.seed(readFileSync(join(dir, f), "utf8").replace(/trustDomain: cluster2/g, "trustDomain: cluster3"), f);
      else await kube.emulator.seedFile(join(dir, f));
    }
    kube.emulator.seed([
      { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-root-tls-secret", namespace: "gitmesh" }, data: { "ca.crt": b64(rootCa) } },
      { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-identity-token-secret", namespace: "gitmesh" }, data: { token: b64(TOKEN) } },
    ]);
    kubes.set(cluster, kube);
    const agent = createInProcessAgent({ cluster, emulator: kube.emulator, relayAddress: `127.0.0.1:${String(balancer.port)}`, logger: silentLogger });
    await agent.start();
    agents.push(agent);
  }
}, 180_000);

afterAll(async () => {
  for (const a of agents) await a.stop().catch(() => undefined);
  await Promise.all(procs.map((p) => p.kill()));
  await balancer.stop();
  for (const k of kubes.values()) await k.stop();
  await git.stop();
  client.disconnect();
  await redis.stop();
  rmSync(tmp, { recursive: true, force: true });
}, 60_000);

describe("server replicas with --workers 0 and gitmesh worker processes", () => {
  let first: string;

  it("the replicas alone translate nothing, and say so", async () => {
    first = (await git.revParse("mesh", "refs/heads/main"))!;
    // Every agent reported its discovery and the commit is in force: the jobs wait in Redis.
    const all = await poll(
      "jobs queued with no worker",
      async () => {
        const s = await Promise.all(replicas.map(statusOf));
        const queued = (s[0]!.pipeline.queueDepth?.workspace ?? 0) + (s[0]!.pipeline.queueDepth?.cluster ?? 0);
        return s.every((x) => x.commit?.sha === first) && queued > 0 && (await client.hlen(`${PREFIX}discovery`)) === CLUSTERS.length ? s : undefined;
      },
      120_000,
    );
    for (const s of all) {
      expect(s.pipeline.translationWorkers).toBe(0);
      expect(s.pipeline.workerProcesses).toBe(0);
      expect(s.clusters.filter((c) => c.output !== null)).toEqual([]);
    }
    // The server exports the queue depth the workers' autoscaler reads (chart: HPA or KEDA on
    // gitmesh_pipeline_queue_depth), also while no worker runs, so that workers can scale up from zero.
    for (const r of replicas) {
      const metrics = await (await fetch(`${r.base}/metrics`)).text();
      const depth = [...metrics.matchAll(/^gitmesh_pipeline_queue_depth\{type="(workspace|cluster)"\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[2]), 0);
      expect(depth, `${r.name}: gitmesh_pipeline_queue_depth`).toBeGreaterThan(0);
    }
    // gitmesh check names the cause.
    const check = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, ["bin/gitmesh.js", "check", "--server", replicas[0]!.base, "--token-file", join(tmp, "pki", "api-token-read")], { stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      child.stdout.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr.on("data", (d: Buffer) => (out += d.toString()));
      child.on("close", (code) => resolve({ code, out }));
    });
    expect(check.code).toBe(1);
    expect(check.out).toContain("no process takes translation jobs");
  }, 180_000);

  it("two workers converge the fleet, with outputs byte for byte those of the in-process pipeline", async () => {
    await startWorker();
    await startWorker();
    const all = await poll("first convergence", converged(first), 150_000);
    for (const s of all) expect(s.pipeline.workerProcesses).toBe(2);
    const expected = await inProcessOutputs(repo);
    expect([...expected.keys()].sort()).toEqual([...CLUSTERS]);
    expect(await redisOutputs()).toEqual(expected);
    // The replicas ran no job: every translation came from the workers.
    const translated = /"logger":"[a-z.]*pipeline","msg":"output stored"/;
    for (const p of procs.filter((x) => x.name.startsWith("server"))) expect(p.output()).not.toMatch(translated);
    expect(procs.filter((x) => x.name.startsWith("worker")).some((p) => translated.test(p.output()))).toBe(true);
  }, 240_000);

  it("a worker stopped in the middle of a job and killed loses nothing: another worker takes the job over", async () => {
    // One worker left, taking one job per type at a time: it is the one holding any running job.
    const workers = procs.filter((p) => p.name.startsWith("worker"));
    await workers[1]!.kill("SIGTERM"); // a clean stop: it finishes what it holds
    expect(workers[1]!.output()).toContain('"msg":"worker stopped"');
    const victim = workers[0]!;
    let sha = "";
    let frozen = false;
    for (let attempt = 0; attempt < 8 && !frozen; attempt++) {
      sha = await pushChange();
      // Freeze the worker the moment a job is running; then it cannot finish it or renew its lock.
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && !frozen) {
        if ((await activeJobs()) > 0) {
          victim.child.kill("SIGSTOP");
          await sleep(50);
          if ((await activeJobs()) > 0) frozen = true;
          else victim.child.kill("SIGCONT");
        }
        const st = await statusOf(replicas[0]!);
        if (!frozen && (st.pipeline.queueDepth?.workspace ?? 0) + (st.pipeline.queueDepth?.cluster ?? 0) === 0 && st.commit?.sha === sha && (await converged(sha, BACKENDS)().catch(() => undefined))) break;
      }
    }
    expect(frozen, "a worker frozen while it held a job").toBe(true);
    const held = await activeJobs();
    await victim.kill("SIGKILL");
    expect(await activeJobs()).toBe(held); // the job is still marked running, by a process that is gone

    const rescuer = await startWorker();
    await poll("the new commit applied everywhere", converged(sha, BACKENDS), 120_000);
    // The frozen job itself (which the convergence may not have needed) was found and run again.
    await poll("the dead worker's job handed back and run", async () => /job stalled \(its worker stopped\); handed back to the queue/.test(rescuer.output()) && (await activeJobs()) === 0, 60_000);
    expect(await redisOutputs()).toEqual(await inProcessOutputs(repo));
    for (const p of procs) expect(p.output(), p.name).not.toContain('"msg":"job failed"');
  }, 360_000);
});
