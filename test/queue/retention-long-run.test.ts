/**
 * A long run keeps the store flat (issue #17): a real pipeline (Redis, BullMQ, and standalone) is
 * driven through hundreds of small commits with agents ACKing every output, and what the store holds
 * after the second half is no more than after the first (same keys, same bytes within a small
 * tolerance). The retention windows are small so that the first half is well past them; the
 * assertion is on growth, not on time.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createPipeline, type OutputEvent, type Pipeline } from "../../src/queue/index.js";
import type { MemoryStore, RetentionOptions } from "../../src/store/index.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { updateDesiredState } from "../../src/config/index.js";
import { loadFixture, reference, until, type Fixture } from "./fixture.js";

const COMMITS = 240;
const RETENTION: RetentionOptions = { desiredStates: 4, convergenceCommits: 16 };

let redis: TestRedis;
let client: Redis;
let fx: Fixture;
const open: Pipeline[] = [];

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url);
  fx = await loadFixture();
});
afterAll(async () => {
  for (const p of open) await p.close().catch(() => undefined);
  client.disconnect();
  await redis.stop();
});

const sha = (i: number) => createHash("sha1").update(`commit ${i}`).digest("hex");

/**
 * Commit `i`: every commit edits fault-injection.yaml (a comment); every `OUTPUT_EVERY`th also
 * changes its delay, which changes both clusters' outputs. In between, the outputs are those of an
 * older commit, beyond the convergence window, whose record must stay (it holds the ACKs).
 */
const OUTPUT_EVERY = 50;
function change(i: number) {
  const file = fx.files.find((x) => x.path.endsWith("fault-injection.yaml"))!;
  const text = typeof file.content === "string" ? file.content : new TextDecoder().decode(file.content);
  const content = `${text.replace("fixedDelay: 2s", `fixedDelay: ${1000 + Math.floor(i / OUTPUT_EVERY)}ms`)}\n# commit ${i}\n`;
  return updateDesiredState(fx.state, [{ path: file.path, content }], []);
}

/**
 * A pipeline whose agents ACK every output at once, and a function that brings commit `i` in force
 * (a one-workspace change, see `change`) and waits until it is applied everywhere.
 */
async function drive(options: { redis?: string; prefix: string }) {
  const acks: Promise<void>[] = [];
  const last = new Map<string, OutputEvent>();
  const ack = (e: OutputEvent) => {
    last.set(e.cluster, e);
    acks.push(p.recordApplied(e.cluster, { version: e.version, sourceCommit: e.sourceCommit, atMs: Date.now() }));
  };
  const p: Pipeline = await createPipeline({ ...options, retention: RETENTION, debounceMs: 1, maxDebounceMs: 10, backoffMs: 10, onOutput: ack });
  open.push(p);
  for (const [cluster, snap] of fx.discovery) await p.setDiscovery(cluster, snap);
  let state = fx.state;
  const commit = async (i: number) => {
    const next = i === 0 ? { state: fx.state, changedKeys: [] } : change(i);
    state = next.state;
    await p.setDesiredState({ commit: sha(i), ref: "refs/heads/main", state: next.state, changedKeys: next.changedKeys });
    // In force once every cluster ACKed the output of this commit or kept an output it already runs.
    await until(
      async () => {
        const clusters = [...(await p.store().outputVersions()).keys()];
        const conv = (await p.store().getConvergence(sha(i)))?.clusters ?? {};
        return clusters.length > 0 && clusters.every((c) => conv[c]?.appliedAtMs !== undefined || conv[c]?.unchangedFrom !== undefined);
      },
      20_000,
      `commit ${i} applied everywhere`,
    );
    await Promise.all(acks.splice(0));
  };
  return {
    p,
    commit,
    outputs: () => new Map([...last].map(([c, e]) => [c, JSON.stringify(e.resources)])),
    state: () => state,
  };
}

/** The store's keys under a prefix (BullMQ's are apart), with their size by MEMORY USAGE. */
async function storeFootprint(prefix: string) {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== "0");
  const store = keys.filter((k) => !k.startsWith(`${prefix}bull:`)).sort();
  let bytes = 0;
  for (const k of store) bytes += (await client.memory("USAGE", k, "SAMPLES", 0)) ?? 0;
  const family = (f: string) => store.filter((k) => k.startsWith(`${prefix}${f}:`) && !/:(pointer|commits)$/.test(k)).length;
  return { keys: store, bytes, bull: keys.length - store.length, desired: family("desired"), conv: family("conv"), pending: family("pending") };
}

