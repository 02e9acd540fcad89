/**
 * `npm run bench -- e2e`: git push + webhook → every affected agent ACKed, p50 and p99 over 50 pushes,
 * for 10 and 50 clusters.
 *
 * The server is a child process (`gitmesh server`, BullMQ on a private redis-server), like in
 * production; the agents run the real agent code (createAgent) in this process, one Kubernetes API
 * emulator each, seeded with bookinfo (examples/discovery). Each push changes the gateways workspace
 * (selected by every cluster: "*"), is pushed with `git push` to a real Git smart-HTTP server, and
 * announced with a signed webhook. A push is done when the server's convergence record of the commit
 * shows an ACK from every cluster (GET /api/commits/<sha>, polled every 10 ms).
 *
 * Full translation of the `medium` preset through the queue against in-process is bench/pipeline.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { appendFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Agent } from "../../src/agent/index.js";
import { silentLogger } from "../../src/core/index.js";
import { createBareRepo, createInProcessAgent, runGit, startGitHttpServer } from "../../src/devtools/index.js";
import { signBody } from "../../src/git-sync/index.js";
import { createKubeEmulator, type KubeEmulator } from "../../src/kube-emulator/index.js";
import { RELAY_SECRETS } from "../../src/relay/index.js";
import { round, type Benchmark, type Figure } from "../harness.js";
import { freePort } from "../../test/helpers/ports.js";
// The tests' private redis-server helper (free port, no persistence).
import { startRedis } from "../../test/helpers/redis.js";

const PUSHES = 50;
const SECRET = "bench-webhook-secret";
const TOKEN = "bench-bootstrap-token-0123456789";
const POLICY = "workspaces/gateways/retry-timeout-httpbin.yaml";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

interface CommitView {
  clusters: Record<string, { appliedAtMs?: number }>;
}

async function fleet(clusters: number, log: (m: string) => void): Promise<{ affected: number; p50: number; p99: number; p50Hook: number; p99Hook: number; max: number }> {
  const root = await mkdtemp(join(tmpdir(), "gitmesh-bench-e2e-"));
  const stops: (() => Promise<void>)[] = [];
  let server: ChildProcess | undefined;
  let serverOut = "";
  try {
    const redis = await startRedis();
    stops.push(() => redis.stop());
    const gitRoot = join(root, "git");
    await mkdir(gitRoot, { recursive: true });
    await createBareRepo(gitRoot, "mesh");
    const git = await startGitHttpServer({ root: gitRoot });
    stops.push(() => git.stop());
    const work = join(root, "work");
    await runGit(["clone", "--quiet", git.url("mesh"), work]);
    await cp("examples/repo-layout", work, { recursive: true });
    await rm(join(work, "clusters"), { recursive: true });
    await mkdir(join(work, "clusters"));
    const names = Array.from({ length: clusters }, (_, i) => `cluster${String(i + 1)}`);
    for (const name of names) {
      await writeFile(
        join(work, "clusters", `${name}.yaml`),
        `apiVersion: admin.gloo.solo.io/v2\nkind: KubernetesCluster\nmetadata:\n  name: ${name}\n  namespace: gloo-mesh\n  labels: {environment: prod}\nspec:\n  clusterDomain: cluster.local\n`,
      );
    }
    const ident = ["-c", "user.name=bench", "-c", "user.email=bench@gitmesh.local"];
    await runGit(["add", "-A"], {}, work);
    await runGit([...ident, "commit", "--quiet", "-m", "fleet"], {}, work);
    await runGit(["push", "--quiet", "origin", "HEAD:main"], {}, work);

    const relayPort = await freePort();
    const httpPort = await freePort();
    const base = `http://127.0.0.1:${String(httpPort)}`;
    server = spawn(
      process.execPath,
      ["bin/gitmesh.js", "server", "--redis-url", redis.url, "--git-url", git.url("mesh"), "--relay-host", "127.0.0.1", "--relay-port", String(relayPort), "--http-host", "127.0.0.1", "--http-port", String(httpPort), "--pki-dir", join(root, "pki"), "--bootstrap", "fleet-token", "--relay-token", TOKEN, "--additional-sans", "127.0.0.1", "--warming-window", "120", "--poll-interval", "300", "--data-dir", join(root, "data"), "--log-level", process.env.GITMESH_BENCH_LOG_LEVEL ?? "warn", "--log-format", "json"],
      { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, GITMESH_WEBHOOK_SECRET: SECRET } },
    );
    const child = server;
    const logFile = process.env.GITMESH_BENCH_SERVER_LOG;
    child.stdout!.on("data", (d: Buffer) => {
      serverOut = (serverOut + d.toString()).slice(-20_000);
      if (logFile !== undefined) appendFileSync(logFile, d);
    });
    child.stderr!.on("data", (d: Buffer) => {
      serverOut = (serverOut + d.toString()).slice(-20_000);
      if (logFile !== undefined) appendFileSync(logFile, d);
    });
    const waitFor = async <T>(what: string, probe: () => Promise<T | undefined>, ms: number, every = 100): Promise<T> => {
      const deadline = Date.now() + ms;
      for (;;) {
        const v = await probe().catch(() => undefined);
        if (v !== undefined) return v;
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`${what}: not within ${String(ms)} ms\n${serverOut}`);
        await sleep(every);
      }
    };
    await waitFor("server healthy", async () => ((await fetch(`${base}/healthz`)).ok ? true : undefined), 60_000);
    const rootCa = await readFile(join(root, "pki", "root-ca.crt"), "utf8");
    // The API read token the server generated once in its --pki-dir.
    const auth = { headers: { authorization: `Bearer ${(await readFile(join(root, "pki", "api-token-read"), "utf8")).trim()}` } };

    const b64 = (s: string) => Buffer.from(s).toString("base64");
    const agents: Agent[] = [];
    for (const [i, name] of names.entries()) {
      const emulator: KubeEmulator = await createKubeEmulator({ port: 0, host: "127.0.0.1" });
      stops.push(() => emulator.stop());
      const dir = join("examples/discovery", i % 2 === 0 ? "cluster1" : "cluster2");
      for (const f of readdirSync(dir).filter((n) => n.endsWith(".yaml"))) await emulator.seedFile(join(dir, f));
      emulator.seed([
        { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } },
        { apiVersion: "v1", kind: "Secret", metadata: { name: RELAY_SECRETS.rootTls.name, namespace: "gitmesh" }, data: { [RELAY_SECRETS.rootTls.keys.caCrt]: b64(rootCa) } },
        { apiVersion: "v1", kind: "Secret", metadata: { name: RELAY_SECRETS.identityToken.name, namespace: "gitmesh" }, data: { [RELAY_SECRETS.identityToken.keys.token]: b64(TOKEN) } },
      ]);
      const agent = createInProcessAgent({ cluster: name, emulator, relayAddress: `127.0.0.1:${String(relayPort)}`, logger: silentLogger });
      await agent.start();
      agents.push(agent);
      stops.push(() => agent.stop());
    }
    log(`${String(clusters)} clusters: agents started`);
    interface Status {
      ready: boolean;
      clusters: { inSync: boolean; output: { complete: boolean } | null }[];
    }
    await waitFor(
      "first convergence",
      async () => {
        const st = (await (await fetch(`${base}/api/status`, auth)).json()) as Status;
        return st.ready && st.clusters.length === clusters && st.clusters.every((c) => c.inSync && c.output?.complete) ? true : undefined;
      },
      300_000,
      500,
    );
    log(`${String(clusters)} clusters: first convergence`);

    const policyPath = join(work, POLICY);
    const original = await readFile(policyPath, "utf8");
    const total: number[] = [];
    const hook: number[] = [];
    /** Clusters whose output the change touches (measured by the warm-up push, i = -1). */
    let affected: readonly string[] = names;
    for (let i = -1; i < PUSHES; i++) {
      await writeFile(policyPath, original.replace(/requestTimeout: \d+s/, `requestTimeout: ${String(100 + i)}s`));
      await runGit([...ident, "commit", "--quiet", "-am", `timeout ${String(100 + i)}s`], {}, work);
      const sha = (await runGit(["rev-parse", "HEAD"], {}, work)).trim();
      const t0 = performance.now();
      await runGit(["push", "--quiet", "origin", "HEAD:main"], {}, work);
      const t1 = performance.now();
      const body = JSON.stringify({ ref: "refs/heads/main", sha });
      const res = await fetch(`${base}/webhooks/generic`, { method: "POST", headers: { "x-signature-256": signBody(SECRET, body) }, body });
      if (res.status !== 202) throw new Error(`webhook answered ${String(res.status)}`);
      const view = async () => {
        const r = await fetch(`${base}/api/commits/${sha}`, auth);
        return r.ok ? ((await r.json()) as CommitView) : undefined;
      };
      if (i < 0) {
        await sleep(5000);
        const v = await view();
        affected = Object.keys(v?.clusters ?? {}).filter((n) => v?.clusters[n]?.appliedAtMs !== undefined);
        log(`${String(clusters)} clusters: the change reaches ${String(affected.length)} of them`);
        if (affected.length === 0) throw new Error(`the warm-up push reached no cluster\n${serverOut}`);
        continue;
      }
      await waitFor(
        `push ${String(i + 1)} ACKed by every affected cluster`,
        async () => {
          const v = await view();
          return v && affected.every((n) => v.clusters[n]?.appliedAtMs !== undefined) ? true : undefined;
        },
        60_000,
        10,
      );
      const t2 = performance.now();
      total.push(t2 - t0);
      hook.push(t2 - t1);
    }
    const s = [...total].sort((a, b) => a - b);
    const h = [...hook].sort((a, b) => a - b);
    return { affected: affected.length, p50: pct(s, 50), p99: pct(s, 99), p50Hook: pct(h, 50), p99Hook: pct(h, 99), max: s[s.length - 1]! };
  } finally {
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server!.once("exit", r));
      server.kill("SIGTERM");
      await exited;
    }
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await rm(root, { recursive: true, force: true });
  }
}

