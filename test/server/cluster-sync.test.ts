// The one truth of convergence (src/server/cluster-sync.ts; DESIGN.md "One truth of convergence"):
// in sync means the agent applied the output of the commit in force, same commit and same version.
import { describe, expect, it } from "vitest";
import { clusterSync, isTransientNack, nackTransient, pastCommitState, type ClusterSyncFacts } from "../../src/server/index.js";

const C = "c".repeat(40);
const OLD = "b".repeat(40);
const base: ClusterSyncFacts = {
  commit: C,
  cutOff: null,
  agent: "connected",
  output: { version: 3, sourceCommit: C },
  publishedVersion: 3,
  applied: { version: 3, sourceCommit: C },
  progress: { version: 3, appliedAtMs: 10 },
  held: null,
};
const sync = (over: Partial<ClusterSyncFacts>) => clusterSync({ ...base, ...over });

describe("clusterSync", () => {
  it("in sync: the output of the commit in force, applied at its version", () => {
    expect(sync({})).toEqual({ state: "in-sync", summary: `in sync: applied ${C.slice(0, 12)} (v3)`, commit: C });
    // Known through the shared store: the agent ACKed to another replica (no ACK on this one).
    expect(sync({ applied: undefined }).state).toBe("in-sync");
  });

  it("a commit that left the output unchanged is in sync once the cluster runs that version", () => {
    expect(sync({ output: { version: 3, sourceCommit: OLD }, applied: { version: 3, sourceCommit: OLD }, progress: { version: 3, appliedAtMs: 5 } }).state).toBe("in-sync");
    // Not yet resolved as run (no progress entry): the output is still the old commit's, translation pending.
    expect(sync({ output: { version: 3, sourceCommit: OLD }, applied: { version: 3, sourceCommit: OLD }, progress: undefined })).toMatchObject({ state: "not-applied", why: "translating" });
  });

  it("the same version number of another commit is not in sync (the issue's 'converged' while a commit was refused)", () => {
    expect(sync({ applied: { version: 3, sourceCommit: OLD }, progress: { version: 3 } })).toMatchObject({ state: "not-applied", why: "agent-applying" });
  });

  it("refused: a NACK that needs a person; retrying: a NACK every error of which is transient", () => {
    const refused = sync({ applied: { version: 2, sourceCommit: OLD }, progress: { version: 3, nack: "VirtualService/bookinfo/reviews: not owned by gitmesh" } });
    expect(refused.state).toBe("refused");
    expect(refused.summary).toContain("a person must act: VirtualService/bookinfo/reviews: not owned by gitmesh");
    const retrying = sync({ applied: { version: 2, sourceCommit: OLD }, progress: { version: 3, nack: "VirtualService/b/r: apply failed: HTTP 503: unavailable; DestinationRule/b/r: apply failed: HTTP 429: Too Many Requests" } });
    expect(retrying).toMatchObject({ state: "not-applied", why: "retrying" });
    expect(retrying.summary).toBe("not applied yet — retrying (VirtualService/b/r: apply failed: HTTP 503: unavailable (+1 more))");
    // An ACK after the NACK wins.
    expect(sync({ progress: { version: 3, appliedAtMs: 9, nack: "x: HTTP 422: invalid" } }).state).toBe("in-sync");
    // A NACK of an older version of the commit does not decide the newest one.
    expect(sync({ output: { version: 4, sourceCommit: C }, publishedVersion: 4, progress: { version: 3, nack: "x: HTTP 422: invalid" } })).toMatchObject({ state: "not-applied", why: "agent-applying" });
  });

  it("held: applied, with deletions held back; cut off wins over everything", () => {
    expect(sync({ held: { reason: "workspace bookinfo failing", since: "2026-01-01T00:00:00.000Z", objects: 2 } })).toMatchObject({ state: "held", summary: `applied ${C.slice(0, 12)} (v3); 2 deletion(s) held back since 2026-01-01T00:00:00.000Z: workspace bookinfo failing` });
    expect(sync({ cutOff: "certificate revoked" })).toMatchObject({ state: "cut-off", summary: "cut off: certificate revoked" });
  });

  it("not applied yet, and why: agent, translation, publication, apply", () => {
    const behind = { applied: { version: 2, sourceCommit: OLD }, progress: undefined };
    expect(sync({ ...behind, agent: "waiting", applied: undefined })).toMatchObject({ why: "waiting-for-agent" });
    expect(sync({ ...behind, agent: "disconnected", lastSeen: "2026-01-01T00:00:00.000Z" }).summary).toBe("not applied yet — agent disconnected (last seen 2026-01-01T00:00:00.000Z); the cluster keeps its last applied config");
    expect(sync({ ...behind, output: { version: 2, sourceCommit: OLD } })).toMatchObject({ why: "translating" });
    expect(sync({ ...behind, output: undefined })).toMatchObject({ why: "translating" });
    expect(sync({ ...behind, publishedVersion: 2 })).toMatchObject({ why: "output-pending" });
    expect(sync({ ...behind })).toMatchObject({ why: "agent-applying" });
    expect(sync({ commit: undefined })).toMatchObject({ state: "not-applied", why: "no-commit", commit: null });
  });
});

