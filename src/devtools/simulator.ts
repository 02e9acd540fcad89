/**
 * The fleet simulator behind `gitmesh simulate`: the real management server (and translation
 * workers) as child processes, on Redis, reading a generated configuration repository from a real
 * Git smart-HTTP server, with N simulated agents in this process speaking the real relay protocol.
 * It pushes a stream of commits, each changing one policy that every cluster's output depends on, and
 * measures what an operator sizes a management plane with:
 *
 * - push → all applied: from `git push` to the moment the last cluster's agent ACKed a complete
 *   output rendered from the commit (agents' own clock), cross-checked with the server's convergence
 *   record (GET /api/commits/<sha>: every cluster applied), which also gives accepted → all applied;
 * - CPU time and RSS of the server and of each worker (/proc or ps), Redis used_memory (INFO) and the
 *   memory of the simulation's own keys (MEMORY USAGE);
 * - relay payload bytes per commit as the agents received them;
 * - server RSS per agent: (RSS after the fleet's first convergence − RSS before any agent) / N.
 *
 * Pushes are sequential: the next one starts when the previous one is applied everywhere (a latency
 * measurement, not a throughput one). Everything it starts is stopped, and its directory removed
 * (unless `keep`), on success, failure and abort.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, open, readFile, rm, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describeError, stripCredentials } from "../core/index.js";
import type { DiscoverySnapshot } from "../discovery/index.js";
import { signBody } from "../git-sync/index.js";
import { createRedisClient, parseRedisUrl, redisKeyPrefix, scanRedisKeys } from "../queue/index.js";
import { generateKeyPem } from "../relay/index.js";
import { createBareRepo, runGit, startGitHttpServer } from "./git-http-server.js";
import { createProcessSampler, type ProcessSampler, type ProcessStats } from "./process-stats.js";
import { freePort, redisUnreachable, removeRedisKeys, startPrivateRedis } from "./redis-server.js";
import { createSimulatedAgent, type SimulatedAgent } from "./simulated-agent.js";
import { simulationFleet, SIMULATION_POLICY_PATH } from "./simulation-fleet.js";

export interface SimulationOptions {
  readonly clusters: number;
  readonly servicesPerCluster: number;
  /** Pushes measured (after the fleet's first convergence). */
  readonly commits: number;
  /** `gitmesh worker` processes; 0: the server translates in-process. */
  readonly workers: number;
  /** An existing Redis (its keys under a private prefix, removed at the end); default: a private redis-server. */
  readonly redisUrl?: string;
  /** Whether the server writes the audit branch (as it does by default in production). */
  readonly audit: boolean;
  /** Keep the working directory (repository, server and worker logs) after the run. */
  readonly keep: boolean;
  /** Longest wait for one push to be applied everywhere. */
  readonly pushTimeoutMs: number;
  /** Longest wait for the fleet to start: register, connect, first convergence. */
  readonly startTimeoutMs: number;
  /** Path of bin/gitmesh.js (the server and workers run as `node <bin> server|worker …`). */
  readonly gitmeshBin: string;
  /**
   * The environment the server and workers start from (PATH, HOME, NODE_OPTIONS…). Their settings are
   * the simulator's alone: GITMESH_*, REDIS_URL, POD_NAME and KUBERNETES_* are dropped from it (a
   * variable of the shell, or KUBERNETES_SERVICE_HOST in a pod, would change what is measured).
   */
  readonly environment: Readonly<Record<string, string | undefined>>;
  /** Progress lines (the CLI writes them to stderr). */
  readonly progress: (line: string) => void;
  /** Abort (Ctrl-C): every wait ends and everything is stopped. */
  readonly signal?: AbortSignal;
}

export interface Distribution {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly minMs: number;
}

export interface ProcessFigures {
  readonly name: string;
  readonly pid: number;
  /** CPU time since the process started. */
  readonly cpuSeconds: number;
  /** CPU time spent while the measured pushes ran. */
  readonly cpuSecondsDuringPushes: number;
  readonly rssBytes: number;
  readonly peakRssBytes: number;
}

