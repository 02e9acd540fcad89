import { describe, expect, it } from "vitest";
import { parseAllDocuments, stringify } from "yaml";
import { loadDesiredState, type SourceFile } from "../../src/config/index.js";
import { Severity, type Diagnostic } from "../../src/core/index.js";
import { generateFleet, type FleetFile, type FleetOptions } from "../../src/devtools/index.js";
import { compareRenders, renderJson, renderMarkdown, type DiffReport, type RenderSide } from "../../src/git-sync/index.js";
import { loadRevisions, renderRecord, renderRevisions, renderRevisionsFromStored, translateAll, type DiscoveryMap, type RevisionRender, type TranslationResult } from "../../src/translate/index.js";
import { createRandom } from "../helpers/random.js";

// 6 clusters in blocks of 2, 5 workspaces per block: 15 workspaces in a ring of import/export.
const OPTIONS: FleetOptions = {
  name: "diff-render",
  seed: 7,
  clusters: 6,
  servicesPerCluster: 40,
  servicesPerNamespace: 4,
  namespacesPerWorkspace: 2,
  clustersPerWorkspace: 2,
  routesPerTable: 3,
  virtualDestinationsPerWorkspace: 2,
  isolationEvery: 4,
  federationEvery: 5,
  externalServicesPerWorkspace: 1,
};
const fleet = generateFleet(OPTIONS);
const discovery = fleet.discovery as unknown as DiscoveryMap;

/** A full translation's output, as bytes per cluster: what the incremental head must equal. */
function bytesOf(result: TranslationResult): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [c, o] of [...result.clusters].sort(([a], [b]) => (a < b ? -1 : 1))) out[c] = JSON.stringify(o);
  return out;
}

function expectSameAsFullHead(base: readonly SourceFile[], head: readonly SourceFile[]): readonly string[] | undefined {
  const renders = renderRevisions(loadRevisions(base, head), discovery);
  const fullLoad = loadDesiredState(head);
  const full = translateAll(fullLoad.state, discovery);
  expect(renders.head.load.diagnostics).toEqual(fullLoad.diagnostics);
  expect([...renders.head.result.clusters.keys()].sort()).toEqual([...full.clusters.keys()].sort());
  expect(bytesOf(renders.head.result)).toEqual(bytesOf(full));
  expect(JSON.stringify(renders.head.result.diagnostics)).toBe(JSON.stringify(full.diagnostics));
  expect(bytesOf(renders.base.result)).toEqual(bytesOf(translateAll(loadDesiredState(base).state, discovery)));
  return renders.rerun;
}

type Doc = Record<string, unknown> & { metadata: { name: string; namespace: string } };

function docsOf(f: FleetFile): Doc[] {
  return parseAllDocuments(f.content).map((d) => d.toJS() as Doc);
}

function fileOf(path: string, docs: readonly Doc[]): FleetFile {
  return { path, content: docs.map((d) => stringify(d, { lineWidth: 0 })).join("---\n") };
}

/**
 * One random edit of the kind a pull request makes: a field, an object added, moved or removed, a
 * file removed, a new file. `only` restricts it to some files (by path), `op` picks the edit.
 */
function mutate(files: FleetFile[], r: () => number, only?: (path: string) => boolean, op?: number): void {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(r() * list.length)]!;
  const candidates = only === undefined ? undefined : files.flatMap((f, j) => (only(f.path) ? [j] : []));
  const i = candidates === undefined ? Math.floor(r() * files.length) : pick(candidates);
  const f = files[i]!;
  const docs = docsOf(f);
  const d = pick(docs);
  switch (op ?? Math.floor(r() * 5)) {
    case 5: // a new file next to it, holding a copy of one object under another name
      files.push(fileOf(f.path.replace(/\.yaml$/, "-new.yaml"), [{ ...d, metadata: { ...d.metadata, name: `${d.metadata.name}-new` } }]));
      return;
    case 0: // remove the file
      files.splice(i, 1);
      return;
    case 1: // remove one object
      files[i] = fileOf(f.path, docs.filter((x) => x !== d));
      return;
    case 2: // add a copy under another name
      files[i] = fileOf(f.path, [...docs, { ...d, metadata: { ...d.metadata, name: `${d.metadata.name}-copy` } }]);
      return;
    case 3: {
      // move the object to a namespace of another workspace
      const other = pick(files.flatMap(docsOf)).metadata.namespace;
      files[i] = fileOf(f.path, docs.map((x) => (x === d ? { ...x, metadata: { ...x.metadata, namespace: other } } : x)));
      return;
    }
    default: {
      // change one number or string leaf of the spec
      const edit = (v: unknown): unknown => {
        if (typeof v === "number") return v + 1;
        if (typeof v === "string") return `${v}x`;
        if (Array.isArray(v)) {
          if (v.length === 0) return v;
          const k = Math.floor(r() * v.length);
          return v.map((x, j) => (j === k ? edit(x) : x));
        }
        if (v !== null && typeof v === "object") {
          const keys = Object.keys(v);
          if (keys.length === 0) return v;
          const k = pick(keys);
          return { ...(v as Record<string, unknown>), [k]: edit((v as Record<string, unknown>)[k]) };
        }
        return v;
      };
      files[i] = fileOf(f.path, docs.map((x) => (x === d ? { ...x, spec: edit(x.spec) } : x)));
    }
  }
}

