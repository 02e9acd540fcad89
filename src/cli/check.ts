/**
 * `gitmesh check --server http://host:9091`: the server's health as an operator wants to see it —
 * the commit in force, a rejected commit with its first diagnostics, warming, every cluster
 * (connected, warmed, applied output and commit), the pipeline — from GET /api/status. Exit 0 when
 * healthy, 1 when not (not ready, a rejected commit, a cluster not in sync — the server's `sync` answer,
 * said in its words —, an output applied with translation errors, an audit branch held back by a
 * cluster), so it also
 * serves as a scriptable probe. `--output json` prints the raw status.
 *
 * The API needs the server's read token (`--token-file`, `--token`, or GITMESH_API_TOKEN /
 * GITMESH_API_TOKEN_FILE); without one a protected server's 401 becomes exit 2 and a message naming
 * the flag and where the token is. `--server` takes a URL or host:port; https URLs are verified
 * against the system CAs or `--ca-file`.
 */
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Command } from "commander";
import { readFlagFile, tokenFromFlags } from "./flag-files.js";
import { ExitCode, secondsFlag, UsageError, type CliIo } from "./io.js";

interface CheckFlags {
  readonly server: string;
  readonly output: string;
  readonly timeout: string;
  readonly token?: string;
  readonly tokenFile?: string;
  readonly caFile?: string;
}

/** Where `gitmesh check` reads a token when no flag gives one. */
export const CHECK_ENV = { token: "GITMESH_API_TOKEN", tokenFile: "GITMESH_API_TOKEN_FILE" } as const;

export const WHERE_TOKEN =
  "the read token is in the Secret gitmesh-api-tokens (Helm chart: kubectl -n gitmesh get secret gitmesh-api-tokens -o jsonpath='{.data.read}' | base64 -d > token),\n" +
  "  or the file api-token-read in the server's --pki-dir (or <data-dir>/api-tokens), or the file given to --api-token-file";

interface ClusterStatus {
  readonly name: string;
  readonly registered: boolean;
  readonly connected: boolean;
  readonly warmed: boolean;
  readonly stale: boolean;
  readonly lastSeen: string | null;
  readonly output: { version: number; sourceCommit: string; complete: boolean; resources: number } | null;
  readonly applied: { version: number; sourceCommit: string; at: string } | null;
  /** Deletions held back (a failing workspace, a cluster without discovery, a frozen route table); absent from older servers. */
  readonly pruneHeld?: { reason: string; since: string; objects: string[]; incomplete?: string | null } | null;
  readonly frozen?: string[];
  readonly inSync: boolean;
  /** Where it stands with the commit in force, decided by the server (src/server/cluster-sync.ts); absent from older servers. */
  readonly sync?: { state: string; why?: string; summary: string; commit: string | null };
  /** Registered, and its agent never connected (absent from older servers). */
  readonly waitingForAgent?: boolean;
  /** The newest commit the cluster runs (absent from older servers: applied.sourceCommit). */
  readonly commit?: string | null;
  /** What holds it (suspend; absent from older servers): resumed through the API (`api`) or in gitmesh.yaml (`git`). */
  readonly suspended?: { scope: string; since: string; by: string; reason: string | null; source: string; summary: string } | null;
  /** Translation errors in its output (absent from older servers). */
  readonly errors?: { count: number; first: string[] };
}

interface Status {
  readonly replica: string;
  readonly ready: boolean;
  readonly readiness: string;
  readonly leader?: boolean;
  readonly pipeline: { mode: string; reason?: string; queueDepth?: Record<string, number>; translationWorkers?: number; workerProcesses?: number };
  readonly store: string;
  readonly warming: { warming: boolean; waitingFor: string[]; reason: string } | null;
  readonly source: { repository: string; ref: string; path: string; lastError: { message: string } | null };
  readonly commit: { sha: string; committedAt: string; syncedAt: string | null; from?: string } | null;
  readonly rejected: { commit: string; rejectedAt: string; errors: number; diagnostics: string[] } | null;
  readonly audit: { branch: string | null; lastCommit: string | null; heldBack?: { reason: string; clusters: string[]; since: string } | null };
  readonly clusters: ClusterStatus[];
}

