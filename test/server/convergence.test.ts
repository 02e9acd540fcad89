// Convergence per source commit: publication, first ACK with its latency from acceptance, NACKs with
// their errors, later ACKs not counted twice, progress from other replicas merged, bounded history,
// and mirroring to the shared sink (the snapshot store).
import { describe, expect, it } from "vitest";
import { createConvergenceTracker, type ClusterProgress } from "../../src/server/index.js";

describe("convergence tracker", () => {
  it("records publication, the first ACK's latency and ignores repeated ACKs", () => {
    const mirrored: [string, ClusterProgress][] = [];
    const t = createConvergenceTracker({ sink: { record: (c, p) => (mirrored.push([c, p]), Promise.resolve()) } });
    t.accepted("abc", 1_000);
    t.published("c1", 3, "abc", 1_100);
    expect(t.ack({ cluster: "c1", version: 3, sourceCommit: "abc", atMs: 1_450 })).toBe(450);
    expect(t.ack({ cluster: "c1", version: 3, sourceCommit: "abc", atMs: 1_900 })).toBeUndefined();
    const p = t.get("abc")!.clusters.c1!;
    expect(p).toEqual({ cluster: "c1", version: 3, publishedAtMs: 1_100, appliedAtMs: 1_450, latencyMs: 450 });
    expect(mirrored.map(([c, x]) => `${c}:${x.cluster}:${x.appliedAtMs === undefined ? "published" : "applied"}`)).toEqual(["abc:c1:published", "abc:c1:applied"]);
  });

  it("an ACK of a newer version of the same commit moves the record to that version, without a second latency", () => {
    const t = createConvergenceTracker();
    t.accepted("abc", 1_000);
    t.published("c1", 1, "abc", 1_100);
    expect(t.ack({ cluster: "c1", version: 1, sourceCommit: "abc", atMs: 1_200 })).toBe(200);
    t.published("c1", 2, "abc", 1_300);
    expect(t.get("abc")!.clusters.c1).toMatchObject({ version: 1, appliedAtMs: 1_200 });
    expect(t.ack({ cluster: "c1", version: 2, sourceCommit: "abc", atMs: 1_400 })).toBeUndefined();
    expect(t.get("abc")!.clusters.c1).toEqual({ cluster: "c1", version: 2, publishedAtMs: 1_100, appliedAtMs: 1_400, latencyMs: 200 });
    expect(t.ack({ cluster: "c1", version: 1, sourceCommit: "abc", atMs: 1_500 })).toBeUndefined();
    expect(t.get("abc")!.clusters.c1!.version).toBe(2);
  });

  it("keeps NACKs with their per-resource errors, and a later ACK of the same commit replaces them", () => {
    const t = createConvergenceTracker();
    t.accepted("abc", 0);
    t.published("c2", 1, "abc", 10);
    t.nack({ cluster: "c2", version: 1, sourceCommit: "abc", atMs: 20, errors: [{ key: "networking.istio.io/v1/VirtualService/ns/a", message: "admission denied" }] });
    expect(t.get("abc")!.clusters.c2!.nack).toEqual({ atMs: 20, errors: [{ key: "networking.istio.io/v1/VirtualService/ns/a", message: "admission denied" }] });
    expect(t.ack({ cluster: "c2", version: 2, sourceCommit: "abc", atMs: 40 })).toBe(40);
    expect(t.get("abc")!.clusters.c2!.nack).toBeUndefined();
  });

  it("an ACK for a commit accepted on another replica has no latency but is recorded", () => {
    const t = createConvergenceTracker();
    expect(t.ack({ cluster: "c1", version: 1, sourceCommit: "elsewhere", atMs: 5 })).toBeUndefined();
    expect(t.get("elsewhere")!.clusters.c1!.appliedAtMs).toBe(5);
  });

  it("merges progress from other replicas without overwriting a newer local ACK", () => {
    const t = createConvergenceTracker();
    t.ack({ cluster: "c1", version: 4, sourceCommit: "abc", atMs: 50 });
    t.merge("abc", [
      { cluster: "c1", version: 4, publishedAtMs: 10 },
      { cluster: "c2", version: 2, publishedAtMs: 11, appliedAtMs: 60 },
    ]);
    const e = t.get("abc")!;
    expect(e.clusters.c1!.appliedAtMs).toBe(50);
    expect(e.clusters.c2!.appliedAtMs).toBe(60);
  });

  it("keeps the newest commits only, newest first", () => {
    const t = createConvergenceTracker({ keepCommits: 2 });
    for (const c of ["a", "b", "c"]) t.accepted(c, 0);
    expect(t.commits().map((c) => c.commit)).toEqual(["c", "b"]);
    expect(t.get("a")).toBeUndefined();
  });

  it("reports sink failures without throwing", async () => {
    const errors: unknown[] = [];
    const t = createConvergenceTracker({ sink: { record: () => Promise.reject(new Error("Redis down")) }, onSinkError: (e) => errors.push(e) });
    t.published("c1", 1, "abc", 0);
    await new Promise((r) => setTimeout(r, 10));
    expect(errors).toHaveLength(1);
  });
});
