/**
 * What every cluster job of a commit reads alike — every workspace's status, and which clusters have
 * discovery — decoded once per process and store, and read again only when the store's token for it
 * (`SnapshotStore.versions()`, one small read) moved. Without it N cluster jobs decoded N times what
 * changes once per commit: O(clusters × (workspaces + clusters)) per fleet-wide change.
 */
import type { SnapshotStore, WorkspaceStatus } from "../store/index.js";

export interface ClusterStageInputs {
  /** workspace → its last status. */
  readonly statuses: ReadonlyMap<string, WorkspaceStatus>;
  /** Clusters whose discovery the store holds. */
  readonly discovered: ReadonlySet<string>;
}

/**
 * A reader with its own cache (one per pipeline). Entries are per store object (Redis, or the memory
 * mirror while degraded): a token is only ever compared with one the same store gave. A store that
 * gives no token (nothing written yet, cleared) is read every time; a failed read is not kept.
 */
export function createClusterStageReader(): (store: SnapshotStore) => Promise<ClusterStageInputs> {
  type Slots = Map<string, { readonly token: string; readonly value: Promise<unknown> }>;
  const cache = new WeakMap<SnapshotStore, Slots>();
  const shared = <T>(store: SnapshotStore, name: string, token: string | undefined, read: () => Promise<T>): Promise<T> => {
    let slots = cache.get(store);
    if (slots === undefined) cache.set(store, (slots = new Map() as Slots));
    const hit = slots.get(name);
    if (token !== undefined && hit?.token === token) return hit.value as Promise<T>;
    const value = read();
    if (token !== undefined) {
      const entry = { token, value };
      const own = slots;
      own.set(name, entry);
      value.catch(() => own.get(name) === entry && own.delete(name));
    }
    return value;
  };
  return async (store) => {
    // The tokens are read before the data: what is cached under a token is at least that new.
    const v = await store.versions();
    const [statuses, discovered] = await Promise.all([
      shared(store, "statuses", v.workspaceStatus, async () => new Map((await store.listWorkspaceStatus()).map((st) => [st.workspace, st]))),
      shared(store, "discovered", v.discovery, async () => new Set((await store.discoveryChecksums()).keys())),
    ]);
    return { statuses, discovered };
  };
}
