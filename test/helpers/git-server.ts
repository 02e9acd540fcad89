/**
 * A real Git smart-HTTP server for tests: `git http-backend` (the CGI program that ships with git)
 * behind a small Node HTTP bridge on 127.0.0.1:0, serving bare repositories from a temp dir.
 *
 *   const git = await startGitServer({ auth: { token: "s3cret" } });
 *   await git.createRepo("config");
 *   const sha = await git.commitFiles("config", { "a.yaml": "x: 1\n", "old.yaml": null }, "add a, drop old");
 *   // git.url("config") → http://127.0.0.1:<port>/config.git (no credentials in it)
 *   await git.stop();
 *
 * Extras for tests:
 * - `requests`: every request (method, path, service, the Authorization header as sent, status),
 *   to assert which credentials and paths a client used;
 * - `failNext(n, status)`: the next n requests fail (fetch retry/backoff tests);
 * - `hold(match)`: park matching requests until `release()` — makes two pushes race deterministically;
 * - `commitFiles` writes commits straight into the bare repository with `git fast-import` (fast for
 *   10,000 files), with a fixed identity and an optional fixed date, so commit SHAs are reproducible.
 */
import { spawn } from "node:child_process";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { runHttpBackend } from "../../src/devtools/index.js";

export type GitServerAuth =
  /** HTTP basic with exactly this user and password. */
  | { readonly username: string; readonly password: string }
  /** A token, accepted as `Authorization: Bearer <token>` or as the password of basic auth with any user (GitHub/GitLab style). */
  | { readonly token: string };

export interface GitServerOptions {
  /** Require credentials for every request (default: anonymous read and write). */
  readonly auth?: GitServerAuth;
}

export interface GitRequestRecord {
  readonly method: string;
  /** Path without the query, e.g. `/config.git/info/refs`. */
  readonly path: string;
  /** `git-upload-pack` or `git-receive-pack` (from the query or the path). */
  readonly service: string;
  /** The Authorization header exactly as the client sent it (undefined when none). */
  readonly authorization: string | undefined;
  status: number;
  /** Bytes of the response body sent (e.g. the size of a fetched pack). */
  responseBytes: number;
}

export interface HeldRequests {
  /** Resolves when at least `n` matching requests are parked. */
  waitFor(n: number): Promise<void>;
  /** Lets every parked (and future) matching request through. */
  release(): void;
}

export interface CommitOptions {
  /** Branch to commit to (default `main`); created when missing. */
  readonly branch?: string;
  /** Unix seconds for author and committer (default: now). */
  readonly date?: number;
  readonly author?: { readonly name: string; readonly email: string };
}

export interface GitServer {
  /** `http://127.0.0.1:<port>` */
  readonly baseUrl: string;
  /** Directory holding the bare repositories (`<name>.git`). */
  readonly root: string;
  readonly requests: GitRequestRecord[];
  /** Clone URL of a repository, without credentials. */
  url(repo: string): string;
  /** Path of the bare repository on disk (tests may read it directly as a "local" source). */
  repoPath(repo: string): string;
  /** Creates an empty bare repository (HEAD → `main`, pushes allowed). */
  createRepo(repo: string): Promise<string>;
  /** One commit with these changes (`null` deletes a path); returns the commit SHA. */
  commitFiles(repo: string, files: Readonly<Record<string, string | Uint8Array | null>>, message: string, options?: CommitOptions): Promise<string>;
  /** Runs git with the repository as GIT_DIR; returns stdout. */
  git(repo: string, args: readonly string[]): Promise<string>;
  /** The SHA a ref points at, or undefined. */
  revParse(repo: string, ref: string): Promise<string | undefined>;
  /** The next `count` requests fail with `status` (default 503) before reaching git. */
  failNext(count: number, status?: number): void;
  /** Parks requests for which `match` is true until released. */
  hold(match: (req: GitRequestRecord) => boolean): HeldRequests;
  stop(): Promise<void>;
}

const IDENTITY = { name: "Test Author", email: "author@example.test" };

