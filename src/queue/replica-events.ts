/**
 * Outputs delivered, and replicas told, in `redis` mode (pub/sub on `<prefix>events`):
 *
 *   this replica's new output ─announce→ publish {output} + deliver
 *   another replica's message ─onMessage→ output: read it from Redis, mirror it, deliver;
 *                                          desired / discovery: mirror it (for a later degraded mode)
 *   resubscribed after a gap  ─catchUp→ every output newer than the last delivered
 *
 * `deliver` calls `onOutput` once per newer version of a cluster this replica wants. Pub/sub is
 * fire-and-forget; what is missed while unsubscribed is caught up from the store.
 */
import type { Logger } from "../core/index.js";
import type { OutputRecord, SnapshotStore } from "../store/index.js";
import type { RedisClient } from "./redis-connection.js";

export type EventMessage =
  | { readonly origin: string; readonly type: "output"; readonly cluster: string; readonly version: number }
  | { readonly origin: string; readonly type: "desired"; readonly commit: string }
  | { readonly origin: string; readonly type: "discovery"; readonly cluster: string };

export interface ReplicaEventsOptions {
  /** This process's id in the messages (its own are ignored). */
  readonly origin: string;
  readonly channel: string;
  /** The Redis store and client while in `redis` mode; undefined otherwise (nothing is published or read). */
  readonly redis: () => { readonly store: SnapshotStore; readonly client: Pick<RedisClient, "publish"> } | undefined;
  readonly mirror: SnapshotStore;
  readonly wants: (cluster: string) => boolean;
  readonly onOutput?: (event: Omit<OutputRecord, "hash" | "atMs">) => void | Promise<void>;
  /** Sees every output delivered or not (the scheduler's re-assessment set). */
  readonly noteOutput: (record: OutputRecord) => void;
  readonly logger: Logger;
}

export interface ReplicaEvents {
  publish(msg: EventMessage): Promise<void>;
  /** A new output version this replica stored: tell the other replicas, then deliver it. */
  announce(record: OutputRecord): Promise<void>;
  deliver(record: OutputRecord): Promise<void>;
  onMessage(raw: string): Promise<void>;
  /** Delivers every output newer than the last one delivered (announcements missed while unsubscribed). */
  catchUp(): Promise<void>;
}

export function createReplicaEvents(o: ReplicaEventsOptions): ReplicaEvents {
  const lastDelivered = new Map<string, number>();

  async function deliver(record: OutputRecord): Promise<void> {
    o.noteOutput(record);
    if (!o.wants(record.cluster) || record.version <= (lastDelivered.get(record.cluster) ?? 0)) return;
    lastDelivered.set(record.cluster, record.version);
    try {
      const { hash: _hash, atMs: _atMs, ...event } = record;
      await o.onOutput?.(event);
    } catch (err) {
      o.logger.error("onOutput failed", { cluster: record.cluster, version: record.version, error: String(err) });
    }
  }

  async function publish(msg: EventMessage): Promise<void> {
    const r = o.redis();
    if (r === undefined) return;
    await r.client.publish(o.channel, JSON.stringify(msg)).catch(() => undefined);
  }

  return {
    publish,
    deliver,
    async announce(record) {
      await publish({ origin: o.origin, type: "output", cluster: record.cluster, version: record.version });
      await deliver(record);
    },
    async onMessage(raw) {
      let msg: EventMessage;
      try {
        msg = JSON.parse(raw) as EventMessage;
      } catch {
        return;
      }
      const r = o.redis()?.store;
      if (msg.origin === o.origin || r === undefined) return;
      if (msg.type === "output") {
        if (!o.wants(msg.cluster)) return;
        const rec = await r.getOutput(msg.cluster);
        if (rec === undefined) return;
        await o.mirror.putOutputIfNewer(rec);
        await deliver(rec);
      } else if (msg.type === "desired") {
        const rec = await r.getDesired(msg.commit);
        if (rec !== undefined) await o.mirror.putDesired(rec);
      } else {
        const rec = await r.getDiscovery(msg.cluster);
        if (rec !== undefined) await o.mirror.putDiscovery(rec);
      }
    },
    async catchUp() {
      const r = o.redis()?.store;
      if (r === undefined) return;
      for (const [cluster, version] of await r.outputVersions()) {
        if (!o.wants(cluster) || version <= (lastDelivered.get(cluster) ?? 0)) continue;
        const rec = await r.getOutput(cluster);
        if (rec === undefined) continue;
        await o.mirror.putOutputIfNewer(rec);
        await deliver(rec);
      }
    },
  };
}
