/**
 * The server's HTTP edge (port 9091, node:http, or node:https with `tls`): health, readiness,
 * Prometheus metrics, Git webhooks and the JSON API. Handlers return data or throw; ONE error handler
 * (`answerError`) maps every failure to a status and a JSON body — client mistakes (400/401/403/404/
 * 405/413) say what to do, infrastructure failures answer 503 with Retry-After, bugs answer 500 with a
 * generic message and are logged. No response ever carries a secret: the API serves rendered output,
 * discovery, diagnostics and status, never PKI, tokens or credentials (Git URLs go through
 * stripCredentials).
 *
 * Access (api-auth.ts): every route declares who may call it. /healthz, /readyz, /metrics and the
 * webhooks (HMAC-verified by their handlers) are `public`; everything under /api needs a bearer token:
 * `read` for GET, `admin` for mutating actions (a non-GET route under /api declared `read` or `public`
 * is refused when the edge is built). Any /api path without a valid token answers 401 before routing
 * (an unauthenticated caller learns nothing about which routes exist); a valid token whose role is
 * too low answers 403. Refusals are logged (method, path, reason, address: never the token) and
 * counted in gitmesh_server_api_auth_failures_total{reason}.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { Counter, type Registry } from "prom-client";
import { describeError, Reaction, reactionOf, RetryLaterError, stripCredentials, type Logger } from "../core/index.js";
import type { WebhookHandlers, WebhookResponse } from "../git-sync/index.js";
import { allows, type ApiAuth, type ApiRole, type RouteAccess } from "./api-auth.js";

/** A client mistake answered with its status. */
export class HttpError extends Error {
  readonly code = "HttpError";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The client went away before its request body arrived in full: nothing to answer, nothing failed here. */
export class ClientAbortedError extends Error {
  readonly code = "ClientAbortedError";
  constructor(received: number) {
    super(`the client closed the connection after ${String(received)} bytes of its request body`);
  }
}

/** What the API reads; the composition root implements it over the live components. */
export interface ServerApi {
  /** Liveness: false only when the process should be restarted. */
  healthy(): boolean;
  /** Readiness: ready only when warmed (and a desired state is in force); the reason otherwise. */
  readiness(): { ready: boolean; reason: string };
  status(): Promise<unknown>;
  clusters(): Promise<unknown>;
  cluster(name: string): Promise<unknown>;
  clusterInput(name: string): Promise<unknown>;
  clusterOutput(name: string): Promise<unknown>;
  commits(): Promise<unknown>;
  commit(sha: string): Promise<unknown>;
  diagnostics(): Promise<unknown>;
  /** The Gloo resources in force: kind, name, namespace, workspace and file:line (provenance). */
  resources(): Promise<unknown>;
  /** The rendered change between two commits (full SHAs), as `gitmesh diff --format json` reports it. */
  diff(base: string, head: string): Promise<unknown>;
  /**
   * Policy-aware provenance of the commit in force: every Gloo object that wrote into each rendering
   * parent's Istio objects (and which fields), and where each policy applies (routes, destinations,
   * clusters). Optional: an API without it answers 404.
   */
  provenance?(): Promise<unknown>;
  /** The fleet analysis (src/insights) of the commit in force, the clusters' discovery and certificates. */
  insights(): Promise<unknown>;
  /** The traffic graph (GET /api/traffic: workspace, cluster, namespace, window); absent: answered as not configured. */
  traffic?(query: URLSearchParams): Promise<unknown>;
}

export interface ServerHttpOptions {
  readonly api: ServerApi;
  readonly registry: Registry;
  readonly webhooks: WebhookHandlers;
  /** Counts webhook answers (provider, status). */
  readonly onWebhook?: (provider: string, status: number) => void;
  readonly logger: Logger;
  readonly host?: string;
  /** Default 9091; 0 picks a free port. */
  readonly port?: number;
  /** Largest webhook body accepted (default 5 MiB → 413). */
  readonly maxBodyBytes?: number;
  /** More routes (e.g. admin actions), each declaring its access. */
  readonly routes?: readonly Route[];
  /** Bearer-token check of /api; null leaves /api open to anyone who reaches the port (`--no-api-auth`, trials only). */
  readonly auth: ApiAuth | null;
  /** Serve HTTPS with this certificate (PEM, chain first) and key instead of plain HTTP. */
  readonly tls?: { readonly certPem: string; readonly keyPem: string };
}

export interface ServerHttp {
  start(): Promise<number>;
  stop(): Promise<void>;
  readonly port: number | undefined;
}

/**
 * Who is calling, as the edge authenticated it (never what the client says): the role of its token
 * (undefined outside /api), and `actor`, the name actions record (`admin token`; `anonymous` with
 * --no-api-auth).
 */
export interface RouteCaller {
  readonly role: ApiRole | undefined;
  readonly actor: string;
}

/** Answers a request; `params` are the pattern's groups, percent-decoded. */
export type RouteHandler = (req: IncomingMessage, res: ServerResponse, params: string[], caller: RouteCaller) => Promise<void>;
type Handler = RouteHandler;

/** One route of the edge: who may call it is part of its declaration. */
export interface Route {
  readonly method: string;
  readonly pattern: RegExp;
  readonly access: RouteAccess;
  readonly handler: Handler;
}

const isApiPath = (path: string) => path === "/api" || path.startsWith("/api/");

export function createServerHttp(options: ServerHttpOptions): ServerHttp {
  const { api, logger: log } = options;
  const maxBody = options.maxBodyBytes ?? 5 * 1024 * 1024;
  let server: Server | undefined;
  let port: number | undefined;

  const json = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body, null, 2) + "\n";
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
    res.end(text);
  };
  const text = (res: ServerResponse, status: number, body: string, type = "text/plain; charset=utf-8") => {
    res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
    res.end(body);
  };
  const found = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new HttpError(404, `${what} not found`);
    return value;
  };

  const webhook = (provider: keyof WebhookHandlers): Handler => async (req, res) => {
    const body = await readBody(req, maxBody);
    const answer: WebhookResponse = options.webhooks[provider]({ headers: req.headers, body });
    options.onWebhook?.(provider, answer.status);
    text(res, answer.status, answer.body);
  };

  const routes: Route[] = [
    { method: "GET", pattern: /^\/healthz$/, access: "public", handler: (_q, res) => Promise.resolve(api.healthy() ? text(res, 200, "ok\n") : text(res, 503, "unhealthy\n")) },
    {
      method: "GET",
      pattern: /^\/readyz$/,
      access: "public",
      handler: (_q, res) => {
        const r = api.readiness();
        text(res, r.ready ? 200 : 503, `${r.ready ? "ready" : "not ready"}: ${r.reason}\n`);
        return Promise.resolve();
      },
    },
    { method: "GET", pattern: /^\/metrics$/, access: "public", handler: async (_q, res) => text(res, 200, await options.registry.metrics(), options.registry.contentType) },
    { method: "POST", pattern: /^\/webhooks\/github$/, access: "public", handler: webhook("github") },
    { method: "POST", pattern: /^\/webhooks\/gitlab$/, access: "public", handler: webhook("gitlab") },
    { method: "POST", pattern: /^\/webhooks\/generic$/, access: "public", handler: webhook("generic") },
    { method: "GET", pattern: /^\/api\/?$/, access: "read", handler: (_q, res) => Promise.resolve(json(res, 200, { endpoints: API_ENDPOINTS })) },
    { method: "GET", pattern: /^\/api\/status$/, access: "read", handler: async (_q, res) => json(res, 200, await api.status()) },
    { method: "GET", pattern: /^\/api\/clusters$/, access: "read", handler: async (_q, res) => json(res, 200, await api.clusters()) },
    { method: "GET", pattern: /^\/api\/clusters\/([^/]+)$/, access: "read", handler: async (_q, res, [c]) => json(res, 200, found(await api.cluster(c!), `cluster ${c!}`)) },
    { method: "GET", pattern: /^\/api\/clusters\/([^/]+)\/input$/, access: "read", handler: async (_q, res, [c]) => json(res, 200, found(await api.clusterInput(c!), `discovery snapshot of cluster ${c!}`)) },
    { method: "GET", pattern: /^\/api\/clusters\/([^/]+)\/output$/, access: "read", handler: async (_q, res, [c]) => json(res, 200, found(await api.clusterOutput(c!), `output snapshot of cluster ${c!}`)) },
    { method: "GET", pattern: /^\/api\/commits$/, access: "read", handler: async (_q, res) => json(res, 200, await api.commits()) },
    { method: "GET", pattern: /^\/api\/commits\/([0-9a-f]{4,40})$/, access: "read", handler: async (_q, res, [c]) => json(res, 200, found(await api.commit(c!), `commit ${c!} (unknown, or older than the convergence records the server keeps: GITMESH_RETENTION_COMMITS, GITMESH_RETENTION_MAX_AGE_HOURS)`)) },
    { method: "GET", pattern: /^\/api\/diagnostics$/, access: "read", handler: async (_q, res) => json(res, 200, await api.diagnostics()) },
    { method: "GET", pattern: /^\/api\/resources$/, access: "read", handler: async (_q, res) => json(res, 200, await api.resources()) },
    { method: "GET", pattern: /^\/api\/provenance$/, access: "read", handler: async (_q, res) => json(res, 200, found(await api.provenance?.(), "provenance (this server does not compute it)")) },
    { method: "GET", pattern: /^\/api\/insights$/, access: "read", handler: async (_q, res) => json(res, 200, await api.insights()) },
    {
      method: "GET",
      pattern: /^\/api\/diff$/,
      access: "read",
      handler: async (req, res) => {
        const q = new URL(req.url ?? "/", "http://localhost").searchParams;
        const [base, head] = [q.get("base"), q.get("head")];
        if (base === null || head === null) throw new HttpError(400, "GET /api/diff?base=<sha>&head=<sha>: both commits are required");
        json(res, 200, await api.diff(base, head));
      },
    },
    {
      method: "GET",
      pattern: /^\/api\/traffic$/,
      access: "read",
      handler: async (req, res) => {
        const q = new URL(req.url ?? "/", "http://localhost").searchParams;
        json(res, 200, api.traffic ? await api.traffic(q) : { configured: false, message: "no Prometheus is configured: --prometheus-url (GITMESH_PROMETHEUS_URL)" });
      },
    },
    ...(options.routes ?? []),
  ];
  for (const r of routes) {
    const underApi = r.pattern.source.startsWith("^\\/api");
    if (underApi && r.access === "public") throw new Error(`route ${r.method} ${r.pattern.source} is under /api and must need a role`);
    if (underApi && r.method !== "GET" && r.access !== "admin") throw new Error(`route ${r.method} ${r.pattern.source} changes state and must need the admin role`);
  }

  const authFailures = counterOf(options.registry);
  /** At most one refusal log line per second; the others are counted in the next line (and always in the metric). */
  let lastRefusalLog = 0;
  let unlogged = 0;
  const refuse = (req: IncomingMessage, status: 401 | 403, reason: string, message: string): never => {
    authFailures.inc({ reason });
    const t = Date.now();
    if (t - lastRefusalLog >= 1000) {
      log.warn("API request refused", { method: req.method, path: pathOf(req), status, reason, remote: req.socket.remoteAddress, ...(unlogged > 0 ? { notLogged: unlogged } : {}) });
      lastRefusalLog = t;
      unlogged = 0;
    } else unlogged++;
    throw new HttpError(status, message);
  };
  /** The role of the caller of an /api path, or a 401 (no valid token). */
  const authenticate = (req: IncomingMessage): ApiRole => {
    const auth = options.auth;
    if (auth === null) return "admin";
    const outcome = auth.authenticate(req.headers, req.method ?? "GET");
    if (outcome.ok) return outcome.role;
    const what = outcome.reason === "missing" ? "no API token" : outcome.reason === "malformed" ? "the Authorization header is not \"Bearer <token>\"" : "the API token is not valid";
    return refuse(req, 401, outcome.reason, `${what}: send "Authorization: Bearer <token>" with the read token (the admin token for actions); ${auth.hint}`);
  };

  /** The one error handler of the HTTP edge. */
  const answerError = (req: IncomingMessage, res: ServerResponse, err: unknown) => {
    let status: number;
    let message: string;
    const headers: Record<string, string> = {};
    if (err instanceof HttpError) {
      status = err.status;
      message = err.message;
      if (status === 401) headers["www-authenticate"] = 'Bearer realm="gitmesh"';
    } else if (err instanceof RetryLaterError) {
      status = 503;
      message = err.message;
      headers["retry-after"] = String(Math.ceil(err.retryAfterMs / 1000));
    } else if (err instanceof ClientAbortedError) {
      // The client's side: a warning for whoever wonders where a webhook went, not a server failure.
      log.warn("HTTP request aborted by the client", { method: req.method, path: pathOf(req), error: err.message });
      res.destroy();
      return;
    } else if (reactionOf(err) === Reaction.NeedsHuman) {
      status = 409;
      message = stripCredentials(describeError(err));
    } else {
      status = 500;
      message = "internal error (logged on the server)";
      log.error("HTTP request failed", { method: req.method, path: pathOf(req), error: describeError(err) });
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
    res.end(JSON.stringify({ error: { status, code: (err as { code?: unknown }).code ?? "Error", message } }) + "\n");
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = pathOf(req);
    // Authenticate before routing: without a valid token, every /api path answers 401 alike.
    const role = isApiPath(path) ? authenticate(req) : undefined;
    const matching = routes.map((r) => ({ r, m: r.pattern.exec(path) })).filter((x) => x.m !== null);
    if (matching.length === 0) throw new HttpError(404, `no route ${path}; see GET /api for the endpoints`);
    const route = matching.find((x) => x.r.method === req.method || (req.method === "HEAD" && x.r.method === "GET"));
    if (!route) {
      res.setHeader("allow", [...new Set(matching.map((x) => x.r.method))].join(", "));
      throw new HttpError(405, `${req.method ?? "?"} is not allowed on ${path}`);
    }
    if (!allows(role, route.r.access)) {
      if (role === undefined) throw new Error(`route ${path} needs the ${route.r.access} role but is outside /api`);
      refuse(req, 403, "forbidden", `the ${role} token may not ${req.method ?? "?"} ${path}: it needs the ${route.r.access} token`);
    }
    const params = route.m!.slice(1).map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        throw new HttpError(400, `malformed percent-encoding in ${path}`);
      }
    });
    const actor = role === undefined ? "anonymous" : options.auth === null ? "anonymous (API authentication off)" : `${role} token`;
    await route.r.handler(req, res, params, { role, actor });
  };

  return {
    get port() {
      return port;
    },
    async start() {
      const listener = (req: IncomingMessage, res: ServerResponse) => {
        handle(req, res).catch((err: unknown) => answerError(req, res, err));
      };
      const s = options.tls ? createHttpsServer({ cert: options.tls.certPem, key: options.tls.keyPem }, listener) : createServer(listener);
      s.keepAliveTimeout = 5_000;
      await new Promise<void>((resolve, reject) => {
        s.once("error", reject);
        s.listen(options.port ?? 9091, options.host ?? "0.0.0.0", () => {
          s.off("error", reject);
          resolve();
        });
      });
      server = s;
      port = (s.address() as AddressInfo).port;
      return port;
    },
    async stop() {
      const s = server;
      server = undefined;
      if (!s) return;
      const closed = new Promise<void>((resolve) => s.close(() => resolve()));
      s.closeAllConnections();
      await closed;
    },
  };
}

