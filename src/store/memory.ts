/**
 * In-memory snapshot store: standalone mode, and the mirror a Redis-backed pipeline keeps so that it
 * can continue through a Redis outage. Keeps references to the records it is given (records are
 * immutable plain data).
 */
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
  /** Desired states kept besides the current one (oldest dropped first). Default 8. */
  readonly keepDesired?: number;
}

export interface MemoryStore extends SnapshotStore {
  readonly kind: "memory";
}

export function createMemoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const keep = options.keepDesired ?? 8;
  const desired = new Map<string, DesiredRecord>();
  let pointer: DesiredPointer | undefined;
  const discovery = new Map<string, DiscoveryRecord>();
  /** cluster → workspace → fragment */
  const fragments = new Map<string, Map<string, FragmentRecord>>();
  /** workspace → cluster → hash */
  const hashes = new Map<string, Map<string, string>>();
  const outputs = new Map<string, OutputRecord>();
  const statuses = new Map<string, WorkspaceStatus>();
  const pending = new Map<string, Set<string>>();
  const convergence = new Map<string, Map<string, ClusterConvergence>>();
  const locks = new Map<string, { token: string; until: number }>();
  let lockSeq = 0;
  const sortBy = <T>(items: Iterable<T>, key: (t: T) => string): T[] => [...items].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));

  return {
    kind: "memory",
    putDesired(record) {
      desired.delete(record.commit);
      desired.set(record.commit, record);
      if (pointer === undefined || record.generation >= pointer.generation) pointer = { commit: record.commit, generation: record.generation };
      while (desired.size > keep + 1) {
        const oldest = desired.keys().next().value!;
        if (oldest === pointer.commit) break;
        desired.delete(oldest);
      }
      return Promise.resolve();
    },
    getDesired: (commit) => Promise.resolve(desired.get(commit)),
    getDesiredPointer: () => Promise.resolve(pointer),
    putDiscovery(record) {
      discovery.set(record.cluster, record);
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
        fragments.get(c)?.delete(workspace);
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
      const current = outputs.get(record.cluster)?.version ?? 0;
      if (current !== expectedPrevious || record.version <= current) return Promise.resolve(false);
      outputs.set(record.cluster, record);
      return Promise.resolve(true);
    },
    putOutputIfNewer(record) {
      const current = outputs.get(record.cluster)?.version ?? 0;
      if (record.version <= current) return Promise.resolve(false);
      outputs.set(record.cluster, record);
      return Promise.resolve(true);
    },
    getOutput: (cluster) => Promise.resolve(outputs.get(cluster)),
    outputVersions: () => Promise.resolve(new Map([...outputs].map(([c, r]) => [c, r.version]))),
    listOutputs: () => Promise.resolve(sortBy(outputs.values(), (r) => r.cluster)),
    putWorkspaceStatus(status) {
      statuses.set(status.workspace, status);
      return Promise.resolve();
    },
    getWorkspaceStatus: (workspace) => Promise.resolve(statuses.get(workspace)),
    listWorkspaceStatus: () => Promise.resolve(sortBy(statuses.values(), (s) => s.workspace)),
    addPending(commit, workspaces) {
      let set = pending.get(commit);
      if (set === undefined) pending.set(commit, (set = new Set<string>()));
      for (const w of workspaces) set.add(w);
      return Promise.resolve();
    },
    removePending(commit, workspace) {
      const set = pending.get(commit);
      set?.delete(workspace);
      if (set?.size === 0) pending.delete(commit);
      return Promise.resolve();
    },
    pending: (commit) => Promise.resolve([...(pending.get(commit) ?? [])].sort()),
    recordConvergence(commit, entry) {
      let m = convergence.get(commit);
      if (m === undefined) convergence.set(commit, (m = new Map<string, ClusterConvergence>()));
      m.set(entry.cluster, { ...m.get(entry.cluster), ...entry });
      return Promise.resolve();
    },
    getConvergence(commit): Promise<ConvergenceRecord | undefined> {
      const m = convergence.get(commit);
      return Promise.resolve(m === undefined ? undefined : { commit, clusters: Object.fromEntries(sortBy(m.entries(), ([c]) => c)) });
    },
    tryLock(name, ttlMs) {
      const now = Date.now();
      const held = locks.get(name);
      if (held !== undefined && held.until > now) return Promise.resolve(undefined);
      const token = `${now}-${++lockSeq}`;
      locks.set(name, { token, until: now + ttlMs });
      return Promise.resolve(token);
    },
    unlock(name, token) {
      if (locks.get(name)?.token === token) locks.delete(name);
      return Promise.resolve();
    },
    clear() {
      desired.clear();
      pointer = undefined;
      for (const m of [discovery, fragments, hashes, outputs, statuses, pending, convergence, locks]) m.clear();
      return Promise.resolve();
    },
  };
}
