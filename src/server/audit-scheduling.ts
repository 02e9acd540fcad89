/**
 * Audit scheduling: which source commits get an audit commit, written by one replica (the leader).
 *
 *   output published · commit adopted · warmed · outputs settled · became leader ──▶ schedule()
 *   schedule() ──quiet time──▶ run(): leader? settled? nothing pending? every output complete? ──▶ audit writer
 *
 * The audit branch records the outputs of the commit in force computed from every cluster's
 * discovery: while outputs are unsettled, incomplete or hold deletions it is not written (the next
 * trigger tries again); while workspaces of the commit are still translating it is retried after the
 * quiet time; a write that fails is retried with the next trigger. While it waits for something only
 * an operator can change — a registered cluster whose agent never sent discovery, outputs that hold
 * deletions — `held()` names the clusters (the API, `check` and the UI show it).
 */
import { describeError, type Logger } from "../core/index.js";
import type { AuditWriter, RenderedResource } from "../git-sync/index.js";
import type { SnapshotStore } from "../store/index.js";
import type { InForce } from "./commit-in-force.js";
import type { PipelineOutput } from "./pipeline-port.js";

export interface AuditSchedulingOptions {
  /** Writes the audit branch; absent: no audit branch (scheduling does nothing). */
  readonly writer: AuditWriter | undefined;
  /** The audit branch (for logs). */
  readonly branch: string;
  /** The source branch the commits come from (`refs/heads/<ref>` in the audit commit). */
  readonly ref: string;
  /** The store in use now: outputs, discovery and the workspaces still pending per commit. */
  readonly store: () => Pick<SnapshotStore, "pending" | "outputVersions" | "getOutput" | "listDiscovery"> & Partial<Pick<SnapshotStore, "listWorkspaceStatus" | "fragmentHashes">>;
  readonly inForce: () => InForce | undefined;
  /** Only registered clusters are written (an output of a cluster removed from Git is left out). */
  readonly isRegistered: (cluster: string) => boolean;
  /** One writer across replicas. */
  readonly isLeader: () => boolean;
  /** The outputs reflect every cluster's discovery (publishing's `settled`). */
  readonly settled: () => boolean;
  /** Registered clusters whose discovery is still missing (publishing's warming status `waitingFor`). */
  readonly waitingFor?: () => readonly string[];
  /** Clock for `held().sinceMs` (default Date.now). */
  readonly now?: () => number;
  /** This replica's copy of a cluster's newest output (used instead of the store's when the version matches). */
  readonly latest: (cluster: string) => PipelineOutput | undefined;
  /** Quiet time after the last trigger before a write (default 300 ms). */
  readonly debounceMs?: number;
  readonly logger: Logger;
  /** Aborted when the server stops: nothing is written after it. */
  readonly signal?: AbortSignal;
}

/** What one attempt did. */
export type AuditRun =
  | { readonly kind: "skipped"; readonly why: "no-audit" | "no-commit" | "stopping" | "follower" | "unsettled" | "incomplete" }
  /** Workspaces of the commit are still translating: tried again after the quiet time. */
  | { readonly kind: "pending"; readonly workspaces: readonly string[] }
  /** `auditCommit` is undefined when the branch already held exactly this. */
  | { readonly kind: "written"; readonly sourceCommit: string; readonly auditCommit: string | undefined };

/** Why the audit branch is not written for the commit in force, naming the clusters that hold it back. */
export interface AuditHold {
  readonly reason: string;
  readonly clusters: readonly string[];
  /** Since when (ms) this reason holds. */
  readonly sinceMs: number;
}

export interface AuditScheduling {
  /** Why the last attempt could not write the commit in force (undefined: written, or nothing waits). */
  held(): AuditHold | undefined;
  /** Something changed: try after the quiet time (restarts it). */
  schedule(): void;
  /** One attempt now (what the quiet time ends in). */
  run(): Promise<AuditRun>;
  /** The audit commit written for a source commit, if any. */
  audited(sourceCommit: string): string | undefined;
  /** Clears the quiet time and waits for a running write. */
  stop(): Promise<void>;
}

const byName = ([a]: [string, number], [b]: [string, number]) => (a < b ? -1 : a > b ? 1 : 0);

