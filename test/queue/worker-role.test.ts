/**
 * The worker role (`gitmesh worker`) against the server role with `work: false` (`server --workers 0`),
 * on a real Redis: the replicas only enqueue and deliver, the workers only translate; outputs equal the
 * in-process translation byte for byte and reach the replica through pub/sub.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPipeline, type Pipeline, type PipelineOptions } from "../../src/queue/index.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { faultInjectionChange, loadFixture, outputSink, reference, until, type Fixture } from "./fixture.js";

let redis: TestRedis;
let fx: Fixture;
const open: Pipeline[] = [];

beforeAll(async () => {
  redis = await startRedis();
  fx = await loadFixture();
});
afterAll(async () => {
  for (const p of open) await p.close().catch(() => undefined);
  await redis.stop();
});

async function make(options: Partial<PipelineOptions>) {
  const sink = outputSink();
  const jobs: string[] = [];
  const p = await createPipeline({ redis: redis.url, onOutput: sink.onOutput, onJob: (e) => jobs.push(e.result), backoffMs: 20, ...options });
  open.push(p);
  return { p, sink, jobs };
}

describe("worker role", () => {
  it("replicas without workers plus worker pipelines converge to the in-process result", async () => {
    const prefix = "workers:";
    const server = await make({ prefix, work: false });
    await server.p.setDesiredState({ commit: "c1", ref: "main", state: fx.state, changedKeys: [] });
    for (const [cluster, snap] of fx.discovery) await server.p.setDiscovery(cluster, snap);
    // Nothing translates without a worker: the jobs wait in Redis.
    await until(async () => (await server.p.depth()).workspace > 0, 10_000, "workspace jobs queued");
    expect(await server.p.workers()).toBe(0);
    expect(server.sink.last.size).toBe(0);

    const w1 = await make({ prefix, role: "worker" });
    const w2 = await make({ prefix, role: "worker" });
    expect(w1.p.role).toBe("worker");
    await until(async () => (await server.p.workers()) === 2, 10_000, "two workers connected");
    await server.p.idle();
    expect(server.sink.json()).toEqual(reference(fx.state, fx.discovery));
    // The workers ran every job; they deliver nothing themselves.
    expect(w1.jobs.length + w2.jobs.length).toBeGreaterThan(0);
    expect(server.jobs).toEqual([]);
    expect(w1.sink.last.size + w2.sink.last.size).toBe(0);

    const next = faultInjectionChange(fx);
    await server.p.setDesiredState({ commit: "c2", ref: "main", state: next.state, changedKeys: next.changedKeys });
    await until(() => [...server.sink.last.values()].some((e) => e.sourceCommit === "c2"), 20_000, "c2 delivered");
    await server.p.idle();
    expect(server.sink.json()).toEqual(reference(next.state, fx.discovery));
    expect(server.jobs).toEqual([]);
  });

  it("a replica whose subscriber missed an announcement delivers that output once it is subscribed again", async () => {
    const prefix = "catchup:";
    const server = await make({ prefix, work: false });
    await make({ prefix, role: "worker" });
    await server.p.setDesiredState({ commit: "c1", ref: "main", state: fx.state, changedKeys: [] });
    for (const [cluster, snap] of fx.discovery) await server.p.setDiscovery(cluster, snap);
    await server.p.idle();
    expect(server.sink.json()).toEqual(reference(fx.state, fx.discovery));

    // The subscribers are cut and refused (an ACL without SUBSCRIBE) while the worker publishes c2:
    // the server misses the announcements.
    const admin = new Redis(redis.url);
    const numsub = async () => ((await admin.pubsub("NUMSUB", `${prefix}events`)) as [string, number])[1];
    try {
      await admin.call("ACL", "SETUSER", "default", "-subscribe");
      await admin.client("KILL", "TYPE", "pubsub");
      await until(async () => (await numsub()) === 0, 10_000, "subscribers cut");
      const next = faultInjectionChange(fx, "8s");
      await server.p.setDesiredState({ commit: "c2", ref: "main", state: next.state, changedKeys: next.changedKeys });
      const store = server.p.store();
      await until(async () => (await Promise.all([...fx.discovery.keys()].map(async (c) => (await store.getOutput(c))?.sourceCommit))).some((c) => c === "c2"), 20_000, "c2 published by the worker");
      await server.p.idle();
      const missed = [...fx.discovery.keys()].filter((c) => server.sink.last.get(c)?.sourceCommit !== "c2");
      expect(missed.length, "announcements missed while unsubscribed").toBeGreaterThan(0);
      // Allowed again: both pipelines subscribe again (a refused subscription is retried) and the server
      // catches up from the store.
      await admin.call("ACL", "SETUSER", "default", "+subscribe");
      const ref = reference(next.state, fx.discovery);
      await until(() => [...ref].every(([c, json]) => server.sink.json().get(c) === json), 20_000, "c2 delivered once subscribed again");
      await until(async () => (await numsub()) === 2, 10_000, "both pipelines subscribed again");
    } finally {
      await admin.call("ACL", "SETUSER", "default", "+subscribe");
      admin.disconnect();
    }
  });

  it("a worker started while Redis is down takes jobs once Redis answers", async () => {
    // BullMQ's workers make their blocking connections by duplicating the pipeline's: a lazy duplicate
    // whose first connection attempt failed ended that worker for good (it never took a job again).
    const late = await startRedis({ outages: true });
    try {
      await late.stop();
      const jobs: string[] = [];
      const w = await createPipeline({ redis: late.url, prefix: "late:", role: "worker", onJob: (e) => jobs.push(e.result), backoffMs: 20 });
      open.push(w);
      expect(w.mode()).toBe("degraded");
      await late.start();
      await until(() => w.mode() === "redis", 10_000, "the worker connected");
      const sink = outputSink();
      const server = await createPipeline({ redis: late.url, prefix: "late:", work: false, onOutput: sink.onOutput });
      open.push(server);
      for (const [cluster, snap] of fx.discovery) await server.setDiscovery(cluster, snap);
      await server.setDesiredState({ commit: "c1", ref: "main", state: fx.state, changedKeys: [] });
      const ref = reference(fx.state, fx.discovery);
      await until(() => [...ref].every(([c, json]) => sink.json().get(c) === json), 20_000, "outputs translated by the worker");
      expect(jobs).toContain("completed");
      await w.close();
      await server.close();
    } finally {
      await late.stop();
    }
  });

  it("a worker takes no inputs and needs Redis", async () => {
    const w = await make({ prefix: "inputs:", role: "worker" });
    await expect(w.p.setDesiredState({ commit: "x", ref: "main", state: fx.state, changedKeys: [] })).rejects.toThrow(/a worker pipeline takes no inputs/);
    const [cluster, snap] = [...fx.discovery][0]!;
    await expect(w.p.setDiscovery(cluster, snap)).rejects.toThrow(/takes no inputs/);
    await expect(createPipeline({ role: "worker" })).rejects.toThrow(/needs Redis/);
  });
});
