// Suspensions (src/server/suspensions.ts, #38): what holds a cluster, kept in a real Redis shared by
// replicas; a store that cannot be reached keeps the last suspensions read (a brake is never dropped).
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMemorySuspensionStore, createRedisSuspensionStore, describeSuspension, type Suspension } from "../../src/server/index.js";
import { createSuspensions, outputHold, suspensionOf } from "../../src/server/suspensions.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

let redis: TestRedis;
let client: Redis;
beforeAll(async () => {
  redis = await startRedis({ outages: true });
  client = new Redis(redis.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 200 });
  client.on("error", () => undefined); // the outage below is on purpose
  await new Promise((r) => client.once("ready", r));
}, 30_000);
afterAll(async () => {
  client.disconnect();
  await redis.stop();
});

const api = (scope: string, by = "admin token"): Suspension => ({ scope, sinceMs: 1, by, source: "api" });
const git = (scope: string): Suspension => ({ scope, sinceMs: 2, by: "gitmesh.yaml at commit abc", source: "git" });

describe("suspensionOf", () => {
  it("the cluster's own suspension before the fleet's, the API's before Git's", () => {
    expect(suspensionOf("c1", [])).toBeUndefined();
    expect(suspensionOf("c1", [api("c2")])).toBeUndefined();
    expect(suspensionOf("c1", [git("*"), api("*")])).toEqual(api("*"));
    expect(suspensionOf("c1", [api("*"), git("c1")])).toEqual(git("c1"));
    expect(suspensionOf("c1", [git("c1"), api("c1")])).toEqual(api("c1"));
  });
});

describe("what the agents are told", () => {
  it("after every read the holds are re-told, before a lifted cluster is handed its output; the hold is the line every view prints", async () => {
    const events: string[] = [];
    const s = createSuspensions({
      store: createMemorySuspensionStore(),
      gitFreeze: () => undefined,
      onRead: () => void events.push(`told: c1 ${s.of("c1") ? outputHold(s.of("c1")!).summary : "not held"}`),
      onResumed: (isHeld) => void events.push(`resumed: ${["c1", "c2"].filter((c) => !isHeld(c)).join(",")}`),
      now: () => 1000,
    });
    await s.suspend("c1", "admin token", "incident 4711");
    expect(outputHold(s.of("c1")!)).toEqual({ sinceMs: 1000, by: "admin token", reason: "incident 4711", summary: describeSuspension(s.of("c1")!) });
    await s.resume("c1");
    expect(events).toEqual(["told: c1 suspended since 1970-01-01T00:00:01.000Z by admin token (incident 4711)", "told: c1 not held", "resumed: c1,c2"]);
  });
});

describe("suspensions in Redis", () => {
  it("two replicas agree; resume tells publishing which clusters are let go; Redis away keeps the brake", async () => {
    const prefix = `suspensions-${String(process.pid)}`;
    const resumed: string[][] = [];
    const replica = (onResumed: (isHeld: (c: string) => boolean) => void = () => undefined) =>
      createSuspensions({ store: createRedisSuspensionStore(client, prefix), gitFreeze: () => undefined, onResumed, now: () => 1000 });
    const a = replica();
    const b = replica((isHeld) => resumed.push(["c1", "c2"].filter((c) => !isHeld(c))));
    await a.suspend("c1", "admin token", "incident");
    await b.refresh();
    expect(b.of("c1")).toEqual({ scope: "c1", sinceMs: 1000, by: "admin token", reason: "incident", source: "api" });
    expect(b.of("c2")).toBeUndefined();

    expect(await a.resume("c1")).toBe(true);
    await b.refresh();
    expect(b.of("c1")).toBeUndefined();
    expect(resumed).toEqual([["c1", "c2"]]);
    expect(await a.resume("c1")).toBe(false);

    // Redis away: the last suspensions read stay in force, and an action fails (the API answers it as an error).
    await a.suspend("*", "admin token", undefined);
    await b.refresh();
    await redis.stop();
    await b.refresh();
    expect(b.of("c2")).toMatchObject({ scope: "*", by: "admin token" });
    await expect(a.resume("*")).rejects.toThrow();
    expect(a.of("c1")).toMatchObject({ scope: "*" });
    await redis.start();
  }, 30_000);
});