describe("a long run keeps the store flat", () => {
  it("Redis: the same keys and no more bytes after the second half of the commits than after the first", async () => {
    const prefix = "long:";
    const run = await drive({ redis: redis.url, prefix });
    expect(run.p.mode()).toBe("redis");
    await run.commit(0);
    for (let i = 1; i <= COMMITS / 2; i++) await run.commit(i);
    await run.p.idle();
    const first = await storeFootprint(prefix);
    for (let i = COMMITS / 2 + 1; i <= COMMITS; i++) await run.commit(i);
    await run.p.idle();
    const second = await storeFootprint(prefix);

    // What grows with commits is bounded by the retention windows (the current commit's besides)...
    expect(second.desired).toBeLessThanOrEqual(RETENTION.desiredStates! + 1);
    expect(second.conv).toBeLessThanOrEqual(RETENTION.convergenceCommits! + 1);
    expect(second.pending).toBe(0);
    // ...so the second half adds nothing: same number of keys, same families, bytes within 5 %
    // (values differ by a digit or two: another delay, other timestamps).
    expect(second.keys.length).toBe(first.keys.length);
    const families = (keys: string[]) => keys.map((k) => k.replace(/[0-9a-f]{40}/, "<sha>")).sort();
    expect(families(second.keys)).toEqual(families(first.keys));
    expect(second.bytes).toBeLessThanOrEqual(first.bytes * 1.05);
    // BullMQ removes finished jobs: its key count does not grow either.
    expect(second.bull).toBeLessThanOrEqual(first.bull);
    // Its event streams (read by nothing) are capped far below BullMQ's default of 10,000 entries
    // (trimmed approximately: whole stream nodes of 100 entries).
    for (const type of ["workspace", "cluster"]) expect(await client.xlen(`${prefix}bull:${type}:events`), type).toBeLessThanOrEqual(700);

    // And nothing the pipeline needs was dropped: the current commit's desired state and convergence.
    const store = run.p.store();
    const current = sha(COMMITS);
    expect((await store.getDesiredPointer())?.commit).toBe(current);
    expect((await store.getDesired(current))?.commit).toBe(current);
    const conv = await store.getConvergence(current);
    const clusters = [...reference(run.state(), fx.discovery).keys()];
    for (const c of clusters) expect(conv?.clusters[c], c).toBeDefined();
    for (const c of Object.values(conv?.clusters ?? {})) expect(c.appliedAtMs ?? c.unchangedFrom, c.cluster).toBeDefined();
    // A cluster whose output the last commits left unchanged runs an output of an older commit: that
    // commit's record (its ACK) is kept, whatever its rank or age.
    for (const o of await store.listOutputs()) expect((await store.getConvergence(o.sourceCommit))?.clusters[o.cluster]?.appliedAtMs, o.cluster).toBeDefined();
    expect(await store.getConvergence(sha(1))).toBeUndefined();
  }, 120_000);

  it("standalone: the memory store holds as many entries after the second half as after the first", async () => {
    const run = await drive({ prefix: "mem:" });
    expect(run.p.mode()).toBe("standalone");
    const store = run.p.store() as MemoryStore;
    await run.commit(0);
    for (let i = 1; i <= COMMITS / 2; i++) await run.commit(i);
    await run.p.idle();
    const first = store.counts();
    for (let i = COMMITS / 2 + 1; i <= COMMITS; i++) await run.commit(i);
    await run.p.idle();
    const second = store.counts();
    expect(second).toEqual(first);
    expect(second.desired).toBeLessThanOrEqual(RETENTION.desiredStates! + 1);
    expect(second.convergence).toBeLessThanOrEqual(RETENTION.convergenceCommits! + 1);
    expect(second.pending).toBe(0);
    expect((await store.getDesired(sha(COMMITS)))?.commit).toBe(sha(COMMITS));
    for (const o of await store.listOutputs()) expect((await store.getConvergence(o.sourceCommit))?.clusters[o.cluster]?.appliedAtMs, o.cluster).toBeDefined();
    expect(run.outputs()).toEqual(reference(run.state(), fx.discovery));
  }, 120_000);
});
