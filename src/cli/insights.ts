/**
 * `gitmesh insights`: the fleet analysis (src/insights, codes in docs/insights.md) as a table or JSON.
 *
 * - offline: `gitmesh insights <repo-dir> --discovery <dir>` loads the repository and the discovery
 *   directory as `render` does, translates, and analyses (no certificates, no traffic);
 * - against a server: `gitmesh insights --server <url>` prints what GET /api/insights answers (the
 *   commit in force, the clusters' discovery and certificates, as the server knows them).
 *
 * `--severity`, `--cluster` and `--code` narrow what is shown. Exit status: 1 when a shown insight is
 * an error, 0 otherwise, 2 on usage errors.
 */
import { stat } from "node:fs/promises";
import { join } from "node:path";
import type { Command } from "commander";
import { Severity } from "../core/index.js";
import { INSIGHT_CODES, type Insight } from "../insights/index.js";
import { CHECK_ENV, getJson, serverUrl, WHERE_TOKEN } from "./check.js";
import { readFlagFile, tokenFromFlags } from "./flag-files.js";
import { ExitCode, secondsFlag, UsageError, type CliIo } from "./io.js";

interface InsightsFlags {
  readonly discovery?: string;
  readonly server?: string;
  readonly token?: string;
  readonly tokenFile?: string;
  readonly caFile?: string;
  readonly json?: boolean;
  readonly today?: string;
  readonly severity?: string;
  readonly cluster?: string;
  readonly code?: string;
  readonly timeout: string;
}

const SEVERITIES = Object.values(Severity);

export function registerInsights(program: Command, io: CliIo): void {
  program
    .command("insights")
    .summary("analyse the fleet: risky or ineffective configuration, Istio versions, certificates; exit 1 on errors")
    .description(
      "Analyse a configuration repository against discovery (as `render` takes them), or ask a running\n" +
        "server (--server), and list every insight: a stable code (see docs/insights.md: why it matters,\n" +
        "how to fix it), its severity, cluster, workspace, where (file:line for configuration in Git), what\n" +
        "was found and the fix.\n\n" +
        "Exit status: 0 no error among the insights shown (warnings and info allowed), 1 an error insight,\n" +
        "or the server could not be read, 2 usage error.",
    )
    .argument("[repo-dir]", "root of the configuration repository (offline analysis)")
    .option("--discovery <dir>", "discovery directory: one sub-directory per cluster (offline analysis; required with <repo-dir>)")
    .option("--server <url>", "analyse what a running server holds: its HTTP port, a URL or host:port")
    .option("--token-file <file>", `file holding the API read token (with --server) [${CHECK_ENV.tokenFile}]`)
    .option("--token <token>", `the API read token (with --server; prefer --token-file or ${CHECK_ENV.token})`)
    .option("--ca-file <file>", "PEM CA certificate(s) to verify an https --server")
    .option("--today <date>", "the day end of life and expiry are measured against, YYYY-MM-DD (default: today, UTC; offline only)")
    .option("--severity <list>", `show only these severities (comma-separated: ${SEVERITIES.join(", ")})`)
    .option("--cluster <name>", "show only insights about this cluster")
    .option("--code <list>", "show only these codes (comma-separated)")
    .option("--json", "print JSON: { insights, counts } (and the server's commit with --server)")
    .option("--timeout <seconds>", "request timeout with --server", "10")
    .addHelpText(
      "after",
      "\nExamples:\n  gitmesh insights examples/repo-layout --discovery examples/discovery\n  gitmesh insights --server http://localhost:9091 --token-file token --severity error,warning\n  gitmesh insights . --discovery ./discovery --json | jq '.insights[] | select(.code == \"ROUTE_WITHOUT_TIMEOUT\")'\n\nCodes:\n" +
        Object.entries(INSIGHT_CODES)
          .map(([code, info]) => `  ${code.padEnd(34)} ${info.severity.padEnd(7)} ${info.title}`)
          .join("\n") +
        "\n",
    )
    .action(async (repo: string | undefined, flags: InsightsFlags) => {
      const filter = filterOf(flags);
      let insights: readonly Insight[];
      let extra: Record<string, unknown> = {};
      let root: string | undefined;
      if (flags.server !== undefined) {
        if (repo !== undefined || flags.discovery !== undefined) throw new UsageError("insights: give either <repo-dir> --discovery <dir> (offline) or --server <url>, not both");
        if (flags.today !== undefined) throw new UsageError("insights: --today is for the offline analysis; the server measures against its own clock");
        const answer = await fromServer(flags, io);
        if (answer === undefined) return;
        insights = answer.insights;
        extra = { commit: answer.commit ?? null, today: answer.today ?? null };
      } else {
        if (repo === undefined) throw new UsageError("insights: give <repo-dir> --discovery <dir>, or --server <url>");
        if (flags.discovery === undefined) throw new UsageError("insights: --discovery <dir> is required with <repo-dir> (one sub-directory per cluster, as for render)");
        await requireDirectory(repo, "<repo-dir>");
        await requireDirectory(flags.discovery, "--discovery");
        const today = flags.today ?? new Date().toISOString().slice(0, 10);
        if (!/^\d{4}-\d{2}-\d{2}$/.test(today) || !Number.isFinite(Date.parse(`${today}T00:00:00Z`))) throw new UsageError(`--today must be a date YYYY-MM-DD, got ${JSON.stringify(today)}`);
        const offline = await analyseOffline(repo, flags.discovery, today);
        insights = offline.insights;
        extra = { today };
        root = repo;
        if (offline.configErrors > 0) io.err(`note: the configuration has ${offline.configErrors} error${offline.configErrors === 1 ? "" : "s"} (objects with errors are left out of the analysis); run gitmesh validate ${repo}\n`);
      }
      const shown = insights.filter(filter).map((i) => (root !== undefined && i.file !== undefined ? { ...i, file: join(root, i.file) } : i));
      const counts = { error: 0, warning: 0, info: 0 };
      for (const i of shown) counts[i.severity]++;
      if (flags.json) io.out(`${JSON.stringify({ ...extra, counts, insights: shown }, null, 2)}\n`);
      else io.out(table(shown, counts));
      io.exitCode = counts.error > 0 ? ExitCode.Failed : ExitCode.Ok;
    });
}

