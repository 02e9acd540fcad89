/**
 * Webhook receivers, framework-free: each handler takes the request headers and the raw body and
 * returns `{ status, body }`. A webhook is only a hint: it is verified in constant time, the pushed
 * ref and SHA are taken from the payload and handed to `onPush` (normally `SyncTrigger.hint`), and
 * polling stays on as the backstop. Rejections are logged without the payload or the signature.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { Logger } from "../core/index.js";

export type WebhookHeaders = Readonly<Record<string, string | readonly string[] | undefined>>;

export interface WebhookRequest {
  /** Header names in any case. */
  readonly headers: WebhookHeaders;
  /** The body exactly as received: signatures are computed over these bytes. */
  readonly body: Uint8Array | string;
}

export interface WebhookResponse {
  readonly status: number;
  readonly body: string;
}

export interface PushEvent {
  readonly provider: "github" | "gitlab" | "generic";
  /** Repository as named by the payload (GitHub `full_name`, GitLab `path_with_namespace`, generic `repo`), if any. */
  readonly repo: string | undefined;
  /** Full ref, e.g. `refs/heads/main`. */
  readonly ref: string;
  /** The pushed commit. */
  readonly sha: string;
}

/** What the receiver of a push did with it (reported back to the sender as the response body). */
export type HintDisposition = "accepted" | "duplicate" | "ignored";

export interface WebhookOptions {
  /** Secret of GitHub's `X-Hub-Signature-256` (HMAC-SHA256 of the body). Unset → the GitHub endpoint answers 404. */
  readonly githubSecret?: string;
  /** Token GitLab sends in `X-Gitlab-Token`. Unset → 404. */
  readonly gitlabToken?: string;
  /** Secret of the generic endpoint's HMAC-SHA256 header. Unset → 404. */
  readonly genericSecret?: string;
  /** Header carrying the generic signature, `sha256=<hex>` or bare hex (default `x-signature-256`). */
  readonly genericHeader?: string;
  readonly onPush: (event: PushEvent) => HintDisposition;
  readonly logger: Logger;
}

export interface WebhookHandlers {
  github(req: WebhookRequest): WebhookResponse;
  gitlab(req: WebhookRequest): WebhookResponse;
  generic(req: WebhookRequest): WebhookResponse;
}

const ZERO_SHA = /^0{40}$/;
const SHA = /^[0-9a-f]{40}$/i;

export function createWebhookHandlers(options: WebhookOptions): WebhookHandlers {
  const log = options.logger;
  const genericHeader = (options.genericHeader ?? "x-signature-256").toLowerCase();

  const unauthorized = (provider: PushEvent["provider"], reason: string): WebhookResponse => {
    log.warn("webhook rejected: bad signature", { provider, reason });
    return { status: 401, body: "invalid signature\n" };
  };

  const dispatch = (provider: PushEvent["provider"], body: Uint8Array | string, extract: (payload: Record<string, unknown>) => Omit<PushEvent, "provider"> | string): WebhookResponse => {
    let payload: unknown;
    try {
      payload = JSON.parse(typeof body === "string" ? body : Buffer.from(body).toString("utf8"));
    } catch {
      log.warn("webhook rejected: body is not JSON", { provider });
      return { status: 400, body: "body must be JSON\n" };
    }
    if (payload === null || typeof payload !== "object" || Array.isArray(payload)) return { status: 400, body: "body must be a JSON object\n" };
    const event = extract(payload as Record<string, unknown>);
    if (typeof event === "string") {
      log.debug("webhook ignored", { provider, reason: event });
      return { status: 200, body: `ignored: ${event}\n` };
    }
    const disposition = options.onPush({ provider, ...event });
    log.info("webhook push", { provider, repo: event.repo, ref: event.ref, sha: event.sha, disposition });
    return { status: disposition === "accepted" ? 202 : 200, body: `${disposition}\n` };
  };

  return {
    github(req) {
      if (options.githubSecret === undefined) return { status: 404, body: "github webhook not configured\n" };
      const given = header(req.headers, "x-hub-signature-256");
      if (given === undefined) return unauthorized("github", "missing X-Hub-Signature-256");
      if (!verifyHmac(options.githubSecret, req.body, given)) return unauthorized("github", "signature mismatch");
      const event = header(req.headers, "x-github-event") ?? "push";
      if (event === "ping") return { status: 200, body: "pong\n" };
      if (event !== "push") return { status: 200, body: `ignored: event ${event}\n` };
      return dispatch("github", req.body, (p) => pushFrom(p, stringAt(p, "after"), stringAt(p, "repository", "full_name")));
    },
    gitlab(req) {
      if (options.gitlabToken === undefined) return { status: 404, body: "gitlab webhook not configured\n" };
      const given = header(req.headers, "x-gitlab-token");
      if (given === undefined) return unauthorized("gitlab", "missing X-Gitlab-Token");
      if (!constantTimeEqual(given, options.gitlabToken)) return unauthorized("gitlab", "token mismatch");
      const event = header(req.headers, "x-gitlab-event") ?? "Push Hook";
      if (event !== "Push Hook" && event !== "Tag Push Hook") return { status: 200, body: `ignored: event ${event}\n` };
      return dispatch("gitlab", req.body, (p) => pushFrom(p, stringAt(p, "checkout_sha") ?? stringAt(p, "after"), stringAt(p, "project", "path_with_namespace")));
    },
    generic(req) {
      if (options.genericSecret === undefined) return { status: 404, body: "generic webhook not configured\n" };
      const given = header(req.headers, genericHeader);
      if (given === undefined) return unauthorized("generic", `missing ${genericHeader}`);
      if (!verifyHmac(options.genericSecret, req.body, given)) return unauthorized("generic", "signature mismatch");
      return dispatch("generic", req.body, (p) => pushFrom(p, stringAt(p, "sha") ?? stringAt(p, "after"), stringAt(p, "repo")));
    },
  };
}

function pushFrom(p: Record<string, unknown>, sha: string | undefined, repo: string | undefined): Omit<PushEvent, "provider"> | string {
  const ref = stringAt(p, "ref");
  if (ref === undefined) return "payload has no ref";
  if (sha === undefined || ZERO_SHA.test(sha)) return "ref deleted or no commit SHA";
  if (!SHA.test(sha)) return "commit SHA is not 40 hex digits";
  return { repo, ref, sha: sha.toLowerCase() };
}

function stringAt(obj: Record<string, unknown>, ...path: string[]): string | undefined {
  let cur: unknown = obj;
  for (const key of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return typeof cur === "string" ? cur : undefined;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  for (const [k, v] of Object.entries(headers)) {
    if (k.toLowerCase() !== name) continue;
    const value = typeof v === "string" ? v : v?.[0];
    return value;
  }
  return undefined;
}

/** `sha256=<hex>` (or bare hex) HMAC-SHA256 of the raw body, compared in constant time. */
export function verifyHmac(secret: string, body: Uint8Array | string, signature: string): boolean {
  const given = signature.trim().replace(/^sha256=/i, "").toLowerCase();
  const expected = createHmac("sha256", secret).update(typeof body === "string" ? Buffer.from(body) : body).digest("hex");
  return constantTimeEqual(given, expected);
}

/** Signs a body the way GitHub does (`sha256=<hex>`); for senders and tests. */
export function signBody(secret: string, body: Uint8Array | string): string {
  return "sha256=" + createHmac("sha256", secret).update(typeof body === "string" ? Buffer.from(body) : body).digest("hex");
}

/** Equal-time comparison of two strings of any length (both are hashed first, so lengths do not leak). */
export function constantTimeEqual(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a).digest();
  const hb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}
