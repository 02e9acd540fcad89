/**
 * A fault-injecting HTTP proxy in front of a Kubernetes API server (the real kube-apiserver over
 * HTTPS, or the emulator): the client talks plain HTTP to the proxy with its bearer token, the proxy
 * forwards to the server. It misbehaves as a loaded API server or a flaky network path does:
 *
 * - `errorRate`: that share of the requests that are not watches is answered by the proxy itself,
 *   never forwarded: half 429 with `Retry-After: 1` (API priority and fairness), half 500.
 * - `cutWatchesEveryMs`: every watch stream is cut (its socket destroyed, no clean end) after that
 *   long; with `gapMs`, new watches are then held for that long before they are forwarded, so what
 *   another client changes right after a cut falls into a watch gap for sure.
 *
 * The random choices come from a seeded PRNG (test/helpers/random.ts): a failing sequence repeats.
 *
 *   const proxy = await startFaultProxy({ target: kube.url, caPem: kube.caPem, errorRate: 0.05, cutWatchesEveryMs: 2000, gapMs: 500 });
 *   await proxy.nextCut();   // resolves at the next cut: the watches are down for gapMs now
 *   await proxy.stop();
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { createBufferingServer, forwardRequest } from "./forward.js";
import { createRandom } from "./random.js";
import { listenLoopback } from "./ports.js";

export interface FaultProxyOptions {
  /** `https://host:port` (real API server) or `http://host:port` (emulator). */
  readonly target: string;
  /** CA of the target's serving certificate (https targets). */
  readonly caPem?: string;
  /** Share of non-watch requests answered 429 or 500 by the proxy (default 0). */
  readonly errorRate?: number;
  /** Cut every watch stream after this long (default: never). */
  readonly cutWatchesEveryMs?: number;
  /** After a cut, hold new watch requests this long (default 0). */
  readonly gapMs?: number;
  /** PRNG seed (default 35). */
  readonly seed?: number;
}

export interface FaultProxy {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Requests answered 429 / 500 by the proxy so far. */
  readonly injected: { readonly 429: number; readonly 500: number };
  /** Watch streams cut so far. */
  readonly cuts: number;
  /** Requests forwarded so far. */
  readonly forwarded: number;
  /** Resolves at the next watch cut. */
  nextCut(): Promise<void>;
  /** Stops injecting faults (the proxy keeps forwarding). */
  calm(): void;
  stop(): Promise<void>;
}

const isWatch = (path: string) => /[?&]watch=(true|1)(&|$)/.test(path);

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const to = new URL(options.target);
  const random = createRandom(options.seed ?? 35);
  let errorRate = options.errorRate ?? 0;
  let cutEvery = options.cutWatchesEveryMs;
  const gapMs = options.gapMs ?? 0;
  const injected = { 429: 0, 500: 0 };
  let cuts = 0;
  let forwarded = 0;
  let holdWatchesUntil = 0;
  let cutWaiters: (() => void)[] = [];
  const timers = new Set<NodeJS.Timeout>();

  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };

  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const path = req.url ?? "/";
    const watch = isWatch(path);
    forwarded += 1;
    forwardRequest(to, req, res, body, {
      ...(options.caPem === undefined ? {} : { caPem: options.caPem }),
      relay: (upstream) => {
        upstream.pipe(res);
        if (!watch || cutEvery === undefined) return;
        later(cutEvery, () => {
          if (res.destroyed || cutEvery === undefined) return;
          cuts += 1;
          holdWatchesUntil = Date.now() + gapMs;
          // No clean end: the client sees the connection drop mid-stream.
          res.socket?.destroy();
          upstream.destroy();
          for (const w of cutWaiters.splice(0)) w();
        });
      },
    });
  };

  const server = createBufferingServer((req, res, body) => {
    const path = req.url ?? "/";
    if (isWatch(path)) {
      const wait = holdWatchesUntil - Date.now();
      if (wait > 0) return later(wait, () => forward(req, res, body));
      return forward(req, res, body);
    }
    if (errorRate > 0 && random() < errorRate) {
      const status = random() < 0.5 ? 429 : 500;
      injected[status] += 1;
      const message = status === 429 ? "Too many requests, please try again later." : "Internal error occurred: injected by the fault proxy";
      res.writeHead(status, { "content-type": "application/json", ...(status === 429 ? { "retry-after": "1" } : {}) });
      res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason: status === 429 ? "TooManyRequests" : "InternalError", code: status }));
      return;
    }
    forward(req, res, body);
  });
  const { port, sockets } = await listenLoopback(server);

  return {
    url: `http://127.0.0.1:${port}`,
    injected,
    get cuts() {
      return cuts;
    },
    get forwarded() {
      return forwarded;
    },
    nextCut: () => new Promise<void>((resolve) => cutWaiters.push(resolve)),
    calm() {
      errorRate = 0;
      cutEvery = undefined;
      holdWatchesUntil = 0;
    },
    async stop() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const w of cutWaiters.splice(0)) w();
      cutWaiters = [];
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
