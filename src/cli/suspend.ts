/**
 * `gitmesh suspend <cluster>|--all [--reason <text>]` and `gitmesh resume <cluster>|--all`: hold a
 * cluster or the whole fleet (a change freeze, an incident) through the management server's admin API
 * (`POST /api/clusters/<name>/suspend|resume`, `POST /api/fleet/suspend|resume`), and let it go.
 *
 * A suspended cluster keeps what it runs: the server hands it no new output (nothing applied or
 * pruned) while its connection, discovery and status stay live; resume brings it to the commit in
 * force. The API needs the admin token (`--token-file`, `--token`, or GITMESH_API_ADMIN_TOKEN /
 * GITMESH_API_ADMIN_TOKEN_FILE); the server records the caller as the token's role, never a name the
 * client gives. Exit status: 0 done, 1 the server refused or could not be reached, 2 usage error.
 */
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Command } from "commander";
import { serverUrl } from "./check.js";
import { readFlagFile, tokenFromFlags } from "./flag-files.js";
import { ExitCode, secondsFlag, UsageError, type CliIo } from "./io.js";

interface SuspendFlags {
  readonly all?: boolean;
  readonly reason?: string;
  readonly server: string;
  readonly token?: string;
  readonly tokenFile?: string;
  readonly caFile?: string;
  readonly timeout: string;
  readonly output: string;
}

/** Where the admin token is read when no flag gives one. */
export const ADMIN_TOKEN_ENV = { token: "GITMESH_API_ADMIN_TOKEN", tokenFile: "GITMESH_API_ADMIN_TOKEN_FILE" } as const;

const WHERE_TOKEN =
  "the admin token is in the Secret gitmesh-api-tokens (Helm chart: kubectl -n gitmesh get secret gitmesh-api-tokens -o jsonpath='{.data.admin}' | base64 -d > admin-token),\n" +
  "  or the file api-token-admin in the server's --pki-dir (or <data-dir>/api-tokens), or the file given to --api-admin-token-file";

export function registerSuspend(program: Command, io: CliIo): void {
  register(program, io, "suspend");
}

export function registerResume(program: Command, io: CliIo): void {
  register(program, io, "resume");
}

export const SUSPEND_SUMMARY = "hold a cluster or the whole fleet: nothing new is applied or pruned there until resumed";
export const RESUME_SUMMARY = "let a suspended cluster or the fleet go: it is brought to the commit in force";