export async function startGitServer(options: GitServerOptions = {}): Promise<GitServer> {
  const root = mkdtempSync(join(tmpdir(), "gitmesh-git-"));
  const requests: GitRequestRecord[] = [];
  let failures: { count: number; status: number } = { count: 0, status: 503 };
  const holds: { match: (r: GitRequestRecord) => boolean; parked: (() => void)[]; released: boolean; waiters: (() => void)[] }[] = [];

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const u = new URL(req.url ?? "/", "http://localhost");
    const service = u.searchParams.get("service") ?? (/\/(git-[a-z-]+)$/.exec(u.pathname)?.[1] ?? "");
    const record: GitRequestRecord = { method: req.method ?? "GET", path: u.pathname, service, authorization: req.headers.authorization, status: 0, responseBytes: 0 };
    requests.push(record);
    const reply = (status: number, body: string, headers: Record<string, string> = {}) => {
      record.status = status;
      res.writeHead(status, { "content-type": "text/plain", ...headers });
      res.end(body);
    };
    if (failures.count > 0) {
      failures.count--;
      req.resume();
      reply(failures.status, "injected failure\n");
      return;
    }
    if (options.auth && !authorized(options.auth, req.headers.authorization)) {
      req.resume();
      reply(401, "authentication required\n", { "www-authenticate": 'Basic realm="git"' });
      return;
    }
    for (const h of holds) {
      if (!h.released && h.match(record)) {
        await new Promise<void>((resolve) => {
          h.parked.push(resolve);
          for (const w of h.waiters) w();
        });
      }
    }
    await runBackend(root, req, res, record, u);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const baseUrl = `http://127.0.0.1:${port}`;
  const repoPath = (repo: string) => join(root, `${repo}.git`);
  const git = (repo: string, args: readonly string[], input?: Buffer) => run("git", args, { GIT_DIR: repoPath(repo) }, input);

  const api: GitServer = {
    baseUrl,
    root,
    requests,
    url: (repo) => `${baseUrl}/${repo}.git`,
    repoPath,
    async createRepo(repo) {
      await run("git", ["init", "--quiet", "--bare", "--initial-branch=main", repoPath(repo)], {});
      await git(repo, ["config", "http.receivepack", "true"]);
      await git(repo, ["config", "uploadpack.allowReachableSHA1InWant", "true"]);
      return repoPath(repo);
    },
    async commitFiles(repo, files, message, opts = {}) {
      const branch = opts.branch ?? "main";
      const who = opts.author ?? IDENTITY;
      const when = opts.date ?? Math.floor(Date.now() / 1000);
      const parent = await api.revParse(repo, `refs/heads/${branch}`);
      const chunks: Buffer[] = [];
      const text = (s: string) => chunks.push(Buffer.from(s));
      const data = (b: Buffer) => {
        text(`data ${b.length}\n`);
        chunks.push(b);
        text("\n");
      };
      text(`commit refs/heads/${branch}\ncommitter ${who.name} <${who.email}> ${when} +0000\n`);
      data(Buffer.from(message));
      if (parent) text(`from ${parent}\n`);
      for (const [path, content] of Object.entries(files)) {
        const quoted = JSON.stringify(path);
        if (content === null) {
          text(`D ${quoted}\n`);
        } else {
          text(`M 100644 inline ${quoted}\n`);
          data(typeof content === "string" ? Buffer.from(content) : Buffer.from(content));
        }
      }
      text("done\n");
      await git(repo, ["fast-import", "--quiet", "--done"], Buffer.concat(chunks));
      const sha = await api.revParse(repo, `refs/heads/${branch}`);
      if (!sha) throw new Error(`commitFiles: ${branch} missing after fast-import`);
      return sha;
    },
    git: (repo, args) => git(repo, args),
    async revParse(repo, ref) {
      try {
        return (await git(repo, ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`])).trim() || undefined;
      } catch {
        return undefined;
      }
    },
    failNext(count, status = 503) {
      failures = { count, status };
    },
    hold(match) {
      const h = { match, parked: [] as (() => void)[], released: false, waiters: [] as (() => void)[] };
      holds.push(h);
      return {
        waitFor: (n) =>
          new Promise<void>((resolve) => {
            const check = () => {
              if (h.parked.length >= n) resolve();
            };
            h.waiters.push(check);
            check();
          }),
        release: () => {
          h.released = true;
          for (const p of h.parked.splice(0)) p();
        },
      };
    },
    async stop() {
      for (const h of holds) {
        h.released = true;
        for (const p of h.parked.splice(0)) p();
      }
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(root, { recursive: true, force: true });
    },
  };
  return api;
}

function authorized(auth: GitServerAuth, header: string | undefined): boolean {
  if (!header) return false;
  if ("token" in auth) {
    if (header === `Bearer ${auth.token}`) return true;
    const basic = decodeBasic(header);
    return basic !== undefined && basic.password === auth.token;
  }
  const basic = decodeBasic(header);
  return basic !== undefined && basic.username === auth.username && basic.password === auth.password;
}

function decodeBasic(header: string): { username: string; password: string } | undefined {
  const m = /^Basic\s+(\S+)$/i.exec(header);
  if (!m?.[1]) return undefined;
  const decoded = Buffer.from(m[1], "base64").toString("utf8");
  const i = decoded.indexOf(":");
  return i < 0 ? undefined : { username: decoded.slice(0, i), password: decoded.slice(i + 1) };
}

/** One request through the CGI bridge of src/devtools, recording its status and body bytes. */
function runBackend(root: string, req: IncomingMessage, res: ServerResponse, record: GitRequestRecord, u: URL): Promise<void> {
  return runHttpBackend(root, req, res, u, {
    remoteUser: "test",
    onStatus: (status) => (record.status = status),
    onBytes: (bytes) => (record.responseBytes += bytes),
  });
}

function run(cmd: string, args: readonly string[], env: Record<string, string>, input?: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (c: Buffer) => out.push(c));
    child.stderr.on("data", (c: Buffer) => err.push(c));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve(Buffer.concat(out).toString("utf8"));
      else reject(new Error(`${cmd} ${args.join(" ")} exited ${code}: ${Buffer.concat(err).toString("utf8").trim()}`));
    });
    child.stdin.on("error", () => undefined);
    child.stdin.end(input);
  });
}