async function analyseOffline(repo: string, discoveryDir: string, today: string): Promise<{ insights: Insight[]; configErrors: number }> {
  // Loaded when the command runs: `gitmesh --help` stays quick.
  const [{ loadDesiredState, readConfigDirectory }, { readDiscoveryDirectory }, { translateAll }, { analyze }] = await Promise.all([
    import("../config/index.js"),
    import("../discovery/index.js"),
    import("../translate/index.js"),
    import("../insights/index.js"),
  ]);
  const loaded = loadDesiredState(await readConfigDirectory(repo));
  const discovery = await readDiscoveryDirectory(discoveryDir);
  const translation = translateAll(loaded.state, discovery.snapshots);
  const configErrors = loaded.diagnostics.filter((d) => d.severity === Severity.Error).length;
  return { insights: analyze({ desired: loaded.state, discovery: discovery.snapshots, translation, today }), configErrors };
}

interface ServerAnswer {
  readonly commit?: string | null;
  readonly today?: string;
  readonly insights: Insight[];
}

async function fromServer(flags: InsightsFlags, io: CliIo): Promise<ServerAnswer | undefined> {
  const base = serverUrl(flags.server!);
  const timeoutS = secondsFlag("--timeout", flags.timeout);
  const token = await tokenFromFlags(flags, process.env, CHECK_ENV);
  const ca = await readFlagFile("--ca-file", flags.caFile);
  const url = new URL("/api/insights", base);
  try {
    const res = await getJson(url, { token, ca, timeoutMs: timeoutS * 1000 });
    if (res.status === 401 || res.status === 403) {
      io.err(`gitmesh insights: ${url.href} answered ${String(res.status)}: ${res.message ?? ""}\n  ${token === undefined ? `the server requires an API token: pass --token-file <file> (or --token, or set ${CHECK_ENV.token}); ` : ""}${WHERE_TOKEN}\n`);
      io.exitCode = token === undefined ? ExitCode.Usage : ExitCode.Failed;
      return undefined;
    }
    if (res.status === 404) throw new Error("the server has no /api/insights (an older version?)");
    if (res.status !== 200) throw new Error(`HTTP ${String(res.status)}${res.message ? `: ${res.message}` : ""}`);
    const body = res.body as Partial<ServerAnswer>;
    if (!Array.isArray(body.insights)) throw new Error("the answer has no insights list");
    return body as ServerAnswer;
  } catch (err) {
    io.err(`gitmesh insights: cannot read ${url.href}: ${err instanceof Error ? err.message : String(err)}\n  is the server running and is --server its HTTP port (9091)?\n`);
    io.exitCode = ExitCode.Failed;
    return undefined;
  }
}

function filterOf(flags: InsightsFlags): (i: Insight) => boolean {
  const list = (v: string | undefined) => (v === undefined ? undefined : v.split(",").map((s) => s.trim()).filter((s) => s !== ""));
  const severities = list(flags.severity);
  for (const s of severities ?? []) if (!(SEVERITIES as readonly string[]).includes(s)) throw new UsageError(`--severity: unknown severity "${s}"; use ${SEVERITIES.join(", ")}`);
  const codes = list(flags.code);
  for (const c of codes ?? []) if (!(c in INSIGHT_CODES)) throw new UsageError(`--code: unknown code "${c}"; the codes are listed by gitmesh insights --help`);
  return (i) => (severities === undefined || severities.includes(i.severity)) && (codes === undefined || codes.includes(i.code)) && (flags.cluster === undefined || i.cluster === flags.cluster);
}

/** One row per insight (severity, code, cluster, workspace, where), its message and fix below; a summary line. */
export function table(insights: readonly Insight[], counts: { error: number; warning: number; info: number }): string {
  const where = (i: Insight) =>
    i.file !== undefined ? `${i.file}:${i.line ?? 1}` : i.object !== undefined ? `${i.object.kind} ${i.object.namespace === undefined ? "" : `${i.object.namespace}/`}${i.object.name}` : "-";
  const rows = insights.map((i) => [i.severity, i.code, i.cluster ?? "-", i.workspace ?? "-", where(i)]);
  const head = ["SEVERITY", "CODE", "CLUSTER", "WORKSPACE", "WHERE"];
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const line = (cells: readonly string[]) => cells.map((cell, c) => (c === cells.length - 1 ? cell : cell.padEnd(widths[c]!))).join("  ");
  const out: string[] = [];
  if (insights.length > 0) out.push(line(head));
  insights.forEach((i, n) => out.push(line(rows[n]!), `    ${i.message}`, `    fix: ${i.fix}`));
  const plural = (k: number, w: string) => `${k} ${w}${k === 1 || w === "info" ? "" : "s"}`;
  out.push(`${counts.error > 0 ? "failed" : "ok"}: ${plural(counts.error, "error")}, ${plural(counts.warning, "warning")}, ${plural(counts.info, "info")}`);
  return `${out.join("\n")}\n`;
}

async function requireDirectory(dir: string, what: string): Promise<void> {
  const info = await stat(dir).catch(() => undefined);
  if (!info) throw new UsageError(`insights: ${what} ${dir} does not exist`);
  if (!info.isDirectory()) throw new UsageError(`insights: ${what} ${dir} is not a directory`);
}