export function registerCheck(program: Command, io: CliIo): void {
  program
    .command("check")
    .summary("print a management server's health; exit 1 when unhealthy")
    .description(
      "Ask a running management server (its HTTP port, default 9091) for its status and print what an\n" +
        "operator needs: the commit in force, rejected commits, warming, every cluster (connected, warmed,\n" +
        "applied), the pipeline. Exit status: 0 healthy, 1 unhealthy or unreachable, 2 usage error.",
    )
    .option("--server <url>", "the server's HTTP port: a URL (http:// or https://) or host:port", "http://localhost:9091")
    .option("--token-file <file>", `file holding the API read token [${CHECK_ENV.tokenFile}]`)
    .option("--token <token>", `the API read token (visible to other local users in the process list: prefer --token-file or ${CHECK_ENV.token})`)
    .option("--ca-file <file>", "PEM CA certificate(s) to verify an https --server (default: the system CAs)")
    .option("--output <format>", "text | json", "text")
    .option("--timeout <seconds>", "request timeout", "5")
    .addHelpText("after", `\nThe token: --token, else --token-file, else ${CHECK_ENV.token}, else ${CHECK_ENV.tokenFile};\n  ${WHERE_TOKEN}.\n`)
    .action(async (flags: CheckFlags) => {
      if (flags.output !== "text" && flags.output !== "json") throw new UsageError(`--output must be text or json, got "${flags.output}"`);
      const timeoutS = secondsFlag("--timeout", flags.timeout);
      const base = serverUrl(flags.server);
      const token = await tokenFromFlags(flags, process.env, CHECK_ENV);
      const ca = await readFlagFile("--ca-file", flags.caFile);
      if (ca !== undefined && base.protocol !== "https:") throw new UsageError(`--ca-file is for an https --server; ${base.href} is plain http`);
      const url = new URL("/api/status", base);
      let status: Status;
      try {
        const res = await getJson(url, { token, ca, timeoutMs: timeoutS * 1000 });
        if (res.status === 401 || res.status === 403) {
          io.err(
            `gitmesh check: ${url.href} answered ${String(res.status)}: ${res.message ?? ""}\n` +
              (token === undefined
                ? `  the server requires an API token: pass --token-file <file> (or --token, or set ${CHECK_ENV.token});\n  ${WHERE_TOKEN}\n`
                : res.status === 401
                  ? `  the token given is not valid for this server; ${WHERE_TOKEN}\n`
                  : "  the token given lacks the read role\n"),
          );
          // No token at all: the command line lacks a flag (2). A token the server refuses: a failure (1).
          io.exitCode = token === undefined ? ExitCode.Usage : ExitCode.Failed;
          return;
        }
        if (res.status !== 200) throw new Error(`HTTP ${String(res.status)}${res.message ? `: ${res.message}` : ""}`);
        status = res.body as Status;
      } catch (err) {
        io.err(`gitmesh check: cannot read ${url.href}: ${err instanceof Error ? err.message : String(err)}\n  is the server running and is --server its HTTP port (9091)${base.protocol === "https:" ? ", and does --ca-file hold its CA" : ""}?\n`);
        io.exitCode = ExitCode.Failed;
        return;
      }
      const problems = assess(status);
      if (flags.output === "json") io.out(JSON.stringify({ healthy: problems.length === 0, problems, status }, null, 2) + "\n");
      else io.out(render(status, problems));
      io.exitCode = problems.length === 0 ? ExitCode.Ok : ExitCode.Failed;
    });
}

