/**
 * A loop that runs one task every `intervalMs`, never two at once: a tick that is still running when
 * the next is due delays it (ticks queue behind each other, none is dropped or overlapped). A failing
 * tick is reported to `onError` and the loop goes on. `stop()` ends the loop and resolves once the
 * running tick (if any) has finished. The timer does not keep the process alive.
 */
export interface TickerOptions {
  readonly intervalMs: number;
  readonly tick: () => Promise<void>;
  readonly onError: (err: unknown) => void;
}

export interface Ticker {
  start(): void;
  stop(): Promise<void>;
}

export function createTicker(options: TickerOptions): Ticker {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  return {
    start() {
      if (timer !== undefined || stopped) return;
      timer = setInterval(() => {
        running = running.then(() => (stopped ? undefined : options.tick())).catch(options.onError);
      }, options.intervalMs);
      timer.unref();
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
