/**
 * `gitmesh diff --post gitlab` through the real CLI entry, against a real Git repository and a local
 * server that plays the GitLab REST API v4 and checks every request against the endpoint table
 * transcribed from GitLab's API documentation (see fake-gitlab.ts).
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeGitLab, type FakeGitLab } from "./fake-gitlab.js";
import { BROKEN_FILE, DISCOVERY, gitmesh, makeMeshRepo, type MeshRepo } from "./fixture.js";

const TOKEN = "glpat-testtoken0123456789";
const IID = 12;
const PROJECT = "4242";
const BOT = { id: 77, username: "project_4242_bot_gitmesh" };
const MARKER = "<!-- gitmesh-diff -->";

describe("gitmesh diff --post gitlab", () => {
  const tmp = useTempDirs("gitmesh-post-gitlab-");
  let repo: MeshRepo;
  let gl: FakeGitLab;

  beforeAll(() => {
    repo = makeMeshRepo(tmp());
  });
  beforeEach(async () => {
    gl = await startFakeGitLab({ token: TOKEN, projectId: PROJECT, mergeRequests: { [IID]: repo.c2 }, commits: [repo.c0, repo.c1, repo.c2, repo.c3, repo.broken], user: BOT });
  });
  afterEach(async () => {
    expect(gl.violations).toEqual([]);
    await gl.close();
  });

  /** What a merge request pipeline gives the job (plus the masked CI/CD variable GITLAB_TOKEN). */
  const ciEnv = (sha: string, extra: Record<string, string | undefined> = {}) => ({
    GITLAB_CI: "true",
    CI_API_V4_URL: gl.apiUrl,
    CI_PROJECT_ID: PROJECT,
    CI_MERGE_REQUEST_IID: String(IID),
    CI_COMMIT_SHA: sha,
    CI_JOB_TOKEN: "job-token-value-should-not-be-used",
    GITLAB_TOKEN: TOKEN,
    ...extra,
  });
  const diff = (env: Record<string, string | undefined>, base: string, head: string, ...more: string[]) =>
    gitmesh(env, ["diff", "--repo", repo.dir, "--base", base, "--head", head, "--discovery", DISCOVERY, "--post", "gitlab", ...more]);
  const notes = () => gl.notes.get(IID) ?? [];

  it("first run: one note and a success status; a second run updates the same note in place", async () => {
    const r = await diff(ciEnv(repo.c2), repo.c1, repo.c2);
    expect(r.err).toContain(`posted to !${IID}: 1 comment(s) created, 0 updated, 0 deleted`);
    expect(r.code).toBe(0);
    expect(notes()).toHaveLength(1);
    expect(notes()[0]!.body.startsWith(MARKER)).toBe(true);
    expect(gl.statuses.get(repo.c2)).toEqual([{ status: "success", name: "gitmesh/diff", description: expect.stringContaining("no errors") }]);
    expect(gl.requests.slice(0, 2).map((q) => q.endpoint)).toEqual(["get-mr", "get-commit"]);
    const id = notes()[0]!.id;
    const again = await diff(ciEnv(repo.c3), repo.c1, repo.c3);
    expect(again.err).toContain("0 comment(s) created, 1 updated, 0 deleted");
    expect(notes().map((n) => n.id)).toEqual([id]);
    expect(notes()[0]!.body).toContain("+      timeout: 9s");
    expect(gl.statuses.get(repo.c3)?.[0]?.status).toBe("success");
    expect(r.err + again.err).not.toContain(TOKEN);
  });

  it("a long report is split into several notes; a later short one keeps the first and deletes the surplus; another user's marked note is untouched", async () => {
    const foreign = gl.addNote(IID, `${MARKER}\nquoted`, 5);
    const long = await diff(ciEnv(repo.c1), repo.c0, repo.c1, "--max-comment-chars", "1000");
    expect(long.code).toBe(0);
    const mine = notes().filter((n) => n.id !== foreign);
    expect(mine.length).toBeGreaterThan(2);
    mine.forEach((n, i) => expect(n.body).toContain(`part ${i + 1}/${mine.length}`));
    const short = await diff(ciEnv(repo.c2), repo.c1, repo.c2);
    expect(short.err).toContain(`0 comment(s) created, 1 updated, ${mine.length - 1} deleted`);
    expect(notes().map((n) => n.id)).toEqual([foreign, mine[0]!.id]);
  });

  it("finds its note past the first page of notes (pagination), and updates it", async () => {
    for (let i = 0; i < 45; i++) gl.addNote(IID, `review note ${i}`, 5);
    await diff(ciEnv(repo.c2), repo.c1, repo.c2);
    const again = await diff(ciEnv(repo.c3), repo.c1, repo.c3);
    expect(again.err).toContain("0 comment(s) created, 1 updated");
    expect(notes()).toHaveLength(46);
    expect(gl.requests.filter((q) => q.endpoint === "list-notes").length).toBeGreaterThan(2);
  });

  it("head with an error: exit 1, status failed with file:line in the description", async () => {
    const r = await diff(ciEnv(repo.broken), repo.c3, repo.broken);
    expect(r.code).toBe(1);
    const [s] = gl.statuses.get(repo.broken) ?? [];
    expect(s?.status).toBe("failed");
    expect(s?.description).toMatch(new RegExp(`^would be rejected; clusters keep [0-9a-f]{12}: ${BROKEN_FILE.replace(/[.]/g, "\\.")}:\\d+: `));
    expect(s!.description!.length).toBeLessThanOrEqual(140);
  });

  it("no GITLAB_TOKEN (only CI_JOB_TOKEN): usage error, exit 2, saying the job token does not suffice — no request", async () => {
    const r = await diff(ciEnv(repo.c2, { GITLAB_TOKEN: undefined }), repo.c1, repo.c2);
    expect(r.code).toBe(2);
    expect(r.err).toContain("GITLAB_TOKEN is not set");
    expect(r.err).toContain("CI_JOB_TOKEN is set but does not suffice");
    expect(r.err).toContain("`api` scope");
    expect(gl.requests).toEqual([]);
    const noMr = await diff(ciEnv(repo.c2, { CI_MERGE_REQUEST_IID: undefined }), repo.c1, repo.c2);
    expect(noMr.code).toBe(2);
    expect(noMr.err).toContain("merge_request_event");
  });

  it("401, 403 and 404: clear error, exit 1, nothing written, token never printed", async () => {
    const bad = await diff(ciEnv(repo.c2, { GITLAB_TOKEN: "glpat-wrong-value-000" }), repo.c1, repo.c2);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain(`reading merge request !${IID} of project ${PROJECT} failed (HTTP 401: 401 Unauthorized)`);
    expect(bad.err).not.toContain("glpat-wrong-value-000");
    gl.fault = { status: 403, message: "403 Forbidden", when: (e) => e === "create-note" };
    const forbidden = await diff(ciEnv(repo.c2), repo.c1, repo.c2);
    expect(forbidden.code).toBe(1);
    expect(forbidden.err).toContain("creating a note on merge request !12 of project 4242 failed (HTTP 403: 403 Forbidden)");
    expect(forbidden.err).toContain("`api` scope");
    expect(forbidden.err).toContain("nothing was written");
    gl.fault = undefined;
    const unknown = "1234567890abcdef1234567890abcdef12345678";
    const missing = await diff(ciEnv(unknown), repo.c1, repo.c2);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain(`reading head commit ${unknown} failed (HTTP 404`);
    expect(gl.writes()).toEqual([]);
  });

  it("the fake refuses what GitLab's documentation does not allow", async () => {
    const r = await fetch(`${gl.apiUrl}/projects/${PROJECT}/statuses/${repo.c2}`, { method: "POST", headers: { "private-token": TOKEN, "content-type": "application/json" }, body: JSON.stringify({ state: "failure", colour: "red" }) });
    expect(r.status).toBe(400);
    expect(gl.violations).toEqual([expect.stringMatching(/state=failure is not one of .*undocumented attribute colour/)]);
    gl.violations.length = 0;
  });
});
