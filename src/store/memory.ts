/**
 * In-memory snapshot store: standalone mode, and the mirror a Redis-backed pipeline keeps so that it
 * can continue through a Redis outage. Keeps references to the records it is given (records are
 * immutable plain data).
 *
 * Bounded like the Redis store (retention.ts): desired states by count and by age once superseded,
 * convergence records by count (first entry) and by age since the last entry, pending sets by time
 * since their last change. Nothing expires by itself here: expired entries are invisible to reads at
 * once and are swept whenever a new commit's entry is created, so memory stays flat with commits.
 */
import { randomUUID } from "node:crypto";
import { resolveRetention, type RetentionOptions } from "./retention.js";
import type {
  ClusterConvergence,
  ConvergenceRecord,
  DesiredPointer,
  DesiredRecord,
  DiscoveryRecord,
  FragmentRecord,
  OutputRecord,
  SnapshotStore,
  WorkspaceStatus,
} from "./types.js";

export interface MemoryStoreOptions {
  /** Bounds of what is kept per commit (defaults: DEFAULT_RETENTION). */
  readonly retention?: RetentionOptions | undefined;
  /** Clock (ms) for ages and expiry. Default Date.now. */
  readonly now?: (() => number) | undefined;
}

/** Entries held per kind (live ones only: expired entries are swept first). */
export interface MemoryStoreCounts {
  readonly desired: number;
  readonly discovery: number;
  /** Clusters with at least one fragment. */
  readonly fragmentClusters: number;
  /** Workspaces with at least one fragment. */
  readonly fragmentWorkspaces: number;
  readonly outputs: number;
  readonly statuses: number;
  readonly pending: number;
  readonly convergence: number;
  readonly locks: number;
}

export interface MemoryStore extends SnapshotStore {
  readonly kind: "memory";
  /** How many entries of each kind the store holds (tests, and a gauge for the memory footprint). */
  counts(): MemoryStoreCounts;
}

/** `expiresAt` absent: kept until something else drops it (the current commit's entries). */
interface Expiring {
  expiresAt?: number;
}

