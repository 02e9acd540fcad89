import { describe, expect, it } from "vitest";
import { parseAllDocuments, stringify } from "yaml";
import { loadDesiredState, type SourceFile } from "../../src/config/index.js";
import { generateFleet, type FleetFile, type FleetOptions } from "../../src/devtools/index.js";
import { loadRevisions, renderRevisions, translateAll, type DiscoveryMap, type TranslationResult } from "../../src/translate/index.js";
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

/** One random edit of the kind a pull request makes: a field, an object added, moved or removed, a file removed. */
function mutate(files: FleetFile[], r: () => number): void {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(r() * list.length)]!;
  const i = Math.floor(r() * files.length);
  const f = files[i]!;
  const docs = docsOf(f);
  const d = pick(docs);
  switch (Math.floor(r() * 5)) {
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
