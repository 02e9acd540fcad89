/**
 * The two job handlers the runners run (runner.ts in-process, bullmq-runner.ts on BullMQ — the same
 * handlers either way), and what a job's events do (metrics, the `onJob` hook, a workspace's failure
 * recorded in its status):
 *
 *   workspace job: unit lock → translateWorkspace on the current inputs → fragments per cluster (hash)
 *                  → status, pending removed → a cluster job for each changed fragment
 *   cluster job:   wait until no workspace of the current commit is pending → assembleCluster → holds
 *                  → compare with the last output → new version (compare-and-set) → announce
 *
 * The store, the runner and the announcement of an output are the caller's (they change with the mode).
 */
import { createHash } from "node:crypto";
import { RetryLaterError, TransientError, type Logger } from "../core/index.js";
import type { DesiredRecord, FragmentRecord, OutputOptions, OutputRecord, SnapshotStore } from "../store/index.js";
import type { ClusterOutput, DiscoveryMap, WorkspaceFragment, WorkspaceResult } from "../translate/index.js";
import type { DesiredState } from "../config/index.js";
import { computeHolds } from "./holds.js";
import type { InputCache } from "./input-cache.js";
import type { createPipelineMetrics } from "./metrics.js";
import { createClusterStageReader } from "./shared-reads.js";
import type { ClusterJobData, JobEvent, JobSpec, RunnerSettings, WorkspaceJobData } from "./runner.js";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");
const PENDING_RETRY_MS = 25;
const LOCK_RETRY_MS = 50;

/** The translation functions (a seam for tests and benchmarks; defaults are src/translate's). */
export interface PipelineTranslators {
  readonly translateWorkspace: (workspace: string, desired: DesiredState, discovery: DiscoveryMap) => WorkspaceResult;
  readonly assembleCluster: (cluster: string, fragments: readonly WorkspaceFragment[]) => ClusterOutput;
}

/** Options for one cluster's output of a commit: the commit's (and gitmesh.yaml's) mass-deletion allowance, gitmesh.yaml's ignoreDifferences. */
export function outputOptions(desired: DesiredRecord, cluster: string): OutputOptions | undefined {
  const settings = desired.state.settings as Partial<typeof desired.state.settings>;
  const allowed = [...(desired.allowMassDeletion ?? []), ...(settings.allowMassDeletion ?? [])];
  const allow = allowed.includes("*") || allowed.includes(cluster);
  const ignore = settings.ignoreDifferences ?? [];
  if (!allow && ignore.length === 0) return undefined;
  return { ...(allow ? { allowMassDeletion: true } : {}), ...(ignore.length > 0 ? { ignoreDifferences: ignore } : {}) };
}

export interface JobHandlerDeps {
  /** The store in use now. */
  readonly store: () => SnapshotStore;
  readonly inputs: InputCache;
  /** Adds a job to the runner in use now. */
  readonly enqueue: (job: JobSpec) => Promise<void>;
  /** Cluster jobs for outputs that may change without a fragment change (scheduler.ts). */
  readonly reassess: (store: SnapshotStore, stamp: string, all: boolean) => Promise<void>;
  /** A new output version was stored: tell the replicas and deliver it. */
  readonly announce: (record: OutputRecord) => Promise<void>;
  readonly translators: PipelineTranslators;
  readonly metrics: Pick<ReturnType<typeof createPipelineMetrics>, "translation" | "outputs" | "jobs" | "failures">;
  /** Lease of the per-workspace lock. */
  readonly lockMs: number;
  /** Unit locks taken in Redis that could not be released because Redis went away (token → name); written back on recovery. */
  readonly unreleased: Map<string, string>;
  readonly now: () => number;
  readonly logger: Logger;
  readonly onJob?: (event: JobEvent) => void;
}

export type JobHandlers = Pick<RunnerSettings, "handler" | "onEvent">;

