/**
 * `gitmesh demo [--exit]`: the whole system on one machine, from a fresh clone.
 *
 * - Redis: REDIS_URL if set, else a private `redis-server` (free port, temp dir) if installed, else
 *   standalone (in memory);
 * - Git: examples/repo-layout pushed to a bare repository served over smart HTTP by a local
 *   `git http-backend` bridge; every push to it posts a signed webhook to the server;
 * - two emulated Kubernetes clusters (cluster1, cluster2) seeded from examples/discovery, with the
 *   relay root CA and a single-use bootstrap credential per cluster (what `gitmesh cluster register`
 *   writes into each cluster);
 * - the management server and one agent per cluster (in-process);
 * - progress as clusters register, warm, translate and apply; a summary; how to push a change.
 *
 * Every step says what it starts before it starts (the first run on a fresh machine takes minutes:
 * compiling and loading the modules alone takes seconds), and a wait that prints nothing for
 * STILL_WAITING_MS says what it is still waiting for. The modules behind the demo are imported only
 * once the first line is out, which is why they are loaded with import() below.
 *
 * `--exit` stops after the first full convergence (for scripts and CI).
 */
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir, hostname } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import type { Logger } from "../core/index.js";
import type { Agent } from "../agent/index.js";
import type { GitHttpServer } from "../devtools/index.js";
import type { KubeEmulator } from "../kube-emulator/index.js";
import { ExitCode, secondsFlag, type CliIo } from "./io.js";
import type { RunningServer } from "./server.js";

interface DemoFlags {
  readonly exit?: boolean;
  readonly timeout: string;
  readonly keep?: boolean;
  readonly prometheusUrl?: string;
}

const CLUSTERS = ["cluster1", "cluster2"] as const;
/** A wait that printed nothing for this long says what it is still waiting for. */
const STILL_WAITING_MS = 10_000;

type Modules = Awaited<ReturnType<typeof loadModules>>;

/** The modules the demo runs, loaded after its first line (the first load on a fresh machine takes seconds). */
async function loadModules() {
  const [core, devtools, gitSync, kubeEmulator, relay, server, serverCommand] = await Promise.all([
    import("../core/index.js"),
    import("../devtools/index.js"),
    import("../git-sync/index.js"),
    import("../kube-emulator/index.js"),
    import("../relay/index.js"),
    import("../server/index.js"),
    import("./server.js"),
  ]);
  return {
    createLogger: core.createLogger,
    describeError: core.describeError,
    ...devtools,
    signBody: gitSync.signBody,
    createKubeEmulator: kubeEmulator.createKubeEmulator,
    RELAY_SECRETS: relay.RELAY_SECRETS,
    generateToken: server.generateToken,
    parseServerConfig: server.parseServerConfig,
    startServerProcess: serverCommand.startServerProcess,
  };
}

export function registerDemo(program: Command, io: CliIo): void {
  program
    .command("demo")
    .summary("run the whole system locally: Git server, Redis, two emulated clusters, server, agents")
    .description(
      "Serve examples/repo-layout from a local Git server, start two emulated Kubernetes clusters seeded\n" +
        "with bookinfo (examples/discovery), the management server and one agent per cluster, and show a push\n" +
        "converging. Uses REDIS_URL if set, else a private redis-server if installed, else runs standalone.",
    )
    .option("--exit", "stop after the first full convergence (exit 0), for scripts")
    .option("--prometheus-url <url>", "give the server a Prometheus with Istio's metrics: the Traffic page shows its graph")
    // Generous: on a loaded 2-core machine the first convergence took 446 s (#35); progress is printed meanwhile.
    .option("--timeout <seconds>", "give up when convergence takes longer than this", "600")
    .option("--keep", "keep the temporary directory (repository, logs) after exit")
    .action(async (flags: DemoFlags) => {
      const timeoutMs = secondsFlag("--timeout", flags.timeout) * 1000;
      const code = await runDemo(io, { exit: flags.exit === true, timeoutMs, keep: flags.keep === true, ...(flags.prometheusUrl === undefined ? {} : { prometheusUrl: flags.prometheusUrl }) });
      io.exitCode = code;
      exitIfStillRunning(io, code);
    });
}

/** How long the process may live on after the demo stopped everything; only a part that ignored its stop keeps it. */
const LINGER_MS = 10_000;

