/**
 * A real Git smart-HTTP server for the demo and benchmarks: `git http-backend` (the CGI program that
 * ships with git) behind a small Node HTTP bridge, serving the bare repositories of one directory.
 * Anonymous read and write, loopback only by default — a development tool, not a Git hosting product.
 * (test/helpers/git-server.ts adds test-only switches — auth, failure injection, held requests — on
 * the same CGI bridge.)
 *
 *   const git = await startGitHttpServer({ root, onPush: (repo) => … });
 *   await createBareRepo(root, "config");            // http://127.0.0.1:<port>/config.git
 */
import { spawn } from "node:child_process";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";

export interface GitHttpServerOptions {
  /** Directory holding bare repositories named `<repo>.git`. */
  readonly root: string;
  readonly host?: string;
  /** Default 0 (a free port). */
  readonly port?: number;
  /** Called after a push (receive-pack) to a repository completed. */
  readonly onPush?: (repo: string) => void;
}

export interface GitHttpServer {
  /** `http://127.0.0.1:<port>` */
  readonly baseUrl: string;
  url(repo: string): string;
  stop(): Promise<void>;
}

export async function startGitHttpServer(options: GitHttpServerOptions): Promise<GitHttpServer> {
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const u = new URL(req.url ?? "/", "http://localhost");
    const isPush = req.method === "POST" && u.pathname.endsWith("/git-receive-pack");
    await runHttpBackend(options.root, req, res, u);
    if (isPush) {
      const repo = /^\/(.+)\.git\/git-receive-pack$/.exec(u.pathname)?.[1];
      if (repo !== undefined) options.onPush?.(repo);
    }
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
  });
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const baseUrl = `http://${host}:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl,
    url: (repo) => `${baseUrl}/${repo}.git`,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Creates an empty bare repository `<root>/<repo>.git` (HEAD → main, pushes over HTTP allowed). */
export async function createBareRepo(root: string, repo: string): Promise<string> {
  const path = join(root, `${repo}.git`);
  await runGit(["init", "--quiet", "--bare", "--initial-branch=main", path]);
  await runGit(["config", "http.receivepack", "true"], { GIT_DIR: path });
  await runGit(["config", "uploadpack.allowReachableSHA1InWant", "true"], { GIT_DIR: path });
  return path;
}

/** Runs git; resolves with stdout, rejects with stderr in the message. */
export function runGit(args: readonly string[], env: Readonly<Record<string, string>> = {}, cwd?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("git", args, { env: { ...process.env, GIT_TERMINAL_PROMPT: "0", ...env }, stdio: ["ignore", "pipe", "pipe"], ...(cwd === undefined ? {} : { cwd }) });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (c: Buffer) => out.push(c));
    child.stderr.on("data", (c: Buffer) => err.push(c));
    child.on("error", (e) => reject(new Error(`git could not be started (${e.message}); install git`)));
    child.on("close", (code) => {
      if (code === 0) resolve(Buffer.concat(out).toString("utf8"));
      else reject(new Error(`git ${args.join(" ")} exited ${String(code)}: ${Buffer.concat(err).toString("utf8").trim()}`));
    });
  });
}

/** Observers of one CGI answer (test/helpers/git-server.ts records them). */
export interface HttpBackendHooks {
  /** REMOTE_USER seen by git (default `gitmesh`). */
  readonly remoteUser?: string;
  /** The HTTP status of the answer (502 when git wrote no headers). */
  readonly onStatus?: (status: number) => void;
  /** Body bytes sent, per chunk. */
  readonly onBytes?: (bytes: number) => void;
}

/** Runs `git http-backend` as a CGI program for one request and streams its answer back. */
export function runHttpBackend(root: string, req: IncomingMessage, res: ServerResponse, u: URL, hooks: HttpBackendHooks = {}): Promise<void> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    GIT_PROJECT_ROOT: root,
    GIT_HTTP_EXPORT_ALL: "1",
    PATH_INFO: decodeURIComponent(u.pathname),
    REQUEST_METHOD: req.method ?? "GET",
    QUERY_STRING: u.search.slice(1),
    CONTENT_TYPE: req.headers["content-type"] ?? "",
    REMOTE_ADDR: "127.0.0.1",
    REMOTE_USER: hooks.remoteUser ?? "gitmesh",
    GIT_CONFIG_NOSYSTEM: "1",
  };
  if (req.headers["content-length"]) env.CONTENT_LENGTH = req.headers["content-length"];
  if (req.headers["content-encoding"]) env.HTTP_CONTENT_ENCODING = req.headers["content-encoding"];
  const protocol = req.headers["git-protocol"];
  if (typeof protocol === "string") env.GIT_PROTOCOL = protocol;
  return new Promise<void>((resolve, reject) => {
    const child = spawn("git", ["http-backend"], { env, stdio: ["pipe", "pipe", "pipe"] });
    req.pipe(child.stdin);
    child.stdin.on("error", () => undefined);
    let head = Buffer.alloc(0);
    let headersDone = false;
    child.stdout.on("data", (chunk: Buffer) => {
      if (headersDone) {
        hooks.onBytes?.(chunk.length);
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const crlf = head.indexOf("\r\n\r\n");
      const cut = crlf >= 0 ? crlf : head.indexOf("\n\n");
      if (cut < 0) return;
      headersDone = true;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head.subarray(0, cut).toString("latin1").split(/\r?\n/)) {
        const i = line.indexOf(":");
        if (i < 0) continue;
        const name = line.slice(0, i).trim();
        const value = line.slice(i + 1).trim();
        if (name.toLowerCase() === "status") status = Number.parseInt(value, 10);
        else headers[name] = value;
      }
      hooks.onStatus?.(status);
      res.writeHead(status, headers);
      const rest = head.subarray(cut + (crlf >= 0 ? 4 : 2));
      hooks.onBytes?.(rest.length);
      res.write(rest);
    });
    child.stderr.resume();
    child.on("error", reject);
    child.on("close", () => {
      if (!headersDone) {
        hooks.onStatus?.(502);
        res.writeHead(502);
      }
      res.end();
      resolve();
    });
  });
}
