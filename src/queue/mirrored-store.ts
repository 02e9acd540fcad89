/**
 * The store of `redis` mode: Redis, with every write also made to a memory mirror, so that the
 * pipeline can switch to the mirror alone the moment Redis goes away (degraded mode) and write it back
 * when Redis returns (write-back.ts).
 *
 * - Writes go to Redis first, then to the mirror: what the mirror holds, Redis accepted.
 * - Reads come from Redis (it is shared by the replicas), except desired states, which the mirror
 *   usually has already (another replica's arrive through pub/sub). What a read brings from Redis —
 *   a discovery snapshot, a newer output — is copied into the mirror on the way.
 * - Outputs enter the mirror only if newer (`putOutputIfNewer`): versions never go backwards there.
 * - Locks, pointers and tokens are Redis' alone: the mirror's would mean nothing to other replicas.
 */
import type { SnapshotStore } from "../store/index.js";

export function createMirroredStore(redis: SnapshotStore, mirror: SnapshotStore): SnapshotStore {
  /** A write made to Redis, then to the mirror. */
  const both =
    <A extends unknown[]>(write: (store: SnapshotStore, ...args: A) => Promise<void>) =>
    async (...args: A): Promise<void> => {
      await write(redis, ...args);
      await write(mirror, ...args);
    };
  /** A read from Redis whose result is copied into the mirror on the way. */
  const through =
    <R>(read: (key: string) => Promise<R | undefined>, keep: (rec: R) => Promise<unknown>) =>
    async (key: string): Promise<R | undefined> => {
      const rec = await read(key);
      if (rec !== undefined) await keep(rec);
      return rec;
    };
  return {
    kind: "redis",
    putDesired: both((s, rec) => s.putDesired(rec)),
    getDesired: async (commit) => (await mirror.getDesired(commit)) ?? (await redis.getDesired(commit)),
    getDesiredPointer: () => redis.getDesiredPointer(),
    putDiscovery: both((s, rec) => s.putDiscovery(rec)),
    getDiscovery: through((cluster) => redis.getDiscovery(cluster), (rec) => mirror.putDiscovery(rec)),
    discoveryChecksums: () => redis.discoveryChecksums(),
    listDiscovery: () => redis.listDiscovery(),
    putFragments: async (workspace, list) => {
      const changed = await redis.putFragments(workspace, list);
      await mirror.putFragments(workspace, list);
      return changed;
    },
    fragmentHashes: (workspace) => redis.fragmentHashes(workspace),
    fragmentsForCluster: (cluster) => redis.fragmentsForCluster(cluster),
    listFragments: () => redis.listFragments(),
    putOutput: async (rec, previous) => {
      const ok = await redis.putOutput(rec, previous);
      if (ok) await mirror.putOutputIfNewer(rec);
      return ok;
    },
    putOutputIfNewer: async (rec) => {
      const ok = await redis.putOutputIfNewer(rec);
      await mirror.putOutputIfNewer(rec);
      return ok;
    },
    getOutput: through((cluster) => redis.getOutput(cluster), (rec) => mirror.putOutputIfNewer(rec)),
    outputVersions: () => redis.outputVersions(),
    listOutputs: () => redis.listOutputs(),
    putWorkspaceStatus: both((s, status) => s.putWorkspaceStatus(status)),
    getWorkspaceStatus: (workspace) => redis.getWorkspaceStatus(workspace),
    listWorkspaceStatus: () => redis.listWorkspaceStatus(),
    versions: () => redis.versions(),
    addPending: both((s, commit, workspaces) => s.addPending(commit, workspaces)),
    removePending: both((s, commit, workspace) => s.removePending(commit, workspace)),
    pending: (commit) => redis.pending(commit),
    recordConvergence: both((s, commit, entry) => s.recordConvergence(commit, entry)),
    getConvergence: (commit) => redis.getConvergence(commit),
    tryLock: (name, ttlMs) => redis.tryLock(name, ttlMs),
    unlock: (name, token) => redis.unlock(name, token),
    clear: both((s) => s.clear()),
  };
}
