/**
 * What the server needs from the translation pipeline (src/queue), as a narrow port. The composition
 * root adapts src/queue's createPipeline to it; `createInlinePipeline` is a minimal in-process
 * implementation (full translation per change, outputs deduplicated by content hash) used when the
 * queue module is not available and by unit tests of the server's own logic.
 */
import { createHash } from "node:crypto";
import { canonicalJson, describeError, type Logger } from "../core/index.js";
import type { DesiredState } from "../config/index.js";
import { snapshotChecksum, type DiscoverySnapshot } from "../discovery/index.js";
import type { OutputRecord, SnapshotStore } from "../store/index.js";
import { translateAll } from "../translate/index.js";

export interface DesiredInput {
  readonly commit: string;
  readonly ref: string;
  readonly state: DesiredState;
  readonly changedKeys: readonly string[];
  readonly atMs: number;
}

export interface PipelineStatus {
  /** `redis` (BullMQ), `standalone` (no Redis configured), `degraded` (Redis down: in-process from memory). */
  readonly mode: string;
  /** Jobs waiting or running, when known. */
  readonly queueDepth?: number;
  readonly [key: string]: unknown;
}

export interface PipelinePort {
  start(): Promise<void>;
  stop(): Promise<void>;
  setDesiredState(input: DesiredInput): Promise<void>;
  setDiscovery(cluster: string, snapshot: DiscoverySnapshot): Promise<void>;
  /** Every new output snapshot (on every replica). */
  onOutput(listener: (output: OutputRecord) => void): void;
  readonly store: SnapshotStore;
  status(): PipelineStatus;
}

export interface InlinePipelineOptions {
  readonly store: SnapshotStore;
  readonly logger: Logger;
  readonly debounceMs?: number;
  readonly now?: () => number;
}

export function createInlinePipeline(options: InlinePipelineOptions): PipelinePort {
  const { store, logger: log } = options;
  const now = options.now ?? Date.now;
  const listeners: ((o: OutputRecord) => void)[] = [];
  let desired: DesiredInput | undefined;
  const discovery = new Map<string, DiscoverySnapshot>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;

  const run = async () => {
    if (!desired || stopped) return;
    const d = desired;
    // A fresh map per run: translation memoises its index per (desired, discovery) object.
    const result = translateAll(d.state, new Map(discovery));
    for (const [cluster, out] of result.clusters) {
      const hash = createHash("sha256").update(canonicalJson(out.resources)).digest("hex");
      const prev = await store.getOutput(cluster);
      if (prev?.hash === hash && prev.sourceCommit === d.commit) continue;
      const record: OutputRecord = { cluster, version: (prev?.version ?? 0) + 1, sourceCommit: d.commit, hash, resources: out.resources, complete: true, diagnostics: out.diagnostics, atMs: now() };
      if (!(await store.putOutput(record, prev?.version ?? 0))) continue;
      for (const l of listeners) l(record);
    }
  };
  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      running = running.then(run).catch((err: unknown) => log.error("translation failed", { error: describeError(err) }));
    }, options.debounceMs ?? 10);
  };
  return {
    store,
    start: async () => {
      for (const r of await store.listDiscovery()) discovery.set(r.cluster, r.snapshot);
    },
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
    setDesiredState: async (input) => {
      desired = input;
      await store.putDesired({ commit: input.commit, ref: input.ref, generation: ((await store.getDesiredPointer())?.generation ?? 0) + 1, state: input.state, changedKeys: input.changedKeys, atMs: input.atMs });
      schedule();
    },
    setDiscovery: async (cluster, snapshot) => {
      discovery.set(cluster, snapshot);
      await store.putDiscovery({ cluster, checksum: snapshotChecksum(snapshot), snapshot, atMs: now() });
      schedule();
    },
    onOutput: (l) => listeners.push(l),
    status: () => ({ mode: "inline" }),
  };
}