describe("isTransientNack and pastCommitState", () => {
  it("transient: 429, 5xx, connection errors, a lost Lease; not: 422, 403, ownership, an empty NACK", () => {
    for (const m of ["k: apply failed: HTTP 429: slow down", "k: HTTP 500: boom", "k: HTTP 504", "k: read ECONNRESET", "k: this replica is no longer the leader: it stopped applying", "k: request timed out"]) expect(isTransientNack([m])).toBe(true);
    for (const m of ["k: apply failed: HTTP 422: spec.hosts: Required value", "k: HTTP 403: forbidden", "k: not owned by gitmesh", "prune: mass deletion guard"]) expect(isTransientNack([m])).toBe(false);
    expect(isTransientNack(["k: HTTP 500: boom", "k2: HTTP 422: invalid"])).toBe(false);
    expect(isTransientNack([])).toBe(false);
  });

  it("a commit no longer in force: applied, refused, or superseded (a transient failure is not a refusal)", () => {
    expect(pastCommitState({ version: 1, appliedAtMs: 1 })).toBe("applied");
    expect(pastCommitState({ version: 1, nack: "k: HTTP 422: invalid" })).toBe("refused");
    expect(pastCommitState({ version: 1, nack: "k: HTTP 503: unavailable" })).toBe("superseded");
    expect(pastCommitState({ version: 1 })).toBe("superseded");
  });

  it("the agent's flag wins over the text; nackTransient reads it only when every error carries one", () => {
    expect(pastCommitState({ version: 1, nack: "k: HTTP 503: unavailable", nackTransient: false })).toBe("refused");
    expect(pastCommitState({ version: 1, nack: "k: HTTP 422: invalid", nackTransient: true })).toBe("superseded");
    expect(nackTransient([{ transient: true }, { transient: true }])).toBe(true);
    expect(nackTransient([{ transient: true }, { transient: false }])).toBe(false);
    expect(nackTransient([{ transient: true }, {}])).toBeUndefined();
    expect(nackTransient([])).toBeUndefined();
  });
});

describe("clusterSync: suspended (#38)", () => {
  const held = "suspended since 2026-11-29T08:00:00.000Z by admin token (incident 4711)";
  it("a suspended cluster is never in sync: behind when the commit in force is not what it runs", () => {
    const behind = sync({ suspended: held, applied: { version: 2, sourceCommit: OLD }, progress: { version: 3 } });
    expect(behind).toEqual({ state: "suspended", behind: true, summary: `${held}; runs v2 of ${OLD.slice(0, 12)}, behind the commit in force ${C.slice(0, 12)}: resume to apply it`, commit: C });
    const current = sync({ suspended: held });
    expect(current).toMatchObject({ state: "suspended", behind: false });
    expect(current.summary).toBe(`${held}; runs v3 of ${C.slice(0, 12)}, the commit in force ${C.slice(0, 12)}`);
  });

  it("cut off wins over suspended; no suspension leaves the other states as they were", () => {
    expect(sync({ suspended: held, cutOff: "certificate revoked" }).state).toBe("cut-off");
    expect(sync({ suspended: null }).state).toBe("in-sync");
  });

  it("the agent's own brake: its NACK with AGENT_SUSPENDED_KEY is shown suspended, not refused", () => {
    const nack = "gitmesh.io/agent-suspended: suspended since 2026-11-29T07:00:00.000Z by the cluster owner (agent chart value suspend: true; nothing is applied, pruned or repaired there until it is set back to false)";
    const s = sync({ applied: { version: 2, sourceCommit: OLD }, progress: { version: 3, nack, nackTransient: false } });
    expect(s.state).toBe("suspended");
    expect(s.summary).toMatch(/^suspended since 2026-11-29T07:00:00.000Z by the cluster owner \(agent chart value suspend: true.*; runs v2 of b{12}, behind the commit in force/);
    expect(pastCommitState({ version: 3, nack, nackTransient: false })).toBe("superseded");
  });
});