export interface CommitFigures {
  readonly sha: string;
  readonly pushToAppliedMs: number;
  /** Clusters whose agent ACKed a complete output of the commit. */
  readonly clustersApplied: number;
  /** The server's record shows every cluster applied the commit. */
  readonly confirmedByServer: boolean;
  /** Server clock: commit accepted → the last cluster's ACK. */
  readonly acceptedToAppliedMs?: number;
  /** Relay payload bytes of the updates that carried the commit, all agents together. */
  readonly payloadBytes: number;
}

export interface SimulationReport {
  readonly clusters: number;
  readonly servicesPerCluster: number;
  readonly services: number;
  readonly workspaces: number;
  readonly configObjects: number;
  /** Output resources per cluster (mean over the fleet, at the end). */
  readonly resourcesPerCluster: number;
  readonly workers: number;
  readonly commits: number;
  readonly pushToApplied: Distribution;
  /** Server clock, for the commits the server confirmed. */
  readonly acceptedToApplied?: Distribution;
  readonly perCommit: readonly CommitFigures[];
  readonly start: { readonly registerMs: number; readonly connectMs: number; readonly firstConvergenceMs: number };
  readonly server: ProcessFigures & { readonly rssBeforeAgentsBytes: number; readonly rssWithAgentsBytes: number; readonly rssPerAgentBytes: number };
  readonly workerProcesses: readonly ProcessFigures[];
  readonly redis: { readonly external: boolean; readonly usedMemoryBytes: number; readonly usedMemoryPeakBytes: number; readonly keys: number; readonly keysMemoryBytes: number };
  readonly relay: { readonly payloadBytesPerCommit: number; readonly payloadBytesPerCommitPerCluster: number; readonly firstSyncPayloadBytes: number; readonly sessions: number };
  readonly simulator: { readonly cpuSeconds: number; readonly peakRssBytes: number };
  readonly machine: { readonly cpus: number; readonly loadAverageStart: readonly number[]; readonly loadAverageEnd: readonly number[] };
  /** Set when `keep`: the working directory. */
  readonly directory?: string;
}

/** The simulation could not run or did not converge (a reason a person can act on). */
export class SimulationError extends Error {
  readonly code = "SimulationError";
}

/** Ctrl-C. */
export class SimulationAbortedError extends Error {
  readonly code = "SimulationAbortedError";
  constructor() {
    super("interrupted");
  }
}

const TOKEN_BYTES = 24;
const REGISTER_BATCH = 50;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Child {
  readonly name: string;
  readonly process: ChildProcess;
  readonly log: string;
  readonly exited: Promise<number | null>;
}

