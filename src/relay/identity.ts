/**
 * Cluster identities (DESIGN.md "Relay protocol", issue #11): per-cluster bootstrap credentials,
 * one live client certificate per cluster, and revocations — all kept in a shared store so that every
 * server replica, and every restart, sees the same answer.
 *
 * One record per cluster (JSON), changed only by compare-and-swap on the store's revision, so two
 * replicas can never both consume one credential or both issue a first certificate:
 *
 *   credential      sha256 of the single-use bootstrap credential bound to this cluster, with its expiry
 *                   (the plaintext is never stored; `gitmesh cluster register` / reissue hands it out once)
 *   issued          the latest certificate issued by Register or Renew (issue time, notAfter)
 *   revokedBeforeMs certificates of this cluster issued at or before this time are refused
 *
 * A cluster "holds a live identity" while `issued` is unexpired and not revoked; Register is then refused
 * whatever the credential (re-issue is an operator action: `reissue`, which revokes and mints a new
 * credential). Renewal (Relay.Renew) needs the current certificate only.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** A value in a ClusterRecordStore and the revision to compare against when replacing it. */
export interface StoredRecord {
  readonly value: string;
  readonly revision: string;
}

/**
 * Where identity records live (src/server/pki-storage.ts implements it over Kubernetes Secrets, a
 * directory, Redis and memory). `swap` is the only write: atomic compare-and-swap on the revision.
 */
export interface ClusterRecordStore {
  /** Where it is kept, for logs (never a secret). */
  readonly describe: string;
  get(cluster: string): Promise<StoredRecord | undefined>;
  /** Every record (one call: used to re-check open streams periodically). */
  list(): Promise<ReadonlyMap<string, StoredRecord>>;
  /** Writes `next` (undefined: delete) only if the stored revision is still `expected` (undefined: absent); false on a conflict. */
  swap(cluster: string, expected: string | undefined, next: string | undefined): Promise<boolean>;
}

export interface ClusterIdentityRecord {
  readonly credential?: { readonly sha256: string; readonly createdAtMs: number; readonly expiresAtMs: number };
  readonly issued?: { readonly issuedAtMs: number; readonly notAfterMs: number };
  readonly revokedBeforeMs?: number;
  /** Why and when the last revocation happened (status and error messages). */
  readonly revocation?: { readonly atMs: number; readonly reason: string };
}

/** Default lifetime of a per-cluster bootstrap credential: 24 h. */
export const CREDENTIAL_TTL_MS = 24 * 3600_000;
/** Prefix of generated credentials (recognisable in a secret scanner; carries no information). */
const CREDENTIAL_PREFIX = "gmbc_";

const sha256 = (s: string) => createHash("sha256").update(s, "utf8").digest();
const hex = (s: string) => sha256(s).toString("hex");

/** Constant-time comparison of a presented secret with a stored sha256 (hex). */
export function secretMatchesHash(presented: string, storedHex: string): boolean {
  const stored = Buffer.from(storedHex, "hex");
  const given = sha256(presented);
  return stored.length === given.length && timingSafeEqual(stored, given);
}

export function parseIdentityRecord(value: string | undefined): ClusterIdentityRecord {
  if (value === undefined) return {};
  try {
    const r = JSON.parse(value) as unknown;
    return typeof r === "object" && r !== null && !Array.isArray(r) ? r : {};
  } catch {
    return {};
  }
}

/** Whether `presented` is the record's unexpired per-cluster credential (constant-time comparison). */
export function credentialMatches(r: ClusterIdentityRecord, presented: string, nowMs: number): boolean {
  const c = r.credential;
  return c !== undefined && c.expiresAtMs > nowMs && presented !== "" && secretMatchesHash(presented, c.sha256);
}

/** true while the record's latest certificate is unexpired and not revoked. */
export function holdsLiveIdentity(r: ClusterIdentityRecord, nowMs: number): boolean {
  return r.issued !== undefined && r.issued.notAfterMs > nowMs && r.issued.issuedAtMs > (r.revokedBeforeMs ?? -1);
}

/** The outcome of a registration attempt, decided atomically against the store. */
export type RegistrationDecision =
  | { readonly ok: true; readonly issuedAtMs: number }
  | { readonly ok: false; readonly why: "bad_credential" | "live_identity"; readonly record: ClusterIdentityRecord };

