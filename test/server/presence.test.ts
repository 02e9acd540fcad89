// Presence over a real Redis: which replica holds which agent, and a cluster whose holder stopped
// announcing it disappears (stale) after the TTL.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedisPresence } from "../../src/server/index.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

let server: TestRedis;
let redis: Redis;
beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

describe("presence", () => {
  it("tells which replica holds a cluster, and forgets a holder that stopped announcing", async () => {
    const a = createRedisPresence({ redis, prefix: "p1:", replica: "a", ttlMs: 300 });
    const b = createRedisPresence({ redis, prefix: "p1:", replica: "b", ttlMs: 300 });
    await a.refresh(["c1", "c2"]);
    await b.refresh(["c3"]);
    expect(await a.holders(["c1", "c2", "c3", "c4"])).toEqual(new Map([["c1", "a"], ["c2", "a"], ["c3", "b"]]));
    // c2's agent moved to b.
    await b.refresh(["c2", "c3"]);
    expect((await a.holders(["c2"])).get("c2")).toBe("b");
    // b keeps announcing c3 only; a and c1/c2 fall silent.
    await new Promise((r) => setTimeout(r, 200));
    await b.refresh(["c3"]);
    await new Promise((r) => setTimeout(r, 200));
    expect(await b.holders(["c1", "c2", "c3"])).toEqual(new Map([["c3", "b"]]));
    await a.refresh([]);
    expect(await a.holders([])).toEqual(new Map());
  });
});
