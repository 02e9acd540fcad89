/**
 * examples/ci cannot rot: the `gitmesh diff` lines (and the `git fetch` of the audit branch) of the
 * GitHub Actions workflow and the GitLab CI job are taken from the YAML files exactly as shipped and
 * run in bash, as real processes, in a clone of a configuration repository — with the variables each
 * CI sets pointing at the local GitHub / GitLab stand-ins (which validate every request).
 */
import { execFile } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { createMemoryLogger } from "../../src/core/index.js";
import { readDiscoveryDirectory } from "../../src/discovery/index.js";
import { createAuditWriter } from "../../src/git-sync/index.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeGitHub, type FakeGitHub } from "./fake-github.js";
import { startFakeGitLab, type FakeGitLab } from "./fake-gitlab.js";
import { DISCOVERY, git, makeMeshRepo, type MeshRepo } from "./fixture.js";

const ROOT = join(import.meta.dirname, "..", "..");
const CI = join(ROOT, "examples", "ci");
const GH_TOKEN = "ghs_ci_example_token_0123456789";
const GL_TOKEN = "glpat-ci-example-token-0123";

interface Step {
  readonly run?: string;
  readonly env?: Record<string, string>;
}

/** The lines a CI example runs that call gitmesh diff or fetch the audit branch — verbatim. */
const ours = (line: string) => /^\s*gitmesh diff\b/.test(line) || /^\s*git fetch\b/.test(line);

/** `${{ expr }}` as GitHub Actions substitutes it; an expression the test does not know fails. */
function expand(text: string, values: Record<string, string>): string {
  return text.replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (_, expr: string) => {
    const v = values[expr];
    if (v === undefined) throw new Error(`examples/ci: unknown expression \${{ ${expr} }}`);
    return v;
  });
}

function bash(script: string, cwd: string, env: Record<string, string>): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile("bash", ["-e", "-c", script], { cwd, env, timeout: 120_000 }, (err, out, errOut) => {
      const code = err ? (typeof (err as { code?: unknown }).code === "number" ? (err as { code: number }).code : -1) : 0;
      resolve({ code, out, err: errOut });
    });
  });
}

