/**
 * Transient answers of the API server are retried within a delivery, never turned into a NACK
 * (DESIGN.md "Agent": 429 with `Retry-After`, 5xx, timeouts and resets are "not applied yet —
 * retrying"; a NACK is for what needs a person).
 *
 * A real kube-apiserver answers 429 "storage is (re)initializing" to a list of a kind whose watch
 * cache is still being filled — right after the server (re)started or a CRD was installed — and 429
 * "Too many requests" under API priority and fairness, with `Retry-After`; 500, 503 and 504 while an
 * etcd request times out or the server shuts down (the emulator answers none of these unless told
 * to). Not transient: the 500 a real server gives an apply patch with a field of the wrong type.
 */
import { ApiException } from "@kubernetes/client-node";
import { messageOf, statusOf } from "./kube.js";
import { backoffDelay, sleep } from "./runnable.js";

/** Statuses worth the same request again. */
const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);
/** Connection failures worth the same request again (node's and node-fetch's codes). */
const TRANSIENT_CODES: ReadonlySet<string> = new Set(["ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "EPIPE", "ECONNABORTED", "EAI_AGAIN"]);

export function isTransient(err: unknown): boolean {
  const status = statusOf(err);
  // A real server answers an apply patch whose field has the wrong type, or is not declared, with
  // 500 "failed to create typed patch object": the same object fails the same way every time.
  if (status === 500 && /failed to create typed patch object/.test(messageOf(err))) return false;
  if (status !== undefined) return TRANSIENT_STATUSES.has(status);
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && TRANSIENT_CODES.has(code);
}

/** The server's `Retry-After` in ms (seconds form), if it sent one. */
function retryAfterMs(err: unknown): number | undefined {
  if (!(err instanceof ApiException)) return undefined;
  const headers = err.headers as Record<string, string> | undefined;
  const v = headers?.["retry-after"] ?? headers?.["Retry-After"];
  const s = v === undefined ? NaN : Number(v);
  return Number.isFinite(s) && s >= 0 ? s * 1000 : undefined;
}

export interface TransientRetryOptions {
  /** Attempts in all (default 6). */
  readonly attempts?: number;
  /** First delay without a Retry-After (default 200 ms), doubling. */
  readonly initialDelayMs?: number;
  /** Longest single wait, Retry-After included (default 2 s). */
  readonly maxDelayMs?: number;
  /**
   * Asked before each further attempt: false ends the retries with the last failure (the agent stopped
   * leading, or is stopping: a request for a delivery nobody waits for any more must not outlive it).
   */
  readonly stillWanted?: () => boolean;
}

/**
 * Runs `request`, again after a transient failure (at most `attempts` times, waiting as the server
 * asks within `maxDelayMs`, else backing off); anything else, and the last failure, is thrown.
 */
export async function retryTransient<T>(request: () => Promise<T>, options: TransientRetryOptions = {}): Promise<T> {
  const attempts = Math.max(1, options.attempts ?? 6);
  const initial = options.initialDelayMs ?? 200;
  const max = options.maxDelayMs ?? 2000;
  for (let attempt = 1; ; attempt++) {
    try {
      return await request();
    } catch (err) {
      if (attempt >= attempts || !isTransient(err) || options.stillWanted?.() === false) throw err;
      // The server's Retry-After when it gives one (capped), else the codebase's one backoff, with jitter.
      const asked = retryAfterMs(err);
      await sleep(asked === undefined ? backoffDelay({ initialMs: initial, maxMs: max }, attempt - 1) : Math.min(max, asked));
      if (options.stillWanted?.() === false) throw err;
    }
  }
}
