/**
 * The pipeline's input caches: the desired state of a commit and the discovery map, read from the store
 * once and kept as the same objects, so that translation's index memo hits across jobs. The discovery
 * map is rebuilt when the stored checksums change, reusing the snapshots whose checksum did not.
 */
import { createHash } from "node:crypto";
import type { DiscoverySnapshot } from "../discovery/index.js";
import type { DiscoveryMap } from "../translate/index.js";
import type { DesiredRecord, SnapshotStore } from "../store/index.js";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");

export interface InputCache {
  /** The desired state of `commit` (the last 4 commits kept; a miss or a failed read is not). */
  desired(store: SnapshotStore, commit: string): Promise<DesiredRecord | undefined>;
  /** Remembers a desired state just written, so the jobs of its commit need not read it back. */
  remember(record: DesiredRecord): void;
  /** Every cluster's discovery and the fingerprint of their checksums. */
  discovery(store: SnapshotStore): Promise<{ map: DiscoveryMap; fingerprint: string }>;
}

const byCluster = ([a]: [string, string], [b]: [string, string]) => (a < b ? -1 : 1);

export function createInputCache(): InputCache {
  const desiredCache = new Map<string, Promise<DesiredRecord | undefined>>();
  let discoveryCache: { fingerprint: string; sums: Map<string, string>; map: Promise<DiscoveryMap> } | undefined;
  return {
    desired(store, commit) {
      let p = desiredCache.get(commit);
      if (p === undefined) {
        p = store.getDesired(commit);
        desiredCache.set(commit, p);
        void p.then((rec) => rec === undefined && desiredCache.delete(commit), () => desiredCache.delete(commit));
        while (desiredCache.size > 4) desiredCache.delete(desiredCache.keys().next().value!);
      }
      return p;
    },
    remember(record) {
      desiredCache.set(record.commit, Promise.resolve(record));
    },
    async discovery(store) {
      const sums = await store.discoveryChecksums();
      const fingerprint = sha([...sums].sort(byCluster).map(([c, s]) => `${c}=${s}`).join("\n"));
      if (discoveryCache?.fingerprint === fingerprint) return { map: await discoveryCache.map, fingerprint };
      const prev = discoveryCache;
      const build = (async () => {
        const old = prev === undefined ? undefined : await prev.map.catch(() => undefined);
        const next = new Map<string, DiscoverySnapshot>();
        for (const [cluster, sum] of [...sums].sort(byCluster)) {
          const reuse = prev?.sums.get(cluster) === sum ? (old?.get(cluster) as DiscoverySnapshot | undefined) : undefined;
          const snap = reuse ?? (await store.getDiscovery(cluster))?.snapshot;
          if (snap !== undefined) next.set(cluster, snap);
        }
        return next as unknown as DiscoveryMap;
      })();
      discoveryCache = { fingerprint, sums, map: build };
      build.catch(() => {
        if (discoveryCache?.map === build) discoveryCache = undefined;
      });
      return { map: await build, fingerprint };
    },
  };
}
