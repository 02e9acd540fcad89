import { describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { startSentinel } from "./redis-sentinel.js";

describe("test helper: Redis Sentinel (primary, replica, three sentinels)", () => {
  it("fails over when the primary is killed and leaves no process behind", async () => {
    const ha = await startSentinel();
    try {
      expect(ha.running()).toBe(5);
      const [first, second] = ha.dataPorts;
      expect(await ha.primaryPort()).toBe(first);
      await ha.kill(first!);
      expect(await ha.waitForFailover(first!)).toBe(second);
    } finally {
      await ha.stop();
    }
    expect(ha.running()).toBe(0);
    const probe = new Redis({ host: "127.0.0.1", port: ha.sentinelPorts[0]!, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    probe.on("error", () => undefined);
    await expect(probe.connect()).rejects.toThrow();
    probe.disconnect();
  });
});
