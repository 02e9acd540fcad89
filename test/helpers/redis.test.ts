import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { startRedis, type TestRedis } from "./redis.js";

describe("test helper: private redis-server", () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis({ outages: true });
  });
  afterAll(async () => {
    await redis.stop();
  });

  it("serves a private database that survives nothing but the test", async () => {
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    await client.set("k", "v");
    expect(await client.get("k")).toBe("v");
    expect(redis.port).not.toBe(6379);
    await client.quit();
  });

  it("can be stopped and restarted on the same port (outage simulation)", async () => {
    await redis.stop();
    const client = new Redis(redis.url, { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
    const errors: Error[] = [];
    client.on("error", (err: Error) => errors.push(err)); // the refusal is expected: heard here, not printed as unhandled
    await expect(client.connect()).rejects.toThrow();
    expect(errors.some((e) => /ECONNREFUSED/.test(e.message))).toBe(true);
    client.disconnect();
    await redis.start();
    const again = new Redis(redis.url);
    expect(await again.ping()).toBe("PONG");
    await again.quit();
  });
});

describe("test helper: REDIS_URL", () => {
  it("uses the named server with a database of its own, and stop() empties it without stopping the server", async () => {
    const owner = await startRedis({ outages: true }); // plays the machine's shared Redis
    const saved = process.env.REDIS_URL;
    process.env.REDIS_URL = `redis://127.0.0.1:${owner.port}`;
    try {
      const redis = await startRedis();
      expect(redis.port).toBe(owner.port);
      expect(redis.db).toBeGreaterThan(0);
      const client = new Redis(redis.url);
      await client.set("k", "v");
      await redis.stop();
      expect(await client.dbsize()).toBe(0);
      expect(await client.ping()).toBe("PONG");
      await client.quit();
    } finally {
      if (saved === undefined) delete process.env.REDIS_URL;
      else process.env.REDIS_URL = saved;
      await owner.stop();
    }
  });
});