/**
 * Everything was stopped: the process ends when nothing is left. Should a part have outlived its stop (a
 * request still retried, a timer), the demo names what is still pending and exits anyway: a user's
 * Ctrl-C must never leave a terminal hung (#38). The timer does not itself keep the process alive.
 */
function exitIfStillRunning(io: CliIo, code: ExitCode): void {
  setTimeout(() => {
    const pending = process.getActiveResourcesInfo().filter((r) => r !== "TTYWrap" && r !== "PipeWrap");
    io.err(`demo: still running ${String(LINGER_MS / 1000)} s after its stop (${pending.join(", ") || "nothing named"}); exiting\n`);
    process.exit(code);
  }, LINGER_MS).unref();
}

interface Stoppable {
  readonly name: string;
  stop(): Promise<void>;
}

/** Thrown by the demo's next step once Ctrl-C (SIGINT) or SIGTERM came: it stops what started, and exits 130. */
class DemoInterruptedError extends Error {
  readonly code = "DemoInterruptedError";
  constructor() {
    super("interrupted");
  }
}

/** How long one part may take to stop before the demo goes on without it (a loaded laptop stops a server in seconds). */
const STOP_PART_MS = 15_000;

async function runDemo(io: CliIo, opts: { exit: boolean; timeoutMs: number; keep: boolean; prometheusUrl?: string }): Promise<ExitCode> {
  const t0 = Date.now();
  const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`.padStart(6);
  const say = (msg: string) => io.out(`[${elapsed()}] ${msg}\n`);
  // The first Ctrl-C (or SIGTERM) stops the demo at its next step; a second one exits at once.
  let interrupted = false;
  let running = false;
  const isInterrupted = () => interrupted;
  const step = (msg: string) => {
    if (isInterrupted()) throw new DemoInterruptedError();
    say(msg);
  };
  io.out(
    "gitmesh demo: the whole system on this machine — Redis, a Git server, two emulated Kubernetes clusters,\n" +
      "the management server and one agent per cluster. Each step is printed as it starts; the first run on a\n" +
      "fresh machine takes a minute or two.\n\n",
  );
  step("Loading the server, relay, agent and Kubernetes emulator modules …");
  const modules = await loadModules();
  const { createLogger, describeError, createBareRepo, createInProcessAgent, freePort, redisUnreachable, removeRedisKeys, runGit, startGitHttpServer, startPrivateRedis, createKubeEmulator, RELAY_SECRETS, generateToken, parseServerConfig, startServerProcess } = modules;
  const root = await mkdtemp(join(tmpdir(), "gitmesh-demo-"));
  const logFile = join(root, "server.log");
  const logLines: string[] = [];
  let flushTimer: NodeJS.Timeout | undefined;
  /** Set once everything stopped: a part that outlived its stop logs nowhere (its directory may be gone). */
  let logClosed = false;
  const flushLog = async () => {
    const text = logLines.splice(0).join("\n");
    if (text) await writeFile(logFile, text + "\n", { flag: "a" }).catch((err: unknown) => io.err(`demo: could not write ${logFile}: ${describeError(err)}\n`));
  };
  const logger: Logger = createLogger({
    name: "demo",
    level: "info",
    write: (line) => {
      if (logClosed) return;
      logLines.push(line);
      flushTimer ??= setTimeout(() => {
        flushTimer = undefined;
        void flushLog();
      }, 200);
    },
  });
  const stack: Stoppable[] = [];
  /** What to do next, printed after everything stopped. */
  let farewell = "";
  const stopAll = async () => {
    for (const s of stack.reverse()) {
      let timer: NodeJS.Timeout | undefined;
      const slow = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          io.err(`demo: ${s.name} did not stop within ${String(STOP_PART_MS / 1000)} s; going on without it\n`);
          resolve();
        }, STOP_PART_MS);
      });
      await Promise.race([s.stop().catch((err: unknown) => io.err(`demo: stopping ${s.name}: ${describeError(err)}\n`)), slow]);
      clearTimeout(timer);
    }
    clearTimeout(flushTimer);
    await flushLog();
    logClosed = true;
    if (!opts.keep) await rm(root, { recursive: true, force: true });
  };
  const onSignal = () => {
    if (!interrupted) {
      interrupted = true;
      io.err("\ndemo: stopping (Ctrl-C again to quit at once) …\n");
      return;
    }
    io.err(`demo: quitting at once; files kept in ${root}\n`);
    process.exit(130);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  try {
    // ---- Redis ---------------------------------------------------------------------------------
    let redisUrl = process.env.REDIS_URL;
    const redisPrefix = `gitmesh-demo-${String(process.pid)}`;
    if (redisUrl) {
      const shown = redisUrl.replace(/\/\/[^@]*@/, "//***@");
      const unreachable = await redisUnreachable(redisUrl);
      if (unreachable === undefined) {
        step(`Redis: using REDIS_URL (${shown}); the demo's keys (prefix ${redisPrefix}) are removed when it stops`);
        const external = redisUrl;
        // The demo must leave nothing in a Redis it does not own: no keys, no relay CA key or tokens.
        stack.push({ name: "demo keys in Redis", stop: () => removeRedisKeys(external, redisPrefix) });
      } else {
        step(`Redis: REDIS_URL (${shown}) cannot be reached (${unreachable}); using a private redis-server instead`);
        redisUrl = undefined;
      }
    }
    if (!redisUrl) {
      const started = await startPrivateRedis(join(root, "redis")).catch(() => undefined);
      if (started) {
        redisUrl = started.url;
        stack.push({ name: "redis-server", stop: started.stop });
        step(`Redis: started a private redis-server on ${started.url}`);
      } else step("Redis: redis-server not installed — running standalone (in memory)");
    }

    // ---- Git -----------------------------------------------------------------------------------
    const gitRoot = join(root, "git");
    await mkdir(gitRoot, { recursive: true });
    await createBareRepo(gitRoot, "mesh-config");
    const webhookSecret = generateToken();
    const hook: { url?: string } = {};
    const git: GitHttpServer = await startGitHttpServer({
      root: gitRoot,
      onPush: (repo) => void notifyPush(modules, join(gitRoot, `${repo}.git`), hook.url, webhookSecret).catch(() => undefined),
    });
    stack.push({ name: "git server", stop: () => git.stop() });
    const work = join(root, "mesh-config");
    await runGit(["clone", "--quiet", git.url("mesh-config"), work]);
    await cp(join(repoRoot(), "examples", "repo-layout"), work, { recursive: true });
    const ident = ["-c", "user.name=gitmesh demo", "-c", "user.email=demo@gitmesh.local"];
    await runGit(["add", "-A"], {}, work);
    await runGit([...ident, "commit", "--quiet", "-m", "Bookinfo across cluster1 and cluster2"], {}, work);
    await runGit(["push", "--quiet", "origin", "HEAD:main"], {}, work);
    step(`Git: examples/repo-layout pushed to ${git.url("mesh-config")}`);

    // ---- Server --------------------------------------------------------------------------------
    const relayPort = await freePort();
    const httpPort = await freePort();
    const { config, problems } = parseServerConfig(
      {
        gitUrl: git.url("mesh-config"),
        redisUrl,
        redisPrefix,
        relayHost: "127.0.0.1",
        relayPort: String(relayPort),
        httpHost: "127.0.0.1",
        httpPort: String(httpPort),
        pollIntervalSeconds: "10",
        webhookSecret,
        warmingWindowSeconds: "30",
        relayAdditionalSans: "127.0.0.1,localhost",
        webhookDebounceMs: "50",
        dataDir: join(root, "server-data"),
        prometheusUrl: opts.prometheusUrl,
      },
      { identity: hostname() },
    );
    if (!config) throw new Error(`demo configuration is invalid: ${problems.join("; ")}`);
    step("Server: starting — relay certificate authority, first sync of the Git repository, translation pipeline …");
    const server: RunningServer = await startServerProcess(config, logger.child("server"), { auditDebounceMs: 200 });
    stack.push({ name: "server", stop: () => server.stop() });
    const base = `http://127.0.0.1:${String(httpPort)}`;
    hook.url = `${base}/webhooks/generic`;
    // The API needs the read token: kept in a file of the demo directory (never in the log).
    const apiToken = server.server.apiTokens?.read ?? "";
    const tokenFile = join(root, "api-token");
    await writeFile(tokenFile, apiToken + "\n", { mode: 0o600 });
    const get = <T>(path: string) => getJson<T>(`${base}${path}`, apiToken);
    step(`Server: relay on 127.0.0.1:${String(relayPort)}, HTTP on ${base} (${redisUrl ? "Redis" : "standalone"}; log: ${logFile})`);
    if (!opts.exit) {
      step(
        existsSync(join(repoRoot(), "dist", "web", "index.html"))
          ? `Web UI: ${base}/ — sign in with the token in ${tokenFile}; it shows the clusters converging live`
          : `Web UI: not built, so ${base}/ only says how to build it (npm run build:web; npm run demo builds it before starting)`,
      );
    }

    // ---- Clusters and agents -------------------------------------------------------------------
    const emulators = new Map<string, KubeEmulator>();
    const agents: Agent[] = [];
    for (const cluster of CLUSTERS) {
      const emulator = await createKubeEmulator({ port: 0, host: "127.0.0.1" });
      stack.push({ name: `${cluster} emulator`, stop: () => emulator.stop() });
      emulators.set(cluster, emulator);
      const dir = join(repoRoot(), "examples", "discovery", cluster);
      let seeded = 0;
      for (const f of (await readdir(dir)).filter((n) => /\.ya?ml$/.test(n)).sort()) seeded += (await emulator.seedFile(join(dir, f))).applied;
      const b64 = (s: string) => Buffer.from(s).toString("base64");
      emulator.seed([
        { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } },
        { apiVersion: "v1", kind: "Secret", metadata: { name: RELAY_SECRETS.rootTls.name, namespace: "gitmesh" }, data: { [RELAY_SECRETS.rootTls.keys.caCrt]: b64(server.server.rootCaPem ?? "") } },
        // A single-use credential bound to this cluster, as `gitmesh cluster register` mints it.
        { apiVersion: "v1", kind: "Secret", metadata: { name: RELAY_SECRETS.identityToken.name, namespace: "gitmesh" }, data: { [RELAY_SECRETS.identityToken.keys.token]: b64((await server.server.mintCredential(cluster)).credential) } },
      ]);
      await emulator.writeKubeconfig(join(root, `${cluster}.kubeconfig`));
      step(`${cluster}: Kubernetes API emulator on ${emulator.url}, ${String(seeded)} objects seeded, relay secrets created`);
      const agent = createInProcessAgent({ cluster, emulator, relayAddress: `127.0.0.1:${String(relayPort)}`, logger: logger.child(`agent-${cluster}`) });
      await agent.start();
      agents.push(agent);
      stack.push({ name: `${cluster} agent`, stop: () => agent.stop() });
    }
    step("Agents: started; next they register with the relay, send discovery (warming), and apply the first translation …");

    // ---- Watch convergence ---------------------------------------------------------------------
    const first = await watchConvergence(get, step, opts.timeoutMs, () => interrupted);
    if (isInterrupted()) throw new DemoInterruptedError();
    if (!first) {
      io.err(`demo: no full convergence within ${String(opts.timeoutMs / 1000)} s; see ${logFile} (kept)\n`);
      opts.keep = true;
      return ExitCode.Failed;
    }
    // The audit commit follows the outputs of the commit (singleton writer, pushed to the Git server).
    let audit = "";
    for (let i = 0; i < 100 && !audit; i++) {
      const st = await get<Status>("/api/status").catch(() => undefined);
      if (st?.audit?.lastCommit) audit = st.audit.lastCommit;
      else await sleep(100);
    }
    io.out(`\nConverged in ${elapsed().trim()}: commit ${first.commit.slice(0, 12)} applied on every cluster.\n\n`);
    io.out("  cluster    Istio objects   in the cluster   output version   status\n");
    const notes: string[] = [];
    for (const cluster of CLUSTERS) {
      // Every Istio object of the output, looked up in the cluster: the counts differ only when one is
      // missing (named below). Other resources are instructions the agent carries out itself.
      const emulator = emulators.get(cluster)!;
      const output = await get<{ resources: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }[] }>(`/api/clusters/${cluster}/output`);
      const istio = output.resources.filter((r) => r.apiVersion.split("/")[0]!.endsWith("istio.io"));
      const missing = istio.filter((r) => emulator.get(r.apiVersion, r.kind, r.metadata.namespace ?? "", r.metadata.name) === undefined);
      const c = first.clusters.find((x) => x.name === cluster);
      io.out(`  ${cluster.padEnd(10)} ${String(istio.length).padStart(13)}   ${String(istio.length - missing.length).padStart(14)}   ${String(c?.applied?.version ?? "-").padStart(14)}   ${c?.connected ? "connected, applied" : "not connected"}\n`);
      for (const r of missing.slice(0, 5)) io.out(`             not in the cluster: ${r.kind} ${r.metadata.namespace ? `${r.metadata.namespace}/` : ""}${r.metadata.name}\n`);
      for (const r of output.resources.filter((x) => !istio.includes(x))) {
        notes.push(`  ${cluster}: also ${r.kind} ${r.metadata.name}${r.kind === "IssuedCertificate" ? ": the agent turns it into istiod's intermediate CA (Secret istio-system/cacerts), signed by the server" : ""}`);
      }
    }
    if (notes.length > 0) io.out(`${notes.join("\n")}\n`);
    io.out(`\n  audit branch ${config.auditBranch}: ${audit ? audit.slice(0, 12) : "(not written yet)"}\n`);
    if (opts.exit) {
      // The demo's directory, server and clusters go away with it: commands naming them would point nowhere.
      farewell = "\nRun `npm run demo` (without --exit) to query the server, the clusters, and push a change and watch it converge.\n";
      return ExitCode.Ok;
    }
    io.out(`  web UI:       ${base}/  (token: ${tokenFile})\n`);
    io.out(`  server API:   curl -H "Authorization: Bearer $(cat ${tokenFile})" ${base}/api/status\n`);
    io.out(`                gitmesh check --server ${base} --token-file ${tokenFile}\n`);
    io.out(`  kubectl:      kubectl --kubeconfig ${join(root, "cluster1.kubeconfig")} get virtualservices -A\n`);
    io.out(`\nPush a change and watch it converge (in another terminal):\n${await pushHint(work)}`);
    io.out("\nRunning; Ctrl-C to stop.\n");
    running = true;
    let inForce = first.commit;
    let rejected: string | undefined;
    while (!interrupted) {
      await sleep(500);
      const st = await get<Status>("/api/status").catch(() => undefined);
      if (st?.commit && st.commit.sha !== inForce) {
        inForce = st.commit.sha;
        step(`new commit ${inForce.slice(0, 12)} accepted; waiting for the clusters …`);
        const done = await watchConvergence(get, step, opts.timeoutMs, () => interrupted, inForce);
        if (done) step(`commit ${inForce.slice(0, 12)} converged on ${done.clusters.map((c) => c.name).join(", ")}`);
      }
      // A rejected commit is said once (the last good one stays in force), not at every poll.
      if (st?.rejected && st.rejected.commit !== rejected) {
        rejected = st.rejected.commit;
        step(`commit ${rejected.slice(0, 12)} REJECTED (${String(st.rejected.errors)} errors); ${inForce.slice(0, 12)} stays in force. ${st.rejected.diagnostics[0] ?? ""}`);
      }
    }
    return ExitCode.Ok;
  } catch (err) {
    // Ctrl-C while it runs is how the demo ends (exit 0); during its start, the start was cut short.
    if (err instanceof DemoInterruptedError) return running ? ExitCode.Ok : ExitCode.Interrupted;
    io.err(`demo failed: ${describeError(err)}\n(log and files kept in ${root})\n`);
    opts.keep = true;
    return ExitCode.Failed;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    say(`Stopping the demo: ${stack.map((s) => s.name).reverse().join(", ") || "nothing started"} …`);
    await stopAll();
    say(opts.keep ? `Stopped; files kept in ${root}` : "Stopped; its temporary files are removed");
    io.out(farewell);
  }
}

