/**
 * The agent's HTTP endpoint (default port 9977): /healthz (process alive), /readyz (the agent can
 * do its job: as leader, informers synced; as standby, the Lease is reachable) and /metrics
 * (Prometheus text from the registry passed in).
 */
import type { Registry } from "prom-client";
import { createHealthEndpoint, type Logger } from "../core/index.js";
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

/** core's health endpoint as one of the agent's runnables. */
export function createAgentHttp(options: AgentHttpOptions): AgentHttp {
  const endpoint = createHealthEndpoint({ ...options, port: options.port ?? 9977, host: options.host ?? "0.0.0.0" });
  return {
    name: "http",
    get port() {
      return endpoint.port;
    },
    async start() {
      await endpoint.start();
      options.logger.info("agent HTTP listening", { port: endpoint.port });
    },
    stop: () => endpoint.stop(),
  };
}
