/**
 * Scheduling: from changed inputs to jobs (DESIGN.md "Management server").
 *
 *   changed(keys | cluster | all) ─(debounce: quiet debounceMs, at most maxDebounceMs)→ flush (on the serial chain):
 *     current desired state + discovery (input-cache.ts) → affectedWorkspaces → pending set → workspace jobs
 *     + reassess: cluster jobs for outputs that may change without a fragment change
 *
 * Every input write and every flush runs on one serial chain, so a flush sees a consistent change set.
 * The store and the runner are the caller's (they change with the mode).
 */
import { createHash } from "node:crypto";
import type { Logger } from "../core/index.js";
import { workspaceNames, type DesiredState } from "../config/index.js";
import { affectedWorkspaces, type DiscoveryMap } from "../translate/index.js";
import type { DesiredRecord, OutputRecord, SnapshotStore } from "../store/index.js";
import type { InputCache } from "./input-cache.js";
import { JOB_TYPES, type JobSpec, type JobType } from "./runner.js";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");

const optionsFingerprint = (desired: DesiredRecord): string => {
  const settings = desired.state.settings as Partial<typeof desired.state.settings>;
  return sha(JSON.stringify([desired.allowMassDeletion ?? [], settings.allowMassDeletion ?? [], settings.ignoreDifferences ?? []])).slice(0, 16);
};

export interface SchedulerOptions {
  /** The store in use now. */
  readonly store: () => SnapshotStore;
  readonly inputs: InputCache;
  /** Adds a job to the runner in use now. */
  readonly enqueue: (job: JobSpec) => Promise<void>;
  readonly debounceMs: number;
  readonly maxDebounceMs: number;
  readonly now: () => number;
  readonly logger: Logger;
}

export interface Scheduler {
  /** Runs `fn` on the serial chain, after everything queued on it before. */
  serial<T>(fn: () => Promise<T>): Promise<T>;
  /** Records a change (desired keys, a cluster's discovery, or everything) and (re)starts the debounce. */
  changed(change: { readonly keys?: Iterable<string>; readonly cluster?: string; readonly all?: boolean }): void;
  /** Re-translates everything now, on the serial chain (jobs queued elsewhere may be lost). */
  flushAll(): Promise<void>;
  /** Enqueues a cluster job for every cluster whose output may change without a fragment change (all: every known cluster). */
  reassess(store: SnapshotStore, stamp: string, all: boolean): Promise<void>;
  /** Notes a cluster's new output: one that holds deletions or is incomplete is re-assessed on every flush. */
  noteOutput(record: OutputRecord): void;
  /** Resolves after three quiet polls of `depth` (and, with inputsToo, no debounce or chain work). */
  idle(depth: () => Promise<Record<JobType, number>>, timeoutMs: number, inputsToo?: boolean): Promise<void>;
  /** Drops the pending debounce and waits for the chain. */
  close(): Promise<void>;
}

