/**
 * The UI's only way to the server: the JSON API under /api with the bearer token the user gave on
 * the login page (kept in sessionStorage: gone when the tab closes, never in a URL or a cookie), and
 * the live event stream (/api/events, read with fetch so that it carries the same Authorization
 * header; EventSource cannot send one).
 */

const TOKEN_KEY = "gitmesh.token";

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value: string | null): void {
  if (value === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, value);
}

/** The API refused the token (401): the UI goes back to the login page. */
export class UnauthorizedError extends Error {
  readonly code = "UnauthorizedError";
}

/** Any other failed answer, with the server's message. */
export class ApiError extends Error {
  readonly code = "ApiError";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function getJson<T>(path: string, bearer: string | null = token()): Promise<T> {
  const res = await fetch(path, { headers: { accept: "application/json", ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) } });
  if (res.status === 401) throw new UnauthorizedError("the token was refused");
  if (!res.ok) {
    // The HTTP edge answers every error as {error: {status, code, message}}.
    const body = (await res.json().catch(() => ({}))) as { error?: { message?: string } };
    throw new ApiError(res.status, body.error?.message ?? `${res.status} ${res.statusText}`);
  }
  return (await res.json()) as T;
}

/** POST an admin action (JSON body); the answer, or ApiError with the server's message (403: not the admin token). */
export async function postJson<T>(path: string, body: unknown, bearer: string | null = token()): Promise<T> {
  const res = await fetch(path, { method: "POST", headers: { accept: "application/json", "content-type": "application/json", ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) }, body: JSON.stringify(body) });
  if (res.status === 401) throw new UnauthorizedError("the token was refused");
  if (!res.ok) {
    const err = (await res.json().catch(() => ({}))) as { error?: { message?: string } };
    throw new ApiError(res.status, err.error?.message ?? `${res.status} ${res.statusText}`);
  }
  return (await res.json()) as T;
}

/**
 * Calls `onChange` whenever the server says its state changed, until `signal` aborts; reconnects
 * after a dropped stream (1 s, then up to 10 s). `onState` reports whether the stream is live.
 */
export function subscribe(onChange: (event: string) => void, onState: (live: boolean) => void, signal: AbortSignal): void {
  let delay = 1000;
  const run = async (): Promise<void> => {
    while (!signal.aborted) {
      try {
        const res = await fetch("/api/events", { headers: { accept: "text/event-stream", authorization: `Bearer ${token() ?? ""}` }, signal });
        if (res.status === 401) throw new UnauthorizedError("the token was refused");
        if (!res.ok || res.body === null) throw new ApiError(res.status, "no event stream");
        onState(true);
        delay = 1000;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const name = /^event: (.+)$/m.exec(block)?.[1];
            if (name !== undefined) onChange(name);
          }
        }
      } catch (err) {
        if (err instanceof UnauthorizedError) {
          onChange("unauthorized");
          return;
        }
      }
      onState(false);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 10_000);
    }
  };
  void run();
}
