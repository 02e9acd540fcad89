/**
 * Recovery from degraded mode: what a replica's memory mirror holds is written back to Redis, which
 * may have restarted empty, been written by other replicas (each degraded at the same moment, each
 * translating from its own memory), or been promoted by Sentinel with the state of just before the
 * outage.
 *
 * - desired state: the pointer only moves forward (by generation);
 * - discovery: always (the agents' last word);
 * - fragments and workspace status: per workspace, only when this replica's translation is at least
 *   as recent (desired-state generation, then time) as what Redis holds;
 * - unit locks this replica took in Redis and could not release (the outage came first): released by token;
 * - workspaces pending in Redis for the current commit that memory has translated since: removed;
 * - outputs: only if newer (versions never go backwards).
 */
import type { Logger } from "../core/index.js";
import type { FragmentRecord, OutputRecord, SnapshotStore } from "../store/index.js";

export interface WriteBackOptions {
  readonly mirror: SnapshotStore;
  readonly redis: SnapshotStore;
  /** Unit locks taken in Redis that could not be released (token → name); emptied as they are released. */
  readonly unreleased: Map<string, string>;
  readonly logger: Logger;
}

/** Writes the mirror back into Redis; returns the outputs written (newer than Redis'), to be announced. */
export async function writeBack({ mirror, redis, unreleased, logger }: WriteBackOptions): Promise<OutputRecord[]> {
  const pointer = await mirror.getDesiredPointer();
  const desired = pointer === undefined ? undefined : await mirror.getDesired(pointer.commit);
  const remote = await redis.getDesiredPointer();
  if (desired !== undefined && (remote === undefined || remote.generation <= desired.generation)) await redis.putDesired(desired);
  for (const d of await mirror.listDiscovery()) await redis.putDiscovery(d);

  const byWs = new Map<string, FragmentRecord[]>();
  for (const f of await mirror.listFragments()) byWs.set(f.workspace, [...(byWs.get(f.workspace) ?? []), f]);
  // One replica that missed a commit (or a discovery change) must not write its older translations
  // over newer ones another replica wrote back first.
  const theirs = new Map((await redis.listWorkspaceStatus()).map((st) => [st.workspace, st]));
  const mine = new Map((await mirror.listWorkspaceStatus()).map((st) => [st.workspace, st]));
  const older = new Set<string>();
  for (const ws of new Set([...byWs.keys(), ...mine.keys()])) {
    const m = mine.get(ws);
    const t = theirs.get(ws);
    if (t !== undefined && (m === undefined || t.generation > m.generation || (t.generation === m.generation && t.atMs > m.atMs))) older.add(ws);
  }
  for (const st of mine.values()) {
    if (older.has(st.workspace)) continue;
    await redis.putWorkspaceStatus(st);
    if (!byWs.has(st.workspace)) byWs.set(st.workspace, []);
  }
  for (const [ws, list] of byWs) if (!older.has(ws)) await redis.putFragments(ws, list);
  if (older.size > 0) logger.info("kept newer translations in Redis over this replica's older ones", { workspaces: [...older].sort() });

  // Left on a promoted replica, these would hold that workspace's jobs, and every cluster job of the
  // commit, until the lock's lease ends.
  for (const [token, name] of unreleased) {
    await redis.unlock(name, token);
    unreleased.delete(token);
  }
  if (desired !== undefined && (await redis.getDesiredPointer())?.commit === desired.commit) {
    const open = new Set(await mirror.pending(desired.commit));
    for (const ws of await redis.pending(desired.commit)) if (!open.has(ws)) await redis.removePending(desired.commit, ws);
  }

  const written: OutputRecord[] = [];
  for (const o of await mirror.listOutputs()) if (await redis.putOutputIfNewer(o)) written.push(o);
  return written;
}
