// #35 item 4: a relay client whose server stops answering must not leak. 500 real clients (real TLS
// and gRPC on loopback) hold sessions to a real relay server through a TCP proxy; the proxy stalls
// (nothing forwarded, no FIN), the clients keep pushing discovery, then the server restarts (every
// connection closed from the server side, a new server on another port). Asserts: no socket of this
// process stays in CLOSE-WAIT, every client is back with one session, and the heap after the stall is
// within a ratio of the heap after a normal run of the same clients.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import type { RelayClient } from "../../src/relay/index.js";
import { certFor, clientKey, newClient, startServer, state, testPki, until, type StartedServer } from "./helpers.js";
import { socketStatesTo } from "./sockets.js";
import { startTcpStallProxy, type TcpStallProxy } from "./tcp-stall-proxy.js";

const CLIENTS = Number(process.env.GITMESH_LEAK_CLIENTS ?? 500);
// Generous on a loaded 2-core machine: these bound the waits, they are not asserted.
const SETTLE_MS = 240_000;

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
function heapAfterGc(): number {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

function allConnected(s: StartedServer, n: number): boolean {
  const c = s.server.connectedClusters();
  return c.length === n && c.every((x) => x.push && x.pull && x.warmed);
}

describe("relay client against a server that stops answering (#35 item 4)", () => {
  it(`${String(CLIENTS)} clients: no CLOSE-WAIT, sessions back to one per client, heap bounded after a stall and a restart`, async () => {
    let server: StartedServer | undefined = await startServer();
    const proxy: TcpStallProxy = await startTcpStallProxy(server.port);
    const clients: RelayClient[] = [];
    try {
      const caPem = testPki().rootCaCertPem;
      for (let i = 0; i < CLIENTS; i++) {
        const cluster = `load-${String(i)}`;
        const credentials = { certPem: certFor(cluster), keyPem: clientKey(), caPem, notAfterMs: Date.now() + 3600_000 };
        clients.push(
          newClient(proxy.address, cluster, { credentials, keepaliveTimeMs: 2000, keepaliveTimeoutMs: 5000, renewAtFraction: 0, backoff: { initialMs: 200, maxMs: 5000 }, ackTimeoutMs: 60_000 }, false),
        );
      }
      for (const c of clients) c.connect();
      await Promise.all(clients.map((c) => c.synced()));
      const first = server;
      await until(() => allConnected(first, CLIENTS), `${String(CLIENTS)} clients connected`, SETTLE_MS);
      // A normal run: every client pushes a change and it is acknowledged.
      await Promise.all(clients.map((c, i) => c.pushDiscovery(state({ [`svc/${String(i)}`]: { v: 1 } }))));
      const heapNormal = heapAfterGc();

      // The server stops answering: the clients keep pushing (an agent pushes every discovery change).
      proxy.stall();
      const pending: Promise<void>[] = [];
      for (let round = 0; round < 20; round++) {
        for (const [i, c] of clients.entries()) pending.push(c.pushDiscovery(state({ [`svc/${String(i)}`]: { v: round + 2, pad: "x".repeat(2000) } })));
        await new Promise((r) => setTimeout(r, 100));
      }
      // Every client notices (keepalive or its session timeout) and starts over at least once, into the stall.
      await until(() => clients.every((c) => c.status().sessions >= 2), "every client reconnected into the stall", SETTLE_MS);

      // The server restarts: every connection closed from its side, a new server on another port.
      await first.server.stop();
      server = undefined;
      const second = await startServer();
      server = second;
      proxy.retarget(second.port);
      proxy.drop();
      proxy.release();
      await until(() => allConnected(second, CLIENTS), `${String(CLIENTS)} clients back`, SETTLE_MS);
      await Promise.all(pending);
      // Sockets the restart closed go within a few seconds; the assertions below say what is left.
      await until(() => {
        const now = socketStatesTo(proxy.port);
        return (now.CLOSE_WAIT ?? 0) === 0 && now.ESTABLISHED === CLIENTS;
      }, "client sockets settled", 60_000).catch(() => undefined);
      const sockets = socketStatesTo(proxy.port);
      expect(sockets.CLOSE_WAIT ?? 0).toBe(0);
      // One session per client: as many established client sockets as clients (the proxy's own are not to its port).
      expect(sockets.ESTABLISHED).toBe(CLIENTS);
      expect(clients.every((c) => c.status().connected && c.status().synced)).toBe(true);
      const heapAfter = heapAfterGc();
      const ratio = heapAfter / heapNormal;
      process.stderr.write(`relay client leak: ${String(CLIENTS)} clients, heap normal ${String(Math.round(heapNormal / 2 ** 20))} MiB, after stall+restart ${String(Math.round(heapAfter / 2 ** 20))} MiB (ratio ${ratio.toFixed(2)}), sockets ${JSON.stringify(sockets)}\n`);
      expect(ratio).toBeLessThan(1.5);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await proxy.stop();
      await server?.server.stop();
    }
  }, 600_000);
});
