import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { createCapturingIo } from "../../src/cli/io.js";
import { baseRepo, virtualDestination } from "../config/fixtures.js";

async function writeTree(root: string, files: Record<string, string>): Promise<void> {
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), content);
  }
}

async function run(...argv: string[]) {
  const io = createCapturingIo();
  const code = await main(argv, io);
  return { code, out: io.stdout(), err: io.stderr() };
}

describe("gitmesh validate", () => {
  let root: string;
  const good = () => join(root, "good");
  const warn = () => join(root, "warn");
  const bad = () => join(root, "bad");
  const base = () => Object.fromEntries(baseRepo().map((f) => [f.path, f.content as string]));

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "gitmesh-validate-"));
    await writeTree(good(), base());
    await writeTree(warn(), { ...base(), "extra/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: web}\n" });
    await writeTree(bad(), {
      ...base(),
      "workspaces/web/vd.yaml": `${virtualDestination("ok", "web")}---\napiVersion: networking.gloo.solo.io/v2\nkind: VirtualDestination\nmetadata:\n  name: broken\n  namespace: web\nspec:\n  hosts: [a.global]\n  ports:\n  - number: 9080\n    protocol: HTTPX\n`,
    });
    await writeFile(join(root, "a-file.yaml"), "x: 1\n");
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("exits 0 and prints a summary for a valid repository", async () => {
    const r = await run("validate", good());
    expect(r.code).toBe(0);
    expect(r.out).toBe("note: not translated: references to services and workloads, and route conflicts, are checked with --discovery <dir>\nok: 6 objects in 5 files: 0 errors, 0 warnings\n");
  });

  it("exits 0 with warnings only, printing them like a compiler", async () => {
    const r = await run("validate", warn());
    expect(r.code).toBe(0);
    expect(r.out).toBe(
      `${join(warn(), "extra/cm.yaml")}:2:1: warning UNSUPPORTED_KIND: ConfigMap web/c (v1) is not Gloo Mesh configuration; gitmesh does not apply it anywhere (at /kind)\n` +
        "note: not translated: references to services and workloads, and route conflicts, are checked with --discovery <dir>\n" +
        "ok: 6 objects in 6 files (1 unsupported): 0 errors, 1 warning\n",
    );
  });

  it("exits 1 on a Gloo kind it does not translate, and 0 once gitmesh.yaml leaves the kind to another tool", async () => {
    const ext = "apiVersion: security.policy.gloo.solo.io/v2\nkind: ClientTLSPolicy\nmetadata: {name: auth, namespace: web}\nspec: {}\n";
    const dir = join(root, "ext");
    await writeTree(dir, { ...base(), "workspaces/web/auth.yaml": ext });
    const rejected = await run("validate", dir);
    expect(rejected.code).toBe(1);
    expect(rejected.out).toContain(`${join(dir, "workspaces/web/auth.yaml")}:2:1: error UNTRANSLATED_GLOO_KIND: ClientTLSPolicy web/auth`);
    await writeTree(dir, { "gitmesh.yaml": "ignoreKinds: [ClientTLSPolicy]\n" });
    const ignored = await run("validate", dir);
    expect(ignored.code).toBe(0);
    expect(ignored.out).toContain("info IGNORED_KIND: ClientTLSPolicy web/auth (security.policy.gloo.solo.io/v2): ignored by configuration");
    expect(ignored.out.trim().split("\n").at(-1)).toBe("ok: 6 objects in 6 files (1 ignored by configuration): 0 errors, 0 warnings");
  });

  it("says so when a directory holds no configuration (exit 1), instead of ok", async () => {
    const empty = join(root, "empty");
    await mkdir(empty, { recursive: true });
    const r = await run("validate", empty);
    expect(r.code).toBe(1);
    expect(r.out).toContain(`no configuration found in ${empty}`);
  });

  it("a directory of YAML without one Gloo object (a Helm chart): 'no Gloo Mesh configuration found', one error per foreign document with the ignore hint (#38)", async () => {
    const chart = join(root, "a-chart");
    await writeTree(chart, {
      "values.yaml": "replicaCount: 1\nimage:\n  repository: nginx\n",
      "templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n",
    });
    const r = await run("validate", chart);
    expect(r.code).toBe(1);
    const lines = r.out.trim().split("\n");
    // One diagnostic for the values file, not one per missing field.
    expect(lines.filter((l) => l.includes("values.yaml"))).toEqual([
      `${join(chart, "values.yaml")}:1:1: error MISSING_API_VERSION: no \`apiVersion\` and no \`kind\`: this is not Gloo Mesh configuration (a Gloo object starts with e.g. \`apiVersion: networking.gloo.solo.io/v2\` and \`kind: RouteTable\`); if the file is something else (Helm values, CI settings), list it under \`ignore:\` in gitmesh.yaml (at /apiVersion)`,
    ]);
    expect(lines.at(-1)).toMatch(new RegExp(`^failed: no Gloo Mesh configuration found in ${chart.replace(/[/.]/g, "\\$&")}: 2 YAML files read, none holds a Gloo Mesh object .*under \`ignore:\` in gitmesh.yaml$`));
    const json = JSON.parse((await run("validate", chart, "--output", "json")).out) as { ok: boolean };
    expect(json.ok).toBe(false);
  });

  it("exits 1 on errors with file:line:col: error CODE: message", async () => {
    const r = await run("validate", bad());
    expect(r.code).toBe(1);
    const offset = virtualDestination("ok", "web").split("\n").length; // doc 1 + `---`
    expect(r.out).toContain(`${join(bad(), "workspaces/web/vd.yaml")}:${offset + 10}:5: error SCHEMA_VIOLATION: VirtualDestination web/broken: "HTTPX" is not allowed`);
    expect(r.out.trim().split("\n").at(-1)).toBe("failed: 7 objects in 6 files: 1 error, 0 warnings");
  });

  it("prints JSON with --output json", async () => {
    const r = await run("validate", bad(), "--output", "json");
    expect(r.code).toBe(1);
    const parsed = JSON.parse(r.out);
    expect(parsed.ok).toBe(false);
    expect(parsed.summary).toEqual({ files: 6, objects: 7, unsupported: 0, ignored: 0, ignoredKinds: 0, translated: false, errors: 1, warnings: 0 });
    expect(parsed.diagnostics).toEqual([
      expect.objectContaining({ code: "SCHEMA_VIOLATION", severity: "error", file: "workspaces/web/vd.yaml", path: "/spec/ports/0/protocol" }),
    ]);
    const ok = JSON.parse((await run("validate", good(), "-o", "json")).out);
    expect(ok).toMatchObject({ ok: true, diagnostics: [] });
  });

  it("exits 2 on usage errors: missing, absent or non-directory dir, bad flag or output", async () => {
    expect((await run("validate")).code).toBe(2);
    const absent = await run("validate", join(root, "nope"));
    expect(absent.code).toBe(2);
    expect(absent.err).toContain("does not exist");
    expect((await run("validate", join(root, "a-file.yaml"))).code).toBe(2);
    expect((await run("validate", good(), "--bogus")).code).toBe(2);
    const badOutput = await run("validate", good(), "--output", "xml");
    expect(badOutput.code).toBe(2);
    expect(badOutput.err).toContain("human, json");
  });

  it("has help text and lists the diagnostic codes", async () => {
    const help = await run("validate", "--help");
    expect(help.code).toBe(0);
    expect(help.out).toContain("Exit status: 0 no errors");
    expect(help.out).toContain("--output <format>");
    const list = await run("validate", "--codes");
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/^UNRESOLVED_REFERENCE\s+error\s+A reference names an object/m);
    expect(JSON.parse((await run("validate", "--codes", "-o", "json")).out).NOT_OWNED.severity).toBe("error");
  });

  it("with --discovery translates too: a Service name typo (HTTP 500 in every cluster) is an error at its file:line", async () => {
    const repo = join(root, "typo-service");
    await cp("examples/repo-layout", repo, { recursive: true });
    const plain = await run("validate", repo, "--discovery", "examples/discovery");
    expect(plain.code).toBe(0);
    expect(plain.out).not.toContain("note: not translated");
    const file = join(repo, "workspaces/bookinfo-backends/route-table-ratings.yaml");
    const lines = (await readFile(file, "utf8")).split("\n");
    expect(lines[33]).toBe("              name: ratings");
    lines[33] = "              name: ratigns";
    await writeFile(file, lines.join("\n"));
    // Schemas alone cannot see it, and say so.
    const schemaOnly = await run("validate", repo);
    expect(schemaOnly.code).toBe(0);
    expect(schemaOnly.out).toContain("note: not translated: references to services and workloads");
    const translated = await run("validate", repo, "--discovery", "examples/discovery");
    expect(translated.code).toBe(1);
    // the reference (line 33, `ref:`) is the error, and the route it breaks answers 500 in each cluster
    expect(translated.out).toContain(
      `${file}:33:13: error DESTINATION_NOT_FOUND: Service bookinfo-backends/ratigns is not in discovery or not visible to workspace "bookinfo-backends"`,
    );
    expect(translated.out).toContain(`${file}:30:7: error ROUTE_REPLACEMENT: route "ratings" of RouteTable bookinfo-backends/ratings could not be translated for cluster "cluster1" and answers 500 instead`);
    expect(translated.out.trim().split("\n").at(-1)).toBe("failed: 24 objects in 18 files: 3 errors, 0 warnings");
    const bogus = await run("validate", repo, "--discovery", join(root, "nope"));
    expect(bogus.code).toBe(2);
  });
});