export async function runSimulation(options: SimulationOptions): Promise<SimulationReport> {
  const t0 = performance.now();
  const loadAverageStart = loadavg().map((l) => Math.round(l * 100) / 100);
  const say = (line: string) => options.progress(`[${((performance.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${line}`);
  const root = await mkdtemp(join(tmpdir(), "gitmesh-simulate-"));
  const stops: { name: string; stop: () => Promise<void> }[] = [];
  const children: Child[] = [];
  const agents: SimulatedAgent[] = [];
  let sampler: ProcessSampler | undefined;
  let failed = true;
  const checkAbort = () => {
    if (options.signal?.aborted) throw new SimulationAbortedError();
  };

  /** Polls `probe` until it returns a value; fails when a child exits, on abort, or after `ms`. */
  const waitFor = async <T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms: number, everyMs = 100): Promise<T> => {
    const deadline = performance.now() + ms;
    for (;;) {
      checkAbort();
      const dead = children.find((c) => c.process.exitCode !== null || c.process.signalCode !== null);
      if (dead) throw new SimulationError(`${dead.name} exited (${String(dead.process.exitCode ?? dead.process.signalCode)}) while waiting for ${what}${await logTail(dead.log)}`);
      const v = await Promise.resolve(probe()).catch(() => undefined);
      if (v !== undefined) return v;
      if (performance.now() > deadline) throw new SimulationError(`${what}: not within ${String(Math.round(ms / 1000))} s`);
      await sleep(everyMs);
    }
  };

  try {
    // ---- Redis ---------------------------------------------------------------------------------
    const prefix = `gitmesh-sim-${randomBytes(4).toString("hex")}`;
    let redisUrl = options.redisUrl;
    if (redisUrl !== undefined) {
      const why = await redisUnreachable(redisUrl);
      if (why !== undefined) throw new SimulationError(`--redis-url cannot be reached: ${why}`);
      const external = redisUrl;
      stops.push({ name: "the simulation's keys in Redis", stop: () => removeRedisKeys(external, prefix) });
      say(`Redis: ${stripCredentials(redisUrl)} (keys under ${prefix}, removed at the end)`);
    } else {
      const started = await startPrivateRedis(join(root, "redis"));
      if (!started) throw new SimulationError("redis-server could not be started: install Redis (the server's queue and store, and the workers, need it), or pass --redis-url");
      redisUrl = started.url;
      stops.push({ name: "redis-server", stop: started.stop });
      say(`Redis: private redis-server on ${started.url}`);
    }
    const redisConfig = parseRedisUrl(redisUrl);
    const redis = createRedisClient(redisConfig, { maxRetriesPerRequest: 1, lazyConnect: true });
    redis.on("error", () => undefined);
    stops.push({
      name: "Redis client",
      stop: () => {
        redis.disconnect();
        return Promise.resolve();
      },
    });

    // ---- Git -----------------------------------------------------------------------------------
    const fleet = simulationFleet({ clusters: options.clusters, servicesPerCluster: options.servicesPerCluster });
    const gitRoot = join(root, "git");
    await mkdir(gitRoot, { recursive: true });
    await createBareRepo(gitRoot, "mesh");
    const git = await startGitHttpServer({ root: gitRoot });
    stops.push({ name: "Git server", stop: () => git.stop() });
    const work = join(root, "work");
    await runGit(["clone", "--quiet", git.url("mesh"), work]);
    for (const f of fleet.files) {
      await mkdir(dirname(join(work, f.path)), { recursive: true });
      await writeFile(join(work, f.path), f.content);
    }
    const ident = ["-c", "user.name=gitmesh simulate", "-c", "user.email=simulate@gitmesh.local"];
    await runGit(["add", "-A"], {}, work);
    await runGit([...ident, "commit", "--quiet", "-m", `simulated fleet: ${String(options.clusters)} clusters x ${String(options.servicesPerCluster)} services`], {}, work);
    await runGit(["push", "--quiet", "origin", "HEAD:main"], {}, work);
    const initial = (await runGit(["rev-parse", "HEAD"], {}, work)).trim();
    say(`Git: ${String(fleet.files.length)} files (${String(fleet.counts.configObjects)} objects, ${String(fleet.counts.workspaces)} workspaces) pushed to ${git.url("mesh")}`);

    // ---- Server and workers ----------------------------------------------------------------------
    const relayPort = await freePort();
    const httpPort = await freePort();
    const base = `http://127.0.0.1:${String(httpPort)}`;
    const token = randomBytes(TOKEN_BYTES).toString("hex");
    const webhookSecret = randomBytes(TOKEN_BYTES).toString("hex");
    const pki = join(root, "pki");
    // Secrets go by environment, not argv (which `ps` shows to every user of the machine).
    const inherited = Object.fromEntries(Object.entries(options.environment).filter(([k]) => !/^(GITMESH_|KUBERNETES_)|^(REDIS_URL|POD_NAME)$/.test(k)));
    const env = { ...inherited, GITMESH_WEBHOOK_SECRET: webhookSecret, GITMESH_RELAY_TOKEN: token, REDIS_URL: redisUrl, GITMESH_REDIS_PREFIX: prefix };
    const serverArgs = [
      "server",
      "--git-url", git.url("mesh"),
      "--relay-host", "127.0.0.1",
      "--relay-port", String(relayPort),
      "--http-host", "127.0.0.1",
      "--http-port", String(httpPort),
      "--pki-dir", pki,
      "--bootstrap", "fleet-token",
      "--additional-sans", "127.0.0.1",
      // Every cluster connects: warming must wait for all of them, however long registration takes.
      "--warming-window", String(Math.ceil(options.startTimeoutMs / 1000)),
      // Webhooks bring every commit; polling (the backstop) would only add noise.
      "--poll-interval", "300",
      "--data-dir", join(root, "server-data"),
      "--identity", "simulated-server",
      "--log-level", "warn",
      "--log-format", "json",
      ...(options.workers > 0 ? ["--workers", "0"] : []),
      ...(options.audit ? [] : ["--no-audit"]),
    ];
    const server = await startChild("server", options.gitmeshBin, serverArgs, env, join(root, "server.log"));
    children.push(server);
    stops.push({ name: "server", stop: () => stopChild(server) });
    await waitFor("the server to answer /healthz", async () => ((await fetch(`${base}/healthz`)).ok ? true : undefined), 120_000);
    const workerChildren: Child[] = [];
    for (let i = 1; i <= options.workers; i++) {
      const port = await freePort();
      const name = `worker-${String(i)}`;
      const w = await startChild(name, options.gitmeshBin, ["worker", "--http-host", "127.0.0.1", "--http-port", String(port), "--identity", `simulated-${name}`, "--log-level", "warn", "--log-format", "json"], env, join(root, `${name}.log`));
      children.push(w);
      workerChildren.push(w);
      stops.push({ name, stop: () => stopChild(w) });
      await waitFor(`${name} to answer /readyz`, async () => ((await fetch(`http://127.0.0.1:${String(port)}/readyz`)).ok ? true : undefined), 120_000);
    }
    say(`Server: pid ${String(server.process.pid)}, relay 127.0.0.1:${String(relayPort)}, HTTP ${base}; ${options.workers > 0 ? `${String(options.workers)} worker process(es), the server translates nothing` : "translation in the server process"}`);
    const rootCaPem = await readFile(join(pki, "root-ca.crt"), "utf8");
    const auth = { headers: { authorization: `Bearer ${(await readFile(join(pki, "api-token-read"), "utf8")).trim()}` } };
    const api = async <T>(path: string): Promise<T | undefined> => {
      const res = await fetch(`${base}${path}`, auth);
      return res.ok ? ((await res.json()) as T) : undefined;
    };
    await waitFor("the server to accept the first commit", async () => ((await api<{ commit: { sha: string } | null }>("/api/status"))?.commit?.sha === initial ? true : undefined), 120_000, 200);

    const pids: Record<string, number> = { server: server.process.pid! };
    for (const w of workerChildren) pids[w.name] = w.process.pid!;
    sampler = createProcessSampler(pids);
    sampler.start();
    await sleep(1000);
    await sampler.sample();
    const rssBeforeAgents = sampler.latest("server")?.rssBytes ?? 0;

    // ---- Agents --------------------------------------------------------------------------------
    const keyPem = generateKeyPem();
    /** Per commit being waited for: the clusters whose agent has not ACKed a complete output of it yet. */
    const waiting = new Map<string, Set<string>>();
    const onApplied = (cluster: string, commit: string) => void waiting.get(commit)?.delete(cluster);
    for (const [cluster, snapshot] of fleet.discovery) {
      agents.push(createSimulatedAgent({ cluster, relayAddress: `127.0.0.1:${String(relayPort)}`, rootCaPem, token, keyPem, discovery: snapshot as unknown as DiscoverySnapshot, onApplied }));
    }
    stops.push({
      name: "agents",
      stop: async () => {
        await Promise.all(agents.map((a) => a.close()));
      },
    });
    /** Starts counting the ACKs of `commit` (before it is pushed, so that none is missed). */
    const track = (commit: string) => waiting.set(commit, new Set(agents.filter((a) => a.applied(commit) === undefined).map((a) => a.cluster)));
    /** Until every agent ACKed a complete output of a tracked commit. */
    const untilApplied = async (commit: string, ms: number, what: string): Promise<void> => {
      const remaining = waiting.get(commit)!;
      try {
        await waitFor(what, () => (remaining.size === 0 ? true : undefined), ms, 20);
      } catch (err) {
        if (!(err instanceof SimulationError) || remaining.size === 0) throw err;
        const why = [...remaining].slice(0, 5).map((c) => {
          const problem = agents.find((a) => a.cluster === c)?.lastProblem();
          return problem === undefined ? c : `${c} (${problem})`;
        });
        throw new SimulationError(`${err.message}: ${String(agents.length - remaining.size)} of ${String(agents.length)} clusters applied it; not: ${why.join(", ")}${remaining.size > 5 ? ", …" : ""}`);
      } finally {
        waiting.delete(commit);
      }
    };

    const tRegister = performance.now();
    for (let i = 0; i < agents.length; i += REGISTER_BATCH) {
      checkAbort();
      await Promise.all(agents.slice(i, i + REGISTER_BATCH).map((a) => a.register()));
      if (agents.length > REGISTER_BATCH && (i / REGISTER_BATCH) % 4 === 3) say(`Agents: ${String(Math.min(agents.length, i + REGISTER_BATCH))} of ${String(agents.length)} registered`);
    }
    const registerMs = performance.now() - tRegister;
    say(`Agents: ${String(agents.length)} registered (bootstrap token + CSR → client certificate) in ${seconds(registerMs)}`);
    const tConnect = performance.now();
    track(initial);
    let synced = 0;
    for (const a of agents) {
      a.connect();
      void a.synced().then(() => synced++);
    }
    await waitFor("every agent's session to sync its discovery", () => (synced === agents.length ? true : undefined), options.startTimeoutMs, 50);
    const connectMs = performance.now() - tConnect;
    say(`Agents: ${String(agents.length)} mTLS sessions up, discovery snapshots acknowledged in ${seconds(connectMs)}`);
    await untilApplied(initial, options.startTimeoutMs, "the first convergence (every cluster applied the first commit)");
    const firstConvergenceMs = performance.now() - tConnect;
    say(`Fleet: first commit applied by all ${String(agents.length)} clusters, ${seconds(firstConvergenceMs)} after connecting`);
    await sleep(2000);
    await sampler.sample();
    const rssWithAgents = sampler.latest("server")?.rssBytes ?? 0;
    const firstSyncPayloadBytes = agents.reduce((n, a) => n + a.totals().payloadBytes, 0);

    // ---- Pushes --------------------------------------------------------------------------------
    const cpuBefore = new Map(Object.keys(pids).map((n) => [n, sampler!.latest(n)?.cpuMs ?? 0]));
    const perCommit: CommitFigures[] = [];
    const policy = join(work, SIMULATION_POLICY_PATH);
    for (let i = 0; i < options.commits; i++) {
      await writeFile(policy, fleet.policyChange(i).content);
      await runGit([...ident, "commit", "--quiet", "-am", `push ${String(i + 1)}: requestTimeout`], {}, work);
      const sha = (await runGit(["rev-parse", "HEAD"], {}, work)).trim();
      track(sha);
      const pushed = performance.now();
      await runGit(["push", "--quiet", "origin", "HEAD:main"], {}, work);
      const body = JSON.stringify({ ref: "refs/heads/main", sha });
      const res = await fetch(`${base}/webhooks/generic`, { method: "POST", headers: { "content-type": "application/json", "x-signature-256": signBody(webhookSecret, body) }, body });
      if (res.status !== 202) throw new SimulationError(`the server answered the webhook with HTTP ${String(res.status)}: ${await res.text()}`);
      await untilApplied(sha, options.pushTimeoutMs, `push ${String(i + 1)} (${sha.slice(0, 12)}) applied by every cluster`);
      const acks = agents.map((a) => a.applied(sha));
      const last = Math.max(...acks.map((a) => a?.ackedAt ?? Number.NaN));
      // The server's record of the commit: every cluster applied it (the ACKs reached the server), and when.
      const view = await waitFor(
        `the server's record of ${sha.slice(0, 12)}`,
        async () => {
          const v = await api<{ acceptedAt: string | null; applied: number; clusters: Record<string, { appliedAtMs?: number }> }>(`/api/commits/${sha}`);
          return v && v.applied >= agents.length ? v : undefined;
        },
        10_000,
        50,
      ).catch((err: unknown) => {
        if (err instanceof SimulationAbortedError) throw err;
        return undefined;
      });
      const lastAtServer = view ? Math.max(...Object.values(view.clusters).map((c) => c.appliedAtMs ?? 0)) : undefined;
      const acceptedAt = view?.acceptedAt ? Date.parse(view.acceptedAt) : undefined;
      const figures: CommitFigures = {
        sha,
        pushToAppliedMs: last - pushed,
        clustersApplied: acks.filter((a) => a !== undefined).length,
        confirmedByServer: view !== undefined,
        ...(acceptedAt !== undefined && lastAtServer !== undefined ? { acceptedToAppliedMs: lastAtServer - acceptedAt } : {}),
        payloadBytes: acks.reduce((n, a) => n + (a?.payloadBytes ?? 0), 0),
      };
      perCommit.push(figures);
      say(`push ${String(i + 1)}/${String(options.commits)} ${sha.slice(0, 12)}: applied by ${String(figures.clustersApplied)} clusters in ${String(Math.round(figures.pushToAppliedMs))} ms${figures.confirmedByServer ? "" : " (the server's record does not show them all)"}`);
    }
    await sampler.sample();
    const processFigures = (name: string, pid: number): ProcessFigures => {
      const s: ProcessStats | undefined = sampler!.latest(name);
      return { name, pid, cpuSeconds: (s?.cpuMs ?? 0) / 1000, cpuSecondsDuringPushes: ((s?.cpuMs ?? 0) - (cpuBefore.get(name) ?? 0)) / 1000, rssBytes: s?.rssBytes ?? 0, peakRssBytes: s?.peakRssBytes ?? 0 };
    };

    // ---- Redis memory ----------------------------------------------------------------------------
    await redis.connect().catch(() => undefined);
    const info = await redis.info("memory");
    const infoNumber = (key: string) => Number(new RegExp(`^${key}:(\\d+)`, "m").exec(info)?.[1] ?? 0);
    // The run's keys: the server's prefix (hash-tagged on a Cluster, so all in one slot: one pipeline).
    const found = await scanRedisKeys(redis, `${redisKeyPrefix(redisConfig, prefix)}*`);
    const keys = found.length;
    let keysMemoryBytes = 0;
    for (let i = 0; i < found.length; i += 1000) {
      const pipeline = redis.pipeline();
      for (const k of found.slice(i, i + 1000)) pipeline.call("MEMORY", "USAGE", k);
      for (const [, v] of (await pipeline.exec()) ?? []) keysMemoryBytes += typeof v === "number" ? v : 0;
    }

    // ---- Report --------------------------------------------------------------------------------
    const totalPayload = perCommit.reduce((n, c) => n + c.payloadBytes, 0);
    const confirmed = perCommit.filter((c) => c.acceptedToAppliedMs !== undefined).map((c) => c.acceptedToAppliedMs!);
    const own = process.resourceUsage();
    const report: SimulationReport = {
      clusters: options.clusters,
      servicesPerCluster: options.servicesPerCluster,
      services: fleet.counts.services,
      workspaces: fleet.counts.workspaces,
      configObjects: fleet.counts.configObjects,
      resourcesPerCluster: Math.round(agents.reduce((n, a) => n + a.totals().resources, 0) / agents.length),
      workers: options.workers,
      commits: perCommit.length,
      pushToApplied: distribution(perCommit.map((c) => c.pushToAppliedMs)),
      ...(confirmed.length > 0 ? { acceptedToApplied: distribution(confirmed) } : {}),
      perCommit,
      start: { registerMs: Math.round(registerMs), connectMs: Math.round(connectMs), firstConvergenceMs: Math.round(firstConvergenceMs) },
      server: { ...processFigures("server", pids.server!), rssBeforeAgentsBytes: rssBeforeAgents, rssWithAgentsBytes: rssWithAgents, rssPerAgentBytes: Math.round((rssWithAgents - rssBeforeAgents) / agents.length) },
      workerProcesses: workerChildren.map((w) => processFigures(w.name, pids[w.name]!)),
      redis: { external: options.redisUrl !== undefined, usedMemoryBytes: infoNumber("used_memory"), usedMemoryPeakBytes: infoNumber("used_memory_peak"), keys, keysMemoryBytes },
      relay: {
        payloadBytesPerCommit: Math.round(totalPayload / Math.max(1, perCommit.length)),
        payloadBytesPerCommitPerCluster: Math.round(totalPayload / Math.max(1, perCommit.length) / agents.length),
        firstSyncPayloadBytes,
        sessions: agents.reduce((n, a) => n + a.totals().sessions, 0),
      },
      simulator: { cpuSeconds: (own.userCPUTime + own.systemCPUTime) / 1e6, peakRssBytes: own.maxRSS * 1024 },
      machine: { cpus: cpus().length, loadAverageStart, loadAverageEnd: loadavg().map((l) => Math.round(l * 100) / 100) },
      ...(options.keep ? { directory: root } : {}),
    };
    failed = false;
    return report;
  } catch (err) {
    // After a Ctrl-C the children stop on their own, and whatever was talking to them fails: that is the interruption.
    if (options.signal?.aborted) throw new SimulationAbortedError();
    if (!(err instanceof SimulationAbortedError) && !(err instanceof SimulationError)) throw new SimulationError(describeError(err), { cause: err });
    throw err;
  } finally {
    sampler?.stop();
    say(options.signal?.aborted ? "interrupted: stopping everything" : "stopping agents, workers, server, Git and Redis");
    for (const s of stops.reverse()) await s.stop().catch((err: unknown) => options.progress(`simulate: stopping ${s.name}: ${describeError(err)}`));
    if (options.keep) options.progress(`simulate: kept ${root} (server.log${options.workers > 0 ? ", worker-*.log" : ""}, the configuration repository in work/)`);
    else await rm(root, { recursive: true, force: true });
    if (failed && !options.keep && options.signal?.aborted !== true) options.progress("simulate: run with --keep to keep the server's log and the repository");
  }
}

