/**
 * The BullMQ runner on its own (bullmq-runner.ts): what happens to its connections when Redis is not
 * there. The rest of its behaviour is driven through the pipeline (pipeline, worker-role, outage tests).
 */
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/core/index.js";
import { createBullRunner } from "../../src/queue/bullmq-runner.js";
import { createRedisClient, parseRedisUrl } from "../../src/queue/redis-connection.js";
import type { RunnerSettings } from "../../src/queue/runner.js";
import { startRedis } from "../helpers/redis.js";

const settings: RunnerSettings = {
  concurrency: { workspace: 1, cluster: 1 },
  attempts: 1,
  backoffMs: 10,
  maxDelays: 1,
  handler: () => Promise.resolve(),
  onEvent: () => {},
};

const rejections: unknown[] = [];
const record = (reason: unknown) => void rejections.push(reason);

afterEach(() => {
  process.off("unhandledRejection", record);
  rejections.length = 0;
});

describe("BullMQ runner", () => {
  it("closed while its connections are still trying to reach Redis, it leaves no unhandled rejection behind", async () => {
    process.on("unhandledRejection", record);
    const redis = await startRedis({ outages: true });
    // As the pipeline makes BullMQ's connection: eager, retrying every 250 ms.
    const conn = createRedisClient(parseRedisUrl(redis.url), { maxRetriesPerRequest: null, retryStrategy: () => 250 });
    conn.on("error", () => {});
    try {
      await new Promise<void>((resolve) => conn.once("ready", () => resolve()));
      // Each worker duplicates the connection for its blocking client; Redis goes away while they connect.
      const runner = createBullRunner({ ...settings, connection: conn, prefix: "t:bull", work: true, logger: silentLogger });
      await redis.stop();
      // What the pipeline does on entering degraded mode: close the runner, forced.
      await runner.close(true);
      // BullMQ 5 reported each blocking connection's failed start-up after close() had removed every
      // listener: an unhandled `connect ECONNREFUSED` (or ECONNRESET) per worker.
      await new Promise((r) => setTimeout(r, 500));
      expect(rejections.map(String)).toEqual([]);
    } finally {
      conn.disconnect();
      await redis.stop();
    }
  });
});