export interface ClusterStatus {
  readonly name: string;
  readonly connected: boolean;
  readonly warmed: boolean;
  readonly output: { version: number; sourceCommit: string; resources: number; complete: boolean } | null;
  readonly applied: { version: number; sourceCommit: string } | null;
  readonly inSync: boolean;
  /** The server's one answer for the commit in force (src/server/cluster-sync.ts). */
  readonly sync: { readonly state: string; readonly why?: string; readonly summary: string; readonly commit: string | null };
}
export interface Status {
  readonly ready: boolean;
  readonly readiness: string;
  readonly commit: { sha: string } | null;
  readonly rejected: { commit: string; errors: number; diagnostics: string[] } | null;
  readonly clusters: ClusterStatus[];
  readonly audit?: { lastCommit: string | null };
}

/** Polls /api/status, printing each state change, until every registered cluster applied the output of `commit` (default: the commit in force). */
async function watchConvergence(get: <T>(path: string) => Promise<T>, step: (m: string) => void, timeoutMs: number, interrupted: () => boolean, commit?: string): Promise<{ commit: string; clusters: ClusterStatus[] } | undefined> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  const seen = new Set<string>();
  let lastSaid = started;
  const say = (key: string, msg: string) => {
    if (!seen.has(key)) {
      seen.add(key);
      lastSaid = Date.now();
      step(msg);
    }
  };
  while (Date.now() < deadline && !interrupted()) {
    const st = await get<Status>("/api/status").catch(() => undefined);
    if (Date.now() - lastSaid >= STILL_WAITING_MS) {
      lastSaid = Date.now();
      step(`… still waiting (${String(Math.round((lastSaid - started) / 1000))} s) for ${stillWaitingFor(st)}`);
    }
    if (st) {
      if (st.commit) say(`commit:${st.commit.sha}`, `Server: commit ${st.commit.sha.slice(0, 12)} accepted from Git`);
      for (const c of st.clusters) {
        if (c.connected) say(`conn:${c.name}`, `${c.name}: agent connected`);
        if (c.warmed) say(`warm:${c.name}`, `${c.name}: discovery received (warmed)`);
        if (c.output && c.output.resources > 0 && c.output.complete) say(`out:${c.name}:${String(c.output.version)}`, `${c.name}: output v${String(c.output.version)} translated (${String(c.output.resources)} resources)`);
        // What the server says of the cluster and the commit in force, each time it changes.
        say(`sync:${c.name}:${c.sync.summary}`, `${c.name}: ${c.sync.summary}`);
      }
      if (!st.ready) say(`ready:${st.readiness}`, `Server: ${st.readiness}`);
      const target = commit ?? st.commit?.sha;
      if (target !== undefined && converged(st, target, CLUSTERS)) return { commit: target, clusters: st.clusters.filter((c) => (CLUSTERS as readonly string[]).includes(c.name)) };
    }
    await sleep(200);
  }
  return undefined;
}

