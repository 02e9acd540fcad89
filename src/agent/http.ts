/**
 * The agent's HTTP endpoint (default port 9977): /healthz (process alive), /readyz (the agent can
 * do its job: as leader, informers synced; as standby, the Lease is reachable) and /metrics
 * (Prometheus text from the registry passed in).
 */
import { createServer, type Server } from "node:http";
import type { Registry } from "prom-client";
import { describeError, type Logger } from "../core/index.js";
import type { Runnable } from "./runnable.js";

export interface AgentHttpOptions {
  /** Default 9977; 0 picks a free port. */
  readonly port?: number;
  /** Default `0.0.0.0`. */
  readonly host?: string;
  readonly registry: Registry;
  /** Readiness: undefined when ready, else the reason it is not. */
  readonly notReadyReason: () => string | undefined;
  readonly logger: Logger;
}

export interface AgentHttp extends Runnable {
  /** Bound port once started. */
  readonly port: number | undefined;
}

export function createAgentHttp(options: AgentHttpOptions): AgentHttp {
  let server: Server | undefined;
  let port: number | undefined;
  return {
    name: "http",
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
        return text(404, "not found\n");
      });
      return new Promise<void>((resolve, reject) => {
        s.once("error", reject);
        s.listen(options.port ?? 9977, options.host ?? "0.0.0.0", () => {
          s.off("error", reject);
          const a = s.address();
          port = a !== null && typeof a === "object" ? a.port : undefined;
          server = s;
          options.logger.info("agent HTTP listening", { port });
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
