/** Replica events (replica-events.ts): announcements, other replicas' messages and catch-up, over memory stores. */
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/core/index.js";
import type { DiscoverySnapshot } from "../../src/discovery/index.js";
import { createMemoryStore, type OutputRecord } from "../../src/store/index.js";
import { createReplicaEvents, type EventMessage } from "../../src/queue/replica-events.js";

const output = (cluster: string, version: number): OutputRecord => ({ cluster, version, sourceCommit: `c${version}`, hash: `h${version}`, resources: [], complete: true, diagnostics: [], atMs: version });

function setup(opts: { wants?: (c: string) => boolean } = {}) {
  const redis = createMemoryStore();
  const mirror = createMemoryStore();
  const published: EventMessage[] = [];
  const delivered: string[] = [];
  const noted: string[] = [];
  let connected = true;
  const events = createReplicaEvents({
    origin: "me",
    channel: "gitmesh:events",
    redis: () => (connected ? { store: redis, client: { publish: (_ch: string, raw: string) => Promise.resolve(published.push(JSON.parse(raw) as EventMessage)) } } : undefined),
    mirror,
    wants: opts.wants ?? (() => true),
    onOutput: (e) => void delivered.push(`${e.cluster}@${e.version}`),
    noteOutput: (r) => void noted.push(r.cluster),
    logger: silentLogger,
  });
  return { redis, mirror, published, delivered, noted, events, disconnect: () => (connected = false) };
}

describe("replica events", () => {
  it("announces an output to the replicas and delivers each newer version once, without hash and time", async () => {
    const { events, published, delivered, noted } = setup();
    await events.announce(output("a", 1));
    await events.deliver(output("a", 1));
    await events.announce(output("a", 2));
    expect(published).toEqual([
      { origin: "me", type: "output", cluster: "a", version: 1 },
      { origin: "me", type: "output", cluster: "a", version: 2 },
    ]);
    expect(delivered).toEqual(["a@1", "a@2"]);
    expect(noted).toEqual(["a", "a", "a"]);
  });

  it("takes another replica's output from Redis into the mirror and delivers it; ignores its own, unwanted clusters and garbage", async () => {
    const { redis, mirror, events, delivered } = setup({ wants: (c) => c !== "other" });
    await redis.putOutputIfNewer(output("a", 3));
    await redis.putOutputIfNewer(output("other", 1));
    await events.onMessage("not json");
    await events.onMessage(JSON.stringify({ origin: "me", type: "output", cluster: "a", version: 3 }));
    await events.onMessage(JSON.stringify({ origin: "them", type: "output", cluster: "other", version: 1 }));
    expect(delivered).toEqual([]);
    await events.onMessage(JSON.stringify({ origin: "them", type: "output", cluster: "a", version: 3 }));
    expect(delivered).toEqual(["a@3"]);
    expect((await mirror.getOutput("a"))?.version).toBe(3);
    expect(await mirror.getOutput("other")).toBeUndefined();

    await redis.putDesired({ commit: "c9", ref: "main", generation: 9, state: {} as never, changedKeys: [], atMs: 9 });
    await redis.putDiscovery({ cluster: "a", checksum: "x", snapshot: { cluster: "a" } as unknown as DiscoverySnapshot, atMs: 1 });
    await events.onMessage(JSON.stringify({ origin: "them", type: "desired", commit: "c9" }));
    await events.onMessage(JSON.stringify({ origin: "them", type: "discovery", cluster: "a" }));
    expect((await mirror.getDesired("c9"))?.generation).toBe(9);
    expect((await mirror.discoveryChecksums()).get("a")).toBe("x");
  });

  it("catches up on outputs newer than the last delivered; out of redis mode it publishes and reads nothing", async () => {
    const { redis, events, delivered, published, disconnect } = setup();
    await events.deliver(output("a", 2));
    await redis.putOutputIfNewer(output("a", 2));
    await redis.putOutputIfNewer(output("b", 1));
    await events.catchUp();
    expect(delivered).toEqual(["a@2", "b@1"]);

    disconnect();
    await redis.putOutputIfNewer(output("c", 1));
    await events.catchUp();
    await events.onMessage(JSON.stringify({ origin: "them", type: "output", cluster: "c", version: 1 }));
    await events.publish({ origin: "me", type: "desired", commit: "c1" });
    expect(delivered).toEqual(["a@2", "b@1"]);
    expect(published).toEqual([]);
  });
});
