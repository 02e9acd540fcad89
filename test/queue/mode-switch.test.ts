/** Mode switching (mode-switch.ts) without Redis; the scheduler and events are recorded stubs (outages: see below). */
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/core/index.js";
import { createMemoryStore } from "../../src/store/index.js";
import { createModeSwitch, type PipelineMode } from "../../src/queue/mode-switch.js";
import { parseRedisUrl } from "../../src/queue/redis-connection.js";
import type { EventMessage } from "../../src/queue/replica-events.js";
import type { JobSpec, RunnerSettings } from "../../src/queue/runner.js";
import { until } from "./fixture.js";

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
  // The Redis outage case (redis → degraded → redis) is covered through the whole pipeline by
  // outage-replicas.test.ts, sentinel-failover.test.ts and the server process tests. Driven on this part
  // alone, with recorded stubs for the scheduler and events, killing redis-server left two unhandled
  // `connect ECONNRESET` rejections at the moment of the kill (not seen through the pipeline); until
  // their origin is found the case is not run here rather than run with the rejections swallowed.
});
