/**
 * The web UI on the server's HTTP port: the built single-page app (web/ → dist/web, `npm run build`)
 * at `/` and `/assets/*`, and the live event stream the UI listens to (`GET /api/events`).
 *
 * The page and its assets are static code with no data in them, so they are public like /healthz;
 * everything the UI shows comes from /api with the token the user signs in with (read is enough).
 * Responses carry a strict Content-Security-Policy (same origin only: no CDN, no inline script, no
 * framing), `nosniff` and `no-referrer`. Asset names are content-hashed: cached for a year, and sent
 * gzip-compressed to browsers that accept it; the page itself is never cached, so a new build is
 * picked up at the next load.
 *
 * The event stream (text/event-stream) sends `event: change` whenever the server's status changes
 * (a commit accepted or rejected, a cluster applying, connecting, warming…), checked every
 * `intervalMs` by one shared ticker that runs only while someone listens, plus a comment every 15 s
 * so proxies keep the connection. The UI re-reads the API on each change: a push shows up on every
 * open page within about a second, without a reload.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { gzipSync } from "node:zlib";
import { extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { IncomingMessage, ServerResponse } from "node:http";
import { describeError, type Logger } from "../core/index.js";
import { HttpError, type Route } from "./http.js";

/** Where `npm run build` puts the UI: <package>/dist/web (the same from src/server and dist/server). */
export const DEFAULT_WEB_ROOT = fileURLToPath(new URL("../../dist/web", import.meta.url));

const SECURITY_HEADERS = {
  "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
} as const;

const TYPES: Readonly<Record<string, string>> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
};

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>gitmesh</title><p>The gitmesh web UI is not built into this installation. From a checkout, run <code>npm run build</code>; the JSON API is at <a href="/api">/api</a>.</p>\n`;

/** Routes serving the UI from `root` (a built dist/web); a missing build answers a page that says how to build it. */
export function createWebRoutes(options: { readonly root?: string } = {}): Route[] {
  const root = options.root ?? DEFAULT_WEB_ROOT;
  const indexFile = join(root, "index.html");
  // The page is small and read once (a rebuild needs a restart, as for the server's own code).
  const index = existsSync(indexFile) ? readFileSync(indexFile) : undefined;
  // Assets are immutable (content-hashed names): each is read and compressed once.
  const assets = new Map<string, { body: Buffer; gzip: Buffer }>();
  const accepts = (req: IncomingMessage) => /\bgzip\b/.test(req.headers["accept-encoding"] ?? "");
  const page = (res: ServerResponse) => {
    res.writeHead(index ? 200 : 503, { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache", ...SECURITY_HEADERS });
    res.end(index ?? NOT_BUILT);
    return Promise.resolve();
  };
  return [
    { method: "GET", pattern: /^\/(?:index\.html)?$/, access: "public", handler: (_q, res) => page(res) },
    {
      method: "GET",
      pattern: /^\/assets\/([A-Za-z0-9][A-Za-z0-9._-]*)$/,
      access: "public",
      handler: async (req, res, [name]) => {
        const type = TYPES[extname(name!)];
        if (type === undefined || name!.includes("..")) throw new HttpError(404, `no asset ${name!}`);
        let asset = assets.get(name!);
        if (asset === undefined) {
          const body = await readFile(join(root, "assets", name!)).catch(() => undefined);
          if (body === undefined) throw new HttpError(404, `no asset ${name!}`);
          asset = { body, gzip: gzipSync(body) };
          assets.set(name!, asset);
        }
        const gzip = accepts(req);
        res.writeHead(200, { "content-type": type, "cache-control": "public, max-age=31536000, immutable", vary: "accept-encoding", ...(gzip ? { "content-encoding": "gzip" } : {}), ...SECURITY_HEADERS });
        res.end(gzip ? asset.gzip : asset.body);
      },
    },
  ];
}

export interface EventStreamOptions {
  /** What the UI shows, summarised: a change of this value is a change event. */
  readonly fingerprint: () => Promise<unknown>;
  /** How often the fingerprint is taken while someone listens (default 500 ms). */
  readonly intervalMs?: number;
  /** Most open streams (default 200); more answer 503. */
  readonly maxStreams?: number;
  readonly logger: Logger;
}

export interface EventStream {
  readonly route: Route;
  /** Open streams. */
  readonly streams: () => number;
  /** Ends every stream (server shutdown). */
  close(): void;
}

/** `GET /api/events` (read role): server-sent events for the UI. */
export function createEventStream(options: EventStreamOptions): EventStream {
  const interval = options.intervalMs ?? 500;
  const max = options.maxStreams ?? 200;
  const clients = new Set<ServerResponse>();
  let timer: NodeJS.Timeout | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let last: string | undefined;
  let busy = false;
  const send = (text: string) => {
    for (const c of clients) c.write(text);
  };
  const tick = async () => {
    if (busy) return;
    busy = true;
    try {
      const digest = createHash("sha256").update(JSON.stringify(await options.fingerprint())).digest("hex");
      if (last !== undefined && digest !== last) send(`event: change\ndata: {}\n\n`);
      last = digest;
    } catch (err) {
      options.logger.warn("event stream: cannot read the status; listeners are not told of changes until it can", { error: describeError(err) });
    } finally {
      busy = false;
    }
  };
  const stopTimers = () => {
    clearInterval(timer);
    clearInterval(heartbeat);
    timer = heartbeat = undefined;
    last = undefined;
  };
  const route: Route = {
    method: "GET",
    pattern: /^\/api\/events$/,
    access: "read",
    handler: (req, res) => {
      if (clients.size >= max) throw new HttpError(503, `too many open event streams (${String(max)}); close other UI tabs or try again`);
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", connection: "keep-alive", "x-accel-buffering": "no" });
      res.write(`retry: 2000\nevent: hello\ndata: {}\n\n`);
      clients.add(res);
      if (timer === undefined) {
        void tick();
        timer = setInterval(() => void tick(), interval);
        heartbeat = setInterval(() => send(": ping\n\n"), 15_000);
        timer.unref();
        heartbeat.unref();
      }
      const done = () => {
        clients.delete(res);
        if (clients.size === 0) stopTimers();
      };
      req.on("close", done);
      res.on("error", done);
      return Promise.resolve();
    },
  };
  return {
    route,
    streams: () => clients.size,
    close() {
      for (const c of clients) c.end();
      clients.clear();
      stopTimers();
    },
  };
}