describe("gitmesh diff renders the head incrementally, identical to a full translation", () => {
  it("one-policy change: re-runs only the workspaces it touches, output and diagnostics byte-identical", () => {
    const head = fleet.files.map((f) => (f.path === fleet.onePolicyChange.after.path ? fleet.onePolicyChange.after : f));
    const rerun = expectSameAsFullHead(fleet.files, head);
    expect(rerun).toBeDefined();
    expect(rerun!.length).toBeGreaterThan(0);
    expect(rerun!.length).toBeLessThan(fleet.counts.workspaces);
  });

  it("no change: nothing re-run, the head is the base", () => {
    const renders = renderRevisions(loadRevisions(fleet.files, fleet.files), discovery);
    expect(renders.rerun).toEqual([]);
    for (const [c, out] of renders.head.result.clusters) expect(out).toBe(renders.base.result.clusters.get(c));
  });

  it("gitmesh.yaml changed: the head is loaded and translated in full", () => {
    const head = [...fleet.files, { path: "gitmesh.yaml", content: "ignore: [admin/]\n" }];
    expect(expectSameAsFullHead(fleet.files, head)).toBeUndefined();
  });

  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    it(`random edits (seed ${seed})`, () => {
      const r = createRandom(seed);
      const head = [...fleet.files];
      for (let n = 1 + Math.floor(r() * 3); n > 0; n--) mutate(head, r);
      expectSameAsFullHead(fleet.files, head);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// The report itself (what `gitmesh diff` prints and /api/diff answers) against full translations.

/** The side of a report as the CLI (src/cli/diff.ts) and the server (src/server/diff-service.ts) build it. */
function side(ref: string, render: RevisionRender): RenderSide {
  return {
    ref,
    commit: ref === "base" ? "b".repeat(40) : "c".repeat(40),
    clusters: new Map([...render.result.clusters].map(([c, out]) => [c, out.resources])),
    diagnostics: [...render.load.diagnostics, ...render.result.diagnostics],
  };
}

function fullRender(files: readonly SourceFile[]): RevisionRender {
  const load = loadDesiredState(files);
  return { load, result: translateAll(load.state, discovery) };
}

interface Seen {
  rerun: number[];
  clusters: number;
  introduced: number;
  fixed: number;
  headErrors: number;
  /** Errors of head reported in files of workspaces the head did not translate again. */
  errorsOutsideRerun: number;
}
const seen: Seen = { rerun: [], clusters: 0, introduced: 0, fixed: 0, headErrors: 0, errorsOutsideRerun: 0 };

/** The report of renderRevisions (base in full, head incrementally) is the report of two full translations, JSON and Markdown to the byte. */
function expectSameReport(base: readonly SourceFile[], head: readonly SourceFile[], full: { base: RevisionRender; head: RevisionRender }): DiffReport {
  const renders = renderRevisions(loadRevisions(base, head), discovery);
  seen.rerun.push(renders.rerun?.length ?? -1);
  const got = compareRenders(side("base", renders.base), side("head", renders.head));
  const want = compareRenders(side("base", full.base), side("head", full.head));
  expect(renderJson(got)).toBe(renderJson(want));
  // A small limit, so that the splitting into several comment bodies is compared too.
  expect(renderMarkdown(got, { maxChars: 4000 })).toEqual(renderMarkdown(want, { maxChars: 4000 }));
  seen.clusters += want.clusters.length;
  seen.introduced += want.introduced.length;
  seen.fixed += want.fixed.length;
  seen.headErrors += want.headErrors;
  const rerun = new Set(renders.rerun ?? []);
  const outside = (d: Diagnostic) => /^workspaces\/([^/]+)\//.exec(d.file ?? "")?.[1];
  if (renders.rerun !== undefined) {
    seen.errorsOutsideRerun += renders.head.result.diagnostics.filter((d) => d.severity === Severity.Error && outside(d) !== undefined && !rerun.has(outside(d)!)).length;
  }
  return want;
}

const byPath = (re: RegExp) => (path: string) => re.test(path);
/** Edit kinds a pull request makes, each on the files it concerns (ops: 0 remove file, 1 remove object, 2 copy, 3 move namespace, 4 edit a leaf, 5 new file). */
const EDITS: readonly { name: string; only: (path: string) => boolean; ops: readonly number[] }[] = [
  { name: "policy", only: byPath(/\/policies\.yaml$/), ops: [4, 4, 1, 2, 3, 5] },
  { name: "route table (imported by other workspaces)", only: byPath(/\/routes\.yaml$/), ops: [4, 4, 1, 2, 3, 0] },
  { name: "destination", only: byPath(/\/destinations\.yaml$/), ops: [4, 1, 2, 3, 5] },
  { name: "Workspace", only: byPath(/\/workspace\.yaml$/), ops: [4, 4, 0, 5] },
  { name: "WorkspaceSettings", only: byPath(/\/settings\.yaml$/), ops: [4, 4, 0, 5] },
  { name: "KubernetesCluster", only: byPath(/^clusters\//), ops: [4, 1] },
  { name: "admin object", only: byPath(/^admin\//), ops: [4, 0] },
  { name: "file removed", only: () => true, ops: [0] },
  { name: "new file", only: () => true, ops: [5] },
];

/**
 * The fleet with problems in one workspace (ws-010) that the edits below do not touch (mostly): a
 * route to a service that does not exist (a translation error) and a policy with a duration the
 * loader rejects (a load error, and a translation warning about the failover it leaves without
 * outlier detection). They are in base and head alike: the report must count them in head's errors
 * and list them neither as introduced nor as fixed.
 */
const broken: FleetFile[] = fleet.files.map((f) => {
  if (f.path === "workspaces/ws-010/routes.yaml") return { ...f, content: f.content.replace("name: svc-03\n", "name: svc-missing\n") };
  if (f.path === "workspaces/ws-010/policies.yaml") return { ...f, content: f.content.replace("interval: 10s", "interval: 10x") };
  return f;
});

describe("gitmesh diff's report from renderRevisions equals the report of two full translations", () => {
  const baseFull = fullRender(fleet.files);
  const brokenFull = fullRender(broken);

  it("the broken fleet has translation errors of its own", () => {
    expect(brokenFull.result.diagnostics.filter((d) => d.severity === Severity.Error && d.file === "workspaces/ws-010/routes.yaml").length).toBeGreaterThan(0);
    expect(brokenFull.load.diagnostics.filter((d) => d.severity === Severity.Error).length).toBeGreaterThan(0);
  });

  it("one-policy change", () => {
    const head = fleet.files.map((f) => (f.path === fleet.onePolicyChange.after.path ? fleet.onePolicyChange.after : f));
    const report = expectSameReport(fleet.files, head, { base: baseFull, head: fullRender(head) });
    expect(report.clusters.length).toBeGreaterThan(0);
  });

  for (const [k, edit] of EDITS.entries()) {
    for (const seed of [1, 2, 3]) {
      it(`${edit.name} (seed ${seed}), both directions`, () => {
        const r = createRandom(1000 * (k + 1) + seed);
        // Seed 3 starts from the fleet with errors of its own.
        const [start, startFull] = seed === 3 ? [broken, brokenFull] : [fleet.files, baseFull];
        const head = [...start];
        mutate(head, r, edit.only, edit.ops[Math.floor(r() * edit.ops.length)]);
        // Sometimes a second, unrelated edit in the same pull request.
        if (r() < 0.3) mutate(head, r);
        const headFull = fullRender(head);
        expectSameReport(start, head, { base: startFull, head: headFull });
        // Reversed: what head broke, base fixes (the "fixed" side of the report).
        expectSameReport(head, start, { base: headFull, head: startFull });
      });
    }
  }

  it("the cases above covered heads re-running some and all workspaces, changed clusters, introduced and fixed diagnostics, head errors", () => {
    // Some edits re-ran a few workspaces, some (Workspace, WorkspaceSettings, KubernetesCluster) all of them.
    expect(seen.rerun.some((n) => n > 0 && n < fleet.counts.workspaces)).toBe(true);
    expect(seen.rerun.some((n) => n >= fleet.counts.workspaces)).toBe(true);
    expect(seen.clusters).toBeGreaterThan(0);
    expect(seen.introduced).toBeGreaterThan(0);
    expect(seen.fixed).toBeGreaterThan(0);
    expect(seen.headErrors).toBeGreaterThan(0);
    expect(seen.errorsOutsideRerun).toBeGreaterThan(0);
  });
});

// ---------------------------------------------------------------------------------------------
// The report from a stored base (the audit branch's render record, #39) against full translations.

describe("gitmesh diff's report from the base's stored render record equals the report of two full translations", () => {
  const baseFull = fullRender(fleet.files);
  const brokenFull = fullRender(broken);
  /** The record as it comes back from the audit branch: through JSON. */
  const stored = (render: RevisionRender): unknown => JSON.parse(JSON.stringify(renderRecord(render.result)));
  const used = { stored: 0, fellBack: 0, translatedLess: 0 };

  function expectSameReportFromStored(base: readonly SourceFile[], head: readonly SourceFile[], full: { base: RevisionRender; head: RevisionRender }): void {
    const renders = renderRevisionsFromStored(loadRevisions(base, head), discovery, stored(full.base));
    const want = compareRenders(side("base", full.base), side("head", full.head));
    if (renders === undefined) {
      used.fellBack++;
      return;
    }
    used.stored++;
    if (renders.base.result.clusters.size > 0 && [...renders.base.result.clusters.values()].some((c) => c.resources.length === 0 && (full.base.result.clusters.get(c.cluster)?.resources.length ?? 0) > 0)) used.translatedLess++;
    const got = compareRenders(side("base", renders.base), side("head", renders.head));
    expect(renderJson(got)).toBe(renderJson(want));
    expect(renderMarkdown(got, { maxChars: 4000 })).toEqual(renderMarkdown(want, { maxChars: 4000 }));
  }

  it("one-policy change: only the clusters the change reaches are assembled", () => {
    const head = fleet.files.map((f) => (f.path === fleet.onePolicyChange.after.path ? fleet.onePolicyChange.after : f));
    const loaded = loadRevisions(fleet.files, head);
    const renders = renderRevisionsFromStored(loaded, discovery, stored(baseFull));
    expect(renders).toBeDefined();
    const assembled = [...renders!.base.result.clusters.values()].filter((c) => c.resources.length > 0).length;
    expect(assembled).toBeGreaterThan(0);
    expect(assembled).toBeLessThan(fleet.counts.clusters);
    expectSameReportFromStored(fleet.files, head, { base: baseFull, head: fullRender(head) });
  });

  it("a record of another base is not used (the caller translates)", () => {
    const head = fleet.files.map((f) => (f.path === fleet.onePolicyChange.after.path ? fleet.onePolicyChange.after : f));
    const other = JSON.parse(JSON.stringify(renderRecord(translateAll(loadDesiredState(fleet.files.filter((f) => !f.path.startsWith("workspaces/ws-001/"))).state, discovery))));
    expect(renderRevisionsFromStored(loadRevisions(fleet.files, head), discovery, other)).toBeUndefined();
    expect(renderRevisionsFromStored(loadRevisions(fleet.files, head), discovery, { workspaces: "no" })).toBeUndefined();
  });

  for (const [k, edit] of EDITS.entries()) {
    for (const seed of [1, 2, 3]) {
      it(`${edit.name} (seed ${seed}), both directions`, () => {
        const r = createRandom(1000 * (k + 1) + seed);
        const [start, startFull] = seed === 3 ? [broken, brokenFull] : [fleet.files, baseFull];
        const head = [...start];
        mutate(head, r, edit.only, edit.ops[Math.floor(r() * edit.ops.length)]);
        if (r() < 0.3) mutate(head, r);
        const headFull = fullRender(head);
        expectSameReportFromStored(start, head, { base: startFull, head: headFull });
        expectSameReportFromStored(head, start, { base: headFull, head: startFull });
      });
    }
  }

  it("the cases above used the stored record, and skipped clusters with it", () => {
    expect(used.stored).toBeGreaterThan(used.fellBack);
    expect(used.translatedLess).toBeGreaterThan(0);
  });
});
