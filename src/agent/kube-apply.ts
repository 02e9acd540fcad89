/**
 * Server-side apply requests sent straight over node:http / node:https (issue #20).
 *
 * A first apply is thousands of PATCH requests, and client-node 1.4 spends more CPU per request than
 * the request itself needs: an rxjs chain, a RequestContext, node-fetch's Request/Headers objects,
 * ObjectSerializer on the way out and in, a deep copy of the answer. This path sends the same
 * request a real API server expects — `PATCH <object path>?fieldManager=…&force=…[&dryRun=All]`,
 * `Content-Type: application/apply-patch+yaml` with a JSON body (JSON is YAML), `Accept:
 * application/json` — over the kept-alive pool (kube-connections.ts), and parses the answer once.
 *
 * Authentication and TLS are still the KubeConfig's: each request asks it for them
 * (`applyToHTTPSOptions`: bearer token, token file, exec and auth-provider plugins, basic auth,
 * impersonation, CA, client certificate and key, server name, skip-verify), exactly what client-node
 * does for its own requests, so rotated credentials and refreshed exec tokens are picked up. A
 * cluster reached through a proxy (`proxyUrl`) is left to client-node (`undefined` below).
 *
 * Answers mean what they meant through client-node: a 2xx body is the object; anything else is an
 * `ApiException` with the status code and the body text (statusOf / messageOf read them alike, so
 * 403 RBAC refusals, 409 conflicts and 422 invalid objects are reported as before); a network error
 * reads as node-fetch's ("request to <url> failed, reason: …").
 */
import * as http from "node:http";
import * as https from "node:https";
import { ApiException, type KubeConfig } from "@kubernetes/client-node";
import type { ConnectionPool } from "./kube-connections.js";

export const APPLY_PATCH_CONTENT_TYPE = "application/apply-patch+yaml";

export interface ApplyRequestOptions {
  readonly fieldManager: string;
  readonly force: boolean;
  /** Server-side dry run (`dryRun=All`): validated and answered, not stored. Default false. */
  readonly dryRun?: boolean;
}

export interface ApplyTransport {
  /**
   * Sends a server-side apply of `body` (the object as JSON) to `path` (the object's REST path, e.g.
   * `/apis/networking.istio.io/v1/namespaces/a/virtualservices/r`) and returns the parsed answer.
   * `undefined` when this cluster's connection needs client-node (a proxy).
   */
  apply(path: string, body: string, options: ApplyRequestOptions): Promise<unknown> | undefined;
}

/** node-fetch's User-Agent: every request of the agent, through client-node or not, reads the same in audit logs. */
const USER_AGENT = "node-fetch/1.0 (+https://github.com/bitinn/node-fetch)";

export function createApplyTransport(kc: KubeConfig, pool: ConnectionPool): ApplyTransport {
  let parsed: { server: string; url: URL; base: string } | undefined;
  const target = (server: string) => {
    if (parsed?.server !== server) {
      const url = new URL(server);
      // A server with a path (a Rancher-style proxy: https://host/k8s/clusters/c-1) keeps it in front of every request path.
      parsed = { server, url, base: url.pathname.replace(/\/+$/, "") };
    }
    return parsed;
  };

  async function send(server: string, path: string, body: string, options: ApplyRequestOptions): Promise<unknown> {
    const { url, base } = target(server);
    const auth: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(auth);
    const agent = pool.agentFor(auth.agent as http.Agent | https.Agent | undefined);
    const query = `fieldManager=${encodeURIComponent(options.fieldManager)}&force=${String(options.force)}${options.dryRun === true ? "&dryRun=All" : ""}`;
    const headers: http.OutgoingHttpHeaders = {
      Accept: "application/json, */*;q=0.8",
      "Content-Type": APPLY_PATCH_CONTENT_TYPE,
      "Content-Length": Buffer.byteLength(body),
      "User-Agent": USER_AGENT,
    };
    for (const [k, v] of Object.entries(auth.headers ?? {})) if (v !== undefined) headers[k] = typeof v === "number" ? String(v) : v;
    if (auth.auth !== undefined && auth.auth !== null) headers.Authorization = `Basic ${Buffer.from(auth.auth).toString("base64")}`;
    const requestPath = `${base}${path}?${query}`;
    const secure = url.protocol === "https:";
    return new Promise((resolve, reject) => {
      const failed = (err: Error) => {
        const e = new Error(`request to ${url.origin}${requestPath} failed, reason: ${err.message}`) as Error & { code?: unknown; errno?: unknown; type?: string };
        const sys = err as Error & { code?: unknown; errno?: unknown };
        e.type = "system";
        e.code = sys.code;
        e.errno = sys.errno ?? sys.code;
        reject(e);
      };
      const req = (secure ? https : http).request(
        { protocol: url.protocol, hostname: url.hostname.replace(/^\[(.*)\]$/, "$1"), port: url.port === "" ? (secure ? 443 : 80) : Number(url.port), method: "PATCH", path: requestPath, headers, ...(agent === undefined ? {} : { agent }) },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", failed);
          res.on("aborted", () => failed(new Error("the API server closed the connection before the answer was complete")));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            const status = res.statusCode ?? 0;
            if (status >= 200 && status <= 299) {
              try {
                resolve(JSON.parse(text));
              } catch (err) {
                reject(err instanceof Error ? err : new Error(String(err)));
              }
              return;
            }
            const answerHeaders: Record<string, string> = {};
            for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) answerHeaders[k] = Array.isArray(v) ? v.join(", ") : v;
            reject(new ApiException(status, "Unsuccessful HTTP Request", text, answerHeaders));
          });
        },
      );
      req.on("error", failed);
      req.end(body);
    });
  }

  return {
    apply(path, body, options) {
      const cluster = kc.getCurrentCluster();
      if (cluster === null || cluster.proxyUrl !== undefined) return undefined;
      return send(cluster.server, path, body, options);
    },
  };
}