/**
 * The demo's wait condition: the server is ready, `commit` is in force, and the server says every one
 * of `clusters` is in sync with it (cluster-sync.ts: applied the output of that commit, same version).
 */
export function converged(st: Pick<Status, "ready" | "commit"> & { readonly clusters: readonly Pick<ClusterStatus, "name" | "sync">[] }, commit: string, clusters: readonly string[]): boolean {
  if (!st.ready || st.commit?.sha !== commit) return false;
  return clusters.every((name) => {
    const c = st.clusters.find((x) => x.name === name);
    return c !== undefined && c.sync.state === "in-sync" && c.sync.commit === commit;
  });
}

/** What a convergence wait is waiting for, from the last status read (undefined: the status API did not answer): the server's summary of each cluster not in sync. */
export function stillWaitingFor(st: Pick<Status, "ready" | "readiness" | "clusters"> | undefined): string {
  if (st === undefined) return "the server's status API to answer";
  if (!st.ready) return `the server (${st.readiness})`;
  const pending = CLUSTERS.flatMap((name) => {
    const c = st.clusters.find((x) => x.name === name);
    if (c === undefined) return [`${name}: its agent to register`];
    return c.sync.state === "in-sync" ? [] : [`${name}: ${c.sync.summary}`];
  });
  return pending.length > 0 ? pending.join("; ") : "the clusters to report the commit applied";
}

