/**
 * Data that follows the server: re-read whenever the event stream ticks. A tick never cancels the
 * request in flight (under a steady stream of changes a page would stay on "Loading…" for good):
 * ticks that arrive while it runs are coalesced into one re-read after its answer.
 */
import { createContext } from "preact";
import { useContext, useEffect, useRef, useState } from "preact/hooks";
import { getJson, UnauthorizedError } from "./api.js";

export const LiveContext = createContext<{ tick: number; unauthorized: () => void }>({ tick: 0, unauthorized: () => undefined });

export interface Loaded<T> {
  readonly data?: T;
  readonly error?: string;
}

interface InFlight {
  readonly path: string;
  /** A tick arrived while it ran: read once more after it answers. */
  stale: boolean;
}

/** GET `path` now, and again after change events (at most one request in flight); keeps the last answer of the same path while re-reading. */
export function useApi<T>(path: string | null): Loaded<T> {
  const { tick, unauthorized } = useContext(LiveContext);
  const [state, setState] = useState<Loaded<T> & { readonly path?: string }>({});
  const [again, setAgain] = useState(0);
  const inFlight = useRef<InFlight | null>(null);
  useEffect(() => {
    if (path === null) {
      inFlight.current = null;
      return;
    }
    if (inFlight.current?.path === path) {
      inFlight.current.stale = true;
      return;
    }
    // A new path (or the first read): an answer for another path is no longer wanted.
    const req: InFlight = { path, stale: false };
    inFlight.current = req;
    getJson<T>(path)
      .then((data) => {
        if (inFlight.current === req) setState({ path, data });
      })
      .catch((err: unknown) => {
        if (err instanceof UnauthorizedError) unauthorized();
        else if (inFlight.current === req) setState((s) => ({ ...(s.path === path ? s : {}), path, error: err instanceof Error ? err.message : String(err) }));
      })
      .finally(() => {
        if (inFlight.current !== req) return;
        inFlight.current = null;
        if (req.stale) setAgain((n) => n + 1);
      });
  }, [path, tick, again]);
  useEffect(
    () => () => {
      inFlight.current = null;
    },
    [],
  );
  // An answer for another path (the page's address changed) is not shown as this one's.
  return state.path === path ? state : {};
}
