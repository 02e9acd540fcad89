/**
 * `gitmesh diff` with revisions spelled the way Git users and CI checkouts spell them, against real
 * repositories made with the git CLI: a normal clone, a clone where only origin/main exists, and a
 * shallow clone (actions/checkout's default depth 1).
 */
import { execFileSync } from "node:child_process";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { createCapturingIo } from "../../src/cli/io.js";
import { main } from "../../src/cli/main.js";
import { resolveRevision } from "../../src/git-sync/index.js";
import { useTempDirs } from "../helpers/tmp.js";

const EXAMPLE = join(import.meta.dirname, "..", "..", "examples", "repo-layout");
const DISCOVERY = join(import.meta.dirname, "..", "..", "examples", "discovery");
const TIMEOUT_FILE = "workspaces/gateways/retry-timeout-httpbin.yaml";

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always", ...args], { cwd, encoding: "utf8" }).trim();

async function diff(...args: string[]) {
  const io = createCapturingIo();
  const code = await main(["diff", ...args, "--discovery", DISCOVERY, "--format", "json"], io);
  return { code, out: io.stdout(), err: io.stderr(), report: code === 0 || code === 1 ? (JSON.parse(io.stdout()) as { base: { commit: string }; head: { commit: string }; clusters: unknown[] }) : undefined };
}

describe("gitmesh diff: revisions as Git users spell them", () => {
  const tmp = useTempDirs("gitmesh-revisions-");
  let origin: string;
  const commits: string[] = []; // c1 (example), c2 (timeout 7s), c3 (timeout 9s) on main
  let feature: string;

  beforeAll(() => {
    origin = tmp();
    git(origin, "init", "-q");
    cpSync(EXAMPLE, origin, { recursive: true });
    git(origin, "add", "-A");
    git(origin, "commit", "-qm", "example");
    commits.push(git(origin, "rev-parse", "HEAD"));
    const file = join(origin, TIMEOUT_FILE);
    const original = readFileSync(file, "utf8");
    for (const t of ["7s", "9s"]) {
      writeFileSync(file, original.replace("requestTimeout: 5s", `requestTimeout: ${t}`));
      git(origin, "commit", "-qam", `timeout ${t}`);
      commits.push(git(origin, "rev-parse", "HEAD"));
    }
    git(origin, "tag", "-a", "v1", "-m", "release 1", commits[0]!);
    git(origin, "checkout", "-qb", "feature", commits[1]!);
    writeFileSync(file, original.replace("requestTimeout: 5s", "requestTimeout: 11s"));
    git(origin, "commit", "-qam", "feature: 11s");
    feature = git(origin, "rev-parse", "HEAD");
    git(origin, "checkout", "-q", "main");
  });

  it("resolves HEAD, HEAD~N, HEAD^, ~ and ^ chains, short and full SHAs, branches, annotated tags and A...B", async () => {
    const gitdir = join(origin, ".git");
    const oid = async (spec: string) => (await resolveRevision(gitdir, spec)).oid;
    const [c1, c2, c3] = commits as [string, string, string];
    for (const [spec, want] of [
      ["HEAD", c3],
      ["@", c3],
      ["HEAD~1", c2],
      ["HEAD^", c2],
      ["HEAD~2", c1],
      ["HEAD^^", c1],
      ["HEAD~1^", c1],
      ["main~2", c1],
      [c2, c2],
      [c2.slice(0, 7), c2],
      ["v1", c1],
      ["feature", feature],
      ["main...feature", c2],
      ["feature...HEAD", c2],
    ] as const) {
      expect(await oid(spec), spec).toBe(want);
      // the same as git rev-parse says
      expect(want, spec).toBe(git(origin, "rev-parse", spec.includes("...") ? git(origin, "merge-base", ...spec.split("...")) : `${spec}^{commit}`));
    }
  });

  it("diff --base HEAD~1 --head HEAD renders both commits (and HEAD^, a short SHA, a tag)", async () => {
    const r = await diff("--repo", origin, "--base", "HEAD~1", "--head", "HEAD");
    expect(r.err).not.toContain("not found");
    expect(r.code).toBe(0);
    expect(r.report?.base.commit).toBe(commits[1]);
    expect(r.report?.head.commit).toBe(commits[2]);
    expect(r.report?.clusters.length).toBeGreaterThan(0);
    const caret = await diff("--repo", origin, "--base", "HEAD^", "--head", commits[2]!.slice(0, 8));
    expect(caret.report?.base.commit).toBe(commits[1]);
    const tag = await diff("--repo", origin, "--base", "v1", "--head", "main...feature");
    expect(tag.report?.base.commit).toBe(commits[0]);
    expect(tag.report?.head.commit).toBe(commits[1]);
  });

  it("in a fresh clone where only origin/main exists: origin/main works, and main means origin/main", async () => {
    const clone = tmp();
    git(clone, "clone", "-q", "--branch", "feature", `file://${origin}`, ".");
    expect(git(clone, "branch", "--list", "main")).toBe("");
    const r = await diff("--repo", clone, "--base", "origin/main", "--head", "HEAD");
    expect(r.code).toBe(0);
    expect(r.report?.base.commit).toBe(commits[2]);
    expect(r.report?.head.commit).toBe(feature);
    const dwim = await diff("--repo", clone, "--base", "main", "--head", "HEAD");
    expect(dwim.report?.base.commit).toBe(commits[2]);
    const forked = await diff("--repo", clone, "--base", "origin/main...HEAD", "--head", "HEAD");
    expect(forked.report?.base.commit).toBe(commits[1]);
  });

  it("an unknown revision is a usage error listing near matches", async () => {
    const r = await diff("--repo", origin, "--base", "mian", "--head", "HEAD");
    expect(r.code).toBe(2);
    expect(r.err).toContain("unknown revision mian; did you mean main");
    const remote = await diff("--repo", origin, "--base", "HEAD~7", "--head", "HEAD");
    expect(remote.code).toBe(2);
    expect(remote.err).toContain("is a root commit");
  });

  it("in a shallow clone (actions/checkout depth 1) says exactly which git fetch brings the parent, and works after it", async () => {
    const clone = tmp();
    git(clone, "clone", "-q", "--depth", "1", `file://${origin}`, ".");
    const shallow = await diff("--repo", clone, "--base", "HEAD~1", "--head", "HEAD");
    expect(shallow.code).toBe(2);
    expect(shallow.err).toContain("oldest commit of this shallow clone");
    expect(shallow.err).toContain("git fetch --deepen=1");
    const unfetched = await diff("--repo", clone, "--base", "origin/feature", "--head", "HEAD");
    expect(unfetched.code).toBe(2);
    expect(unfetched.err).toContain("git fetch origin feature:refs/remotes/origin/feature");
    git(clone, "fetch", "-q", "--deepen=1");
    const deepened = await diff("--repo", clone, "--base", "HEAD~1", "--head", "HEAD");
    expect(deepened.code).toBe(0);
    expect(deepened.report?.base.commit).toBe(commits[1]);
  });
});
