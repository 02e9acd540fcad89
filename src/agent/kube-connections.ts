/**
 * Kept-alive, bounded connections to the API server for the agent's requests.
 *
 * client-node 1.4 sends each request through node-fetch 2 (HTTP/1.1 over node:http / node:https)
 * with the agent that `KubeConfig.applySecurityAuthentication` builds FOR THAT REQUEST: a new
 * `http.Agent` / `https.Agent` without keep-alive, so every request opened (and, over TLS,
 * handshook) a TCP connection of its own — 2,024 connections for an apply of 2,000 objects.
 * The pool below swaps that per-request agent for a long-lived one with keep-alive and at most
 * `maxSockets` sockets; requests beyond wait in the agent's queue for a free socket.
 *
 * One pooled agent per distinct set of TLS settings (CA, client certificate and key, server name,
 * verification), so credentials rotated in the kubeconfig get a new pool. Agents of a proxy
 * (`cluster.proxyUrl`: hpagent, socks) are left as client-node built them (one connection per
 * request, as before).
 *
 * HTTP/2: node-fetch 2 speaks HTTP/1.1 only, so client-node cannot use it whatever the server
 * offers (kube-apiserver offers h2 over TLS; the emulator serves plain HTTP/1.1). Over kept-alive
 * sockets, `maxSockets` HTTP/1.1 connections carry `maxSockets` requests at once, which is what the
 * applier's bounded concurrency needs.
 *
 * Watches (informers) do not go through here: each is a long-lived response that holds its
 * connection anyway (client-node's Watch builds its own agent).
 */
import { createHash } from "node:crypto";
import * as http from "node:http";
import * as https from "node:https";

export interface ConnectionPoolOptions {
  /** Most sockets open to one API server at once, in use or idle (default 64). */
  readonly maxSockets?: number;
  /**
   * An idle socket is closed after this long (default 4,000 ms): below the idle timeouts of the
   * servers and load balancers in front of API servers (Node's default and the emulator's 5 s,
   * cloud load balancers 60 s and more), so a request is not sent on a socket the server is closing.
   * A server that announces a shorter `Keep-Alive: timeout=` is honoured (Node's agent).
   */
  readonly idleTimeoutMs?: number;
  /**
   * A request that receives nothing for this long is abandoned and its socket closed (default
   * 60,000 ms, the API server's own timeout for requests other than watches). With a bounded pool a
   * request that never ends (a black-holed connection) would otherwise hold its socket for good, and
   * enough of them would leave no socket for anything else, the leader's Lease renewals included.
   */
  readonly requestTimeoutMs?: number;
}

export interface ConnectionPool {
  /** The pooled agent to send a request with, given the agent client-node built for it. */
  agentFor(perRequest: http.Agent | https.Agent | undefined): http.Agent | https.Agent | undefined;
  /** Sockets open now (in use and idle), over every pooled agent. */
  openSockets(): number;
  /** Closes every socket (idle ones close by themselves after `idleTimeoutMs`). */
  destroy(): void;
}

export const DEFAULT_MAX_SOCKETS = 64;
const DEFAULT_IDLE_TIMEOUT_MS = 4_000;
const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
/** Pools kept at once (one per set of TLS settings; more only while credentials rotate). */
const MAX_POOLS = 4;

/** The TLS settings an https.Agent was built with that decide which connections it may share. */
const TLS_KEYS = ["ca", "cert", "key", "pfx", "passphrase", "rejectUnauthorized", "servername", "ciphers", "secureProtocol", "crl"] as const;

function fingerprint(options: Record<string, unknown>): string {
  const h = createHash("sha256");
  const add = (v: unknown): void => {
    if (v === undefined || v === null) h.update("\0u");
    else if (Buffer.isBuffer(v)) h.update("\0b").update(v);
    else if (Array.isArray(v)) {
      h.update(`\0a${String(v.length)}`);
      for (const x of v) add(x);
    } else if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") h.update(`\0${typeof v}${String(v)}`);
    else h.update(`\0o${(JSON.stringify(v) as string | undefined) ?? typeof v}`);
  };
  for (const k of TLS_KEYS) add(options[k]);
  return h.digest("base64");
}

type AddRequest = (req: http.ClientRequest, options: unknown) => void;

/**
 * Abandons a request of `agent` after `silenceMs` without a byte. (Node's `timeout` agent option is
 * the socket's idle timeout when it is free; while a request uses the socket, it only emits 'timeout'
 * on the request, which node-fetch does not listen to.) `addRequest` is where an agent is handed each
 * request; the request's own timeout replaces the agent's while it holds the socket, and Node restores
 * the idle timeout when the socket is free again.
 */
function abandoningSilentRequests<A extends http.Agent>(agent: A, silenceMs: number): A {
  const target = agent as unknown as { addRequest: AddRequest };
  const add = target.addRequest.bind(agent);
  target.addRequest = (req, opts) => {
    req.setTimeout(silenceMs, () => req.destroy(new Error(`no answer from the API server for ${String(silenceMs)} ms: request abandoned, connection closed`)));
    add(req, opts);
  };
  return agent;
}

export function createConnectionPool(options: ConnectionPoolOptions = {}): ConnectionPool {
  const maxSockets = Math.max(1, options.maxSockets ?? DEFAULT_MAX_SOCKETS);
  const kept = { keepAlive: true, maxSockets, maxFreeSockets: maxSockets, timeout: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS, scheduling: "lifo" as const };
  const silenceMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  let plain: http.Agent | undefined;
  const secure = new Map<string, https.Agent>();
  const all = (): (http.Agent | https.Agent)[] => [...(plain ? [plain] : []), ...secure.values()];
  return {
    agentFor(perRequest) {
      // Exactly node's own agents: a subclass is a proxy agent (hpagent) with settings of its own.
      if (perRequest?.constructor === http.Agent) return (plain ??= abandoningSilentRequests(new http.Agent(kept), silenceMs));
      if (perRequest?.constructor === https.Agent) {
        const tls = (perRequest as https.Agent & { options: Record<string, unknown> }).options;
        const key = fingerprint(tls);
        let agent = secure.get(key);
        if (agent === undefined) {
          const settings: Record<string, unknown> = {};
          for (const k of TLS_KEYS) if (tls[k] !== undefined) settings[k] = tls[k];
          agent = abandoningSilentRequests(new https.Agent({ ...settings, ...kept }), silenceMs);
          secure.set(key, agent);
          for (const [k, old] of secure) {
            if (secure.size <= MAX_POOLS) break;
            secure.delete(k);
            old.destroy();
          }
        }
        return agent;
      }
      return perRequest;
    },
    openSockets() {
      let n = 0;
      for (const a of all()) for (const list of [...Object.values(a.sockets), ...Object.values(a.freeSockets)] as (readonly unknown[] | undefined)[]) n += list?.length ?? 0;
      return n;
    },
    destroy() {
      for (const a of all()) a.destroy();
      plain = undefined;
      secure.clear();
    },
  };
}
