/** The runners' job handlers (job-handlers.ts) over a memory store with the real translation of the bookinfo example. */
import { describe, expect, it } from "vitest";
import { RetryLaterError, silentLogger } from "../../src/core/index.js";
import { workspaceNames } from "../../src/config/index.js";
import { assembleCluster, translateWorkspace } from "../../src/translate/index.js";
import type { OutputRecord, SnapshotStore } from "../../src/store/index.js";
import { createInputCache } from "../../src/queue/input-cache.js";
import { createJobHandlers } from "../../src/queue/job-handlers.js";
import { createPipelineMetrics } from "../../src/queue/metrics.js";
import type { JobEvent, JobSpec } from "../../src/queue/runner.js";
import { seededMemoryStore } from "./fixture.js";

async function setup() {
  const { f, store } = await seededMemoryStore();
  const jobs: JobSpec[] = [];
  const announced: OutputRecord[] = [];
  const reassessed: { stamp: string; all: boolean }[] = [];
  const events: JobEvent[] = [];
  const unreleased = new Map<string, string>();
  const handlers = createJobHandlers({
    store: () => store,
    inputs: createInputCache(),
    enqueue: (job) => Promise.resolve(void jobs.push(job)),
    reassess: (_s: SnapshotStore, stamp, all) => Promise.resolve(void reassessed.push({ stamp, all })),
    announce: (record) => Promise.resolve(void announced.push(record)),
    translators: { translateWorkspace, assembleCluster },
    metrics: createPipelineMetrics(undefined, () => Promise.resolve({})),
    lockMs: 60_000,
    unreleased,
    now: () => 1000,
    logger: silentLogger,
    onJob: (ev) => events.push(ev),
  });
  return { f, store, handlers, jobs, announced, reassessed, events, unreleased, workspaces: [...workspaceNames(f.state)].sort() };
}

describe("job handlers", () => {
  it("a workspace job stores fragments and status, clears its pending mark and enqueues a cluster job per changed fragment only", async () => {
    const { store, handlers, jobs, workspaces } = await setup();
    const ws = workspaces.find((w) => w.includes("backends")) ?? workspaces[0]!;
    await store.addPending("c1", [ws]);
    await handlers.handler("workspace", { workspace: ws, commit: "c1" });
    const clusters = [...(await store.fragmentHashes(ws)).keys()].sort();
    expect(clusters.length).toBeGreaterThan(0);
    expect(jobs.map((j) => (j.data as { cluster: string }).cluster).sort()).toEqual(clusters);
    expect(await store.pending("c1")).toEqual([]);
    const status = await store.getWorkspaceStatus(ws);
    expect(status?.commit).toBe("c1");
    expect(status?.discovered?.length).toBeGreaterThan(0);

    // Same inputs again: the fragments are unchanged, no cluster job.
    jobs.length = 0;
    await handlers.handler("workspace", { workspace: ws, commit: "c1" });
    expect(jobs).toEqual([]);
  });

  it("a workspace job whose unit lock is taken asks to be retried later and leaves the lock alone", async () => {
    const { store, handlers, workspaces } = await setup();
    const token = await store.tryLock(`workspace:${workspaces[0]!}`, 60_000);
    expect(token).toBeDefined();
    await expect(handlers.handler("workspace", { workspace: workspaces[0]!, commit: "c1" })).rejects.toBeInstanceOf(RetryLaterError);
    expect(await store.tryLock(`workspace:${workspaces[0]!}`, 60_000)).toBeUndefined();
  });

  it("a cluster job waits for pending workspaces, then publishes version 1 once and records an unchanged output for a new commit", async () => {
    const { f, store, handlers, jobs, announced, workspaces } = await setup();
    await store.addPending("c1", workspaces);
    for (const ws of workspaces) await handlers.handler("workspace", { workspace: ws, commit: "c1" });
    const cluster = (jobs[0]!.data as { cluster: string }).cluster;
    await store.addPending("c1", [workspaces[0]!]);
    await expect(handlers.handler("cluster", { cluster })).rejects.toBeInstanceOf(RetryLaterError);
    expect(announced).toEqual([]);
    await store.removePending("c1", workspaces[0]!);

    await handlers.handler("cluster", { cluster });
    expect(announced.map((r) => `${r.cluster}@${r.version}:${r.sourceCommit}`)).toEqual([`${cluster}@1:c1`]);
    expect((await store.getOutput(cluster))?.version).toBe(1);
    expect((await store.getConvergence("c1"))?.clusters[cluster]?.version).toBe(1);
    await handlers.handler("cluster", { cluster });
    expect(announced).toHaveLength(1);

    // A commit that changes nothing for this cluster: no new version, but the commit is recorded as reaching it.
    await store.putDesired({ commit: "c2", ref: "main", generation: 2, state: f.state, changedKeys: [], atMs: 2 });
    await handlers.handler("cluster", { cluster });
    expect(announced).toHaveLength(1);
    expect((await store.getConvergence("c2"))?.clusters[cluster]).toMatchObject({ version: 1, unchangedFrom: "c1" });
  });

  it("a workspace job that gave up is recorded in its status, no longer pending, and every cluster re-assessed", async () => {
    const { store, handlers, events, reassessed, workspaces } = await setup();
    await store.addPending("c1", [workspaces[0]!]);
    const ev: JobEvent = { type: "workspace", id: "ws-x", unit: workspaces[0]!, result: "failed", attempt: 5, error: { code: "Boom", reaction: "transient", message: "it broke" } };
    handlers.onEvent(ev);
    expect(events).toEqual([ev]);
    await expect.poll(() => reassessed.length).toBe(1);
    expect(reassessed[0]!.all).toBe(true);
    expect((await store.getWorkspaceStatus(workspaces[0]!))?.failure).toMatchObject({ code: "Boom", attempts: 5, commit: "c1", message: "it broke" });
    expect(await store.pending("c1")).toEqual([]);

    // Its next success re-assesses too: deletions held because of the failure may go.
    await handlers.handler("workspace", { workspace: workspaces[0]!, commit: "c1" });
    expect(reassessed.map((r) => r.all)).toEqual([true, true]);
  });
});
