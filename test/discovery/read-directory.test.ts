import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateFleet } from "../../bench/fleet/generate.js";
import { FLEET_PRESETS } from "../../bench/fleet/presets.js";
import { scanYamlValues } from "../../src/config/index.js";
import { canonicalYaml } from "../../src/core/index.js";
import {
  DiscoveryCode,
  discoveryFromFiles,
  readDiscoveryDirectory,
  snapshotChecksum,
  type DiscoverySnapshot,
} from "../../src/discovery/index.js";

const EXAMPLES = new URL("../../examples/discovery", import.meta.url).pathname;

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "gitmesh-discovery-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("readDiscoveryDirectory", () => {
  it("reads examples/discovery: one snapshot per cluster directory, no diagnostics", async () => {
    const { snapshots, diagnostics } = await readDiscoveryDirectory(EXAMPLES);
    expect(diagnostics).toEqual([]);
    expect([...snapshots.keys()]).toEqual(["cluster1", "cluster2"]);
    const c1 = snapshots.get("cluster1")!;
    expect(c1.meshes[0]).toMatchObject({ revision: "1-29", trustDomain: "cluster1" });
    expect(c1.workloads.filter((w) => w.podLabels.app === "reviews").map((w) => w.name)).toEqual(["reviews-v1", "reviews-v2"]);
    expect(snapshots.get("cluster2")!.gateways.find((g) => g.kind === "east-west")?.addresses).toEqual(["198.51.100.21"]);
  });

  it("reads snapshot documents (YAML in a cluster directory, JSON at the top level) equal to the manifests' conversion", async () => {
    const fromManifests = (await readDiscoveryDirectory(EXAMPLES)).snapshots;
    const dir = join(tmp, "snapshots");
    await mkdir(join(dir, "cluster1"), { recursive: true });
    await writeFile(join(dir, "cluster1", "snapshot.yaml"), canonicalYaml(fromManifests.get("cluster1")));
    // top-level snapshot file, as on the audit branch's discovery/<cluster>.yaml; shuffled order is fine
    const c2 = structuredClone(fromManifests.get("cluster2")!);
    c2.services.reverse();
    await writeFile(join(dir, "cluster2.json"), JSON.stringify(c2, null, 2));
    const { snapshots, diagnostics } = await readDiscoveryDirectory(dir);
    expect(diagnostics).toEqual([]);
    expect(snapshotChecksum(snapshots.get("cluster1")!)).toBe(snapshotChecksum(fromManifests.get("cluster1")!));
    expect(JSON.stringify(snapshots.get("cluster2"))).toBe(JSON.stringify(fromManifests.get("cluster2")));
  });

  it("reports problems with file, line and column", async () => {
    const dir = join(tmp, "broken");
    await mkdir(join(dir, "good"), { recursive: true });
    await mkdir(join(dir, "bad-yaml"), { recursive: true });
    await mkdir(join(dir, "bad-snapshot"), { recursive: true });
    await mkdir(join(dir, "mismatch"), { recursive: true });
    await mkdir(join(dir, "mixed"), { recursive: true });
    await mkdir(join(dir, "empty"), { recursive: true });
    await writeFile(join(dir, "good", "ns.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: a\nspec:\n  ports:\n  - port: 80\n    protocol: HTTP\n");
    await writeFile(join(dir, "bad-yaml", "x.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: [unclosed\n");
    await writeFile(join(dir, "bad-snapshot", "s.yaml"), "apiVersion: gitmesh.io/v1alpha1\nkind: DiscoverySnapshot\ncluster: bad-snapshot\nnamespaces: []\nservices:\n- name: s\n  namespace: a\n");
    await writeFile(join(dir, "mismatch", "s.yaml"), "kind: DiscoverySnapshot\ncluster: other\nnamespaces: []\nservices: []\nworkloads: []\nlocalities: []\nmeshes: []\ngateways: []\nistioObjects: []\n");
    await writeFile(join(dir, "mixed", "s.yaml"), "kind: DiscoverySnapshot\ncluster: mixed\nnamespaces: []\nservices: []\nworkloads: []\nlocalities: []\nmeshes: []\ngateways: []\nistioObjects: []\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n");
    await writeFile(join(dir, "stray.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: stray\n");
    await writeFile(join(dir, "good", "README.txt"), "not yaml, ignored");
    const { snapshots, diagnostics } = await readDiscoveryDirectory(dir);
    const summary = diagnostics.map((d) => `${d.file ?? ""}:${d.line ?? ""}:${d.column ?? ""} ${d.code}${d.path ? ` ${d.path}` : ""}`);
    expect(summary).toEqual([
      // one diagnostic per violation: 5 missing top-level sections, 4 missing service fields
      ...Array<string>(5).fill(`${dir}/bad-snapshot/s.yaml:1:1 ${DiscoveryCode.InvalidSnapshot} /`),
      ...Array<string>(4).fill(`${dir}/bad-snapshot/s.yaml:6:3 ${DiscoveryCode.InvalidSnapshot} /services/0`),
      `${dir}/bad-yaml/x.yaml:5:1 ${DiscoveryCode.YamlError}`,
      `${dir}/empty:: ${DiscoveryCode.NothingDiscovered}`,
      `${dir}/good/ns.yaml:14:15 ${DiscoveryCode.MalformedField} /spec/ports/0/protocol`,
      `${dir}/mismatch/s.yaml:2:10 ${DiscoveryCode.ClusterMismatch} /cluster`,
      `${dir}/mixed/s.yaml:1:1 ${DiscoveryCode.AmbiguousSource}`,
      `${dir}/stray.yaml:1:1 ${DiscoveryCode.NothingDiscovered}`,
    ]);
    expect(diagnostics.filter((d) => d.code === DiscoveryCode.InvalidSnapshot).map((d) => d.message)).toContain(
      "missing required field `workloads`; add it at the top level; the snapshot is not used",
    );
    expect([...snapshots.keys()]).toEqual(["good", "mixed"]);
    expect(snapshots.get("good")!.services[0]?.ports[0]).toEqual({ name: "", port: 80, targetPort: 80, protocol: "TCP" });
    // the snapshot document wins over the manifest next to it
    expect(snapshots.get("mixed")!.namespaces).toEqual([]);
  });

  // The audit branch's discovery/<cluster>.yaml is what `gitmesh diff` reads by default: 57 MB of YAML at
  // 100 clusters, which the yaml composer took 90 s and 2.6 GB to read. The config loader's scanner reads it;
  // the composer only makes a document when a diagnostic needs a line.
  it("reads the audit writer's YAML with the scanner, equal to the JSON of the same snapshots; lines still right", () => {
    const fleet = generateFleet(FLEET_PRESETS.small);
    const documents = [...fleet.discovery].map(([cluster, snapshot]) => ({ cluster, document: { apiVersion: "gitmesh.io/v1alpha1", kind: "DiscoverySnapshot", ...snapshot } }));
    const yamlFiles = documents.map(({ cluster, document }) => ({ path: `${cluster}.yaml`, content: canonicalYaml(document) }));
    for (const f of yamlFiles) expect(scanYamlValues(f.content), f.path).toBeDefined(); // the fast path answers
    const fromYaml = discoveryFromFiles(yamlFiles);
    const fromJson = discoveryFromFiles(documents.map(({ cluster, document }) => ({ path: `${cluster}.json`, content: JSON.stringify(document) })));
    expect(fromYaml.diagnostics).toEqual([]);
    expect(fromYaml.snapshots.size).toBe(documents.length);
    expect(JSON.stringify([...fromYaml.snapshots])).toBe(JSON.stringify([...fromJson.snapshots]));

    // A wrong value deep in a scanned file: reported at its own line and column.
    const text = yamlFiles[0]!.content;
    const at = text.indexOf("port: ", text.indexOf("\nservices:")); // a service port's number
    const broken = `${text.slice(0, at)}port: eighty${text.slice(text.indexOf("\n", at))}`;
    const column = at + "port: ".length - text.lastIndexOf("\n", at); // the value
    expect(scanYamlValues(broken)).toBeDefined();
    const { snapshots, diagnostics } = discoveryFromFiles([{ path: "c.yaml", content: broken }]);
    expect(snapshots.size).toBe(0);
    const line = text.slice(0, at).split("\n").length;
    expect(diagnostics.map((d) => `${d.file}:${d.line}:${d.column} ${d.code} ${d.path}`)).toEqual([`c.yaml:${line}:${column} ${DiscoveryCode.InvalidSnapshot} /services/0/ports/0/port`]);
  });

  it("a directory that does not exist is a diagnostic, not an exception", async () => {
    const { snapshots, diagnostics } = await readDiscoveryDirectory(join(tmp, "nope"));
    expect(snapshots.size).toBe(0);
    expect(diagnostics).toEqual([expect.objectContaining({ code: DiscoveryCode.ReadError, severity: "error" })]);
    expect(diagnostics[0]?.message).toContain("ENOENT");
  });
});

describe("discoveryFromFiles (pure, for Git blobs)", () => {
  it("takes contents as strings or bytes and passes conversion options through", () => {
    const ns = (name: string, team: string) => `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${name}\n  labels:\n    team: ${team}\n`;
    const { snapshots, diagnostics } = discoveryFromFiles(
      [
        { path: "east/a.yaml", content: ns("one", "x") },
        { path: "east/b.yml", content: new TextEncoder().encode(ns("two", "y")) },
      ],
      { discoverySelectors: [{ matchLabels: { team: "y" } }] },
    );
    expect(diagnostics).toEqual([]);
    const s: DiscoverySnapshot = snapshots.get("east")!;
    expect(s.namespaces.map((n) => n.name)).toEqual(["two"]);
  });

  it("the duplicate of a cluster at the top level is reported and ignored", () => {
    const snap = (cluster: string, ns: string) =>
      JSON.stringify({ kind: "DiscoverySnapshot", cluster, namespaces: [{ name: ns, labels: {} }], services: [], workloads: [], localities: [], meshes: [], gateways: [], istioObjects: [] });
    const { snapshots, diagnostics } = discoveryFromFiles([
      { path: "c1/s.json", content: snap("c1", "from-dir") },
      { path: "c1.json", content: snap("c1", "from-top") },
    ]);
    expect(snapshots.get("c1")!.namespaces[0]?.name).toBe("from-dir");
    expect(diagnostics.map((d) => [d.code, d.file])).toEqual([[DiscoveryCode.AmbiguousSource, "c1.json"]]);
  });
});
