import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { main } from "../../src/cli/main.js";
import { createCapturingIo } from "../../src/cli/io.js";
import { loadDesiredState } from "../../src/config/index.js";
import { DiscoveryCode, discoveryFromFiles, readDiscoveryDirectory } from "../../src/discovery/index.js";
import { generateFleet, type FleetOptions } from "../../src/devtools/index.js";
import { compareRenders, renderJson, renderMarkdown, type DiffReport, type RenderSide } from "../../src/git-sync/index.js";
import { translateAll } from "../../src/translate/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";

const OPTIONS: FleetOptions = {
  name: "diff-structural",
  seed: 11,
  clusters: 4,
  servicesPerCluster: 24,
  servicesPerNamespace: 4,
  namespacesPerWorkspace: 2,
  clustersPerWorkspace: 2,
  routesPerTable: 3,
  virtualDestinationsPerWorkspace: 2,
  isolationEvery: 3,
  federationEvery: 2,
  externalServicesPerWorkspace: 1,
};
const fleet = generateFleet(OPTIONS);
const snapshotDoc = (s: object) => ({ apiVersion: "gitmesh.io/v1alpha1", kind: "DiscoverySnapshot", ...s });

async function run(args: string[]) {
  const io = createCapturingIo();
  const code = await main(["diff", ...args], io);
  return { code, out: io.stdout(), err: io.stderr() };
}

