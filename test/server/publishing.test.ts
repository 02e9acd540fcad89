// Publishing and completeness (src/server/publishing.ts): the newest output per cluster, held back by
// the warming gate after a restart that lost state, handed to the relay; outputs settle (what the
// audit branch waits for) only once the pipeline went idle after every cluster's discovery is known.
// Real memory store, real warming gate, real metrics; the relay and the pipeline's idle() are the
// part's own seams (a recorder, and a promise the test resolves).
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import { emptySnapshot, snapshotChecksum } from "../../src/discovery/index.js";
import type { OutputSnapshot } from "../../src/relay/index.js";
import { createMemoryStore, type MemoryStore } from "../../src/store/index.js";
import { createPublishing, type PublishingOptions } from "../../src/server/publishing.js";
import { createConvergenceTracker, createServerMetrics, OUTPUT_OPTIONS_KEY, type PipelineOutput } from "../../src/server/index.js";

const output = (cluster: string, version: number, extra: Partial<PipelineOutput> = {}): PipelineOutput => ({
  cluster,
  version,
  sourceCommit: `c${String(version)}`,
  resources: [{ apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: "web", namespace: "apps", labels: {} }, spec: {} }],
  complete: true,
  diagnostics: [],
  ...extra,
});

async function discover(store: MemoryStore, cluster: string) {
  const snapshot = emptySnapshot(cluster);
  await store.putDiscovery({ cluster, checksum: snapshotChecksum(snapshot), snapshot, atMs: 1 });
}