export interface ClusterIdentities {
  readonly describe: string;
  read(cluster: string): Promise<ClusterIdentityRecord>;
  list(): Promise<ReadonlyMap<string, ClusterIdentityRecord>>;
  /**
   * Mints a single-use bootstrap credential for `cluster` (replacing an unused one). With `reissue`
   * the cluster's certificates issued so far are revoked first; without it, a cluster holding a live
   * identity is refused (LiveIdentityError).
   */
  mintCredential(cluster: string, options?: { readonly ttlMs?: number; readonly reissue?: boolean; readonly reason?: string }): Promise<{ credential: string; expiresAtMs: number; revokedBeforeMs: number | undefined }>;
  /**
   * Register: atomically checks the credential (`presented` against the cluster's stored hash, or the
   * fleet token already checked by the caller: `fleetTokenOk`), refuses while the cluster holds a live
   * identity, consumes the credential and records the new certificate's issue time and expiry.
   */
  register(cluster: string, presented: string, fleetTokenOk: boolean, lifetimeMs: number): Promise<RegistrationDecision>;
  /** Renew (or any issue for an authenticated caller): records the new certificate; returns its issue time. */
  recordRenewal(cluster: string, lifetimeMs: number): Promise<number>;
  /**
   * A valid, unrevoked certificate was presented: record it as the cluster's live identity when the
   * record does not know it yet (certificates issued before records existed, or by a store that was lost),
   * so that one live identity holds for them too.
   */
  observeCertificate(cluster: string, issuedAtMs: number, notAfterMs: number): Promise<void>;
  /** Revokes every certificate of `cluster` issued so far (and an unused credential). */
  revoke(cluster: string, reason: string): Promise<number>;
}

/** A credential was asked for a cluster that holds a live certificate; re-issue is explicit. */
export class LiveIdentityError extends Error {
  readonly code = "LiveIdentityError";
  constructor(
    readonly cluster: string,
    readonly notAfterMs: number,
  ) {
    super(
      `cluster "${cluster}" holds a valid client certificate (until ${new Date(notAfterMs).toISOString()}); a new bootstrap credential is only minted by an explicit re-issue, which revokes that certificate: gitmesh cluster reissue ${cluster} (or POST /api/clusters/${cluster}/reissue)`,
    );
  }
}

/** The store kept changing under us (another replica writing the same cluster without pause). */
export class IdentityConflictError extends Error {
  readonly code = "IdentityConflictError";
}

