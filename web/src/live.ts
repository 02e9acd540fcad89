/** Data that follows the server: re-read whenever the event stream ticks. */
import { createContext } from "preact";
import { useContext, useEffect, useState } from "preact/hooks";
import { getJson, UnauthorizedError } from "./api.js";

export const LiveContext = createContext<{ tick: number; unauthorized: () => void }>({ tick: 0, unauthorized: () => undefined });

export interface Loaded<T> {
  readonly data?: T;
  readonly error?: string;
}

/** GET `path` now, and again after every change event; keeps the last answer while re-reading. */
export function useApi<T>(path: string | null): Loaded<T> {
  const { tick, unauthorized } = useContext(LiveContext);
  const [state, setState] = useState<Loaded<T>>({});
  useEffect(() => {
    if (path === null) return;
    let current = true;
    getJson<T>(path)
      .then((data) => current && setState({ data }))
      .catch((err: unknown) => {
        if (err instanceof UnauthorizedError) unauthorized();
        else if (current) setState((s) => ({ ...s, error: err instanceof Error ? err.message : String(err) }));
      });
    return () => {
      current = false;
    };
  }, [path, tick]);
  return state;
}