describe("examples/ci run as shipped", () => {
  const tmp = useTempDirs("gitmesh-ci-examples-");
  let repo: MeshRepo;
  let clone: string;
  let baseEnv: Record<string, string>;
  let gh: FakeGitHub;
  let gl: FakeGitLab;
  const closers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    repo = makeMeshRepo(tmp());
    // the audit branch the management server writes: discovery/ on gitmesh/rendered
    const { snapshots } = await readDiscoveryDirectory(DISCOVERY);
    const writer = createAuditWriter({ target: { kind: "local", path: repo.dir }, logger: createMemoryLogger().logger });
    await writer.write({ clusters: new Map(), discovery: snapshots, sourceCommit: repo.c1, sourceRef: "refs/heads/main", timestamp: 1_700_000_000 });
    clone = tmp();
    git(clone, "clone", "-q", `file://${repo.dir}`, ".");
    // `gitmesh` on the PATH, as `npm link` in a gitmesh checkout leaves it
    const bin = tmp();
    writeFileSync(join(bin, "gitmesh"), `#!/bin/sh\nexec node ${JSON.stringify(join(ROOT, "bin", "gitmesh.js"))} "$@"\n`);
    chmodSync(join(bin, "gitmesh"), 0o755);
    baseEnv = { PATH: `${bin}:${process.env.PATH ?? ""}`, HOME: tmp(), GIT_CONFIG_NOSYSTEM: "1" };
    gh = await startFakeGitHub({ token: GH_TOKEN, owner: "acme", repo: "mesh", pulls: { 3: repo.c2 }, commits: [repo.c1, repo.c2] });
    closers.push(() => gh.close());
    gl = await startFakeGitLab({ token: GL_TOKEN, projectId: "99", mergeRequests: { 5: repo.c2 }, commits: [repo.c1, repo.c2], user: { id: 7, username: "project_99_bot" } });
    closers.push(() => gl.close());
  });
  afterAll(async () => {
    for (const close of closers) await close();
  });

  it("GitHub Actions: the workflow's steps post one comment and a success status", async () => {
    const workflow = parse(readFileSync(join(CI, "github-actions.yaml"), "utf8")) as { permissions: Record<string, string>; jobs: Record<string, { steps: Step[] }> };
    expect(workflow.permissions).toMatchObject({ "pull-requests": "write", statuses: "write" });
    const steps = Object.values(workflow.jobs).flatMap((j) => j.steps).filter((s) => s.run !== undefined && s.run.split("\n").some(ours));
    expect(steps.some((s) => /gitmesh diff .*--post github/.test(s.run!))).toBe(true);
    const eventPath = join(tmp(), "event.json");
    writeFileSync(eventPath, JSON.stringify({ action: "opened", number: 3, pull_request: { number: 3, base: { sha: repo.c1 }, head: { sha: repo.c2 } } }));
    const expressions = { "github.event.pull_request.base.sha": repo.c1, "github.event.pull_request.head.sha": repo.c2, "secrets.GITHUB_TOKEN": GH_TOKEN };
    // what the runner sets for every step
    const runner = { ...baseEnv, GITHUB_ACTIONS: "true", CI: "true", GITHUB_REPOSITORY: "acme/mesh", GITHUB_API_URL: gh.url, GITHUB_EVENT_NAME: "pull_request", GITHUB_EVENT_PATH: eventPath };
    for (const step of steps) {
      const env = { ...runner, ...Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, expand(v, expressions)])) };
      const r = await bash(expand(step.run!, expressions), clone, env);
      expect(r.err).not.toContain(GH_TOKEN);
      expect(r.code, r.err).toBe(0);
    }
    expect(gh.violations).toEqual([]);
    const [comment, ...rest] = gh.comments.get(3) ?? [];
    expect(rest).toEqual([]);
    expect(comment?.body).toContain("<!-- gitmesh-diff -->");
    expect(comment?.body).toContain("+      timeout: 7s");
    expect(gh.statuses.get(repo.c2)?.map((s) => [s.state, s.context])).toEqual([["success", "gitmesh/diff"]]);
  });

  it("GitLab CI: the job's script posts one note and a success status", async () => {
    const pipeline = parse(readFileSync(join(CI, "gitlab-ci.yml"), "utf8")) as Record<string, { variables?: Record<string, string>; before_script?: string[]; script?: string[] }>;
    const job = pipeline["gitmesh-diff"]!;
    const lines = [...(job.before_script ?? []), ...(job.script ?? [])].filter(ours);
    expect(lines.some((l) => /gitmesh diff .*--post gitlab/.test(l))).toBe(true);
    // what a merge request pipeline sets (predefined variables) and the masked GITLAB_TOKEN
    const env = {
      ...baseEnv,
      ...job.variables,
      GITLAB_CI: "true",
      CI: "true",
      CI_PIPELINE_SOURCE: "merge_request_event",
      CI_API_V4_URL: gl.apiUrl,
      CI_PROJECT_ID: "99",
      CI_MERGE_REQUEST_IID: "5",
      CI_MERGE_REQUEST_DIFF_BASE_SHA: repo.c1,
      CI_COMMIT_SHA: repo.c2,
      CI_JOB_TOKEN: "job-token",
      GITLAB_TOKEN: GL_TOKEN,
    };
    for (const line of lines) {
      const r = await bash(line, clone, env);
      expect(r.err).not.toContain(GL_TOKEN);
      expect(r.code, r.err).toBe(0);
    }
    expect(gl.violations).toEqual([]);
    const notes = gl.notes.get(5) ?? [];
    expect(notes).toHaveLength(1);
    expect(notes[0]!.body).toContain("+      timeout: 7s");
    expect(gl.statuses.get(repo.c2)?.map((s) => [s.status, s.name])).toEqual([["success", "gitmesh/diff"]]);
  });
});