export const benchmark: Benchmark = {
  name: "e2e",
  description: "git push + webhook → every agent ACKed (p50/p99 over 50 pushes), 10 and 50 clusters; server in a child process on Redis, real agents in-process",
  async run({ log }) {
    const figures: Figure[] = [];
    // GITMESH_BENCH_E2E_SIZES=10 runs one size (profiling); GITMESH_BENCH_LOG_LEVEL / _SERVER_LOG keep the server's log.
    const sizes = (process.env.GITMESH_BENCH_E2E_SIZES ?? "10,50").split(",").map(Number);
    for (const n of sizes) {
      const r = await fleet(n, log);
      log(`${String(n)} clusters (${String(r.affected)} affected): p50 ${round(r.p50)} ms, p99 ${round(r.p99)} ms, max ${round(r.max)} ms (webhook→ACK p50 ${round(r.p50Hook)} ms)`);
      figures.push(
        { label: `${String(n)} clusters: clusters the change reaches`, value: r.affected, unit: "clusters" },
        { label: `${String(n)} clusters: push → all ACKed, p50`, value: round(r.p50), unit: "ms" },
        { label: `${String(n)} clusters: push → all ACKed, p99`, value: round(r.p99), unit: "ms" },
        { label: `${String(n)} clusters: webhook → all ACKed, p50`, value: round(r.p50Hook), unit: "ms" },
        { label: `${String(n)} clusters: webhook → all ACKed, p99`, value: round(r.p99Hook), unit: "ms" },
      );
    }
    return figures;
  },
};