export function createJobHandlers(deps: JobHandlerDeps): JobHandlers {
  const { inputs, translators, metrics, now, logger: log } = deps;
  /** Statuses and discovered clusters, decoded once per change, not once per cluster job (shared-reads.ts). */
  const clusterStageInputs = createClusterStageReader();

  async function workspaceJob(data: WorkspaceJobData): Promise<void> {
    const store = deps.store();
    const lockName = `workspace:${data.workspace}`;
    const token = await store.tryLock(lockName, deps.lockMs);
    if (token === undefined) throw new RetryLaterError(`workspace ${data.workspace} is being translated by another job`, LOCK_RETRY_MS);
    try {
      const pointer = await store.getDesiredPointer();
      if (pointer === undefined) return;
      const desired = await inputs.desired(store, pointer.commit);
      if (desired === undefined) throw new TransientError(`desired state of commit ${pointer.commit} is not in the store yet`);
      const { map } = await inputs.discovery(store);
      const t0 = process.hrtime.bigint();
      const result = translators.translateWorkspace(data.workspace, desired.state, map);
      metrics.translation.observe({ stage: "workspace" }, Number(process.hrtime.bigint() - t0) / 1e9);
      const records: FragmentRecord[] = [];
      for (const [cluster, resources] of result.fragments) {
        if (resources.length === 0) continue;
        records.push({ workspace: data.workspace, cluster, hash: sha(JSON.stringify(resources)), resources, commit: pointer.commit });
      }
      const changed = await store.putFragments(data.workspace, records);
      const before = await store.getWorkspaceStatus(data.workspace);
      await store.putWorkspaceStatus({
        workspace: data.workspace,
        commit: pointer.commit,
        generation: pointer.generation,
        diagnostics: result.diagnostics,
        ...(result.frozen === undefined ? {} : { frozen: result.frozen }),
        discovered: [...map.keys()].sort(),
        atMs: now(),
      });
      await store.removePending(pointer.commit, data.workspace);
      if (data.commit !== pointer.commit) await store.removePending(data.commit, data.workspace);
      for (const cluster of changed) {
        const id = `cl-${cluster}-${sha(`${data.workspace}\n${records.find((r) => r.cluster === cluster)?.hash ?? "-"}\n${pointer.commit}`).slice(0, 16)}`;
        await deps.enqueue({ type: "cluster", id, data: { cluster } });
      }
      // It failed before: deletions held because of it may go now, even where its fragments are unchanged.
      if (before?.failure !== undefined || before?.commit === "") await deps.reassess(store, `recovered-${data.workspace}-${pointer.commit}`, true);
    } finally {
      // Redis gone mid-job: the lock outlives it there (a promoted replica has it); released on recovery.
      await store.unlock(lockName, token).catch(() => {
        if (store.kind === "redis") deps.unreleased.set(token, lockName);
      });
    }
  }

  async function clusterJob(data: ClusterJobData): Promise<void> {
    const store = deps.store();
    const pointer = await store.getDesiredPointer();
    if (pointer === undefined) return;
    const pending = await store.pending(pointer.commit);
    if (pending.length > 0) throw new RetryLaterError(`waiting for ${pending.length} workspace(s) of commit ${pointer.commit}`, PENDING_RETRY_MS);
    const desired = await inputs.desired(store, pointer.commit);
    if (desired === undefined) throw new TransientError(`desired state of commit ${pointer.commit} is not in the store yet`);
    const fragments = await store.fragmentsForCluster(data.cluster);
    const t0 = process.hrtime.bigint();
    const out = translators.assembleCluster(data.cluster, fragments.map((f) => ({ workspace: f.workspace, resources: f.resources })));
    metrics.translation.observe({ stage: "cluster" }, Number(process.hrtime.bigint() - t0) / 1e9);
    const prev = await store.getOutput(data.cluster);
    const { statuses, discovered } = await clusterStageInputs(store);
    const own = discovered.has(data.cluster) ? await store.getDiscovery(data.cluster) : undefined;
    // Completeness per dependency (holds.ts): what the inputs no longer give is dropped only when
    // the inputs its removal depends on are complete; otherwise its previous version is kept.
    const holds = computeHolds({
      cluster: data.cluster,
      assembled: out.resources,
      previous: prev,
      desired: desired.state,
      statuses,
      discovered,
      live: own?.snapshot.istioObjects,
      nowMs: now(),
    });
    const options = outputOptions(desired, data.cluster);
    const complete = holds.incompleteReason === undefined;
    const held = holds.held.map(({ sinceMs: _since, ...h }) => h);
    const hash = sha(JSON.stringify({ resources: holds.resources, complete, options, held, incompleteReason: holds.incompleteReason }));
    if (prev?.hash === hash) {
      // Same output as the cluster already has: nothing to send, but the commit did reach it (a revert,
      // a commit that only touched comments): record that, so its convergence does not wait for an ACK
      // that never comes.
      if (prev.sourceCommit !== pointer.commit && (await store.getConvergence(pointer.commit))?.clusters[data.cluster] === undefined) {
        await store.recordConvergence(pointer.commit, { cluster: data.cluster, version: prev.version, publishedAtMs: now(), unchangedFrom: prev.sourceCommit });
      }
      return;
    }
    const record: OutputRecord = {
      cluster: data.cluster,
      version: (prev?.version ?? 0) + 1,
      sourceCommit: pointer.commit,
      hash,
      resources: holds.resources,
      complete,
      diagnostics: out.diagnostics,
      ...(options === undefined ? {} : { options }),
      ...(holds.held.length === 0 ? {} : { held: holds.held }),
      ...(holds.incompleteReason === undefined ? {} : { incompleteReason: holds.incompleteReason }),
      atMs: now(),
    };
    if (!(await store.putOutput(record, prev?.version ?? 0))) throw new TransientError(`output of ${data.cluster} was published concurrently; recomputing`);
    metrics.outputs.inc();
    await store.recordConvergence(record.sourceCommit, { cluster: record.cluster, version: record.version, publishedAtMs: record.atMs });
    log.info("output stored", { cluster: record.cluster, version: record.version, sourceCommit: record.sourceCommit, resources: record.resources.length, complete, held: holds.held.reduce((n, h) => n + h.objects.length, 0), allowMassDeletion: options?.allowMassDeletion === true });
    await deps.announce(record);
  }

  /** A workspace that gave up: its failure in its status, its pending mark removed, every cluster re-assessed. */
  async function recordFailure(ev: JobEvent): Promise<void> {
    const store = deps.store();
    const pointer = await store.getDesiredPointer();
    const prev = await store.getWorkspaceStatus(ev.unit);
    const commit = pointer?.commit ?? "";
    await store.putWorkspaceStatus({
      ...prev,
      workspace: ev.unit,
      commit: prev?.commit ?? "",
      generation: prev?.generation ?? 0,
      diagnostics: prev?.diagnostics ?? [],
      failure: { code: ev.error?.code ?? "Error", reaction: ev.error?.reaction ?? "transient", message: ev.error?.message ?? "", attempts: ev.attempt, commit, atMs: now() },
      atMs: now(),
    });
    // A failed workspace keeps its last fragments; it must not hold the other clusters' outputs.
    if (commit !== "") await store.removePending(commit, ev.unit);
    // Every cluster re-assesses which deletions it holds because of the failure (and says so).
    await deps.reassess(store, `failed-${ev.unit}-${commit}-${String(now())}`, true);
  }

  return {
    handler: (type, data) => (type === "workspace" ? workspaceJob(data as WorkspaceJobData) : clusterJob(data as ClusterJobData)),
    onEvent(ev) {
      metrics.jobs.inc({ type: ev.type, result: ev.result });
      deps.onJob?.(ev);
      if (ev.result !== "failed") return;
      metrics.failures.inc({ type: ev.type, reaction: ev.error?.reaction ?? "transient" });
      log.warn("job failed", { type: ev.type, unit: ev.unit, attempt: ev.attempt, code: ev.error?.code, error: ev.error?.message });
      if (ev.type === "workspace") void recordFailure(ev).catch((err: unknown) => log.warn("could not record a job failure", { unit: ev.unit, error: String(err) }));
    },
  };
}
