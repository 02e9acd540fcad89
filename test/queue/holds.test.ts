/**
 * Completeness per dependency in the pipeline (standalone, the same handlers as on Redis): what an
 * output keeps although its inputs no longer render it (frozen tables, a failing workspace, a
 * cluster without discovery), what it reports, and the options it carries for the agent.
 */
import { afterEach, describe, expect, it } from "vitest";
import { NeedsHumanError } from "../../src/core/index.js";
import { computeHolds, createPipeline, type OutputEvent, type Pipeline, type PipelineOptions } from "../../src/queue/index.js";
import type { WorkspaceStatus } from "../../src/store/index.js";
import { assembleCluster, resourceKey, translateWorkspace } from "../../src/translate/index.js";
import { outputSink } from "./fixture.js";
import { meshState, snapshotOf, vsKey, type MeshSpec } from "./holds-fixture.js";

const open: Pipeline[] = [];
afterEach(async () => {
  for (const p of open.splice(0)) await p.close();
});

async function make(options: Partial<PipelineOptions> = {}) {
  const sink = outputSink();
  const p = await createPipeline({ onOutput: sink.onOutput, backoffMs: 10, debounceMs: 10, ...options });
  open.push(p);
  return { p, sink };
}
const keys = (e: OutputEvent | undefined) => (e?.resources ?? []).map(resourceKey);
const vs = (e: OutputEvent | undefined, key: string) => JSON.stringify(e?.resources.find((r) => resourceKey(r) === key));

/** The real translators, except that `workspace` fails (needs a person) while `failing` is set. */
function failable(workspace: string) {
  const state = {
    failing: false,
    translators: {
      translateWorkspace: ((ws, d, disc) => {
        if (ws === workspace && state.failing) throw new NeedsHumanError(`${workspace} cannot be translated (test)`);
        return translateWorkspace(ws, d, disc);
      }) satisfies typeof translateWorkspace,
      assembleCluster,
    },
  };
  return state;
}

const TWO = ["cluster1", "cluster2"];
const base: MeshSpec = { clusters: TWO, tables: { apps: ["a1", "a2"], team: ["t1", "t2"], shared: ["s1", "s2"] } };

