/**
 * A TCP proxy in front of the relay server that can STALL: while stalled it forwards nothing in either
 * direction (bytes stay in the socket buffers, no FIN, no RST), as a hung server or a black-holed path
 * would; new connections are accepted and held the same way. `drop()` closes every proxied connection
 * on both sides, as a server restart does; `retarget()` points new connections at another port.
 *
 *   const proxy = await startTcpStallProxy(serverPort);
 *   clients dial proxy.address
 *   proxy.stall(); … proxy.drop(); proxy.retarget(newPort); proxy.release();
 */
import { connect, createServer, type Socket } from "node:net";

export interface TcpStallProxy {
  /** host:port the clients dial. */
  readonly address: string;
  readonly port: number;
  /** From now on nothing is forwarded (both directions, open and new connections). */
  stall(): void;
  /** Forwards again. */
  release(): void;
  /** The server side of every open connection goes away: the client side gets a FIN (the client must close it). */
  drop(): void;
  /** New connections go to this port of 127.0.0.1. */
  retarget(port: number): void;
  /** Open client-side connections. */
  readonly connections: number;
  stop(): Promise<void>;
}

interface Pair {
  readonly down: Socket;
  readonly up: Socket;
}

export async function startTcpStallProxy(targetPort: number): Promise<TcpStallProxy> {
  let target = targetPort;
  let stalled = false;
  const pairs = new Set<Pair>();
  /** Client-side sockets, until the client closes them. */
  const halfClosed = new Set<Socket>();

  const pause = (p: Pair) => {
    p.down.pause();
    p.up.pause();
  };
  const resume = (p: Pair) => {
    p.down.resume();
    p.up.resume();
  };

  const server = createServer({ pauseOnConnect: true }, (down) => {
    const up = connect({ host: "127.0.0.1", port: target });
    const pair = { down, up };
    pairs.add(pair);
    down.on("data", (c: Buffer) => up.write(c));
    up.on("data", (c: Buffer) => down.write(c));
    // The server side went away: FIN to the client, which must close its end (else CLOSE-WAIT).
    const serverGone = () => {
      pairs.delete(pair);
      down.resume();
      down.end();
    };
    up.on("error", serverGone);
    up.on("close", serverGone);
    down.on("error", () => down.destroy());
    down.on("close", () => {
      pairs.delete(pair);
      halfClosed.delete(down);
      up.destroy();
    });
    halfClosed.add(down);
    if (stalled) pause(pair);
    else resume(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const addr = server.address();
  const port = addr !== null && typeof addr === "object" ? addr.port : 0;

  /** The server side of every pair goes away: each client gets a FIN and must close. */
  const drop = () => {
    for (const p of [...pairs]) p.up.destroy();
  };
  return {
    address: `127.0.0.1:${port}`,
    port,
    stall() {
      stalled = true;
      for (const p of pairs) pause(p);
    },
    release() {
      stalled = false;
      for (const p of pairs) resume(p);
    },
    drop,
    retarget(p) {
      target = p;
    },
    get connections() {
      return pairs.size;
    },
    async stop() {
      drop();
      for (const s of halfClosed) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
