/** The pipeline on real Redis (a private redis-server) and standalone: what runs, what is published. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { NeedsHumanError, TransientError } from "../../src/core/index.js";
import { createPipeline, type JobEvent, type Pipeline, type PipelineOptions } from "../../src/queue/index.js";
import { affectedWorkspaces, assembleCluster, translateWorkspace, type DiscoveryMap } from "../../src/translate/index.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { faultInjectionChange, loadFixture, outputSink, reference, type Fixture } from "./fixture.js";

let redis: TestRedis;
let fx: Fixture;
const open: Pipeline[] = [];
let n = 0;

beforeAll(async () => {
  redis = await startRedis();
  fx = await loadFixture();
});
afterAll(async () => {
  for (const p of open) await p.close().catch(() => undefined);
  await redis.stop();
});

async function make(options: Partial<PipelineOptions> & { standalone?: boolean } = {}) {
  const sink = outputSink();
  const jobs: JobEvent[] = [];
  const { standalone, ...rest } = options;
  const p = await createPipeline({
    ...(standalone === true ? {} : { redis: redis.url }),
    prefix: `t${++n}:`,
    onOutput: sink.onOutput,
    onJob: (e) => jobs.push(e),
    backoffMs: 20,
    ...rest,
  });
  open.push(p);
  return { p, sink, jobs };
}

async function feed(p: Pipeline, commit = "c1") {
  for (const [cluster, snap] of fx.discovery) await p.setDiscovery(cluster, snap);
  await p.setDesiredState({ commit, ref: "refs/heads/main", state: fx.state, changedKeys: [] });
}

const completed = (jobs: JobEvent[], type: "workspace" | "cluster") => jobs.filter((j) => j.type === type && j.result === "completed").map((j) => j.unit);

describe("pipeline on Redis", () => {
  it("publishes the same outputs as a full in-process translation", async () => {
    const { p, sink } = await make();
    expect(p.mode()).toBe("redis");
    await feed(p);
    await p.idle();
    expect(sink.json()).toEqual(reference(fx.state, fx.discovery));
    for (const e of sink.last.values()) {
      expect(e.version).toBe(1);
      expect(e.sourceCommit).toBe("c1");
      expect(e.complete).toBe(true);
    }
  });

  it("a one-workspace change runs only the affected workspace and cluster jobs", async () => {
    const { p, sink, jobs } = await make();
    await feed(p);
    await p.idle();
    jobs.length = 0;
    sink.versions.length = 0;
    const next = faultInjectionChange(fx);
    const discovery = fx.discovery as unknown as DiscoveryMap;
    const affected = affectedWorkspaces({ desired: fx.state, discovery }, { desired: next.state, discovery }, { changedKeys: next.changedKeys });
    expect(affected.length).toBeLessThan(3);
    await p.setDesiredState({ commit: "c2", ref: "main", state: next.state, changedKeys: next.changedKeys });
    await p.idle();
    expect(completed(jobs, "workspace").sort()).toEqual(affected);
    const before = reference(fx.state, fx.discovery);
    const after = reference(next.state, fx.discovery);
    const changedClusters = [...after.keys()].filter((c) => before.get(c) !== after.get(c)).sort();
    expect(changedClusters.length).toBeGreaterThan(0);
    expect([...new Set(completed(jobs, "cluster"))].sort()).toEqual(changedClusters);
    expect(sink.versions.map((v) => v.cluster).sort()).toEqual(changedClusters);
    expect(sink.json()).toEqual(after);
    for (const c of changedClusters) expect(sink.last.get(c)).toMatchObject({ version: 2, sourceCommit: "c2" });
  });

  it("dedupes identical submissions and debounces bursts", async () => {
    const { p, jobs } = await make({ debounceMs: 100 });
    await feed(p);
    await feed(p); // identical: same commit, same discovery checksums
    await p.idle();
    const wsRuns = completed(jobs, "workspace");
    expect(wsRuns.sort()).toEqual([...new Set(wsRuns)].sort()); // each workspace once
    jobs.length = 0;
    // a burst of 20 discovery changes on one cluster ⇒ one flush, each workspace at most once
    const [cluster, snap] = [...fx.discovery][0]!;
    for (let i = 0; i < 20; i++) {
      await p.setDiscovery(cluster, { ...snap, namespaces: [...snap.namespaces, { name: `burst-${i}`, labels: {} }] });
    }
    await p.idle();
    const runs = completed(jobs, "workspace");
    expect(runs.length).toBeGreaterThan(0);
    expect(runs.length).toBe(new Set(runs).size);
  });

  it("a poisoned workspace is not retried and does not block the others; a transient failure is retried", async () => {
    let flaky = 0;
    const { p, sink, jobs } = await make({
      translators: {
        translateWorkspace: (ws, d, disc) => {
          if (ws === "bookinfo-frontends") throw new NeedsHumanError("frontends cannot be translated (test poison)");
          if (ws === "gateways" && flaky++ < 2) throw new TransientError("flaky (test)");
          return translateWorkspace(ws, d, disc);
        },
        assembleCluster,
      },
    });
    await feed(p);
    await p.idle();
    const poisoned = jobs.filter((j) => j.unit === "bookinfo-frontends");
    expect(poisoned.map((j) => j.result)).toEqual(["failed"]);
    expect(poisoned[0]!.error?.reaction).toBe("needs-human");
    expect(jobs.filter((j) => j.unit === "gateways").map((j) => j.result)).toEqual(["retrying", "retrying", "completed"]);
    expect(completed(jobs, "workspace")).toContain("bookinfo-backends");
    expect(sink.last.size).toBeGreaterThan(0);
    // the failure is recorded. Completeness is per dependency (holds.ts): frontends never rendered
    // anything, and no cluster reports an object of it, so there is nothing whose deletion it could
    // hold: the outputs are complete and hold nothing.
    const status = await p.store().getWorkspaceStatus("bookinfo-frontends");
    expect(status?.failure).toMatchObject({ code: "NeedsHumanError", reaction: "needs-human" });
    for (const e of sink.last.values()) expect({ complete: e.complete, held: e.held }).toEqual({ complete: true, held: undefined });
  });

  it("outputs survive a restart: a new pipeline on the same Redis sees versions and republishes nothing unchanged", async () => {
    const prefix = "restart:";
    const a = await make({ prefix });
    await feed(a.p);
    await a.p.idle();
    const versions = await a.p.store().outputVersions();
    await a.p.close();
    const b = await make({ prefix });
    expect(await b.p.store().outputVersions()).toEqual(versions);
    await feed(b.p); // same inputs again
    await b.p.idle();
    expect(b.sink.versions).toEqual([]);
    const next = faultInjectionChange(fx, "5s");
    await b.p.setDesiredState({ commit: "c2", ref: "main", state: next.state, changedKeys: next.changedKeys });
    await b.p.idle();
    for (const v of b.sink.versions) expect(v.version).toBe((versions.get(v.cluster) ?? 0) + 1);
  });

  it("registers metrics", async () => {
    const registry = new Registry();
    const { p } = await make({ registry });
    await feed(p);
    await p.idle();
    const text = await registry.metrics();
    expect(text).toMatch(/gitmesh_pipeline_translation_seconds_count\{stage="workspace"\} [1-9]/);
    expect(text).toMatch(/gitmesh_pipeline_jobs_total\{type="cluster",result="completed"\} [1-9]/);
    expect(text).toMatch(/gitmesh_pipeline_queue_depth\{type="workspace"\} 0/);
    expect(text).toMatch(/gitmesh_pipeline_mode\{mode="redis"\} 1/);
  });
});

describe("standalone", () => {
  it("gives the same outputs as Redis mode for the same inputs", async () => {
    const s = await make({ standalone: true });
    const r = await make();
    expect(s.p.mode()).toBe("standalone");
    for (const x of [s, r]) {
      await feed(x.p);
      const next = faultInjectionChange(fx);
      await x.p.setDesiredState({ commit: "c2", ref: "main", state: next.state, changedKeys: next.changedKeys });
      await x.p.idle();
    }
    expect(s.sink.json()).toEqual(r.sink.json());
    // Clusters publish concurrently, so compare the last output per cluster, not the order they arrived in.
    const lastByCluster = (x: typeof s) =>
      [...x.sink.last.values()].map((e) => [e.cluster, e.version, e.sourceCommit]).sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    expect(lastByCluster(s)).toEqual(lastByCluster(r));
  });
});
