/**
 * The plumbing the test proxies in front of an API server share (stall-proxy.ts, fault-proxy.ts): a
 * server that reads each request's body before handing it on, and the forward of one request to the
 * target over HTTP or HTTPS with the response's headers flushed at once (watches).
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { request as httpsRequest } from "node:https";

/** An HTTP server whose handler gets each request with its whole body. */
export function createBufferingServer(handle: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void): Server {
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => handle(req, res, Buffer.concat(chunks)));
  });
}

/**
 * Forwards `req` (with `body`) to `target`; `relay` copies the upstream response into `res` once its
 * headers are written (default: pipe). Either side failing destroys the other.
 */
export function forwardRequest(
  target: URL,
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer,
  options: { readonly caPem?: string; readonly relay?: (upstream: IncomingMessage) => void } = {},
): void {
  const tls = target.protocol === "https:";
  const send = tls ? httpsRequest : httpRequest;
  const headers = { ...req.headers, host: target.host };
  const up = send({ host: target.hostname, port: target.port, method: req.method ?? "GET", path: req.url ?? "/", headers, ...(tls && options.caPem ? { ca: options.caPem } : {}) }, (upstream) => {
    res.writeHead(upstream.statusCode ?? 502, upstream.headers);
    res.flushHeaders(); // watches: headers at once, as the API server sends them
    upstream.on("error", () => res.destroy());
    if (options.relay) options.relay(upstream);
    else upstream.pipe(res);
  });
  up.on("error", () => res.destroy());
  res.on("close", () => up.destroy());
  up.end(body);
}