describe("completeness per dependency (pipeline)", () => {
  it("FREEZE_CONFIG: a frozen table's last published VirtualService stays, unchanged, and is reported", async () => {
    const { p, sink } = await make();
    for (const c of TWO) await p.setDiscovery(c, snapshotOf(c));
    await p.setDesiredState({ commit: "c1", ref: "main", state: meshState({ ...base, freeze: ["a1"] }), changedKeys: [] });
    await p.idle();
    const key = vsKey("apps", "a1", "cluster1");
    const before = vs(sink.last.get("cluster1"), key);
    expect(keys(sink.last.get("cluster1"))).toContain(key);

    await p.setDesiredState({ commit: "c2", ref: "main", state: meshState({ ...base, freeze: ["a1"], broken: ["a1"] }), changedKeys: [] });
    await p.idle();
    const out = sink.last.get("cluster1")!;
    expect(out.sourceCommit).toBe("c2");
    expect(out.complete).toBe(true);
    expect(vs(out, key)).toBe(before);
    expect(out.held).toEqual([expect.objectContaining({ cause: "frozen", table: "apps/a1", objects: [key] })]);

    // Fixed: the table renders again (now with the fixed routes) and nothing is held.
    await p.setDesiredState({ commit: "c3", ref: "main", state: meshState({ ...base, freeze: ["a1"] }), changedKeys: [] });
    await p.idle();
    expect(sink.last.get("cluster1")!.held).toBeUndefined();
    expect(keys(sink.last.get("cluster1"))).toContain(key);
  });

  it("a registered cluster without discovery holds only the deletions of workspaces that span it, until it reports", async () => {
    const { p, sink } = await make();
    const three = [...TWO, "cluster3"];
    for (const c of TWO) await p.setDiscovery(c, snapshotOf(c));
    await p.setDesiredState({ commit: "c1", ref: "main", state: meshState({ ...base, clusters: three }), changedKeys: [] });
    await p.idle();
    await p.setDesiredState({ commit: "c2", ref: "main", state: meshState({ clusters: three, tables: { apps: ["a1"], team: ["t1", "t2"], shared: ["s1"] } }), changedKeys: [] });
    await p.idle();
    for (const c of TWO) {
      const out = sink.last.get(c)!;
      expect(out.complete, c).toBe(true);
      // apps spans cluster1 and cluster2 only: its deletion goes. shared spans cluster3 too: held.
      expect(keys(out)).not.toContain(vsKey("apps", "a2", c));
      expect(keys(out)).toContain(vsKey("shared", "s2", c));
      expect(out.held).toEqual([expect.objectContaining({ cause: "discovery", objects: [vsKey("shared", "s2", c)] })]);
      expect(out.held![0]!.reason).toContain('"cluster3"');
    }
    // cluster3 reports: the held deletion goes.
    await p.setDiscovery("cluster3", snapshotOf("cluster3"));
    await p.idle();
    for (const c of TWO) {
      expect(keys(sink.last.get(c)), c).not.toContain(vsKey("shared", "s2", c));
      expect(sink.last.get(c)!.held).toBeUndefined();
    }
  });

  it("after state loss, an object the cluster reports that must be held but is unknown makes the output incomplete", async () => {
    const { p, sink } = await make();
    const three = [...TWO, "cluster3"];
    const first = await make();
    for (const c of TWO) await first.p.setDiscovery(c, snapshotOf(c));
    await first.p.setDesiredState({ commit: "c1", ref: "main", state: meshState({ ...base, clusters: three }), changedKeys: [] });
    await first.p.idle();
    // What cluster1 holds (its discovery reports gitmesh-managed objects with their labels).
    const live = (c: string) =>
      first.sink.last.get(c)!.resources.map((r) => ({ apiVersion: r.apiVersion, kind: r.kind, namespace: r.metadata.namespace, name: r.metadata.name, labels: { ...r.metadata.labels }, managed: true }));
    // A new pipeline (state lost): s2 and a2 removed from Git, cluster3 still silent.
    for (const c of TWO) await p.setDiscovery(c, snapshotOf(c, live(c)));
    await p.setDesiredState({ commit: "c2", ref: "main", state: meshState({ clusters: three, tables: { apps: ["a1"], team: ["t1", "t2"], shared: ["s1"] } }), changedKeys: [] });
    await p.idle();
    const out = sink.last.get("cluster1")!;
    expect(out.complete).toBe(false);
    expect(out.incompleteReason).toContain(vsKey("shared", "s2", "cluster1"));
    expect(out.held).toEqual([expect.objectContaining({ cause: "discovery", objects: [vsKey("shared", "s2", "cluster1")] })]);
    // Without the hold need (every cluster reported), the same state is complete: a2 and s2 may go.
    await p.setDiscovery("cluster3", snapshotOf("cluster3"));
    await p.idle();
    expect(sink.last.get("cluster1")!.complete).toBe(true);
    expect(sink.last.get("cluster1")!.held).toBeUndefined();
  });

  it("a failing workspace holds only its own deletions, says so, and lets go when it translates again", async () => {
    const team = failable("team");
    const { p, sink } = await make({ translators: team.translators });
    for (const c of TWO) await p.setDiscovery(c, snapshotOf(c));
    await p.setDesiredState({ commit: "c1", ref: "main", state: meshState(base), changedKeys: [] });
    await p.idle();
    team.failing = true;
    const next = { clusters: TWO, tables: { apps: ["a1"], team: ["t1"], shared: ["s1", "s2"] } };
    await p.setDesiredState({ commit: "c2", ref: "main", state: meshState(next), changedKeys: [] });
    await p.idle();
    const out = sink.last.get("cluster1")!;
    expect(out.complete).toBe(true);
    expect(keys(out)).not.toContain(vsKey("apps", "a2", "cluster1"));
    expect(keys(out)).toContain(vsKey("team", "t2", "cluster1"));
    expect(out.held).toEqual([expect.objectContaining({ cause: "workspace", objects: [vsKey("team", "t1", "cluster1"), vsKey("team", "t2", "cluster1")] })]);
    expect(out.held![0]!.reason).toContain("team cannot be translated");
    team.failing = false;
    await p.setDesiredState({ commit: "c3", ref: "main", state: meshState({ ...next, tables: { ...next.tables, shared: ["s1"] } }), changedKeys: [] });
    await p.idle();
    expect(keys(sink.last.get("cluster1"))).not.toContain(vsKey("team", "t2", "cluster1"));
    expect(sink.last.get("cluster1")!.held).toBeUndefined();
  });

  it("a failing workspace keeps holding a deletion it already held, even when the hold's other reason goes away", async () => {
    // shared spans every registered cluster. Its s2 leaves Git while cluster3 is silent: held for
    // discovery. Then shared fails and cluster3 leaves Git in the same commit: the discovery reason is
    // gone, but shared has not translated that commit, so s2 must stay (cause "workspace") until it does.
    const shared = failable("shared");
    const { p, sink } = await make({ translators: shared.translators });
    const three = [...TWO, "cluster3"];
    for (const c of TWO) await p.setDiscovery(c, snapshotOf(c));
    await p.setDesiredState({ commit: "c1", ref: "main", state: meshState({ ...base, clusters: three }), changedKeys: [] });
    await p.idle();
    const fewer = { ...base.tables, shared: ["s1"] };
    await p.setDesiredState({ commit: "c2", ref: "main", state: meshState({ clusters: three, tables: fewer }), changedKeys: [] });
    await p.idle();
    const s2 = vsKey("shared", "s2", "cluster1");
    expect(sink.last.get("cluster1")!.held).toEqual([expect.objectContaining({ cause: "discovery", objects: [s2] })]);

    shared.failing = true;
    await p.setDesiredState({ commit: "c3", ref: "main", state: meshState({ clusters: TWO, tables: fewer }), changedKeys: [] });
    await p.idle();
    const out = sink.last.get("cluster1")!;
    expect(out.sourceCommit).toBe("c3");
    expect(keys(out)).toContain(s2);
    expect(out.held).toEqual([expect.objectContaining({ cause: "workspace", objects: [vsKey("shared", "s1", "cluster1"), s2] })]);
    expect(out.held![0]!.reason).toContain("shared cannot be translated");

    // shared translates again (cluster3 gone, every cluster it depends on reported): s2 goes.
    shared.failing = false;
    await p.setDesiredState({ commit: "c4", ref: "main", state: meshState({ clusters: TWO, tables: { ...fewer, apps: ["a1"] } }), changedKeys: [] });
    await p.idle();
    expect(keys(sink.last.get("cluster1"))).not.toContain(s2);
    expect(sink.last.get("cluster1")!.held).toBeUndefined();
  });

  it("carries allowMassDeletion for the named clusters of one commit only, and ignoreDifferences from gitmesh.yaml", async () => {
    const { p, sink } = await make();
    for (const c of TWO) await p.setDiscovery(c, snapshotOf(c));
    await p.setDesiredState({ commit: "c1", ref: "main", state: meshState(base), changedKeys: [] });
    await p.idle();
    expect(sink.last.get("cluster1")!.options).toBeUndefined();
    await p.setDesiredState({ commit: "c2", ref: "main", state: meshState({ ...base, tables: { ...base.tables, apps: [] } }), changedKeys: [], allowMassDeletion: ["cluster1"] });
    await p.idle();
    expect(sink.last.get("cluster1")!.options).toEqual({ allowMassDeletion: true });
    expect(sink.last.get("cluster2")!.options).toBeUndefined();
    // The next commit (even one that changes nothing else) takes the allowance back.
    await p.setDesiredState({ commit: "c3", ref: "main", state: meshState({ ...base, tables: { ...base.tables, apps: [] } }), changedKeys: [] });
    await p.idle();
    expect(sink.last.get("cluster1")!.sourceCommit).toBe("c3");
    expect(sink.last.get("cluster1")!.options).toBeUndefined();
    // gitmesh.yaml: ignoreDifferences goes to every cluster; allowMassDeletion there too.
    const settings = "ignoreDifferences:\n  - group: networking.istio.io\n    kind: VirtualService\n    jsonPointers: [/spec/http/0/route/0/weight]\nallowMassDeletion: [cluster2]\n";
    await p.setDesiredState({ commit: "c4", ref: "main", state: meshState({ ...base, settings }), changedKeys: [] });
    await p.idle();
    const rule = { group: "networking.istio.io", kind: "VirtualService", jsonPointers: ["/spec/http/0/route/0/weight"] };
    expect(sink.last.get("cluster1")!.options).toEqual({ ignoreDifferences: [rule] });
    expect(sink.last.get("cluster2")!.options).toEqual({ allowMassDeletion: true, ignoreDifferences: [rule] });
  });
});

