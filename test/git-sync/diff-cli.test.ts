import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chmodSync, cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { inflateSync } from "node:zlib";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { main } from "../../src/cli/main.js";
import { createCapturingIo } from "../../src/cli/io.js";
import { createMemoryLogger } from "../../src/core/index.js";
import { readDiscoveryDirectory } from "../../src/discovery/index.js";
import { createAuditWriter } from "../../src/git-sync/index.js";
import { loadDesiredState } from "../../src/config/index.js";
import { renderRecord, translateAll } from "../../src/translate/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";

const TOKEN = "diff-cli-token-77";
const EXAMPLE = join(import.meta.dirname, "..", "..", "examples", "repo-layout");
const DISCOVERY = join(import.meta.dirname, "..", "..", "examples", "discovery");
const TIMEOUT_FILE = "workspaces/gateways/retry-timeout-httpbin.yaml";

function filesOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out[relative(dir, p)] = readFileSync(p, "utf8");
    }
  };
  walk(dir);
  return out;
}

async function run(args: string[]) {
  const io = createCapturingIo();
  const code = await main(["diff", ...args], io);
  return { code, out: io.stdout(), err: io.stderr() };
}

describe("gitmesh diff", () => {
  let server: GitServer;
  let base: string;
  let head: string;
  let broken: string;
  const dirs: string[] = [];
  beforeAll(async () => {
    server = await startGitServer({ auth: { token: TOKEN } });
    await server.createRepo("mesh");
    const files = filesOf(EXAMPLE);
    base = await server.commitFiles("mesh", files, "base");
    head = await server.commitFiles("mesh", { [TIMEOUT_FILE]: files[TIMEOUT_FILE]!.replace("requestTimeout: 5s", "requestTimeout: 7s") }, "slower httpbin");
    broken = await server.commitFiles("mesh", { "workspaces/gateways/broken.yaml": "apiVersion: networking.gloo.solo.io/v2\nkind: RouteTable\nmetadata:\n  name: broken\n  namespace: istio-gateways\nspec:\n  hosts: 5\n" }, "broken", { branch: "broken" });
  });
  afterAll(async () => {
    await server.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("reports the rendered change of a commit (local repository, --discovery)", async () => {
    const r = await run(["--repo", server.repoPath("mesh"), "--base", base, "--head", head, "--discovery", DISCOVERY]);
    expect(r.err).toContain("head: 0 error(s)");
    expect(r.code).toBe(0);
    expect(r.out).toContain("<!-- gitmesh-diff -->");
    expect(r.out).toMatch(/#### ~ VirtualService `istio-gateways\/[^`]+` changed/);
    expect(r.out).toContain("-      timeout: 5s");
    expect(r.out).toContain("+      timeout: 7s");
    const same = await run(["--repo", server.repoPath("mesh"), "--base", head, "--head", head, "--discovery", DISCOVERY]);
    expect(same.out).toContain("**No rendered change.**");
  });

  it("fails (exit 1) when head has errors, listing what head introduced", async () => {
    const r = await run(["--repo", server.repoPath("mesh"), "--base", "main", "--head", "broken", "--discovery", DISCOVERY, "--format", "json"]);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.out);
    expect(report.head.commit).toBe(broken);
    expect(report.introduced.some((d: { file: string; severity: string }) => d.file === "workspaces/gateways/broken.yaml" && d.severity === "error")).toBe(true);
  });

  it("reads discovery from the audit branch and the repository over HTTP with a token", async () => {
    const { snapshots } = await readDiscoveryDirectory(DISCOVERY);
    const writer = createAuditWriter({ target: { kind: "local", path: server.repoPath("mesh") }, logger: createMemoryLogger().logger });
    await writer.write({ clusters: new Map(), discovery: snapshots, sourceCommit: base, sourceRef: "refs/heads/main", timestamp: 1_700_000_000 });
    const withDir = await run(["--repo", server.repoPath("mesh"), "--base", base, "--head", head, "--discovery", DISCOVERY, "--format", "json"]);
    process.env.GITMESH_DIFF_TEST_TOKEN = TOKEN;
    const outDir = mkdtempSync(join(tmpdir(), "gitsync-diff-"));
    dirs.push(outDir);
    const remote = await run(["--repo", server.url("mesh"), "--base", base, "--head", head, "--token-env", "GITMESH_DIFF_TEST_TOKEN", "--out-dir", outDir]);
    delete process.env.GITMESH_DIFF_TEST_TOKEN;
    expect(remote.code).toBe(0);
    expect(JSON.parse(readFileSync(join(outDir, "report.json"), "utf8"))).toEqual(JSON.parse(withDir.out));
    expect(readFileSync(join(outDir, "comment-1.md"), "utf8")).toContain("+      timeout: 7s");
    expect(remote.err).not.toContain(TOKEN);
  });

  it("answers usage errors with exit 2, a revision the repository lacks among them", async () => {
    expect((await run(["--repo", server.repoPath("mesh"), "--base", base])).code).toBe(2);
    const missing = await run(["--repo", server.repoPath("mesh"), "--base", base, "--head", "no-such-branch", "--discovery", DISCOVERY]);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain("no-such-branch");
    await server.createRepo("no-audit");
    await server.commitFiles("no-audit", { "a.yaml": "x: 1\n" }, "one");
    const r = await run(["--repo", server.repoPath("no-audit"), "--base", "main", "--head", "main"]);
    expect(r.code).toBe(2);
    expect(r.err).toContain("--discovery");
  });

  it("names a corrupt object of the repository instead of rendering what it holds", async () => {
    // A copy of the repository whose loose object of head's changed file is cut short (a disk or copy gone wrong).
    const copy = mkdtempSync(join(tmpdir(), "gitmesh-diff-corrupt-"));
    dirs.push(copy);
    cpSync(server.repoPath("mesh"), copy, { recursive: true });
    const oid = (await server.git("mesh", ["rev-parse", `${head}:${TIMEOUT_FILE}`])).trim();
    const loose = join(copy, "objects", oid.slice(0, 2), oid.slice(2));
    const whole = readFileSync(loose);
    expect(inflateSync(whole).toString("latin1")).toMatch(/^blob \d+\0/); // the object is loose: this is the file git reads
    chmodSync(loose, 0o644);
    writeFileSync(loose, whole.subarray(0, whole.length >> 1));

    const r = await run(["--repo", copy, "--base", base, "--head", head, "--discovery", DISCOVERY]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`loose object ${oid} is corrupt`);
    expect(r.err).not.toMatch(/\n\s+at /); // an error, not a stack trace
    expect(r.out).toBe(""); // no report rendered from a partial revision
    // base alone is intact: the same copy still diffs base against itself
    const intact = await run(["--repo", copy, "--base", base, "--head", base, "--discovery", DISCOVERY]);
    expect(intact.code).toBe(0);
    expect(intact.out).toContain("**No rendered change.**");
  });
  it("takes the base from the audit branch's render record when its discovery is the diff's, with the same report as translating it (#39)", async () => {
    // The audit branch as the server writes it for base: the output of every cluster, discovery, and the render record.
    const { snapshots } = await readDiscoveryDirectory(DISCOVERY);
    const render = translateAll(loadDesiredState(Object.entries(filesOf(EXAMPLE)).map(([path, content]) => ({ path, content }))).state, snapshots);
    const writer = createAuditWriter({ target: { kind: "local", path: server.repoPath("mesh") }, logger: createMemoryLogger().logger });
    const clusters = new Map([...render.clusters].map(([c, out]) => [c, out.resources]));
    await writer.write({ clusters, discovery: snapshots, sourceCommit: base, sourceRef: "refs/heads/main", timestamp: 1_700_000_100, render: renderRecord(render) });
    const args = ["--repo", server.repoPath("mesh"), "--base", base, "--head", head, "--format", "json"];

    const stored = await run(args);
    const translated = await run([...args, "--no-stored-base"]);
    expect(stored.err).toContain(`base: from the render record of ${base.slice(0, 12)}`);
    expect(translated.err).not.toContain("render record");
    expect(stored.code).toBe(0);
    expect(stored.out).toContain("timeout: 7s");
    expect(stored.out).toBe(translated.out);
    // --discovery with the snapshots the render used: recognised by their digests.
    const fromDir = await run([...args, "--discovery", DISCOVERY]);
    expect(fromDir.err).toContain("base: from the render record");
    expect(fromDir.out).toBe(translated.out);
    // Markdown too.
    const md = ["--repo", server.repoPath("mesh"), "--base", base, "--head", head];
    expect((await run(md)).out).toBe((await run([...md, "--no-stored-base"])).out);

    // Discovery changed since base was rendered (a later audit commit, for head): the record is not used, same report.
    const moved = new Map([...snapshots].map(([c, snap]) => [c, c === "cluster2" ? { ...snap, services: [] } : snap]));
    await writer.write({ clusters, discovery: moved, sourceCommit: head, sourceRef: "refs/heads/main", timestamp: 1_700_000_200 });
    const after = await run(args);
    const afterTranslated = await run([...args, "--no-stored-base"]);
    expect(after.err).toContain("used other discovery");
    expect(after.out).toBe(afterTranslated.out);
  });
});