export function createAuditScheduling(options: AuditSchedulingOptions): AuditScheduling {
  const { writer, logger: log } = options;
  const audited = new Map<string, string | undefined>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let hold: AuditHold | undefined;
  const holdBy = (reason: string, clusters: readonly string[]) => {
    const since = hold?.reason === reason ? hold.sinceMs : undefined;
    hold = { reason, clusters: [...clusters].sort(), sinceMs: since ?? (options.now ?? Date.now)() };
    if (since === undefined && clusters.length > 0) log.warn("audit branch held back", { branch: options.branch, reason, clusters: hold.clusters });
  };

  const schedule = () => {
    if (!writer) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      running = running.then(run).catch((err: unknown) => log.error("audit commit failed; retried with the next output", { error: describeError(err) }));
    }, options.debounceMs ?? 300);
  };

  /**
   * Every output of the store's current versions; one this replica was handed (every replica gets every
   * output) is taken from memory, not decoded again: the same objects write after write, so the audit
   * writer serialises only what changed (its cache is by object, then by content).
   */
  const currentOutputs = async (): Promise<PipelineOutput[]> => {
    const outputs: PipelineOutput[] = [];
    for (const [cluster, version] of [...(await options.store().outputVersions())].sort(byName)) {
      const mine = options.latest(cluster);
      const rec = mine?.version === version ? mine : await options.store().getOutput(cluster);
      if (rec !== undefined) outputs.push(rec);
    }
    return outputs;
  };

  const run = async (): Promise<AuditRun> => {
    const desired = options.inForce();
    if (!writer) return { kind: "skipped", why: "no-audit" };
    if (!desired) return { kind: "skipped", why: "no-commit" };
    if (options.signal?.aborted === true) return { kind: "skipped", why: "stopping" };
    if (!options.isLeader()) {
      hold = undefined;
      return { kind: "skipped", why: "follower" };
    }
    if (!options.settled()) {
      const missing = options.waitingFor?.() ?? [];
      if (missing.length > 0) holdBy(`waiting for the discovery of ${missing.join(", ")}: registered in Git, but no agent has sent it (install the agent, or remove the KubernetesCluster)`, missing);
      else holdBy("waiting for the outputs to settle (translation of every cluster's discovery)", []);
      return { kind: "skipped", why: "unsettled" };
    }
    const commit = desired.commit;
    const pending = await options.store().pending(commit);
    if (pending.length > 0) {
      schedule();
      return { kind: "pending", workspaces: pending };
    }
    const outputs = await currentOutputs();
    // Held objects are not what the commit renders: the audit branch waits until nothing is held.
    const partial = outputs.filter((o) => !o.complete || (o.held?.length ?? 0) > 0).map((o) => o.cluster);
    if (partial.length > 0) {
      holdBy(`outputs of ${partial.join(", ")} are incomplete or hold deletions back`, partial);
      return { kind: "skipped", why: "incomplete" };
    }
    const clusters = new Map(outputs.filter((o) => options.isRegistered(o.cluster)).map((o) => [o.cluster, o.resources as unknown as readonly RenderedResource[]]));
    const discovery = new Map((await options.store().listDiscovery()).map((d) => [d.cluster, d.snapshot as unknown]));
    const render = await renderRecordOf(options.store(), outputs);
    const result = await writer.write({ clusters, discovery, sourceCommit: commit, sourceRef: `refs/heads/${options.ref}`, timestamp: desired.committedAt, ...(render === undefined ? {} : { render }) });
    audited.set(commit, result.commit ?? audited.get(commit));
    hold = undefined;
    if (result.commit) log.info("audit commit written", { branch: options.branch, commit: result.commit, sourceCommit: commit, clusters: result.changes.map((c) => c.cluster) });
    return { kind: "written", sourceCommit: commit, auditCommit: result.commit };
  };

  return {
    schedule,
    run,
    audited: (commit) => audited.get(commit),
    held: () => hold,
    async stop() {
      clearTimeout(timer);
      await running;
    },
  };
}

/**
 * The render record of what the audit commit holds (translate's RenderRecord: per workspace the clusters
 * its fragments go to and its diagnostics, per cluster the cluster stage's diagnostics), from the store:
 * `gitmesh diff` and /api/diff read it instead of translating that commit again (#39). None when the
 * store's translation is not what a full translation of the commit would give: a workspace that failed
 * (its older fragments stay in force) or froze route tables (FREEZE_CONFIG keeps earlier output).
 */
async function renderRecordOf(store: Partial<Pick<SnapshotStore, "listWorkspaceStatus" | "fragmentHashes">>, outputs: readonly PipelineOutput[]): Promise<unknown> {
  if (store.listWorkspaceStatus === undefined || store.fragmentHashes === undefined) return undefined;
  const statuses = (await store.listWorkspaceStatus()).sort((a, b) => (a.workspace < b.workspace ? -1 : a.workspace > b.workspace ? 1 : 0));
  if (statuses.some((s) => s.failure !== undefined || s.commit === "" || (s.frozen?.length ?? 0) > 0)) return undefined;
  const workspaces = [];
  for (const s of statuses) workspaces.push({ workspace: s.workspace, clusters: [...(await store.fragmentHashes(s.workspace)).keys()].sort(), diagnostics: s.diagnostics });
  const clusters = [...outputs].sort((a, b) => (a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : 0)).map((o) => ({ cluster: o.cluster, diagnostics: o.diagnostics }));
  return { workspaces, clusters };
}
