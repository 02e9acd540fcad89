// API suspensions kept beside the relay PKI as well as in Redis (src/server/durable-suspensions.ts):
// a real redis-server and real directories (two replicas, each with its own --pki-dir copy). Redis
// forgetting (FLUSHALL) never releases a held cluster; a resume on one replica is not undone by the
// other's older copy; with Redis away the copy answers.
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClusterRecordStore } from "../../src/relay/index.js";
import { createDirectoryRecordStore, createRedisSuspensionStore, withDurableSuspensions, type SuspensionStore } from "../../src/server/index.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

let redis: TestRedis;
let client: Redis;
let dir: string;
let clock = 1_700_000_000_000;
const now = () => ++clock;

function replica(name: string): SuspensionStore {
  return withDurableSuspensions(createRedisSuspensionStore(client, "t", now), createDirectoryRecordStore(join(dir, name, "suspensions")), now);
}
const scopes = async (s: SuspensionStore) => (await s.list()).map((x) => x.scope).sort();
const suspension = (scope: string) => ({ scope, sinceMs: now(), by: "token:admin", reason: "incident 42", source: "api" as const });

beforeAll(async () => {
  redis = await startRedis({ outages: true });
  client = new Redis(redis.url, { maxRetriesPerRequest: 1, retryStrategy: () => 200, lazyConnect: false });
  client.on("error", () => undefined);
  dir = await mkdtemp(join(tmpdir(), "gitmesh-suspensions-"));
}, 60_000);
afterAll(async () => {
  client.disconnect();
  await redis.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("suspensions kept beside the PKI", () => {
  it("a FLUSHALL forgets nothing: the held cluster and the fleet hold stay, and Redis gets them back", async () => {
    const a = replica("a");
    await a.put(suspension("cluster2"));
    await a.put(suspension("*"));
    expect(JSON.parse(await readFile(join(dir, "a", "suspensions", "suspensions.json"), "utf8"))).toMatchObject({ cluster2: { by: "token:admin", reason: "incident 42" }, "*": { by: "token:admin" } });
    await client.flushall();
    expect(await scopes(a)).toEqual(["*", "cluster2"]);
    // Written back: a replica (or a server restarted) that reads only Redis sees the holds again.
    expect(await scopes(createRedisSuspensionStore(client, "t"))).toEqual(["*", "cluster2"]);
  });

  it("a resume on one replica wins over another replica's older copy, also after Redis forgot", async () => {
    const a = replica("a");
    const b = replica("b");
    expect(await scopes(b)).toEqual(["*", "cluster2"]); // b copies what a holds
    expect(await a.remove("cluster2")).toBe(true);
    expect(await scopes(b)).toEqual(["*"]); // the resume is later than b's copy of the suspension
    await client.flushall();
    expect(await scopes(b)).toEqual(["*"]);
    expect(await scopes(a)).toEqual(["*"]);
    expect(await a.remove("cluster2")).toBe(false);
  });

  it("the copy is not read at every refresh (once a second per replica: a Secret GET each time otherwise); this replica's own changes are there at once", async () => {
    const dirStore = createDirectoryRecordStore(join(dir, "counted", "suspensions"));
    let reads = 0;
    const counted: ClusterRecordStore = { ...dirStore, get: (k) => (reads++, dirStore.get(k)) };
    const r = withDurableSuspensions(createRedisSuspensionStore(client, "t", now), counted, now);
    await r.list(); // reads the copy, and writes it through with what Redis holds
    reads = 0;
    for (let i = 0; i < 20; i++) await r.list();
    expect(reads).toBe(0);
    await r.put(suspension("cluster7"));
    const afterPut = reads;
    expect(await scopes(r)).toContain("cluster7");
    await client.flushall();
    expect(await scopes(r)).toContain("cluster7"); // from the copy this replica wrote, without reading it again
    expect(reads).toBe(afterPut);
    expect(await r.remove("cluster7")).toBe(true);
  });

  it("with Redis away the copy answers: no brake is dropped", async () => {
    const a = replica("a");
    await redis.stop();
    try {
      expect(await scopes(a)).toEqual(["*"]);
    } finally {
      await redis.start();
    }
  });

  it("after Redis restarted empty, each replica's copy brings back what it held; a replica without a copy, or with an unreadable one, reads Redis", async () => {
    // The restart above came back empty: only a's copy still holds the fleet.
    const fresh = replica("fresh");
    await fresh.put(suspension("cluster9"));
    expect(await scopes(replica("other"))).toEqual(["cluster9"]);
    expect(await scopes(replica("a"))).toEqual(["*", "cluster9"]);
    await mkdir(join(dir, "garbled", "suspensions"), { recursive: true });
    await writeFile(join(dir, "garbled", "suspensions", "suspensions.json"), "{not json");
    expect(await scopes(replica("garbled"))).toEqual(["*", "cluster9"]);
  });
});
