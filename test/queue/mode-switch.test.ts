/** Mode switching (mode-switch.ts) on a real Redis that goes away (moments after the connection, while BullMQ's workers still connect) and comes back; the scheduler and events are recorded stubs. */
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/core/index.js";
import { createMemoryStore, type OutputRecord } from "../../src/store/index.js";
import { createModeSwitch, type PipelineMode } from "../../src/queue/mode-switch.js";
import { parseRedisUrl } from "../../src/queue/redis-connection.js";
import type { EventMessage } from "../../src/queue/replica-events.js";
import type { JobSpec, RunnerSettings } from "../../src/queue/runner.js";
import { startRedis } from "../helpers/redis.js";
import { until } from "./fixture.js";

const output = (cluster: string, version: number): OutputRecord => ({ cluster, version, sourceCommit: `c${version}`, hash: `h${version}`, resources: [], complete: true, diagnostics: [], atMs: version });

function parts(redisUrl?: string) {
  const ran: string[] = [];
  const settings: RunnerSettings = {
    concurrency: { workspace: 1, cluster: 1 },
    attempts: 1,
    backoffMs: 10,
    maxDelays: 1,
    handler: (type, data) => Promise.resolve(void ran.push(`${type}:${"cluster" in data ? data.cluster : data.workspace}`)),
    onEvent: () => {},
  };
  const modes: PipelineMode[] = [];
  const published: EventMessage[] = [];
  const counts = { flushAll: 0, catchUp: 0 };
  const mirror = createMemoryStore();
  const m = createModeSwitch({
    ...(redisUrl === undefined ? {} : { redis: parseRedisUrl(redisUrl) }),
    prefix: "modes:",
    channel: "modes:events",
    role: "server",
    origin: "me",
    settings,
    bull: { jobLockMs: 30_000, work: true },
    mirror,
    unreleased: new Map(),
    scheduler: {
      serial: <T>(fn: () => Promise<T>) => fn(),
      flushAll: () => {
        counts.flushAll++;
        return Promise.resolve();
      },
      idle: () => Promise.resolve(),
    },
    events: {
      publish: (msg) => Promise.resolve(void published.push(msg)),
      onMessage: () => Promise.resolve(),
      catchUp: () => {
        counts.catchUp++;
        return Promise.resolve();
      },
    },
    now: Date.now,
    logger: silentLogger,
    onMode: (mode) => void modes.push(mode),
  });
  return { m, modes, published, counts, mirror, ran };
}

describe("mode switch", () => {
  it("without Redis: standalone, jobs in-process, nothing to publish to", async () => {
    const { m, modes, ran } = parts();
    await m.start();
    expect(modes).toEqual(["standalone"]);
    expect(m.redis()).toBeUndefined();
    const job: JobSpec = { type: "cluster", id: "j1", data: { cluster: "a" } };
    await m.runner().add(job);
    await until(() => ran.length === 1, 5_000, "in-process job");
    expect(ran).toEqual(["cluster:a"]);
    await m.close(undefined, () => Promise.resolve());
  });

  it("redis → degraded when Redis goes away (everything re-translated in memory) → redis once it is back, the mirror written back and announced", async () => {
    const redis = await startRedis({ outages: true });
    const { m, modes, published, counts, mirror, ran } = parts(redis.url);
    try {
      await m.start();
      expect(modes).toEqual(["redis"]);
      expect(m.redis()).toBeDefined();

      await redis.stop();
      await until(() => m.mode() === "degraded", 10_000, "degraded");
      expect(counts.flushAll).toBe(1);
      expect(m.redis()).toBeUndefined();
      await mirror.putOutputIfNewer(output("a", 3));

      await redis.start();
      await until(() => m.mode() === "redis", 20_000, "recovered");
      expect(modes).toEqual(["redis", "degraded", "redis"]);
      expect((await m.redisStore()!.getOutput("a"))?.version).toBe(3);
      await until(() => published.length > 0, 10_000, "announcement");
      expect(published).toEqual([{ origin: "me", type: "output", cluster: "a", version: 3 }]);
      // Every known cluster re-assembles on BullMQ; the resubscribed subscriber caught up.
      await until(() => ran.includes("cluster:a"), 10_000, "resume job");
      await until(() => counts.catchUp > 0, 10_000, "catch-up");
    } finally {
      await m.close(undefined, () => Promise.resolve());
      await redis.stop();
    }
  });
});
