/**
 * Revocations kept where the relay PKI lives (issue #40): with `--pki-dir` and Redis, identity records
 * (credentials, live certificates, revocations) are shared in Redis so that every replica agrees — but
 * a Redis restarted empty, flushed or failed over to a replica that missed the write would forget a
 * revocation, and a revoked certificate would be accepted again (and recorded as the cluster's live
 * identity). So each cluster's revocation floor (`revokedBeforeMs` and why) is also kept beside the PKI,
 * in `<pki-dir>/revocations/<cluster>.json`:
 *
 * - a write that raises the floor is made durable there first, then written to the shared store (a
 *   crash between the two leaves the revocation in force, never the opposite);
 * - every read merges both: the higher floor wins, and a live certificate at or below it is dropped,
 *   so a shared store that lost the revocation answers as if it had not;
 * - a floor seen in the shared store but not yet beside the PKI (another replica revoked) is copied
 *   there on read — every replica keeps the revocations it has seen, and the server reads them all
 *   every revalidation interval (stream supervisor), so each replica's copy follows within it;
 * - the floor never goes down and survives the deletion of the shared record;
 * - while the shared store is unreachable, a read of a cluster with a kept floor answers from it (the
 *   relay's peer gate otherwise falls back to the last record it saw: none after a restart).
 *
 * Kubernetes Secrets (the server in a pod) already keep the records themselves beside the relay
 * Secrets (`relay-identity-<cluster>`), whatever Redis does; this wrapper is for the directory.
 */
import { parseIdentityRecord, type ClusterIdentityRecord, type ClusterRecordStore, type StoredRecord } from "../relay/index.js";

interface Floor {
  readonly revokedBeforeMs: number;
  readonly revocation?: ClusterIdentityRecord["revocation"];
}

function floorOf(value: string | undefined): Floor | undefined {
  const r = parseIdentityRecord(value);
  return typeof r.revokedBeforeMs === "number" ? { revokedBeforeMs: r.revokedBeforeMs, ...(r.revocation ? { revocation: r.revocation } : {}) } : undefined;
}

/** The shared record with the kept floor applied (undefined: neither knows the cluster). */
function merge(shared: string | undefined, kept: Floor | undefined): string | undefined {
  if (kept === undefined) return shared;
  const r = parseIdentityRecord(shared);
  if ((r.revokedBeforeMs ?? -1) >= kept.revokedBeforeMs) return shared;
  const { issued, revocation: _forgotten, ...rest } = r;
  const next: ClusterIdentityRecord = {
    ...rest,
    ...(issued && issued.issuedAtMs > kept.revokedBeforeMs ? { issued } : {}),
    revokedBeforeMs: kept.revokedBeforeMs,
    ...(kept.revocation ? { revocation: kept.revocation } : {}),
  };
  return JSON.stringify(next);
}

// Revisions handed out name the shared store's revision ("s:<rev>") or its absence ("-").
const ABSENT = "-";
const revisionOf = (s: StoredRecord | undefined) => (s === undefined ? ABSENT : `s:${s.revision}`);
const sharedRevision = (expected: string | undefined) => (expected === undefined || expected === ABSENT ? undefined : expected.slice(2));

/** `shared` (Redis) for every record, `beside` (the PKI directory's revocations) for the floors. */
export function withDurableRevocations(shared: ClusterRecordStore, beside: ClusterRecordStore): ClusterRecordStore {
  /** Raises the kept floor to `floor` (never lowers it). */
  async function keep(cluster: string, floor: Floor): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const cur = await beside.get(cluster);
      const kept = floorOf(cur?.value);
      if (kept !== undefined && kept.revokedBeforeMs >= floor.revokedBeforeMs) return;
      if (await beside.swap(cluster, cur?.revision, JSON.stringify(floor))) return;
    }
    throw new Error(`could not keep the revocation of cluster "${cluster}" in ${beside.describe}: it kept changing`);
  }

  async function mergedRecord(cluster: string, s: StoredRecord | undefined, k: StoredRecord | undefined): Promise<StoredRecord | undefined> {
    const kept = floorOf(k?.value);
    const sharedFloor = floorOf(s?.value);
    if (sharedFloor !== undefined && (kept === undefined || sharedFloor.revokedBeforeMs > kept.revokedBeforeMs)) await keep(cluster, sharedFloor);
    const value = merge(s?.value, kept);
    return value === undefined ? undefined : { value, revision: revisionOf(s) };
  }

  return {
    describe: `${shared.describe}, revocations also in ${beside.describe}`,
    async get(cluster) {
      const k = await beside.get(cluster);
      let s: StoredRecord | undefined;
      try {
        s = await shared.get(cluster);
      } catch (err) {
        // The shared store is unreachable (Redis down, failing over): a kept revocation still answers,
        // so a server restarted meanwhile (no record seen yet) never admits a certificate it revoked.
        const kept = floorOf(k?.value);
        if (kept === undefined) throw err;
        return { value: merge(undefined, kept)!, revision: ABSENT };
      }
      return mergedRecord(cluster, s, k);
    },
    async list() {
      const [all, kept] = await Promise.all([shared.list(), beside.list()]);
      const out = new Map<string, StoredRecord>();
      for (const cluster of new Set([...all.keys(), ...kept.keys()])) {
        const r = await mergedRecord(cluster, all.get(cluster), kept.get(cluster));
        if (r !== undefined) out.set(cluster, r);
      }
      return out;
    },
    async swap(cluster, expected, next) {
      const floor = floorOf(next);
      if (floor !== undefined) await keep(cluster, floor);
      return shared.swap(cluster, sharedRevision(expected), next);
    },
  };
}