export function createClusterIdentities(store: ClusterRecordStore, options: { readonly now?: () => number } = {}): ClusterIdentities {
  const now = options.now ?? Date.now;
  /** Issue times handed out by this process: strictly increasing, so two certificates never share one. */
  let lastIssuedAt = 0;

  /** Read-modify-write with compare-and-swap, retried on conflicts. `change` returns the new record (undefined: leave as is) and a result. */
  async function mutate<T>(cluster: string, change: (r: ClusterIdentityRecord) => { next: ClusterIdentityRecord | undefined; result: T }): Promise<T> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const stored = await store.get(cluster);
      const { next, result } = change(parseIdentityRecord(stored?.value));
      if (next === undefined) return result;
      if (await store.swap(cluster, stored?.revision, JSON.stringify(next))) return result;
      await new Promise((r) => setTimeout(r, Math.random() * 20 * (attempt + 1)));
    }
    throw new IdentityConflictError(`the identity record of cluster "${cluster}" in ${store.describe} kept changing; retry`);
  }

  const issueTime = (r: ClusterIdentityRecord) => {
    const t = Math.max(now(), lastIssuedAt + 1, (r.revokedBeforeMs ?? 0) + 1, (r.issued?.issuedAtMs ?? 0) + 1);
    lastIssuedAt = t;
    return t;
  };
  // Certificates carry notAfter in whole seconds (see signClientCertificate).
  const notAfterOf = (issuedAtMs: number, lifetimeMs: number) => Math.floor((issuedAtMs + lifetimeMs) / 1000) * 1000;

  return {
    describe: store.describe,
    read: async (cluster) => parseIdentityRecord((await store.get(cluster))?.value),
    async list() {
      const out = new Map<string, ClusterIdentityRecord>();
      for (const [c, r] of await store.list()) out.set(c, parseIdentityRecord(r.value));
      return out;
    },
    mintCredential(cluster, opts = {}) {
      const credential = CREDENTIAL_PREFIX + randomBytes(32).toString("base64url");
      return mutate(cluster, (r) => {
        const t = now();
        let revokedBeforeMs = r.revokedBeforeMs;
        let revocation = r.revocation;
        let issued = r.issued;
        if (holdsLiveIdentity(r, t)) {
          if (!opts.reissue) throw new LiveIdentityError(cluster, r.issued!.notAfterMs);
        }
        if (opts.reissue) {
          revokedBeforeMs = Math.max(t, lastIssuedAt, r.issued?.issuedAtMs ?? 0, r.revokedBeforeMs ?? 0);
          revocation = { atMs: t, reason: opts.reason ?? "re-issued by an operator" };
          issued = undefined;
        }
        const expiresAtMs = t + (opts.ttlMs ?? CREDENTIAL_TTL_MS);
        const next: ClusterIdentityRecord = {
          credential: { sha256: hex(credential), createdAtMs: t, expiresAtMs },
          ...(issued ? { issued } : {}),
          ...(revokedBeforeMs !== undefined ? { revokedBeforeMs } : {}),
          ...(revocation ? { revocation } : {}),
        };
        return { next, result: { credential, expiresAtMs, revokedBeforeMs } };
      });
    },
    register(cluster, presented, fleetTokenOk, lifetimeMs) {
      return mutate<RegistrationDecision>(cluster, (r) => {
        const t = now();
        const perCluster = credentialMatches(r, presented, t);
        if (!perCluster && !fleetTokenOk) return { next: undefined, result: { ok: false, why: "bad_credential", record: r } };
        if (holdsLiveIdentity(r, t)) return { next: undefined, result: { ok: false, why: "live_identity", record: r } };
        const issuedAtMs = issueTime(r);
        const { credential: _consumed, ...rest } = r;
        // A per-cluster credential is consumed by its use; a fleet token leaves an unused credential alone.
        const next: ClusterIdentityRecord = { ...(perCluster ? rest : r), issued: { issuedAtMs, notAfterMs: notAfterOf(issuedAtMs, lifetimeMs) } };
        return { next, result: { ok: true, issuedAtMs } };
      });
    },
    recordRenewal(cluster, lifetimeMs) {
      return mutate(cluster, (r) => {
        const issuedAtMs = issueTime(r);
        return { next: { ...r, issued: { issuedAtMs, notAfterMs: notAfterOf(issuedAtMs, lifetimeMs) } }, result: issuedAtMs };
      });
    },
    observeCertificate(cluster, issuedAtMs, notAfterMs) {
      return mutate(cluster, (r) => {
        if ((r.issued && r.issued.issuedAtMs >= issuedAtMs) || issuedAtMs <= (r.revokedBeforeMs ?? -1)) return { next: undefined, result: undefined };
        return { next: { ...r, issued: { issuedAtMs, notAfterMs } }, result: undefined };
      });
    },
    revoke(cluster, reason) {
      return mutate(cluster, (r) => {
        const t = now();
        const revokedBeforeMs = Math.max(t, lastIssuedAt, r.issued?.issuedAtMs ?? 0, r.revokedBeforeMs ?? 0);
        const { credential: _unused, issued: _gone, ...rest } = r;
        return { next: { ...rest, revokedBeforeMs, revocation: { atMs: t, reason } }, result: revokedBeforeMs };
      });
    },
  };
}

/** An in-memory ClusterRecordStore (one process; tests and standalone trials). */
export function createMemoryRecordStore(describe = "memory (lost on restart)"): ClusterRecordStore {
  const records = new Map<string, StoredRecord>();
  let revision = 0;
  return {
    describe,
    get: (cluster) => Promise.resolve(records.get(cluster)),
    list: () => Promise.resolve(new Map(records)),
    swap(cluster, expected, next) {
      if (records.get(cluster)?.revision !== expected) return Promise.resolve(false);
      if (next === undefined) records.delete(cluster);
      else records.set(cluster, { value: next, revision: String(++revision) });
      return Promise.resolve(true);
    },
  };
}