/** What is wrong, one line each (empty = healthy). */
export function assess(s: Status): string[] {
  const problems: string[] = [];
  if (!s.ready) problems.push(`not ready: ${s.readiness}`);
  if (s.source.lastError) problems.push(`Git: ${s.source.lastError.message}`);
  // `server --workers 0` hands translation to `gitmesh worker` processes: none connected, nothing translates.
  if (s.pipeline.mode === "redis" && s.pipeline.workerProcesses === 0) problems.push("no process takes translation jobs (this replica runs --workers 0 and no `gitmesh worker` is connected to Redis): outputs do not change until one is started");
  if (s.rejected) problems.push(`commit ${s.rejected.commit.slice(0, 12)} rejected with ${String(s.rejected.errors)} error(s); ${s.commit ? `${s.commit.sha.slice(0, 12)} stays in force` : "no desired state in force"}`);
  for (const c of s.clusters.filter((x) => x.registered)) {
    // Applied with errors: the routes concerned answer HTTP 500 (Gloo's replacement route) — never healthy.
    if (c.errors && c.errors.count > 0) problems.push(`cluster ${c.name}: applied with ${String(c.errors.count)} translation error(s): ${c.errors.first[0] ?? ""}`);
    // The server's one answer (cluster-sync.ts), said as it says it; an older server gives only inSync.
    if (c.inSync) continue;
    const hint = c.sync?.why === "waiting-for-agent" ? `; install it: gitmesh cluster register ${c.name}` : c.sync?.state === "suspended" && c.suspended?.source === "api" ? `; to resume: gitmesh resume ${c.suspended.scope === "fleet" ? "--all" : c.name}` : "";
    problems.push(`cluster ${c.name}: ${c.sync?.summary ?? "not in sync"}${hint}`);
  }
  const held = s.audit.heldBack;
  if (held && held.clusters.length > 0) problems.push(`audit branch ${s.audit.branch ?? ""} held back since ${held.since} by ${held.clusters.join(", ")}: ${held.reason}`);
  return problems;
}

