/**
 * A TCP load balancer for trials with several server replicas: what a Kubernetes Service in front of
 * the relay does. Each new connection goes to the next backend in turn; a backend that refuses the
 * connection is skipped (the next one is tried), so agents whose replica died reconnect to a live one.
 * Bytes are piped untouched (TLS and HTTP/2 pass through). Loopback only by default.
 *
 *   const lb = await startTcpBalancer({ backends: [{ host: "127.0.0.1", port: a }, { host: "127.0.0.1", port: b }] });
 *   // agents dial 127.0.0.1:<lb.port>
 */
import { createConnection, createServer, type AddressInfo, type Socket } from "node:net";

export interface TcpBackend {
  readonly host: string;
  readonly port: number;
}

export interface TcpBalancerOptions {
  readonly backends: readonly TcpBackend[];
  readonly host?: string;
  /** Default 0 (a free port). */
  readonly port?: number;
  /** Connect timeout per backend. Default 2000 ms. */
  readonly connectTimeoutMs?: number;
}

export interface TcpBalancer {
  readonly port: number;
  /** Backend → open connections through it (tests: which replica holds how many agents). */
  connections(): Map<string, number>;
  stop(): Promise<void>;
}

export async function startTcpBalancer(options: TcpBalancerOptions): Promise<TcpBalancer> {
  if (options.backends.length === 0) throw new Error("startTcpBalancer: at least one backend is needed");
  const timeout = options.connectTimeoutMs ?? 2000;
  const open = new Set<Socket>();
  const perBackend = new Map<string, number>();
  let next = 0;
  const key = (b: TcpBackend) => `${b.host}:${String(b.port)}`;

  const dial = (b: TcpBackend): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const s = createConnection({ host: b.host, port: b.port });
      const t = setTimeout(() => s.destroy(new Error("connect timeout")), timeout);
      s.once("connect", () => {
        clearTimeout(t);
        resolve(s);
      });
      s.once("error", (err) => {
        clearTimeout(t);
        reject(err);
      });
    });

  const server = createServer((client) => {
    open.add(client);
    client.pause();
    client.on("error", () => undefined);
    client.on("close", () => open.delete(client));
    void (async () => {
      const start = next++;
      for (let i = 0; i < options.backends.length; i++) {
        const b = options.backends[(start + i) % options.backends.length]!;
        let upstream: Socket;
        try {
          upstream = await dial(b);
        } catch {
          continue;
        }
        if (client.destroyed) {
          upstream.destroy();
          return;
        }
        const k = key(b);
        perBackend.set(k, (perBackend.get(k) ?? 0) + 1);
        open.add(upstream);
        upstream.on("error", () => undefined);
        upstream.on("close", () => {
          open.delete(upstream);
          perBackend.set(k, (perBackend.get(k) ?? 1) - 1);
          client.destroy();
        });
        client.on("close", () => upstream.destroy());
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
        return;
      }
      client.destroy();
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => new Map(perBackend),
    async stop() {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
