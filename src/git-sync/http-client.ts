/**
 * The HTTP client isomorphic-git talks to Git servers with: isomorphic-git's own node client (simple-get),
 * plus an idle timeout. Without one, a Git server that accepts a connection and then never answers (a hung
 * proxy, a half-open connection after a network change) held a fetch or a push forever — and with it the
 * sync trigger (no poll runs while a sync is in flight) or the audit chain: the server went on serving
 * its last commit, silently. A request now fails when neither the response nor its body has moved for
 * `idleMs`; the caller's retry and error handling take it from there (`withBackoff`, "sync failed").
 *
 * Idle, not total: a large fetch or push that keeps moving is never cut. The time before the first byte
 * of the answer includes sending the request body (one buffer for a push) and the server's work on it
 * (indexing a pushed pack), hence a generous default.
 */
import type { GitHttpRequest, GitHttpResponse, HttpClient } from "isomorphic-git";
import nodeHttp from "isomorphic-git/http/node";

/** Default idle timeout of a Git HTTP request: no byte of the answer for this long fails it. */
export const GIT_HTTP_IDLE_TIMEOUT_MS = 120_000;

export class GitHttpTimeoutError extends Error {
  constructor(url: string, idleMs: number) {
    const idle = idleMs < 10_000 ? `${String(idleMs)} ms` : `${String(Math.round(idleMs / 1000))} s`;
    super(`the Git server sent nothing for ${idle} (${url}); gave up on this request`);
    this.name = "GitHttpTimeoutError";
  }
}

interface TimeoutRecord {
  count: number;
  last: GitHttpTimeoutError | undefined;
}

/** Timeouts per client made here (a count and the last one), so that a caller can tell a truncated answer from an empty one. */
const timeouts = new WeakMap<HttpClient, TimeoutRecord>();

/**
 * How many requests of `client` timed out so far, and the last error. isomorphic-git reads a ref
 * advertisement cut short by the timeout as a repository without refs (its stream reader ends quietly on
 * an error): a caller that finds "no refs" checks this to report the timeout instead.
 */
export function idleTimeoutsOf(client: HttpClient): { readonly count: number; readonly last: GitHttpTimeoutError | undefined } {
  const record = timeouts.get(client);
  return { count: record?.count ?? 0, last: record?.last };
}

/** `base` (default: isomorphic-git's node client) with an idle timeout on every request. */
export function withIdleTimeout(idleMs: number = GIT_HTTP_IDLE_TIMEOUT_MS, base: HttpClient = nodeHttp): HttpClient {
  const seen: TimeoutRecord = { count: 0, last: undefined };
  const client: HttpClient = {
    async request(req: GitHttpRequest): Promise<GitHttpResponse> {
      const controller = new AbortController();
      const url = stripQuery(req.url);
      let expired = false;
      const timedOut = new Promise<never>((_, reject) =>
        controller.signal.addEventListener(
          "abort",
          () => {
            const err = new GitHttpTimeoutError(url, idleMs);
            if (expired) {
              seen.count++;
              seen.last = err;
            }
            reject(err);
          },
          { once: true },
        ),
      );
      const expire = () => {
        expired = true;
        controller.abort();
      };
      timedOut.catch(() => undefined);
      // Unref'd: a request in flight keeps the process alive by its socket; an answer whose body nobody
      // reads (isomorphic-git leaves a 401's) must not keep it alive for the idle time.
      let timer = setTimeout(expire, idleMs).unref();
      const moved = () => {
        clearTimeout(timer);
        timer = setTimeout(expire, idleMs).unref();
      };
      const done = () => clearTimeout(timer);
      // A caller's own signal still cancels the request.
      if (req.signal?.aborted === true) controller.abort();
      req.signal?.addEventListener("abort", () => controller.abort(), { once: true });
      let res: GitHttpResponse;
      try {
        res = await Promise.race([base.request({ ...req, signal: controller.signal }), timedOut]);
      } catch (err) {
        done();
        throw err;
      }
      moved();
      const body = res.body;
      if (body === undefined) {
        done();
        return res;
      }
      const it = body;
      const guarded: AsyncIterableIterator<Uint8Array> = {
        async next() {
          try {
            const r = await Promise.race([it.next(), timedOut]);
            if (r.done === true) done();
            else moved();
            return r;
          } catch (err) {
            done();
            throw err;
          }
        },
        async return(value?: unknown) {
          done();
          await it.return?.(value);
          return { done: true, value: undefined };
        },
        [Symbol.asyncIterator]() {
          return this;
        },
      };
      return { ...res, body: guarded };
    },
  };
  timeouts.set(client, seen);
  return client;
}

/** The URL without its query (isomorphic-git adds `?service=…`); credentials never reach it (they travel in headers). */
function stripQuery(url: string): string {
  const i = url.indexOf("?");
  return i < 0 ? url : url.slice(0, i);
}