export function createScheduler(o: SchedulerOptions): Scheduler {
  const log = o.logger;
  let change = { all: false, keys: new Set<string>(), clusters: new Set<string>() };
  let flushed: { desired: DesiredState; discovery: DiscoveryMap } | undefined;
  let flushedCommit: string | undefined;
  let flushedOptions: string | undefined;
  /** Clusters whose last output holds deletions or is incomplete. */
  const unsettled = new Set<string>();
  let debounceTimer: NodeJS.Timeout | undefined;
  let burstStart = 0;
  let chain: Promise<void> = Promise.resolve();
  let chainDepth = 0;

  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    chainDepth++;
    const p = chain.then(fn);
    const done = () => {
      chainDepth--;
    };
    chain = p.then(done, done);
    return p;
  };

  const scheduleFlush = () => {
    const t = o.now();
    if (debounceTimer === undefined) burstStart = t;
    else clearTimeout(debounceTimer);
    const wait = t - burstStart >= o.maxDebounceMs ? 0 : o.debounceMs;
    debounceTimer = setTimeout(() => {
      debounceTimer = undefined;
      void serial(flush).catch((err: unknown) => log.error("flush failed", { error: String(err) }));
    }, wait);
  };

  async function reassess(store: SnapshotStore, stamp: string, all: boolean): Promise<void> {
    const clusters = new Set(unsettled);
    if (all) for (const c of (await store.outputVersions()).keys()) clusters.add(c);
    const tag = sha(stamp).slice(0, 16);
    for (const c of [...clusters].sort()) await o.enqueue({ type: "cluster", id: `cl-${c}-re-${tag}`, data: { cluster: c } });
  }

  async function flush(): Promise<void> {
    const store = o.store();
    const pointer = await store.getDesiredPointer();
    if (pointer === undefined) return;
    const desired = await o.inputs.desired(store, pointer.commit);
    if (desired === undefined) return;
    const { map, fingerprint } = await o.inputs.discovery(store);
    const c = change;
    change = { all: false, keys: new Set(), clusters: new Set() };
    let affected: string[];
    if (flushed === undefined || c.all) {
      const known = (await store.listWorkspaceStatus()).map((s) => s.workspace);
      affected = [...new Set([...workspaceNames(desired.state), ...known])].sort();
    } else {
      affected = affectedWorkspaces(flushed, { desired: desired.state, discovery: map }, { changedKeys: c.keys, discoveryClusters: c.clusters });
      // A cluster reported for the first time: every workspace translated without it runs again, so
      // that the deletions held for want of its discovery (holds.ts) are decided on inputs that had it.
      const before = flushed.discovery;
      if ([...c.clusters].some((cl) => !before.has(cl) && map.has(cl))) {
        const extra = (await store.listWorkspaceStatus()).filter((st) => st.discovered !== undefined && [...map.keys()].some((cl) => !st.discovered!.includes(cl))).map((st) => st.workspace);
        affected = [...new Set([...affected, ...extra.filter((w) => workspaceNames(desired.state).includes(w))])].sort();
      }
    }
    const first = flushed === undefined;
    // A new commit: every cluster's output is assembled again once its workspaces are translated (the
    // cluster job waits for them), so that each cluster records that it runs this commit even where its
    // output did not change (a revert, a comment, a workspace elsewhere): nothing is sent then.
    const newCommit = flushedCommit !== undefined && flushedCommit !== pointer.commit;
    flushedCommit = pointer.commit;
    flushed = { desired: desired.state, discovery: map };
    // Options (allowMassDeletion of this commit, ignoreDifferences) changed: every output carries them.
    const opts = optionsFingerprint(desired);
    const optionsChanged = opts !== flushedOptions;
    flushedOptions = opts;
    if (affected.length > 0) await store.addPending(pointer.commit, affected);
    await reassess(store, `${pointer.commit}-${fingerprint}-${opts}`, first || optionsChanged || newCommit);
    if (affected.length === 0) return;
    for (const ws of affected) {
      const id = `ws-${sha(`${ws}\n${pointer.commit}\n${fingerprint}`).slice(0, 24)}`;
      await o.enqueue({ type: "workspace", id, data: { workspace: ws, commit: pointer.commit } });
    }
    log.debug("enqueued workspace jobs", { commit: pointer.commit, workspaces: affected.length });
  }

  return {
    serial,
    changed(c) {
      if (c.all === true) change.all = true;
      for (const k of c.keys ?? []) change.keys.add(k);
      if (c.cluster !== undefined) change.clusters.add(c.cluster);
      scheduleFlush();
    },
    flushAll: () =>
      serial(async () => {
        change.all = true;
        await flush();
      }),
    reassess,
    noteOutput(record) {
      if (record.held !== undefined || !record.complete) unsettled.add(record.cluster);
      else unsettled.delete(record.cluster);
    },
    async idle(depth, timeoutMs, inputsToo = true) {
      const deadline = Date.now() + timeoutMs;
      let quiet = 0;
      for (;;) {
        const d = await depth();
        const busy = (inputsToo && (debounceTimer !== undefined || chainDepth > 0)) || JOB_TYPES.some((t) => d[t] > 0);
        quiet = busy ? 0 : quiet + 1;
        if (quiet >= 3) return;
        if (Date.now() > deadline) throw new Error(`pipeline not idle after ${timeoutMs} ms (${JSON.stringify(d)})`);
        await new Promise((res) => setTimeout(res, 20));
      }
    },
    async close() {
      if (debounceTimer !== undefined) clearTimeout(debounceTimer);
      await chain.catch(() => undefined);
    },
  };
}
