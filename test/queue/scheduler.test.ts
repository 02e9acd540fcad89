/** Scheduling (scheduler.ts): debounced changes to workspace jobs and re-assessments, over a memory store and the bookinfo example. */
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/core/index.js";
import { workspaceNames } from "../../src/config/index.js";
import { affectedWorkspaces, type DiscoveryMap } from "../../src/translate/index.js";
import type { OutputRecord } from "../../src/store/index.js";
import { createInputCache } from "../../src/queue/input-cache.js";
import { createScheduler } from "../../src/queue/scheduler.js";
import type { JobSpec } from "../../src/queue/runner.js";
import { faultInjectionChange, seededMemoryStore } from "./fixture.js";

const output = (cluster: string, extra: Partial<OutputRecord> = {}): OutputRecord => ({ cluster, version: 1, sourceCommit: "c1", hash: "h", resources: [], complete: true, diagnostics: [], atMs: 1, ...extra });
const noJobs = () => Promise.resolve({ workspace: 0, cluster: 0 });

async function setup() {
  const { f, store } = await seededMemoryStore();
  const jobs: JobSpec[] = [];
  const scheduler = createScheduler({
    store: () => store,
    inputs: createInputCache(),
    enqueue: (job) => Promise.resolve(void jobs.push(job)),
    debounceMs: 5,
    maxDebounceMs: 50,
    now: Date.now,
    logger: silentLogger,
  });
  const of = (type: JobSpec["type"]) => jobs.filter((j) => j.type === type).map((j) => ("workspace" in j.data ? j.data.workspace : j.data.cluster));
  return { f, store, jobs, scheduler, of };
}

describe("scheduler", () => {
  it("flushes a burst of changes once: the first flush enqueues every workspace and marks them pending", async () => {
    const { f, store, scheduler, of } = await setup();
    for (let i = 0; i < 5; i++) scheduler.changed({ keys: [`k${i}`] });
    await scheduler.idle(noJobs, 10_000);
    const all = [...workspaceNames(f.state)].sort();
    expect(of("workspace")).toEqual(all);
    expect([...(await store.pending("c1"))].sort()).toEqual(all);
  });

  it("a later change enqueues only the affected workspaces, under the new commit", async () => {
    const { f, store, jobs, scheduler, of } = await setup();
    scheduler.changed({ all: true });
    await scheduler.idle(noJobs, 10_000);
    jobs.length = 0;
    const next = faultInjectionChange(f);
    await store.putDesired({ commit: "c2", ref: "main", generation: 2, state: next.state, changedKeys: [...next.changedKeys], atMs: 2 });
    scheduler.changed({ keys: next.changedKeys });
    await scheduler.idle(noJobs, 10_000);
    const discovery = f.discovery as unknown as DiscoveryMap;
    const affected = affectedWorkspaces({ desired: f.state, discovery }, { desired: next.state, discovery }, { changedKeys: next.changedKeys });
    expect(affected.length).toBeGreaterThan(0);
    expect(of("workspace")).toEqual(affected);
    expect(jobs.filter((j) => j.type === "workspace").every((j) => "commit" in j.data && j.data.commit === "c2")).toBe(true);
  });

  it("re-assesses clusters whose output holds or is incomplete on every flush, and every known cluster when asked", async () => {
    const { store, jobs, scheduler, of } = await setup();
    scheduler.changed({ all: true });
    await scheduler.idle(noJobs, 10_000);
    jobs.length = 0;
    await store.putOutputIfNewer(output("x"));
    await store.putOutputIfNewer(output("y"));
    scheduler.noteOutput(output("y", { complete: false, incompleteReason: "no discovery" }));
    scheduler.changed({ cluster: "nowhere" });
    await scheduler.idle(noJobs, 10_000);
    expect(of("cluster")).toEqual(["y"]);

    scheduler.noteOutput(output("y"));
    jobs.length = 0;
    await scheduler.reassess(store, "s", false);
    expect(jobs).toEqual([]);
    await scheduler.reassess(store, "s", true);
    expect(of("cluster")).toEqual(["x", "y"]);
  });

  it("runs the serial chain in order and is not idle while it has work", async () => {
    const { scheduler } = await setup();
    const order: number[] = [];
    let release = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const a = scheduler.serial(async () => {
      await gate;
      order.push(1);
    });
    const b = scheduler.serial(() => Promise.resolve(void order.push(2)));
    await expect(scheduler.idle(noJobs, 200)).rejects.toThrow(/not idle/);
    release();
    await Promise.all([a, b]);
    expect(order).toEqual([1, 2]);
    await scheduler.idle(noJobs, 10_000);
    await scheduler.close();
  });
});
