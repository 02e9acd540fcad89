/**
 * `gitmesh check --server http://host:9091`: the server's health as an operator wants to see it —
 * the commit in force, a rejected commit with its first diagnostics, warming, every cluster
 * (connected, warmed, applied output and commit), the pipeline — from GET /api/status. Exit 0 when
 * healthy, 1 when not (not ready, a rejected commit, a cluster stale or not applied), so it also
 * serves as a scriptable probe. `--output json` prints the raw status.
 */
import type { Command } from "commander";
import { ExitCode, UsageError, type CliIo } from "./io.js";

interface CheckFlags {
  readonly server: string;
  readonly output: string;
  readonly timeout: string;
}

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
}

interface Status {
  readonly replica: string;
  readonly ready: boolean;
  readonly readiness: string;
  readonly leader?: boolean;
  readonly pipeline: { mode: string; reason?: string; queueDepth?: Record<string, number> };
  readonly store: string;
  readonly warming: { warming: boolean; waitingFor: string[]; reason: string } | null;
  readonly source: { repository: string; ref: string; path: string; lastError: { message: string } | null };
  readonly commit: { sha: string; committedAt: string; syncedAt: string | null; from?: string } | null;
  readonly rejected: { commit: string; rejectedAt: string; errors: number; diagnostics: string[] } | null;
  readonly audit: { branch: string | null; lastCommit: string | null };
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
    .option("--server <url>", "base URL of the server's HTTP port", "http://localhost:9091")
    .option("--output <format>", "text | json", "text")
    .option("--timeout <seconds>", "request timeout", "5")
    .action(async (flags: CheckFlags) => {
      if (flags.output !== "text" && flags.output !== "json") throw new UsageError(`--output must be text or json, got "${flags.output}"`);
      let base: URL;
      try {
        base = new URL(flags.server);
      } catch {
        throw new UsageError(`--server must be a URL like http://localhost:9091, got "${flags.server}"`);
      }
      let status: Status;
      try {
        const res = await fetch(new URL("/api/status", base), { signal: AbortSignal.timeout(Number(flags.timeout) * 1000) });
        if (!res.ok) throw new Error(`HTTP ${String(res.status)}`);
        status = (await res.json()) as Status;
      } catch (err) {
        io.err(`gitmesh check: cannot read ${new URL("/api/status", base).href}: ${err instanceof Error ? err.message : String(err)}\n  is the server running and is --server its HTTP port (9091)?\n`);
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
  if (s.rejected) problems.push(`commit ${s.rejected.commit.slice(0, 12)} rejected with ${String(s.rejected.errors)} error(s); ${s.commit ? `${s.commit.sha.slice(0, 12)} stays in force` : "no desired state in force"}`);
  for (const c of s.clusters.filter((x) => x.registered)) {
    // With replicas an agent holds its streams to one replica: held by another one is not a fault.
    if (!c.connected && !c.stale) continue;
    if (!c.connected) problems.push(`cluster ${c.name}: no agent connected to any replica${c.lastSeen ? ` (last seen ${c.lastSeen})` : ""}; it keeps its last applied config`);
    else if (c.pruneHeld) problems.push(`cluster ${c.name}: ${String(c.pruneHeld.objects.length)} deletion(s) held since ${c.pruneHeld.since}${c.pruneHeld.incomplete ? " (nothing is pruned there)" : ""}: ${c.pruneHeld.reason}`);
    else if (!c.inSync) problems.push(`cluster ${c.name}: output v${String(c.output?.version ?? "-")} not applied yet (applied v${String(c.applied?.version ?? "-")})`);
  }
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
  lines.push(`  pipeline   ${s.pipeline.mode}${degraded}${depth}; store ${s.store}`);
  lines.push(`  audit      ${s.audit.branch ?? "off"}${s.audit.lastCommit ? ` @ ${short(s.audit.lastCommit)}` : ""}`);
  lines.push("");
  lines.push("  CLUSTER          CONNECTED  WARMED  OUTPUT         APPLIED        COMMIT        ");
  for (const c of s.clusters) {
    const out = c.output ? `v${String(c.output.version)} (${String(c.output.resources)})${c.output.complete ? "" : "*"}` : "-";
    const applied = c.applied ? `v${String(c.applied.version)}` : "-";
    lines.push(`  ${c.name.padEnd(16)} ${(c.connected ? "yes" : c.stale ? "STALE" : "no").padEnd(10)} ${(c.warmed ? "yes" : "no").padEnd(7)} ${out.padEnd(14)} ${applied.padEnd(14)} ${short(c.applied?.sourceCommit)}${c.registered ? "" : "  (not registered in Git)"}`);
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