/** The commands that change a policy and push it, runnable as printed (the demo's test runs them). */
async function pushHint(work: string): Promise<string> {
  const file = "workspaces/gateways/retry-timeout-httpbin.yaml";
  const found = /requestTimeout: (\d+)s/.exec(await readFile(join(work, file), "utf8").catch(() => ""));
  const edit = found
    ? `  sed -i 's/requestTimeout: ${found[1]!}s/requestTimeout: ${String(Number(found[1]) + 2)}s/' ${file}\n`
    : "  $EDITOR workspaces/gateways/*.yaml   # change any policy\n";
  return `  cd ${work}\n${edit}  git commit -qam "longer httpbin timeout" && git push -q origin HEAD:main\n`;
}

async function notifyPush(tools: Pick<Modules, "runGit" | "signBody">, bareRepo: string, url: string | undefined, secret: string): Promise<void> {
  const { runGit, signBody } = tools;
  if (url === undefined) return;
  const sha = (await runGit(["rev-parse", "refs/heads/main"], { GIT_DIR: bareRepo })).trim();
  const body = JSON.stringify({ ref: "refs/heads/main", sha, repo: "mesh-config" });
  await fetch(url, { method: "POST", headers: { "content-type": "application/json", "x-signature-256": signBody(secret, body) }, body });
}

async function getJson<T>(url: string, token: string): Promise<T> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  if (!res.ok) throw new Error(`${url}: HTTP ${String(res.status)}`);
  return (await res.json()) as T;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The package root (examples/ lives there), from src/cli or dist/cli. */
function repoRoot(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
}
