/**
 * Snapshots as keyed entries, checksums and deltas: what the agent pushes after its first full
 * snapshot and what the relay applies to its copy. `applySnapshotDelta(a, diffSnapshots(a, b))`
 * gives exactly `normalizeSnapshot(b)`; both sides compare `snapshotChecksum`s to detect drift
 * and resync with a full snapshot on mismatch.
 */
import { createHash } from "node:crypto";
import { TransientError } from "../core/index.js";
import type { DiscoverySnapshot } from "../model/index.js";
import { compareStrings, itemKey, normalizeSnapshot, SECTION_NAMES, SECTIONS, type SectionName } from "./snapshot.js";

/** Entry key of the snapshot's own fields (`cluster`, `apiVersion`, `kind`). */
export const HEADER_KEY = "snapshot";

export interface SnapshotHeader {
  readonly apiVersion?: DiscoverySnapshot["apiVersion"];
  readonly kind?: DiscoverySnapshot["kind"];
  readonly cluster: string;
}

export interface SnapshotEntry {
  /** Stable key, e.g. `service/<ns>/<name>` (see SECTIONS in snapshot.ts). */
  readonly key: string;
  /** The item (or the header for key `snapshot`), in canonical form. */
  readonly value: unknown;
}

/** What changed between two snapshots. Plain JSON-serialisable data; lists sorted by key. */
export interface SnapshotDelta {
  readonly added: readonly SnapshotEntry[];
  readonly changed: readonly SnapshotEntry[];
  readonly removed: readonly string[];
}

/** A delta that cannot be applied (unknown key, value that does not match its key): resync with a full snapshot. */
export class SnapshotDeltaError extends TransientError {}

function header(snapshot: DiscoverySnapshot): SnapshotHeader {
  return {
    ...(snapshot.apiVersion !== undefined ? { apiVersion: snapshot.apiVersion } : {}),
    ...(snapshot.kind !== undefined ? { kind: snapshot.kind } : {}),
    cluster: snapshot.cluster,
  };
}

/**
 * The snapshot as a map from stable key to item, in canonical form and key order. The entry
 * `snapshot` holds the header (cluster, document markers).
 */
export function snapshotEntries(snapshot: DiscoverySnapshot): Map<string, unknown> {
  const s = normalizeSnapshot(snapshot);
  const pairs: [string, unknown][] = [[HEADER_KEY, header(s)]];
  for (const section of SECTION_NAMES) {
    for (const item of s[section] as readonly unknown[]) pairs.push([itemKey(section, item as never), item]);
  }
  pairs.sort(([a], [b]) => compareStrings(a, b));
  return new Map(pairs);
}

/** sha256 (hex) of the canonical JSON of the normalised snapshot. */
export function snapshotChecksum(snapshot: DiscoverySnapshot): string {
  // normalizeSnapshot returns canonical key order already: plain JSON.stringify is canonical JSON. The
  // normalised form only lives until it is serialised, so it may share the input's canonical parts.
  return createHash("sha256").update(JSON.stringify(normalizeSnapshot(snapshot, { owned: true }))).digest("hex");
}

/** The delta that turns `from` into `to`. */
export function diffSnapshots(from: DiscoverySnapshot, to: DiscoverySnapshot): SnapshotDelta {
  const a = snapshotEntries(from);
  const b = snapshotEntries(to);
  const added: SnapshotEntry[] = [];
  const changed: SnapshotEntry[] = [];
  const removed: string[] = [];
  for (const [key, value] of b) {
    if (!a.has(key)) added.push({ key, value });
    else if (JSON.stringify(a.get(key)) !== JSON.stringify(value)) changed.push({ key, value }); // entries are canonical
  }
  for (const key of a.keys()) if (!b.has(key)) removed.push(key);
  return { added, changed, removed };
}

/** True when the delta changes nothing. */
export function isEmptyDelta(delta: SnapshotDelta): boolean {
  return delta.added.length === 0 && delta.changed.length === 0 && delta.removed.length === 0;
}

const PREFIX_TO_SECTION = new Map<string, SectionName>(SECTION_NAMES.map((s) => [SECTIONS[s].prefix, s]));

function sectionOfKey(key: string): SectionName | undefined {
  const slash = key.indexOf("/");
  return slash === -1 ? undefined : PREFIX_TO_SECTION.get(key.slice(0, slash));
}

/**
 * Applies a delta: `added` and `changed` entries are upserted, `removed` keys deleted (a key that
 * is not there is ignored — the checksum tells whether both sides agree). Returns a new, normalised
 * snapshot. Throws SnapshotDeltaError for an entry whose key is unknown or does not match its
 * value (a corrupt or foreign delta): the caller requests a full snapshot.
 */
export function applySnapshotDelta(snapshot: DiscoverySnapshot, delta: SnapshotDelta): DiscoverySnapshot {
  const entries = snapshotEntries(snapshot);
  for (const key of delta.removed) {
    if (key === HEADER_KEY) throw new SnapshotDeltaError("a delta cannot remove the snapshot header");
    entries.delete(key);
  }
  for (const { key, value } of [...delta.added, ...delta.changed]) {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new SnapshotDeltaError(`delta entry ${key} has no object value`);
    }
    if (key !== HEADER_KEY) {
      const section = sectionOfKey(key);
      if (section === undefined) throw new SnapshotDeltaError(`delta entry has an unknown key ${JSON.stringify(key)}`);
      let actual: string;
      try {
        actual = itemKey(section, value as never);
      } catch {
        throw new SnapshotDeltaError(`delta entry ${key} has a malformed value`);
      }
      if (actual !== key) throw new SnapshotDeltaError(`delta entry ${key} holds the item ${actual}`);
    }
    entries.set(key, value);
  }
  return snapshotFromEntries(entries);
}

/** Rebuilds a (normalised) snapshot from its entries; the inverse of snapshotEntries. */
export function snapshotFromEntries(entries: ReadonlyMap<string, unknown>): DiscoverySnapshot {
  const head = entries.get(HEADER_KEY) as SnapshotHeader | undefined;
  if (head === undefined || typeof head.cluster !== "string") {
    throw new SnapshotDeltaError("snapshot entries have no `snapshot` header with the cluster name");
  }
  const sections: Record<SectionName, unknown[]> = {
    namespaces: [],
    services: [],
    workloads: [],
    localities: [],
    meshes: [],
    gateways: [],
    istioObjects: [],
  };
  for (const [key, value] of entries) {
    if (key === HEADER_KEY) continue;
    const section = sectionOfKey(key);
    if (section === undefined) throw new SnapshotDeltaError(`unknown snapshot entry key ${JSON.stringify(key)}`);
    sections[section].push(value);
  }
  return normalizeSnapshot({
    ...(sections as unknown as Omit<DiscoverySnapshot, "cluster">),
    ...(head.apiVersion !== undefined ? { apiVersion: head.apiVersion } : {}),
    ...(head.kind !== undefined ? { kind: head.kind } : {}),
    cluster: head.cluster,
  });
}