function distribution(values: readonly number[]): Distribution {
  const s = [...values].sort((a, b) => a - b);
  const pct = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? 0;
  const r = (v: number) => Math.round(v * 10) / 10;
  return { p50Ms: r(pct(50)), p99Ms: r(pct(99)), maxMs: r(s.at(-1) ?? 0), minMs: r(s[0] ?? 0) };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function startChild(name: string, bin: string, args: readonly string[], env: NodeJS.ProcessEnv, log: string): Promise<Child> {
  const file = await open(log, "a");
  // In the simulator's process group: a Ctrl-C in the terminal reaches the children too (they stop
  // themselves), and the simulator's teardown then finds them gone.
  const child = spawn(process.execPath, [bin, ...args], { env, stdio: ["ignore", file.fd, file.fd] });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  child.once("spawn", () => void file.close());
  child.once("error", () => void file.close());
  return { name, process: child, log, exited };
}

/** SIGTERM, then SIGKILL after 15 s. */
async function stopChild(c: Child): Promise<void> {
  if (c.process.exitCode !== null || c.process.signalCode !== null) return;
  c.process.kill("SIGTERM");
  const killed = setTimeout(() => c.process.kill("SIGKILL"), 15_000);
  await c.exited;
  clearTimeout(killed);
}

async function logTail(path: string): Promise<string> {
  const text = await readFile(path, "utf8").catch(() => "");
  const lines = text.trim().split("\n").filter(Boolean).slice(-15);
  return lines.length > 0 ? `; the end of its log:\n  ${lines.join("\n  ")}` : "";
}