describe("computeHolds: an output without the cluster's own discovery", () => {
  // In the pipeline a cluster that has not reported gets no fragments, hence seldom a cluster job (a
  // re-assessment of an output it already has, a replica reading discovery late): the rule is checked
  // here, where it is decided, rather than through a timing the pipeline rarely produces.
  it("is published, never as complete, and says which cluster has not reported; with its discovery it is complete", async () => {
    const { p, sink } = await make();
    for (const c of TWO) await p.setDiscovery(c, snapshotOf(c));
    const desired = meshState(base);
    await p.setDesiredState({ commit: "c1", ref: "main", state: desired, changedKeys: [] });
    await p.idle();
    const assembled = sink.last.get("cluster1")!.resources;
    expect(assembled.length).toBeGreaterThan(0);
    const statuses = new Map<string, WorkspaceStatus>(
      Object.keys(base.tables).map((w) => [w, { workspace: w, commit: "c1", generation: 1, diagnostics: [], discovered: TWO, atMs: 0 }]),
    );
    const input = { cluster: "cluster1", assembled, previous: undefined, desired, statuses, discovered: new Set(["cluster2"]), nowMs: 0 };

    const silent = computeHolds({ ...input, live: undefined });
    expect(silent.resources.map(resourceKey)).toEqual(assembled.map(resourceKey));
    expect(silent.held).toEqual([]);
    expect(silent).toMatchObject({ incompleteReason: expect.stringContaining('no discovery from cluster "cluster1"') });

    const reported = computeHolds({ ...input, discovered: new Set(TWO), live: [] });
    expect(reported.resources.map(resourceKey)).toEqual(assembled.map(resourceKey));
    expect(reported.incompleteReason).toBeUndefined();
  });
});