function setup(store = createMemoryStore(), overrides: Partial<PublishingOptions> = {}) {
  const sent: { cluster: string; snapshot: OutputSnapshot }[] = [];
  let relayUp = true;
  const idle: (() => void)[] = [];
  let progress = 0;
  const registry = new Registry();
  const convergence = createConvergenceTracker();
  const controller = new AbortController();
  const publishing = createPublishing({
    pipeline: { idle: () => new Promise<void>((resolve) => idle.push(resolve)) },
    store: () => store,
    relay: () => (relayUp ? { publishOutput: (cluster, snapshot) => void sent.push({ cluster, snapshot }), holdsChanged: () => undefined } : undefined),
    convergence,
    metrics: createServerMetrics(registry),
    warmingWindowMs: 3_600_000,
    onProgress: () => {
      progress++;
    },
    logger: createMemoryLogger("server").logger,
    signal: controller.signal,
    now: () => 5_000,
    ...overrides,
  });
  return {
    publishing,
    store,
    sent,
    convergence,
    controller,
    setRelay: (up: boolean) => void (relayUp = up),
    /** Resolves every idle() asked so far. */
    goIdle: () => idle.splice(0).forEach((r) => r()),
    progress: () => progress,
  };
}
const flush = () => new Promise((r) => setImmediate(r));
const until = async (what: string, cond: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe("publishing", () => {
  it("state survived: each newer output goes to the relay as its key → bytes form, an older one is ignored", async () => {
    const store = createMemoryStore();
    await discover(store, "cluster1");
    const { publishing, sent, convergence, progress } = setup(store);
    await publishing.start();
    expect(publishing.warming()?.warming).toBe(false);
    publishing.onOutput(output("cluster1", 2, { options: { allowMassDeletion: true } }));
    publishing.onOutput(output("cluster1", 1));
    expect(sent.map((s) => [s.cluster, s.snapshot.version, s.snapshot.complete])).toEqual([["cluster1", 2, true]]);
    expect([...sent[0]!.snapshot.resources.keys()].sort()).toEqual([OUTPUT_OPTIONS_KEY, "VirtualService/apps/web"].sort());
    expect(publishing.latest("cluster1")?.version).toBe(2);
    expect(publishing.published("cluster1")).toEqual({ version: 2, complete: true });
    expect(convergence.get("c2")?.clusters.cluster1).toMatchObject({ version: 2, publishedAtMs: 5_000 });
    expect(progress()).toBeGreaterThan(0);
  });

  it("outputs wait in memory until the relay listens, then go out together", async () => {
    const store = createMemoryStore();
    await discover(store, "cluster1");
    await store.putOutputIfNewer({ ...output("cluster1", 3), hash: "h", atMs: 1 });
    const { publishing, sent, setRelay } = setup(store);
    setRelay(false);
    await publishing.start();
    publishing.onOutput(output("cluster2", 1));
    expect(sent).toEqual([]);
    expect(publishing.latest("cluster1")?.version).toBe(3);
    setRelay(true);
    publishing.publishAll("start");
    expect(sent.map((s) => `${s.cluster}@${String(s.snapshot.version)}`).sort()).toEqual(["cluster1@3", "cluster2@1"]);
  });

  it("after a restart that lost state, nothing is published until every registered cluster (but skipWarming ones) resent discovery", async () => {
    const { publishing, sent } = setup();
    await publishing.start();
    expect(publishing.warming()?.warming).toBe(true);
    publishing.setRegistered([
      { name: "cluster1", skipWarming: false },
      { name: "cluster2", skipWarming: false },
      { name: "cluster3", skipWarming: true },
    ]);
    publishing.onOutput(output("cluster1", 1));
    publishing.onOutput(output("cluster2", 1));
    publishing.publishAll("start");
    publishing.discovered("cluster1");
    expect(sent).toEqual([]);
    expect(publishing.warming()?.waitingFor).toEqual(["cluster2", "cluster3"]);
    publishing.discovered("cluster2");
    expect(publishing.warming()).toMatchObject({ warming: false, reason: "discovery" });
    expect(sent.map((s) => s.cluster).sort()).toEqual(["cluster1", "cluster2"]);
  });

  it("discovery another replica received is learnt from the shared store", async () => {
    const { publishing, store } = setup();
    await publishing.start();
    publishing.setRegistered([{ name: "cluster1", skipWarming: false }]);
    await discover(store, "cluster1");
    expect(publishing.warming()?.warming).toBe(true);
    await publishing.learnDiscovery();
    expect(publishing.warming()?.warming).toBe(false);
  });

  it("outputs settle only once the pipeline is idle after every cluster's discovery is known", async () => {
    const store = createMemoryStore();
    await discover(store, "cluster1");
    const { publishing, sent, goIdle, progress } = setup(store);
    await publishing.start();
    publishing.setRegistered([
      { name: "cluster1", skipWarming: false },
      { name: "cluster2", skipWarming: false },
    ]);
    publishing.onOutput(output("cluster1", 1, { complete: false, incompleteReason: "cluster2 has sent no discovery" }));
    expect(publishing.settled()).toBe(false);
    publishing.discovered("cluster2");
    expect(publishing.settled()).toBe(false);
    publishing.onOutput(output("cluster1", 2));
    expect(publishing.settled()).toBe(false);
    const before = progress();
    goIdle();
    await flush();
    expect(publishing.settled()).toBe(true);
    expect(progress()).toBe(before + 1);
    expect(sent.map((s) => [s.snapshot.version, s.snapshot.complete])).toEqual([
      [1, false],
      [2, true],
    ]);
  });

  it("a generation that lost a cluster's discovery again, or a server that is stopping, does not settle", async () => {
    const store = createMemoryStore();
    await discover(store, "cluster1");
    const { publishing, goIdle, controller } = setup(store);
    await publishing.start();
    publishing.setRegistered([{ name: "cluster1", skipWarming: false }]);
    // Registered, complete, waiting for idle — then a second cluster is registered before the pipeline is idle.
    publishing.setRegistered([
      { name: "cluster1", skipWarming: false },
      { name: "cluster2", skipWarming: false },
    ]);
    goIdle();
    await flush();
    expect(publishing.settled()).toBe(false);
    publishing.discovered("cluster2");
    controller.abort();
    goIdle();
    await flush();
    expect(publishing.settled()).toBe(false);
    publishing.stop();
  });
  it("a transient NACK redelivers the same version with backoff until an ACK; a NACK that needs a person is not redelivered", async () => {
    const store = createMemoryStore();
    await discover(store, "cluster1");
    await discover(store, "cluster2");
    const { publishing, sent, convergence } = setup(store, { retryBackoff: { initialMs: 20, maxMs: 40, jitter: 0 } });
    await publishing.start();
    const nack = (cluster: string, message: string) => ({ cluster, version: 4, sourceCommit: "c4", atMs: 6_000, errors: [{ key: "VirtualService/apps/web", message }] });
    const sends = (cluster: string) => sent.filter((x) => x.cluster === cluster).length;
    // cluster2 goes through the same steps as cluster1 (same backoff, same attempt counts), except
    // that its last NACK is transient: its redelivery is the later positive event after which
    // cluster1's absence of one is a fact (equal delays set in this order fire in this order).
    const both = (step: (cluster: string) => void) => ["cluster1", "cluster2"].forEach(step);
    both((c) => publishing.onOutput(output(c, 4)));
    expect([sends("cluster1"), sends("cluster2")]).toEqual([1, 1]);
    both((c) => convergence.nack(nack(c, "apply failed: HTTP 503: the server is restarting")));
    both((c) => publishing.nacked(nack(c, "apply failed: HTTP 503: the server is restarting")));
    await until("first redeliveries", () => sends("cluster1") === 2 && sends("cluster2") === 2);
    expect(sent.filter((x) => x.cluster === "cluster1").map((x) => x.snapshot.version)).toEqual([4, 4]);
    // The redelivery keeps the NACK until the agent answers (the views say "retrying", not "applying").
    expect(convergence.get("c4")?.clusters.cluster1?.nack).toBeDefined();
    both((c) => publishing.nacked(nack(c, "apply failed: HTTP 429: slow down")));
    await until("second redeliveries", () => sends("cluster1") === 3 && sends("cluster2") === 3);
    both((c) => publishing.acked(c));
    publishing.nacked(nack("cluster1", "VirtualService apps/web already exists and was not created by gitmesh"));
    publishing.nacked(nack("cluster2", "apply failed: HTTP 503: the server is restarting"));
    await until("cluster2's redelivery after its transient NACK", () => sends("cluster2") === 4);
    await flush();
    expect(sends("cluster1")).toBe(3);
    publishing.stop();
  });
});