function register(program: Command, io: CliIo, action: "suspend" | "resume"): void {
  const cmd = program
    .command(`${action} [cluster]`)
    .summary(action === "suspend" ? SUSPEND_SUMMARY : RESUME_SUMMARY)
    .description(
      action === "suspend"
        ? "Suspend a cluster (or --all: the whole fleet) on a running management server: the cluster keeps what it\n" +
            "runs, the server hands it no new output (nothing applied or pruned) and its agent repairs no drift (a hand\n" +
            "edit stays until resumed), its connection, discovery and status stay live, and every view shows \"suspended since <time> by <who> (<reason>)\". Stored in the server's\n" +
            "shared store (Redis): every replica and a restart agree. Undo with gitmesh resume.\n" +
            "Exit status: 0 done, 1 refused or unreachable, 2 usage error."
        : "Resume a suspended cluster (or --all: the fleet) on a running management server: it is handed the output of\n" +
            "the commit in force. A freeze held in Git (gitmesh.yaml suspend) or by the agent's chart value stays until\n" +
            "lifted there; the answer says so. Exit status: 0 done, 1 refused, unreachable or still held, 2 usage error.",
    )
    .option("--all", action === "suspend" ? "suspend the whole fleet" : "resume the whole fleet (the fleet-wide suspension; per-cluster ones stay)")
    .option("--server <url>", "the server's HTTP port: a URL (http:// or https://) or host:port", "http://localhost:9091")
    .option("--token-file <file>", `file holding the API admin token [${ADMIN_TOKEN_ENV.tokenFile}]`)
    .option("--token <token>", `the API admin token (visible to other local users in the process list: prefer --token-file or ${ADMIN_TOKEN_ENV.token})`)
    .option("--ca-file <file>", "PEM CA certificate(s) to verify an https --server (default: the system CAs)")
    .option("--output <format>", "text | json", "text")
    .option("--timeout <seconds>", "request timeout", "10");
  if (action === "suspend") cmd.option("--reason <text>", "why (shown with the suspension; at most 500 characters)");
  cmd
    .addHelpText("after", `\nExamples:\n  gitmesh ${action} cluster1${action === "suspend" ? ' --reason "incident 4711"' : ""} --server https://gitmesh.example.com --token-file admin-token\n  gitmesh ${action} --all --token-file admin-token\n\nThe token: --token, else --token-file, else ${ADMIN_TOKEN_ENV.token}, else ${ADMIN_TOKEN_ENV.tokenFile};\n  ${WHERE_TOKEN}.\n`)
    .action(async (cluster: string | undefined, flags: SuspendFlags) => {
      if (cluster === undefined && flags.all !== true) throw new UsageError(`name a cluster or pass --all: gitmesh ${action} <cluster> | gitmesh ${action} --all`);
      if (cluster !== undefined && flags.all === true) throw new UsageError(`give a cluster or --all, not both`);
      if (cluster !== undefined && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(cluster)) throw new UsageError(`"${cluster}" is not a cluster name (a DNS-1123 label)`);
      if (flags.reason !== undefined && (flags.reason.length > 500 || /[\u0000-\u001f]/.test(flags.reason))) throw new UsageError("--reason must be one line of at most 500 characters");
      if (flags.output !== "text" && flags.output !== "json") throw new UsageError(`--output must be text or json, got "${flags.output}"`);
      const timeoutS = secondsFlag("--timeout", flags.timeout);
      const base = serverUrl(flags.server);
      const token = await tokenFromFlags(flags, io.env ?? process.env, ADMIN_TOKEN_ENV);
      if (token === undefined) throw new UsageError(`the admin API needs the admin token: pass --token-file <file> (or --token, or set ${ADMIN_TOKEN_ENV.token});\n  ${WHERE_TOKEN}`);
      const ca = await readFlagFile("--ca-file", flags.caFile);
      if (ca !== undefined && base.protocol !== "https:") throw new UsageError(`--ca-file is for an https --server; ${base.href} is plain http`);
      const url = new URL(cluster === undefined ? `/api/fleet/${action}` : `/api/clusters/${encodeURIComponent(cluster)}/${action}`, base);
      const body = flags.reason === undefined ? "" : JSON.stringify({ reason: flags.reason });
      let res: { status: number; body?: unknown; message?: string };
      try {
        res = await postJson(url, body, { token, ca, timeoutMs: timeoutS * 1000 });
      } catch (err) {
        io.err(`gitmesh ${action}: cannot reach ${url.href}: ${err instanceof Error ? err.message : String(err)}\n  is the server running and is --server its HTTP port (9091)${base.protocol === "https:" ? ", and does --ca-file hold its CA" : ""}?\n`);
        io.exitCode = ExitCode.Failed;
        return;
      }
      if (res.status !== 200) {
        const hint = res.status === 401 ? `\n  the token given is not valid for this server; ${WHERE_TOKEN}` : res.status === 403 ? `\n  the token given is not the admin token (the read token cannot ${action}); ${WHERE_TOKEN}` : "";
        io.err(`gitmesh ${action}: ${url.href} answered ${String(res.status)}: ${res.message ?? ""}${hint}\n`);
        io.exitCode = ExitCode.Failed;
        return;
      }
      const answer = res.body as { scope: string; changed: boolean; suspended: { summary: string; source: string } | null; next: string };
      const what = answer.scope === "fleet" ? "the whole fleet" : `cluster ${answer.scope}`;
      // Resumed but still held (a Git freeze, another suspension): not done.
      const stillHeld = action === "resume" && answer.suspended !== null;
      if (flags.output === "json") io.out(JSON.stringify(answer, null, 2) + "\n");
      else if (action === "suspend") io.out(`${what}: ${answer.suspended?.summary ?? "suspended"}${answer.changed ? "" : " (it already was)"}\n  ${answer.next}\n`);
      else if (stillHeld) io.out(`${what}: ${answer.changed ? "API suspension lifted, but " : ""}still ${answer.suspended!.summary}\n  ${answer.next}\n`);
      else io.out(`${what}: ${answer.changed ? "resumed" : "was not suspended"}; ${answer.next}\n`);
      io.exitCode = stillHeld ? ExitCode.Failed : ExitCode.Ok;
    });
}

/** POST a JSON body (node:http/https, so that --ca-file is honoured); the JSON answer, or the error message of another status. */
function postJson(url: URL, body: string, o: { token: string; ca: string | undefined; timeoutMs: number }): Promise<{ status: number; body?: unknown; message?: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: "application/json", authorization: `Bearer ${o.token}`, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) };
    const options = { method: "POST", headers, timeout: o.timeoutMs, ...(o.ca !== undefined ? { ca: o.ca } : {}) };
    const req = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        } catch {
          parsed = undefined;
        }
        const status = res.statusCode ?? 0;
        if (status === 200 && parsed === undefined) {
          reject(new Error("the answer is not JSON"));
          return;
        }
        const message = (parsed as { error?: { message?: unknown } } | undefined)?.error?.message;
        resolve({ status, ...(status === 200 ? { body: parsed } : {}), ...(typeof message === "string" ? { message } : {}) });
      });
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${String(o.timeoutMs / 1000)} s`)));
    req.on("error", reject);
    req.end(body);
  });
}