describe("gitmesh diff compares by structure, reading JSON discovery without the YAML parser", () => {
  let server: GitServer;
  let base: string;
  let head: string;
  let work: string;
  let jsonDir: string;
  let yamlDir: string;
  const headFiles = new Map(fleet.files.map((f) => [f.path, f.content]));
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "gitmesh-diff-structural-"));
    server = await startGitServer();
    await server.createRepo("fleet");
    base = await server.commitFiles("fleet", Object.fromEntries(headFiles), "base");
    // A one-policy change, a removed file and a renamed object: added, changed and removed output.
    const removed = fleet.files.find((f) => f.path.endsWith("ws-001/routes.yaml"))!.path;
    const renamed = fleet.files.find((f) => f.path.endsWith("ws-002/destinations.yaml"))!;
    const renamedContent = renamed.content.replace(/name: (vd-\S+)/, "name: $1-renamed");
    headFiles.set(fleet.onePolicyChange.after.path, fleet.onePolicyChange.after.content);
    headFiles.delete(removed);
    headFiles.set(renamed.path, renamedContent);
    head = await server.commitFiles("fleet", { [fleet.onePolicyChange.after.path]: fleet.onePolicyChange.after.content, [removed]: null, [renamed.path]: renamedContent }, "head");
    // The same discovery twice: JSON (per-cluster directories, and one top-level file), and YAML.
    jsonDir = join(work, "json");
    yamlDir = join(work, "yaml");
    const clusters = [...fleet.discovery.keys()];
    for (const [i, c] of clusters.entries()) {
      const s = snapshotDoc(fleet.discovery.get(c)!);
      const dir = i === 0 ? jsonDir : join(jsonDir, c);
      mkdirSync(dir, { recursive: true });
      writeFileSync(i === 0 ? join(dir, `${c}.json`) : join(dir, "snapshot.json"), i === 0 ? JSON.stringify(s) : JSON.stringify(s, null, 2));
      mkdirSync(join(yamlDir, c), { recursive: true });
      writeFileSync(join(yamlDir, c, "snapshot.yaml"), stringify(s));
    }
  });
  afterAll(async () => {
    await server.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it("reads JSON snapshots to the same discovery as YAML", async () => {
    const fromJson = await readDiscoveryDirectory(jsonDir);
    const fromYaml = await readDiscoveryDirectory(yamlDir);
    expect(fromJson.diagnostics).toEqual([]);
    expect([...fromJson.snapshots.keys()]).toEqual([...fleet.discovery.keys()]);
    expect(fromJson.snapshots).toEqual(fromYaml.snapshots);
  });

  it("reports exactly what full translations of both revisions compared object by object report", async () => {
    const { snapshots } = await readDiscoveryDirectory(yamlDir);
    const side = (ref: string, commit: string, files: ReadonlyMap<string, string>): RenderSide => {
      const load = loadDesiredState([...files].map(([path, content]) => ({ path, content })));
      const result = translateAll(load.state, snapshots);
      return { ref, commit, clusters: new Map([...result.clusters].map(([c, o]) => [c, o.resources])), diagnostics: [...load.diagnostics, ...result.diagnostics] };
    };
    const expected = compareRenders(side(base, base, new Map(fleet.files.map((f) => [f.path, f.content]))), side(head, head, headFiles));
    const kinds = expected.clusters.map((c) => [c.added.length > 0, c.changed.length > 0, c.removed.length > 0]);
    expect(kinds.some(([a]) => a) && kinds.some(([, c]) => c) && kinds.some(([, , r]) => r)).toBe(true);

    const json = await run(["--repo", server.repoPath("fleet"), "--base", base, "--head", head, "--discovery", jsonDir, "--format", "json"]);
    expect(json.code).toBe(0);
    expect(json.out).toBe(renderJson(expected));
    const markdown = await run(["--repo", server.repoPath("fleet"), "--base", base, "--head", head, "--discovery", yamlDir, "--max-comment-chars", "4000"]);
    expect(markdown.out).toBe(renderMarkdown(expected, { maxChars: 4000 }).join("\n"));
    const out = join(work, "out");
    await run(["--repo", server.repoPath("fleet"), "--base", base, "--head", head, "--discovery", jsonDir, "--out-dir", out, "--max-comment-chars", "4000"]);
    expect(readFileSync(join(out, "comment-1.md"), "utf8")).toBe(renderMarkdown(expected, { maxChars: 4000 })[0]);
    expect(readFileSync(join(out, "report.json"), "utf8")).toBe(renderJson(expected));
  });

  it("posts at most --max-comments bodies, the last saying what it leaves out, with report.json whole", async () => {
    const out = join(work, "capped");
    const args = ["--repo", server.repoPath("fleet"), "--base", base, "--head", head, "--discovery", jsonDir, "--max-comment-chars", "2000"];
    const all = await run([...args, "--max-comments", "1000", "--out-dir", join(work, "uncapped")]);
    expect(all.code).toBe(0);
    const uncapped = readdirSync(join(work, "uncapped")).filter((f) => f.startsWith("comment-")).length;
    expect(uncapped).toBeGreaterThan(3); // the change needs more bodies than the cap below

    const capped = await run([...args, "--max-comments", "3", "--out-dir", out]);
    expect(capped.code).toBe(0);
    expect(capped.err).toContain("wrote 3 comment bodies");
    const bodies = [1, 2, 3].map((i) => readFileSync(join(out, `comment-${i}.md`), "utf8"));
    expect(existsSync(join(out, "comment-4.md"))).toBe(false);
    for (const [i, b] of bodies.entries()) {
      expect(b.length).toBeLessThanOrEqual(2000);
      expect(b.startsWith(`<!-- gitmesh-diff -->\n`)).toBe(true);
      expect(b).toContain(`— part ${i + 1}/3`);
      expect(b.split("<details>").length).toBe(b.split("</details>").length);
      expect(b.split("```").length % 2).toBe(1);
    }
    // What the bodies show plus what the note counts is every resource change of the report.
    const report = JSON.parse(readFileSync(join(out, "report.json"), "utf8")) as DiffReport;
    const total = report.clusters.reduce((n, c) => n + c.added.length + c.changed.length + c.removed.length, 0);
    const shown = bodies.join("").split("\n#### ").length - 1;
    const note = /_Not shown: ([\d,]+) resource changes? in (\d+) clusters?; the report is longer than 3 comments \(`--max-comments`\)/.exec(bodies[2]!);
    expect(note).not.toBeNull();
    expect(shown + Number(note![1]!.replace(/,/g, ""))).toBe(total);
    expect(readFileSync(join(out, "report.json"), "utf8")).toBe(readFileSync(join(work, "uncapped", "report.json"), "utf8"));

    expect((await run([...args, "--max-comments", "0"])).code).toBe(2);
  });

  it("points at the line and column of a problem in a JSON snapshot", () => {
    const text = JSON.stringify({ ...snapshotDoc(fleet.discovery.get("cluster-000")!), namespaces: "not-a-list" }, null, 2);
    const { snapshots, diagnostics } = discoveryFromFiles([{ path: "cluster-000/snapshot.json", content: text }]);
    expect(snapshots.size).toBe(0);
    const d = diagnostics.find((x) => x.code === DiscoveryCode.InvalidSnapshot && x.path === "/namespaces");
    expect(d, JSON.stringify(diagnostics)).toBeDefined();
    // The value's place (a scalar is pointed at itself), as when the file went through the YAML parser.
    const lines = text.split("\n");
    const line = lines.findIndex((l) => l.includes('"namespaces"'));
    expect([d!.line, d!.column]).toEqual([line + 1, lines[line]!.indexOf('"not-a-list"') + 1]);
    // Not JSON: read as YAML, whose parser reports the syntax error with its place.
    const broken = discoveryFromFiles([{ path: "cluster-000/snapshot.json", content: '{\n  "cluster": [\n' }]);
    expect(broken.diagnostics.length).toBeGreaterThan(0);
    expect(broken.diagnostics.every((x) => x.code === DiscoveryCode.YamlError && x.line === 3)).toBe(true);
  });
});