function render(s: Status, problems: readonly string[]): string {
  const lines: string[] = [];
  const short = (sha: string | undefined | null) => (sha ? sha.slice(0, 12) : "-");
  lines.push(`gitmesh server ${s.replica}: ${problems.length === 0 ? "HEALTHY" : "UNHEALTHY"}`);
  lines.push(`  source     ${s.source.repository} @ ${s.source.ref}${s.source.path ? ` (${s.source.path})` : ""}`);
  lines.push(`  replica    ${s.leader === false ? "follower (the leader polls Git and writes audit commits)" : "leader (polls Git, writes audit commits)"}`);
  lines.push(`  in force   ${s.commit ? `${short(s.commit.sha)} (committed ${s.commit.committedAt}, ${s.commit.syncedAt ? `synced ${s.commit.syncedAt}` : "adopted from the leader"})` : "none"}`);
  if (s.rejected) {
    lines.push(`  REJECTED   ${short(s.rejected.commit)} at ${s.rejected.rejectedAt}: ${String(s.rejected.errors)} error(s)`);
    for (const d of s.rejected.diagnostics.slice(0, 5)) lines.push(`             ${d}`);
  }
  lines.push(`  readiness  ${s.ready ? "ready" : "NOT READY"} — ${s.readiness}`);
  const depth = s.pipeline.queueDepth === undefined ? "" : `, queue ${Object.entries(s.pipeline.queueDepth).map(([type, n]) => `${type} ${String(n)}`).join(", ")}`;
  const degraded = s.pipeline.mode === "degraded" ? ` (Redis unreachable: translating in-process from memory${s.pipeline.reason ? `; ${s.pipeline.reason}` : ""})` : "";
  const workers = s.pipeline.workerProcesses === undefined ? "" : `, ${String(s.pipeline.workerProcesses)} process(es) translating${s.pipeline.translationWorkers === 0 ? " (not this one: --workers 0)" : ""}`;
  lines.push(`  pipeline   ${s.pipeline.mode}${degraded}${depth}${workers}; store ${s.store}`);
  lines.push(`  audit      ${s.audit.branch ?? "off"}${s.audit.lastCommit ? ` @ ${short(s.audit.lastCommit)}` : ""}${s.audit.heldBack ? ` — HELD BACK: ${s.audit.heldBack.reason}` : ""}`);
  lines.push("");
  lines.push("  CLUSTER          CONNECTED  WARMED  OUTPUT         APPLIED        COMMIT        STATE");
  for (const c of s.clusters) {
    const out = c.output ? `v${String(c.output.version)} (${String(c.output.resources)})${c.output.complete ? "" : "*"}` : "-";
    const applied = c.applied ? `v${String(c.applied.version)}` : "-";
    const conn = c.connected ? "yes" : c.waitingForAgent ? "waiting" : c.stale ? "STALE" : "no";
    const errors = c.errors && c.errors.count > 0 ? `  (${String(c.errors.count)} error${c.errors.count === 1 ? "" : "s"})` : "";
    const state = c.sync ? `${c.sync.state}${c.sync.why ? ` (${c.sync.why})` : ""}` : c.inSync ? "in-sync" : "-";
    lines.push(`  ${c.name.padEnd(16)} ${conn.padEnd(10)} ${(c.warmed ? "yes" : "no").padEnd(7)} ${out.padEnd(14)} ${applied.padEnd(14)} ${short(c.commit ?? c.applied?.sourceCommit).padEnd(13)} ${state}${c.registered ? "" : "  (not registered in Git)"}${errors}`);
  }
  for (const c of s.clusters.filter((x) => x.errors && x.errors.count > 0)) {
    lines.push(`  ERRORS     ${c.name}: applied with ${String(c.errors!.count)} translation error(s)`);
    for (const d of c.errors!.first.slice(0, 5)) lines.push(`             ${d}`);
  }
  if (s.clusters.some((c) => c.output && !c.output.complete)) lines.push("  * incomplete output: applied without pruning until the inputs it depends on are known");
  for (const c of s.clusters.filter((x) => x.pruneHeld)) {
    const h = c.pruneHeld!;
    lines.push(`  HELD       ${c.name}: ${String(h.objects.length)} object(s) since ${h.since}${c.frozen && c.frozen.length > 0 ? `; frozen: ${c.frozen.join(", ")}` : ""}`);
    for (const o of h.objects.slice(0, 5)) lines.push(`             ${o}`);
    if (h.objects.length > 5) lines.push(`             … ${String(h.objects.length - 5)} more`);
  }
  if (problems.length > 0) {
    lines.push("");
    lines.push("  problems:");
    for (const p of problems) lines.push(`    - ${p}`);
  }
  return lines.join("\n") + "\n";
}

/** `--server` as a URL: `host:port` and `host` mean http://…; anything else must be an http(s) URL. */
export function serverUrl(value: string): URL {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new UsageError(`--server must be a URL like http://localhost:9091 or host:port, got "${value}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError(`--server must be http:// or https://, got "${value}"`);
  return url;
}

/** GET a JSON document (node:http/https, so that --ca-file can be honoured); the error message of a non-200 JSON answer. */
export function getJson(url: URL, o: { token: string | undefined; ca: string | undefined; timeoutMs: number }): Promise<{ status: number; body?: unknown; message?: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: "application/json" };
    if (o.token !== undefined) headers.authorization = `Bearer ${o.token}`;
    const options = { method: "GET", headers, timeout: o.timeoutMs, ...(o.ca !== undefined ? { ca: o.ca } : {}) };
    const req = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        const status = res.statusCode ?? 0;
        if (status === 200) {
          if (body === undefined) reject(new Error("the answer is not JSON"));
          else resolve({ status, body });
          return;
        }
        const message = (body as { error?: { message?: unknown } } | undefined)?.error?.message;
        resolve({ status, ...(typeof message === "string" ? { message } : {}) });
      });
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${String(o.timeoutMs / 1000)} s`)));
    req.on("error", reject);
    req.end();
  });
}