export function createMemoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const retention = resolveRetention(options.retention);
  const now = options.now ?? Date.now;
  /** commit → record, in the order stored (oldest first). */
  const desired = new Map<string, Expiring & { record: DesiredRecord }>();
  let pointer: DesiredPointer | undefined;
  const discovery = new Map<string, DiscoveryRecord>();
  /** cluster → workspace → fragment */
  const fragments = new Map<string, Map<string, FragmentRecord>>();
  /** workspace → cluster → hash */
  const hashes = new Map<string, Map<string, string>>();
  const outputs = new Map<string, OutputRecord>();
  /** commit → how many clusters' current outputs come from it (their convergence records are kept). */
  const outputRefs = new Map<string, number>();
  const statuses = new Map<string, WorkspaceStatus>();
  const pending = new Map<string, Expiring & { workspaces: Set<string> }>();
  /** commit → entries, in the order of each commit's first entry (oldest first). */
  const convergence = new Map<string, Expiring & { clusters: Map<string, ClusterConvergence> }>();
  const locks = new Map<string, { token: string; until: number }>();
  let lockSeq = 0;
  // versions(): unique to this store (a reader may cache per token), bumped by every status or discovery write.
  const storeId = randomUUID();
  let versionSeq = 0;
  const nextVersion = () => `${storeId}:${String(++versionSeq)}`;
  let statusVersion: string | undefined;
  let discoveryVersion: string | undefined;
  const sortBy = <T>(items: Iterable<T>, key: (t: T) => string): T[] => [...items].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));

  const live = <T extends Expiring>(e: T | undefined, t = now()): T | undefined => (e === undefined || (e.expiresAt !== undefined && e.expiresAt <= t) ? undefined : e);
  const sweep = (m: Map<string, Expiring>) => {
    const t = now();
    for (const [k, e] of m) if (live(e, t) === undefined) m.delete(k);
  };
  /**
   * A convergence record the current state refers to is kept (no age, never trimmed): the current
   * commit's, and one some cluster's current output comes from (the server reads it to tell that a
   * cluster whose output a later commit left unchanged runs that commit).
   */
  const keptConvergence = (commit: string) => commit === pointer?.commit || outputRefs.has(commit);
  const ageConvergence = (commit: string) => {
    const c = live(convergence.get(commit));
    if (c !== undefined && !keptConvergence(commit)) c.expiresAt = now() + retention.maxAgeMs;
  };
  /**
   * Drops the oldest entries beyond the newest `keep`, never a kept one. `besidesCurrent`: `keep`
   * counts the other commits (desired states); otherwise a kept one counts among the newest when it
   * is one of them (convergence records).
   */
  const trim = (m: Map<string, unknown>, keep: number, kept: (commit: string) => boolean, besidesCurrent: boolean) => {
    const ranked = [...m.keys()].filter((k) => !besidesCurrent || !kept(k));
    for (const k of ranked.slice(0, Math.max(0, ranked.length - keep))) if (!kept(k)) m.delete(k);
  };
  /** An output now comes from `record.sourceCommit`: that record is kept; the one its previous output came from may age. */
  const trackSource = (record: OutputRecord, previous: OutputRecord | undefined) => {
    const old = previous?.sourceCommit;
    if (old === record.sourceCommit) return;
    outputRefs.set(record.sourceCommit, (outputRefs.get(record.sourceCommit) ?? 0) + 1);
    const c = live(convergence.get(record.sourceCommit));
    if (c !== undefined) delete c.expiresAt;
    if (old === undefined) return;
    const n = (outputRefs.get(old) ?? 1) - 1;
    if (n > 0) outputRefs.set(old, n);
    else {
      outputRefs.delete(old);
      ageConvergence(old);
    }
  };
  const pendingSet = (commit: string): Set<string> | undefined => {
    const e = pending.get(commit);
    if (e === undefined || live(e) !== undefined) return e?.workspaces;
    pending.delete(commit);
    return undefined;
  };

  return {
    kind: "memory",
    putDesired(record) {
      const previous = pointer?.commit;
      const entry: Expiring & { record: DesiredRecord } = { record };
      desired.delete(record.commit);
      desired.set(record.commit, entry);
      if (pointer === undefined || record.generation >= pointer.generation) {
        pointer = { commit: record.commit, generation: record.generation };
        // The current commit's convergence record is kept whatever its age; the one before ages from
        // now, unless an output comes from it.
        const conv = live(convergence.get(record.commit));
        if (conv !== undefined) delete conv.expiresAt;
        if (previous !== undefined && previous !== record.commit) {
          const superseded = now() + retention.maxAgeMs;
          const d = desired.get(previous);
          if (d !== undefined) d.expiresAt = superseded;
          ageConvergence(previous);
        }
      } else if (record.commit !== pointer.commit) {
        // An older generation (a late write-back): stored, but not current, so it ages out.
        entry.expiresAt = now() + retention.maxAgeMs;
      }
      sweep(desired);
      trim(desired, retention.desiredStates, (c) => c === pointer?.commit, true);
      return Promise.resolve();
    },
    getDesired: (commit) => Promise.resolve(live(desired.get(commit))?.record),
    getDesiredPointer: () => Promise.resolve(pointer),
    putDiscovery(record) {
      discovery.set(record.cluster, record);
      discoveryVersion = nextVersion();
      return Promise.resolve();
    },
    getDiscovery: (cluster) => Promise.resolve(discovery.get(cluster)),
    discoveryChecksums: () => Promise.resolve(new Map([...discovery].map(([c, r]) => [c, r.checksum]))),
    listDiscovery: () => Promise.resolve(sortBy(discovery.values(), (r) => r.cluster)),
    putFragments(workspace, list) {
      const prev = hashes.get(workspace) ?? new Map<string, string>();
      const next = new Map<string, string>();
      const changed = new Set<string>();
      for (const f of list) {
        next.set(f.cluster, f.hash);
        let byWs = fragments.get(f.cluster);
        if (byWs === undefined) fragments.set(f.cluster, (byWs = new Map<string, FragmentRecord>()));
        byWs.set(workspace, f);
        if (prev.get(f.cluster) !== f.hash) changed.add(f.cluster);
      }
      for (const c of prev.keys()) {
        if (next.has(c)) continue;
        const byWs = fragments.get(c);
        byWs?.delete(workspace);
        // A cluster no workspace renders for any more (removed from Git) leaves nothing behind.
        if (byWs?.size === 0) fragments.delete(c);
        changed.add(c);
      }
      if (next.size > 0) hashes.set(workspace, next);
      else hashes.delete(workspace);
      return Promise.resolve([...changed].sort());
    },
    fragmentHashes: (workspace) => Promise.resolve(new Map(hashes.get(workspace) ?? [])),
    fragmentsForCluster: (cluster) => Promise.resolve(sortBy(fragments.get(cluster)?.values() ?? [], (f) => f.workspace)),
    listFragments: () => Promise.resolve([...fragments.values()].flatMap((m) => [...m.values()])),
    putOutput(record, expectedPrevious) {
      const previous = outputs.get(record.cluster);
      const current = previous?.version ?? 0;
      if (current !== expectedPrevious || record.version <= current) return Promise.resolve(false);
      outputs.set(record.cluster, record);
      trackSource(record, previous);
      return Promise.resolve(true);
    },
    putOutputIfNewer(record) {
      const previous = outputs.get(record.cluster);
      if (record.version <= (previous?.version ?? 0)) return Promise.resolve(false);
      outputs.set(record.cluster, record);
      trackSource(record, previous);
      return Promise.resolve(true);
    },
    getOutput: (cluster) => Promise.resolve(outputs.get(cluster)),
    outputVersions: () => Promise.resolve(new Map([...outputs].map(([c, r]) => [c, r.version]))),
    listOutputs: () => Promise.resolve(sortBy(outputs.values(), (r) => r.cluster)),
    putWorkspaceStatus(status) {
      statuses.set(status.workspace, status);
      statusVersion = nextVersion();
      return Promise.resolve();
    },
    versions: () => Promise.resolve({ workspaceStatus: statusVersion, discovery: discoveryVersion }),
    getWorkspaceStatus: (workspace) => Promise.resolve(statuses.get(workspace)),
    listWorkspaceStatus: () => Promise.resolve(sortBy(statuses.values(), (s) => s.workspace)),
    addPending(commit, workspaces) {
      if (workspaces.length === 0) return Promise.resolve();
      let set = pendingSet(commit);
      if (set === undefined) {
        sweep(pending);
        pending.set(commit, { workspaces: (set = new Set<string>()) });
      }
      for (const w of workspaces) set.add(w);
      pending.get(commit)!.expiresAt = now() + retention.pendingTtlMs;
      return Promise.resolve();
    },
    removePending(commit, workspace) {
      const set = pendingSet(commit);
      if (set === undefined) return Promise.resolve();
      set.delete(workspace);
      if (set.size === 0) pending.delete(commit);
      else pending.get(commit)!.expiresAt = now() + retention.pendingTtlMs;
      return Promise.resolve();
    },
    pending: (commit) => Promise.resolve([...(pendingSet(commit) ?? [])].sort()),
    recordConvergence(commit, entry) {
      let e = live(convergence.get(commit));
      if (e === undefined) {
        convergence.delete(commit);
        sweep(convergence);
        convergence.set(commit, (e = { clusters: new Map<string, ClusterConvergence>() }));
        trim(convergence, retention.convergenceCommits, keptConvergence, false);
      }
      e.clusters.set(entry.cluster, { ...e.clusters.get(entry.cluster), ...entry });
      if (keptConvergence(commit)) delete e.expiresAt;
      else e.expiresAt = now() + retention.maxAgeMs;
      return Promise.resolve();
    },
    getConvergence(commit): Promise<ConvergenceRecord | undefined> {
      const e = live(convergence.get(commit));
      return Promise.resolve(e === undefined ? undefined : { commit, clusters: Object.fromEntries(sortBy(e.clusters.entries(), ([c]) => c)) });
    },
    tryLock(name, ttlMs) {
      const t = Date.now();
      const held = locks.get(name);
      if (held !== undefined && held.until > t) return Promise.resolve(undefined);
      const token = `${t}-${++lockSeq}`;
      locks.set(name, { token, until: t + ttlMs });
      return Promise.resolve(token);
    },
    unlock(name, token) {
      if (locks.get(name)?.token === token) locks.delete(name);
      return Promise.resolve();
    },
    clear() {
      pointer = undefined;
      statusVersion = discoveryVersion = undefined;
      for (const m of [desired, discovery, fragments, hashes, outputs, outputRefs, statuses, pending, convergence, locks]) m.clear();
      return Promise.resolve();
    },
    counts() {
      for (const m of [desired, pending, convergence]) sweep(m);
      const t = Date.now();
      for (const [name, l] of locks) if (l.until <= t) locks.delete(name);
      return {
        desired: desired.size,
        discovery: discovery.size,
        fragmentClusters: fragments.size,
        fragmentWorkspaces: hashes.size,
        outputs: outputs.size,
        statuses: statuses.size,
        pending: pending.size,
        convergence: convergence.size,
        locks: locks.size,
      };
    },
  };
}
