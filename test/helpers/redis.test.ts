import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { startRedis, type TestRedis } from "./redis.js";

describe("test helper: private redis-server", () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    if (!process.env.REDIS_URL) await redis.stop();
  });

  it("serves a private database that survives nothing but the test", async () => {
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    await client.set("k", "v");
    expect(await client.get("k")).toBe("v");
    if (!process.env.REDIS_URL) expect(redis.port).not.toBe(6379);
    await client.quit();
  });

  it.runIf(!process.env.REDIS_URL)("can be stopped and restarted on the same port (outage simulation)", async () => {
    await redis.stop();
    const client = new Redis(redis.url, { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
    await expect(client.connect()).rejects.toThrow();
    client.disconnect();
    await redis.start();
    const again = new Redis(redis.url);
    expect(await again.ping()).toBe("PONG");
    await again.quit();
  });
});
