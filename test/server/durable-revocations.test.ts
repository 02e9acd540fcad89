// Revocations kept beside the PKI (src/server/durable-revocations.ts, issue #40): a shared store that
// forgets (Redis flushed, restarted empty, failed over) never un-revokes a certificate. Over the real
// identity logic (createClusterIdentities) with two in-memory record stores standing for Redis and the
// PKI directory.
import { describe, expect, it } from "vitest";
import { createClusterIdentities, createMemoryRecordStore, holdsLiveIdentity, type ClusterRecordStore, type StoredRecord } from "../../src/relay/index.js";
import { isRevoked } from "../../src/relay/peer-gate.js";
import { withDurableRevocations } from "../../src/server/index.js";

/** A memory store that can be emptied (FLUSHALL) and can fail its writes. */
function flushable(): ClusterRecordStore & { flush(): void; failWrites: boolean; down: boolean } {
  let inner = createMemoryRecordStore("redis");
  const s = {
    describe: "redis",
    failWrites: false,
    down: false,
    flush() {
      inner = createMemoryRecordStore("redis");
    },
    get: (c: string) => (s.down ? Promise.reject(new Error("redis down")) : inner.get(c)),
    list: () => (s.down ? Promise.reject(new Error("redis down")) : inner.list()),
    swap: (c: string, e: string | undefined, n: string | undefined) => (s.failWrites ? Promise.reject(new Error("redis down")) : inner.swap(c, e, n)),
  };
  return s;
}

const HOUR = 3600_000;

describe("withDurableRevocations", () => {
  it("a revocation survives the shared store forgetting it: the revoked certificate stays revoked and never becomes the live identity", async () => {
    const redis = flushable();
    const pki = createMemoryRecordStore("pki-dir");
    let t = 1_000_000;
    const ids = createClusterIdentities(withDurableRevocations(redis, pki), { now: () => t });
    const { credential } = await ids.mintCredential("cluster1");
    const reg = await ids.register("cluster1", credential, false, HOUR);
    expect(reg.ok).toBe(true);
    const issuedAtMs = (reg as { issuedAtMs: number }).issuedAtMs;
    t += 1000;
    await ids.mintCredential("cluster1", { reissue: true, reason: "stolen" });
    expect(isRevoked(await ids.read("cluster1"), issuedAtMs)).toBe(true);

    redis.flush(); // Redis restarted empty
    expect(await redis.get("cluster1")).toBeUndefined();
    const after = await ids.read("cluster1");
    expect(isRevoked(after, issuedAtMs)).toBe(true);
    expect(after.revocation?.reason).toBe("stolen");
    // what the peer gate does with a valid-looking certificate: recording it as live is refused below the floor
    await ids.observeCertificate("cluster1", issuedAtMs, issuedAtMs + HOUR);
    expect(holdsLiveIdentity(await ids.read("cluster1"), t)).toBe(false);
    // a new registration is still possible (after the floor) and recorded in the shared store again
    const fresh = await ids.mintCredential("cluster1");
    const again = await ids.register("cluster1", fresh.credential, false, HOUR);
    expect(again.ok).toBe(true);
    expect((again as { issuedAtMs: number }).issuedAtMs).toBeGreaterThan(after.revokedBeforeMs!);
    expect(holdsLiveIdentity(await ids.read("cluster1"), t)).toBe(true);
    expect(isRevoked(await ids.read("cluster1"), issuedAtMs)).toBe(true);
    expect(JSON.parse((await redis.get("cluster1"))!.value)).toMatchObject({ revokedBeforeMs: after.revokedBeforeMs });
  });

  it("the floor is made durable before the shared write, copied from the shared store when another replica revoked, and listed", async () => {
    const redis = flushable();
    const pki = createMemoryRecordStore("pki-dir");
    const otherPki = createMemoryRecordStore("other replica's pki-dir");
    let t = 5_000_000;
    const mine = createClusterIdentities(withDurableRevocations(redis, pki), { now: () => t });
    const other = createClusterIdentities(withDurableRevocations(redis, otherPki), { now: () => t });
    // a revocation whose shared write fails is already kept beside the PKI (in force, never the opposite)
    redis.failWrites = true;
    await expect(mine.revoke("c1", "removed")).rejects.toThrow("redis down");
    redis.failWrites = false;
    expect(JSON.parse((await pki.get("c1"))!.value)).toMatchObject({ revokedBeforeMs: t, revocation: { reason: "removed" } });
    // the other replica revokes c2: this replica copies it on its next list (the stream supervisor's revalidation)
    t += 10;
    await other.revoke("c2", "re-issued");
    expect(await pki.get("c2")).toBeUndefined();
    const listed = await mine.list();
    expect(listed.get("c1")?.revokedBeforeMs).toBe(5_000_000);
    expect(listed.get("c2")?.revokedBeforeMs).toBe(t);
    expect(JSON.parse((await pki.get("c2"))!.value)).toMatchObject({ revokedBeforeMs: t });
    redis.flush();
    expect((await mine.list()).get("c2")?.revokedBeforeMs).toBe(t);
    // the kept floor never goes down, even when the shared record is deleted
    const store = withDurableRevocations(redis, pki);
    const rec = (await store.get("c2")) as StoredRecord;
    expect(await store.swap("c2", rec.revision, undefined)).toBe(true);
    expect(JSON.parse((await store.get("c2"))!.value)).toMatchObject({ revokedBeforeMs: t });
  });

  it("while the shared store is down, a kept revocation still answers (a restarted server has seen no record yet)", async () => {
    const redis = flushable();
    const pki = createMemoryRecordStore("pki-dir");
    let t = 9_000_000;
    const ids = createClusterIdentities(withDurableRevocations(redis, pki), { now: () => t });
    const { credential } = await ids.mintCredential("c1");
    const reg = (await ids.register("c1", credential, false, HOUR)) as { ok: true; issuedAtMs: number };
    t += 5;
    await ids.revoke("c1", "stolen");
    redis.down = true;
    const restarted = createClusterIdentities(withDurableRevocations(redis, pki), { now: () => t });
    expect(isRevoked(await restarted.read("c1"), reg.issuedAtMs)).toBe(true);
    // a cluster without a kept revocation: the outage is reported (the peer gate then uses what it saw)
    await expect(restarted.read("c2")).rejects.toThrow("redis down");
  });
});
