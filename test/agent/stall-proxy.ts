/**
 * An HTTP proxy in front of the Kubernetes API emulator that can STALL: matching requests are held
 * (not forwarded, not answered) and responses already streaming (watches) stop delivering, as a
 * hung API server or a black-holed network path would. `release()` lets everything through again.
 *
 *   const proxy = await startStallProxy(kube.url);
 *   kc = kubeconfig pointing at proxy.url
 *   proxy.stall((req) => req.path.includes("/pods"));   // or proxy.stall() for everything
 *   proxy.release();
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { createBufferingServer, forwardRequest } from "../helpers/forward.js";
import { listenLoopback } from "../helpers/ports.js";

export interface StallProxy {
  readonly url: string;
  /** Holds every request matching `filter` (all when omitted) from now on, and pauses streaming responses that match. */
  stall(filter?: (req: { method: string; path: string }) => boolean): void;
  /** Forwards held requests and resumes paused responses. */
  release(): void;
  /** Requests held right now. */
  readonly held: number;
  stop(): Promise<void>;
}

export async function startStallProxy(target: string): Promise<StallProxy> {
  const to = new URL(target);
  let filter: ((req: { method: string; path: string }) => boolean) | undefined;
  const held: (() => void)[] = [];
  const streams = new Set<{ upstream: IncomingMessage; method: string; path: string }>();

  const matches = (method: string, path: string) => filter !== undefined && filter({ method, path });

  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const method = req.method ?? "GET";
    const path = req.url ?? "/";
    // Copied by hand, not piped: a matching stream is paused while stalled.
    forwardRequest(to, req, res, body, {
      relay: (upstream) => {
        const s = { upstream, method, path };
        streams.add(s);
        if (matches(method, path)) upstream.pause();
        upstream.on("data", (c: Buffer) => res.write(c));
        upstream.on("end", () => {
          streams.delete(s);
          res.end();
        });
      },
    });
  };

  const server = createBufferingServer((req, res, body) => {
    const go = () => forward(req, res, body);
    if (matches(req.method ?? "GET", req.url ?? "/")) held.push(go);
    else go();
  });
  const { port, sockets } = await listenLoopback(server);

  return {
    url: `http://127.0.0.1:${port}`,
    stall(f) {
      filter = f ?? (() => true);
      for (const s of streams) if (matches(s.method, s.path)) s.upstream.pause();
    },
    release() {
      filter = undefined;
      for (const s of streams) s.upstream.resume();
      for (const go of held.splice(0)) go();
    },
    get held() {
      return held.length;
    },
    async stop() {
      filter = undefined;
      held.length = 0;
      for (const s of streams) s.upstream.destroy();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
