/**
 * The health endpoint every gitmesh process that is not the server serves (the agent, `gitmesh
 * worker`): GET /healthz (the process is alive), /readyz (200, or 503 `not ready: <reason>`) and
 * /metrics (Prometheus text from the registry passed in). Anything else is 404; other methods 405.
 * A root starts it and stops it; nothing here reads the environment.
 */
import { createServer, type Server } from "node:http";
import { describeError } from "./errors.js";
import type { Logger } from "./logger.js";

/** What /metrics serves: a prom-client `Registry` fits. */
export interface MetricsSource {
  metrics(): Promise<string>;
  readonly contentType: string;
}

export interface HealthEndpointOptions {
  /** 0 picks a free port. */
  readonly port: number;
  readonly host: string;
  readonly registry: MetricsSource;
  /** Readiness: undefined when ready, else the reason it is not. */
  readonly notReadyReason: () => string | undefined;
  readonly logger: Logger;
  /** Body of a 404 (default `not found\n`): a process may say what it is and what it serves. */
  readonly notFound?: string;
}

export interface HealthEndpoint {
  /** Bound port once started. */
  readonly port: number | undefined;
  /** Resolves once listening; rejects when the port cannot be bound. */
  start(): Promise<void>;
  /** Closes the listener and every open connection. */
  stop(): Promise<void>;
}

export function createHealthEndpoint(options: HealthEndpointOptions): HealthEndpoint {
  let server: Server | undefined;
  let port: number | undefined;
  const notFound = options.notFound ?? "not found\n";
  return {
    get port() {
      return port;
    },
    start() {
      const s = createServer((req, res) => {
        const path = (req.url ?? "/").split("?")[0];
        const text = (code: number, body: string, type = "text/plain; charset=utf-8") => {
          res.writeHead(code, { "content-type": type });
          res.end(body);
        };
        if (req.method !== "GET" && req.method !== "HEAD") return text(405, "method not allowed\n");
        if (path === "/healthz") return text(200, "ok\n");
        if (path === "/readyz") {
          const why = options.notReadyReason();
          return why === undefined ? text(200, "ok\n") : text(503, `not ready: ${why}\n`);
        }
        if (path === "/metrics") {
          options.registry.metrics().then(
            (body) => text(200, body, options.registry.contentType),
            (err: unknown) => {
              options.logger.error("metrics collection failed", { error: describeError(err) });
              text(500, "metrics collection failed\n");
            },
          );
          return;
        }
        return text(404, notFound);
      });
      return new Promise<void>((resolve, reject) => {
        s.once("error", reject);
        s.listen(options.port, options.host, () => {
          s.off("error", reject);
          const a = s.address();
          port = a !== null && typeof a === "object" ? a.port : undefined;
          server = s;
          resolve();
        });
      });
    },
    async stop() {
      const s = server;
      server = undefined;
      if (!s) return;
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
}
