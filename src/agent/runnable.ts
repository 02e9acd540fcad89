/**
 * Long-running parts as Runnables (controller-runtime style): `start(signal)` runs until the signal
 * aborts (or fails), and a manager starts them in order and stops them in reverse order.
 */
import { setMaxListeners } from "node:events";
import { describeError, type Logger } from "../core/index.js";

export interface Runnable {
  readonly name: string;
  /** Starts the part; resolves once it is running (not when it ends). Stops when `signal` aborts. */
  start(signal: AbortSignal): Promise<void>;
  /** Stops and waits until everything the part started has ended. */
  stop(): Promise<void>;
}

export interface RunnableManager {
  /** Starts every runnable in order; a failing start stops the ones already started and rethrows. */
  start(): Promise<void>;
  /** Stops in reverse order; errors are logged, never thrown. */
  stop(): Promise<void>;
  readonly signal: AbortSignal;
}

export function createRunnableManager(runnables: readonly Runnable[], logger: Logger): RunnableManager {
  const controller = new AbortController();
  // every informer listens on this signal
  setMaxListeners(0, controller.signal);
  const started: Runnable[] = [];
  const stop = async () => {
    controller.abort();
    for (const r of started.splice(0).reverse()) {
      try {
        await r.stop();
      } catch (err) {
        logger.warn("error while stopping", { part: r.name, error: describeError(err) });
      }
    }
  };
  return {
    signal: controller.signal,
    async start() {
      for (const r of runnables) {
        if (controller.signal.aborted) return;
        try {
          await r.start(controller.signal);
          started.push(r);
        } catch (err) {
          await stop();
          throw err;
        }
      }
    },
    stop,
  };
}

// Backoff is shared with the relay client and git-sync (src/core/backoff.ts).
export { backoffDelay, type BackoffOptions } from "../core/index.js";

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
