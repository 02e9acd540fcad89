// The once-a-second loop (src/server/ticker.ts): ticks never overlap, a failing tick does not end the
// loop, and stop waits for the running tick and runs no more.
import { describe, expect, it } from "vitest";
import { createTicker } from "../../src/server/ticker.js";

describe("ticker", () => {
  it("runs ticks one at a time, goes on after a failure, and stop waits for the running tick", async () => {
    let active = 0;
    let overlapped = false;
    let runs = 0;
    const errors: unknown[] = [];
    let release: () => void = () => undefined;
    let secondStarted: () => void = () => undefined;
    const second = new Promise<void>((r) => (secondStarted = r));
    const ticker = createTicker({
      intervalMs: 1,
      tick: async () => {
        runs++;
        active++;
        if (active > 1) overlapped = true;
        if (runs === 1) {
          active--;
          throw new Error("first tick fails");
        }
        if (runs === 2) {
          secondStarted();
          await new Promise<void>((r) => (release = r));
        }
        active--;
      },
      onError: (err) => errors.push(err),
    });
    ticker.start();
    await second;
    let stoppedAt: number | undefined;
    const stopping = ticker.stop().then(() => (stoppedAt = runs));
    await new Promise((r) => setImmediate(r));
    expect(stoppedAt).toBeUndefined();
    release();
    await stopping;
    expect(stoppedAt).toBe(2);
    await new Promise((r) => setTimeout(r, 20));
    expect(runs).toBe(2);
    expect(overlapped).toBe(false);
    expect(errors.map((e) => (e as Error).message)).toEqual(["first tick fails"]);
  });
});