export const API_ENDPOINTS = [
  "GET /healthz",
  "GET /readyz",
  "GET /metrics",
  "POST /webhooks/github | /webhooks/gitlab | /webhooks/generic",
  "GET /api/status",
  "GET /api/clusters",
  "GET /api/clusters/<cluster>",
  "GET /api/clusters/<cluster>/input",
  "GET /api/clusters/<cluster>/output",
  "POST /api/clusters/<cluster>/suspend | /resume (admin; body {\"reason\": \"...\"} optional)",
  "POST /api/fleet/suspend | /api/fleet/resume (admin)",
  "GET /api/suspensions",
  "GET /api/session (the caller's role)",
  "GET /api/commits",
  "GET /api/commits/<sha>",
  "GET /api/diagnostics",
  "GET /api/resources",
  "GET /api/provenance",
  "GET /api/insights",
  "GET /api/diff?base=<sha>&head=<sha>",
  "GET /api/traffic?workspace=&cluster=&namespace=&window=5m (the traffic graph from Prometheus)",
  "GET /api/events (text/event-stream)",
  "GET / (web UI)",
  "POST /api/clusters/<cluster>/reissue (admin: revoke the cluster's certificates, answer a new single-use bootstrap credential)",
] as const;

function counterOf(registry: Registry): Counter<"reason"> {
  const name = "gitmesh_server_api_auth_failures_total";
  const existing = registry.getSingleMetric(name);
  if (existing instanceof Counter) return existing;
  return new Counter({ name, help: "API requests refused: missing, malformed or invalid token (401), role too low (forbidden, 403)", labelNames: ["reason"], registers: [registry] });
}

function pathOf(req: IncomingMessage): string {
  return new URL(req.url ?? "/", "http://localhost").pathname;
}

/** Reads a request body of at most `max` bytes (413 beyond). */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"] ?? "0");
    if (declared > max) {
      req.resume();
      reject(new HttpError(413, `body larger than ${max} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > max) {
        req.destroy();
        reject(new HttpError(413, `body larger than ${max} bytes`));
        return;
      }
      chunks.push(c);
    });
    let ended = false;
    req.on("end", () => {
      ended = true;
      resolve(Buffer.concat(chunks));
    });
    // A client that goes away mid-body: Node reports "aborted" (ECONNRESET) or just closes the request.
    req.on("error", () => {
      if (!ended) reject(new ClientAbortedError(size));
    });
    req.on("close", () => {
      if (!ended) reject(new ClientAbortedError(size));
    });
  });
}
