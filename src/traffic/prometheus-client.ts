/**
 * A small client of Prometheus's HTTP API: instant queries (`GET /api/v1/query`) with an optional
 * bearer token, a CA bundle for a private TLS root, and a timeout. Failures say what to do: an
 * unreachable or slow Prometheus is "retry later" (the UI shows it, the API answers 503), a refused
 * token or a bad query needs a person. The token never appears in an error or a log line, and
 * credentials in the URL are refused (they would end up in logs).
 */
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { NeedsHumanError, RetryLaterError } from "../core/index.js";

export interface PrometheusClientOptions {
  /** Base URL of Prometheus (`http(s)://host:9090`, a path prefix such as `/prometheus` is kept). */
  readonly url: string;
  /** Bearer token sent as `Authorization: Bearer <token>` (a Prometheus behind an auth proxy, Thanos, Mimir, managed services). */
  readonly token?: string;
  /** PEM CA bundle trusted for an https URL (a private root); the system roots otherwise. */
  readonly caPem?: string;
  /** Timeout of one query, ms (default 10 000). */
  readonly timeoutMs?: number;
}

/** One series of an instant vector: its labels and its value (NaN and ±Inf are kept as numbers). */
export interface PromSample {
  readonly metric: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface PrometheusClient {
  /** The URL as shown to people (no credentials). */
  readonly url: string;
  /** Runs an instant query; the result must be a vector. */
  query(expr: string, options?: { readonly signal?: AbortSignal }): Promise<PromSample[]>;
}

/** Prometheus cannot be reached, timed out or answered 5xx: try again later. */
export class PrometheusUnavailableError extends RetryLaterError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, 30_000, options);
  }
}

/** Prometheus refused the request (401/403, a bad query, not a Prometheus): a person must fix the configuration. */
export class PrometheusRefusedError extends NeedsHumanError {}

export const DEFAULT_PROMETHEUS_TIMEOUT_MS = 10_000;
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/** Why a Prometheus URL cannot be used, or undefined when it can. */
export function prometheusUrlProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `the Prometheus URL is not a URL (expected http(s)://host:9090)`;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return `the Prometheus URL must be http:// or https://, not ${parsed.protocol}`;
  if (parsed.username !== "" || parsed.password !== "") return "the Prometheus URL must not carry credentials: give a bearer token in a file instead";
  if (parsed.search !== "" || parsed.hash !== "") return "the Prometheus URL must be the base URL without a query or fragment (http(s)://host:9090[/prefix])";
  return undefined;
}

export function createPrometheusClient(options: PrometheusClientOptions): PrometheusClient {
  const problem = prometheusUrlProblem(options.url);
  if (problem !== undefined) throw new PrometheusRefusedError(problem);
  const base = new URL(options.url);
  const shown = `${base.origin}${base.pathname.replace(/\/+$/, "")}`;
  const timeoutMs = options.timeoutMs ?? DEFAULT_PROMETHEUS_TIMEOUT_MS;

  const get = (path: string, signal: AbortSignal | undefined): Promise<{ status: number; body: string; type: string }> =>
    new Promise((resolve, reject) => {
      const target = new URL(`${shown}${path}`);
      const headers: Record<string, string> = { accept: "application/json" };
      if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
      const onAnswer = (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          size += c.length;
          if (size > MAX_ANSWER_BYTES) {
            req.destroy(new PrometheusRefusedError(`Prometheus at ${shown} answered more than ${String(MAX_ANSWER_BYTES >> 20)} MiB for one query; narrow the filter`));
            return;
          }
          chunks.push(c);
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8"), type: res.headers["content-type"] ?? "" }));
        res.on("error", reject);
      };
      const req =
        target.protocol === "https:"
          ? httpsRequest(target, { method: "GET", headers, ...(options.caPem === undefined ? {} : { ca: options.caPem }), ...(signal === undefined ? {} : { signal }) }, onAnswer)
          : httpRequest(target, { method: "GET", headers, ...(signal === undefined ? {} : { signal }) }, onAnswer);
      req.setTimeout(timeoutMs, () => req.destroy(new PrometheusUnavailableError(`Prometheus at ${shown} did not answer within ${String(timeoutMs / 1000)} s; check that it runs and is reachable, or raise the timeout`)));
      req.on("error", (err: Error & { code?: string }) => {
        if (err instanceof PrometheusUnavailableError || err instanceof PrometheusRefusedError) return reject(err);
        if (err.name === "AbortError") return reject(err);
        const tls = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|SSL/i.test(err.code ?? err.message);
        if (tls) return reject(new PrometheusRefusedError(`the TLS certificate of Prometheus at ${shown} is not trusted (${err.code ?? err.message}): give its CA bundle (PEM)`, { cause: err }));
        reject(new PrometheusUnavailableError(`Prometheus at ${shown} cannot be reached (${err.code ?? err.message}); check the URL and that Prometheus runs`, { cause: err }));
      });
      req.end();
    });

  return {
    url: shown,
    async query(expr, queryOptions = {}) {
      const { status, body, type } = await get(`/api/v1/query?query=${encodeURIComponent(expr)}`, queryOptions.signal);
      if (status === 401 || status === 403) throw new PrometheusRefusedError(`Prometheus at ${shown} refused the request (HTTP ${String(status)}): ${options.token === undefined ? "it needs a bearer token" : "the bearer token is not accepted"}`);
      let parsed: { status?: unknown; data?: { resultType?: string; result?: unknown }; error?: string; errorType?: string } | null | undefined;
      try {
        parsed = JSON.parse(body) as typeof parsed;
      } catch {
        parsed = undefined;
      }
      if (typeof parsed !== "object" || parsed === null || typeof parsed.status !== "string") {
        if (status >= 500) throw new PrometheusUnavailableError(`Prometheus at ${shown} answered HTTP ${String(status)}; try again later`);
        throw new PrometheusRefusedError(`${shown} did not answer as Prometheus's HTTP API does (HTTP ${String(status)}, ${type || "no content type"}): is the URL the Prometheus base URL (not Grafana or a UI path)?`);
      }
      if (parsed.status !== "success") {
        const why = `${parsed.errorType ?? "error"}: ${parsed.error ?? "no message"}`;
        if (status >= 500 || parsed.errorType === "timeout" || parsed.errorType === "unavailable") throw new PrometheusUnavailableError(`Prometheus at ${shown} could not run the query (${why}); try again later`);
        throw new PrometheusRefusedError(`Prometheus at ${shown} refused the query (${why})`);
      }
      if (parsed.data?.resultType !== "vector" || !Array.isArray(parsed.data.result)) throw new PrometheusRefusedError(`Prometheus at ${shown} answered a ${String(parsed.data?.resultType)} where an instant vector was expected`);
      return (parsed.data.result as { metric?: Record<string, string>; value?: [number, string] }[]).map((r) => ({ metric: r.metric ?? {}, value: Number(r.value?.[1]) }));
    },
  };
}
