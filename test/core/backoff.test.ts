import { describe, expect, it } from "vitest";
import {
  backoffDelay,
  TransientError,
  NeedsHumanError,
} from "../../src/core/index.js";
import { withBackoff } from "../../src/git-sync/index.js";

describe("backoffDelay (the one backoff of agent, relay client and git-sync)", () => {
  it("grows by the factor from initialMs and stops at maxMs", () => {
    const opts = { initialMs: 100, maxMs: 1_000, factor: 3, jitter: 0 };
    expect([0, 1, 2, 3, 4].map((a) => backoffDelay(opts, a))).toEqual([
      100, 300, 900, 1_000, 1_000,
    ]);
  });

  it("jitter stays within ± the fraction, at both extremes of the random source", () => {
    const opts = { initialMs: 1_000, jitter: 0.2 };
    expect(backoffDelay(opts, 0, () => 0)).toBeCloseTo(800);
    expect(backoffDelay(opts, 0, () => 0.999999)).toBeCloseTo(1_200, 0);
    expect(backoffDelay(opts, 0, () => 0.5)).toBe(1_000);
  });

  it("defaults: 200 ms doubling to a 30 s cap", () => {
    expect(backoffDelay({ jitter: 0 }, 0)).toBe(200);
    expect(backoffDelay({ jitter: 0 }, 1)).toBe(400);
    expect(backoffDelay({ jitter: 0 }, 20)).toBe(30_000);
  });
});

describe("withBackoff (git fetch/push retries)", () => {
  it("retries transient errors with deterministic doubling delays, then succeeds", async () => {
    const waits: number[] = [];
    let calls = 0;
    const out = await withBackoff(
      () => (++calls < 4 ? Promise.reject(new TransientError("connection reset")) : Promise.resolve("done")),
      { initialDelayMs: 50, sleep: (ms) => Promise.resolve(void waits.push(ms)) },
    );
    expect(out).toBe("done");
    expect(waits).toEqual([50, 100, 200]);
  });

  it("does not retry an error that needs a human, and gives up after `attempts`", async () => {
    let calls = 0;
    await expect(
      withBackoff(
        () => {
          calls++;
          return Promise.reject(new NeedsHumanError("bad credentials"));
        },
        { sleep: () => Promise.resolve() },
      ),
    ).rejects.toThrow("bad credentials");
    expect(calls).toBe(1);
    calls = 0;
    await expect(
      withBackoff(
        () => {
          calls++;
          return Promise.reject(new TransientError("down"));
        },
        { attempts: 3, sleep: () => Promise.resolve() },
      ),
    ).rejects.toThrow("down");
    expect(calls).toBe(3);
  });

  it("stops at its owner's stop: a wait ends at once with the last error, its timer cleared (nothing keeps a stopped process alive), and no attempt after it", async () => {
    const stop = new AbortController();
    let calls = 0;
    const started = Date.now();
    const run = withBackoff(
      () => {
        calls++;
        return Promise.reject(new TransientError("connect ECONNREFUSED"));
      },
      { initialDelayMs: 60_000, signal: stop.signal },
    );
    await new Promise((r) => setTimeout(r, 50));
    const timersBefore = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    stop.abort();
    await expect(run).rejects.toThrow("ECONNREFUSED");
    expect(calls).toBe(1);
    expect(Date.now() - started).toBeLessThan(30_000);
    // The 60 s backoff timer is gone with the stop.
    expect(process.getActiveResourcesInfo().filter((r) => r === "Timeout").length).toBe(timersBefore - 1);
    // Already stopped: one attempt, no wait.
    calls = 0;
    await expect(withBackoff(() => (calls++, Promise.reject(new TransientError("down"))), { signal: stop.signal })).rejects.toThrow("down");
    expect(calls).toBe(1);
  });
});
