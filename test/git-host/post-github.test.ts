/**
 * `gitmesh diff --post github` through the real CLI entry, against a real Git repository and a local
 * server that plays the GitHub REST API and validates every request against GitHub's official
 * OpenAPI description (see fake-github.ts).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { freePort } from "../helpers/ports.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startFakeGitHub, type FakeGitHub } from "./fake-github.js";
import { BROKEN_FILE, DISCOVERY, gitmesh, makeMeshRepo, type MeshRepo } from "./fixture.js";

const TOKEN = "ghs_testtoken0123456789abcdefABCDEF";
const PR = 7;
const MARKER = "<!-- gitmesh-diff -->";

describe("gitmesh diff --post github", () => {
  const tmp = useTempDirs("gitmesh-post-github-");
  let repo: MeshRepo;
  let gh: FakeGitHub;
  let eventPath: string;

  beforeAll(() => {
    repo = makeMeshRepo(tmp());
    eventPath = join(tmp(), "event.json");
  });
  beforeEach(async () => {
    gh = await startFakeGitHub({ token: TOKEN, owner: "acme", repo: "mesh", pulls: { [PR]: repo.c2 }, commits: [repo.c0, repo.c1, repo.c2, repo.c3, repo.broken] });
  });
  afterEach(async () => {
    expect(gh.violations).toEqual([]);
    await gh.close();
  });
  afterAll(() => undefined);

  /** The environment GitHub Actions gives a pull_request job (plus the token the workflow passes). */
  const actionsEnv = (headSha: string, extra: Record<string, string | undefined> = {}) => {
    writeFileSync(eventPath, JSON.stringify({ action: "synchronize", number: PR, pull_request: { number: PR, head: { sha: headSha, ref: "feature" }, base: { sha: repo.c1, ref: "main" } } }));
    return { GITHUB_ACTIONS: "true", GITHUB_TOKEN: TOKEN, GITHUB_REPOSITORY: "acme/mesh", GITHUB_API_URL: gh.url, GITHUB_EVENT_PATH: eventPath, ...extra };
  };
  const diff = (env: Record<string, string | undefined>, base: string, head: string, ...more: string[]) =>
    gitmesh(env, ["diff", "--repo", repo.dir, "--base", base, "--head", head, "--discovery", DISCOVERY, "--post", "github", ...more]);
  const comments = () => gh.comments.get(PR) ?? [];

  it("first run: one sticky comment and a success status gitmesh/diff on the head commit — every request valid per GitHub's OpenAPI", async () => {
    const r = await diff(actionsEnv(repo.c2), repo.c1, repo.c2);
    expect(r.err).toContain(`posted to acme/mesh#${PR}: 1 comment(s) created, 0 updated, 0 deleted`);
    expect(r.code).toBe(0);
    expect(comments()).toHaveLength(1);
    const body = comments()[0]!.body;
    expect(body.startsWith(MARKER)).toBe(true);
    expect(body).toContain("+      timeout: 7s");
    expect(gh.statuses.get(repo.c2)).toEqual([{ state: "success", context: "gitmesh/diff", description: expect.stringMatching(/cluster.* change, no errors/), target_url: expect.stringContaining(`#issuecomment-${comments()[0]!.id}`) }]);
    // access was read before anything was written, and the token only ever went in the header
    const ops = gh.requests.map((q) => q.operationId);
    expect(ops.slice(0, 2)).toEqual(["pulls/get", "repos/get-commit"]);
    expect(ops.indexOf("issues/create-comment")).toBeGreaterThan(ops.indexOf("issues/list-comments"));
    expect(ops.at(-1)).toBe("repos/create-commit-status");
    expect(gh.requests.every((q) => q.authorization === `token ${TOKEN}`)).toBe(true);
    expect(r.out + r.err).not.toContain(TOKEN);
  });

  it("a second run (a new push to the pull request) updates the same comment in place, no new comment", async () => {
    await diff(actionsEnv(repo.c2), repo.c1, repo.c2);
    const [first] = comments();
    const again = await diff(actionsEnv(repo.c3), repo.c1, repo.c3);
    expect(again.code).toBe(0);
    expect(again.err).toContain("0 comment(s) created, 1 updated, 0 deleted");
    expect(comments()).toHaveLength(1);
    expect(comments()[0]!.id).toBe(first!.id);
    expect(comments()[0]!.body).toContain("+      timeout: 9s");
    expect(gh.requests.filter((q) => q.operationId === "issues/create-comment")).toHaveLength(1);
    expect(gh.statuses.get(repo.c3)?.map((s) => s.state)).toEqual(["success"]);
    // the same report again writes no comment at all, only the status
    const same = await diff(actionsEnv(repo.c3), repo.c1, repo.c3);
    expect(same.err).toContain("0 comment(s) created, 0 updated, 0 deleted");
  });

  it("a long report is split into parts (each within the limit); a later short report updates the first and deletes the surplus", async () => {
    const long = await diff(actionsEnv(repo.c1), repo.c0, repo.c1, "--max-comment-chars", "1000");
    expect(long.code).toBe(0);
    const parts = comments();
    expect(parts.length).toBeGreaterThan(2);
    parts.forEach((c, i) => {
      // renderMarkdown overshoots --max-comment-chars by a closing tag (reported); the platform limit holds
      expect(c.body.length).toBeLessThanOrEqual(1100);
      expect(c.body.startsWith(MARKER)).toBe(true);
      expect(c.body).toContain(`part ${i + 1}/${parts.length}`);
    });
    const ids = parts.map((c) => c.id);
    // a longer report again, then a short one
    const short = await diff(actionsEnv(repo.c2), repo.c1, repo.c2);
    expect(short.err).toContain(`0 comment(s) created, 1 updated, ${ids.length - 1} deleted`);
    expect(comments().map((c) => c.id)).toEqual([ids[0]]);
    expect(comments()[0]!.body).not.toContain("part 1/");
    expect(gh.requests.filter((q) => q.operationId === "issues/delete-comment").length).toBe(ids.length - 1);
  });

  it("head with an error: exit 1, status failure with the first file:line error in the description (≤ 140 characters)", async () => {
    const r = await diff(actionsEnv(repo.broken), repo.c3, repo.broken);
    expect(r.code).toBe(1);
    const [status] = gh.statuses.get(repo.broken) ?? [];
    expect(status?.state).toBe("failure");
    expect(status?.context).toBe("gitmesh/diff");
    // A head whose configuration does not load would be rejected: the server keeps base in force.
    expect(status?.description).toMatch(new RegExp(`^would be rejected; clusters keep [0-9a-f]{12}: ${BROKEN_FILE.replace(/[.]/g, "\\.")}:\\d+: `));
    expect(status!.description!.length).toBeLessThanOrEqual(140);
    expect(comments()[0]!.body).toContain("**This commit would be rejected**");
    expect(comments()[0]!.body).toContain(":x: head has");
  });

  it("never edits or deletes a marked comment written by someone else", async () => {
    const foreign = gh.addComment(PR, `${MARKER}\nquoted by a reviewer`, "octocat");
    const r = await diff(actionsEnv(repo.c2), repo.c1, repo.c2);
    expect(r.code).toBe(0);
    expect(comments().map((c) => c.id)).toContain(foreign);
    expect(comments().find((c) => c.id === foreign)!.body).toBe(`${MARKER}\nquoted by a reviewer`);
    expect(comments()).toHaveLength(2);
  });

  it("finds its comment past the first page of comments (Link pagination), and updates it", async () => {
    for (let i = 0; i < 130; i++) gh.addComment(PR, `review comment ${i}`, "octocat");
    await diff(actionsEnv(repo.c2), repo.c1, repo.c2);
    const again = await diff(actionsEnv(repo.c3), repo.c1, repo.c3);
    expect(again.err).toContain("0 comment(s) created, 1 updated");
    expect(comments()).toHaveLength(131);
    expect(gh.requests.filter((q) => q.operationId === "issues/list-comments").map((q) => q.path)).toHaveLength(4);
  });

  it("a status refused after the comment was written says exactly what was already written", async () => {
    gh.fault = { status: 403, message: "Resource not accessible by integration", when: (op) => op === "repos/create-commit-status" };
    const r = await diff(actionsEnv(repo.c2), repo.c1, repo.c2);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`setting commit status gitmesh/diff on ${repo.c2} failed (HTTP 403`);
    expect(r.err).toContain("statuses: write");
    expect(r.err).toContain(`already written: created comment ${comments()[0]!.id}`);
  });

  it("an API that does not answer: exit 1, says to check GITHUB_API_URL, nothing written", async () => {
    const r = await diff(actionsEnv(repo.c2, { GITHUB_API_URL: `http://127.0.0.1:${await freePort()}` }), repo.c1, repo.c2);
    expect(r.code).toBe(1);
    expect(r.err).toContain("no answer from the API — check GITHUB_API_URL");
    expect(r.err).toContain("nothing was written");
  });

  it("with a personal token (GET /user answers): comments are matched by that login; --pr without an event file puts the status on --head", async () => {
    await gh.close();
    gh = await startFakeGitHub({ token: TOKEN, owner: "acme", repo: "mesh", pulls: { [PR]: repo.c3 }, commits: [repo.c1, repo.c3], userLogin: "mesh-bot" });
    const env = { GITHUB_TOKEN: TOKEN, GITHUB_REPOSITORY: "acme/mesh", GITHUB_API_URL: gh.url };
    const r = await diff(env, repo.c1, "HEAD~1", "--pr", String(PR));
    expect(r.code).toBe(0);
    expect(gh.statuses.get(repo.c3)?.[0]?.state).toBe("success");
    expect(comments()[0]!.login).toBe("mesh-bot");
    const again = await diff(env, repo.c1, "HEAD~1", "--pr", String(PR));
    expect(again.err).toContain("0 comment(s) created");
    expect(comments()).toHaveLength(1);
  });

  it("the fake refuses what GitHub's description does not allow (so a passing run means valid requests)", async () => {
    const post = (path: string, body: unknown) =>
      fetch(`${gh.url}${path}`, { method: "POST", headers: { authorization: `token ${TOKEN}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    expect((await post(`/repos/acme/mesh/statuses/${repo.c2}`, { state: "bogus", context: "gitmesh/diff" })).status).toBe(400);
    expect((await post(`/repos/acme/mesh/issues/${PR}/comments`, { text: "no body field" })).status).toBe(400);
    expect((await fetch(`${gh.url}/repos/acme/mesh/issues/${PR}/comments?per_page=100&sort=bogus`, { headers: { authorization: `token ${TOKEN}` } })).status).toBe(400);
    expect((await post(`/repos/acme/mesh/comments/made-up`, { body: "x" })).status).toBe(404);
    expect(gh.violations).toEqual([
      expect.stringContaining("body: data/state must be equal to one of the allowed values"),
      expect.stringContaining("body: data must have required property 'body'"),
      expect.stringContaining("unknown query parameter sort"),
      expect.stringContaining("no such operation"),
    ]);
    gh.violations.length = 0;
  });

  it("a missing token is a usage error (exit 2) naming GITHUB_TOKEN, before any request", async () => {
    const r = await diff(actionsEnv(repo.c2, { GITHUB_TOKEN: undefined }), repo.c1, repo.c2);
    expect(r.code).toBe(2);
    expect(r.err).toContain("GITHUB_TOKEN is not set");
    expect(r.err).toContain("pull-requests: write");
    expect(gh.requests).toEqual([]);
    const noPr = await diff(actionsEnv(repo.c2, { GITHUB_EVENT_PATH: undefined }), repo.c1, repo.c2);
    expect(noPr.code).toBe(2);
    expect(noPr.err).toContain("--pr <number>");
  });

  it("401 (bad token): clear error, exit 1, nothing written, the token never printed", async () => {
    const r = await diff(actionsEnv(repo.c2, { GITHUB_TOKEN: "ghs_wrong_token_value_123" }), repo.c1, repo.c2);
    expect(r.code).toBe(1);
    expect(r.err).toContain("reading pull request acme/mesh#7 failed (HTTP 401: Bad credentials)");
    expect(r.err).toContain("nothing was written");
    expect(r.err).not.toContain("ghs_wrong_token_value_123");
    expect(gh.writes()).toEqual([]);
  });

  it("403 on reading, and 403 on the first write (a read-only token, e.g. from a fork): clear error naming the permissions, nothing written", async () => {
    gh.fault = { status: 403, message: "Resource not accessible by integration", when: () => true };
    const r = await diff(actionsEnv(repo.c2), repo.c1, repo.c2);
    expect(r.code).toBe(1);
    expect(r.err).toContain("HTTP 403");
    expect(r.err).toContain("pull-requests: write");
    expect(gh.writes()).toEqual([]);
    gh.fault = { status: 403, message: "Resource not accessible by integration", when: (op) => op === "issues/create-comment" };
    const w = await diff(actionsEnv(repo.c2), repo.c1, repo.c2);
    expect(w.code).toBe(1);
    expect(w.err).toContain("creating a comment on acme/mesh#7 failed (HTTP 403: Resource not accessible by integration)");
    expect(w.err).toContain("statuses: write");
    expect(w.err).toContain("nothing was written");
    expect(gh.writes()).toEqual([]);
    expect(gh.statuses.size).toBe(0);
  });

  it("422 (head commit not pushed to the repository) and 404 (wrong pull request): clear error, nothing written", async () => {
    const unknown = "1234567890abcdef1234567890abcdef12345678";
    const r = await diff(actionsEnv(unknown), repo.c1, repo.c2);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`reading head commit ${unknown} of acme/mesh failed (HTTP 422: No commit found for SHA: ${unknown})`);
    expect(r.err).toContain("is the head commit pushed");
    const missing = await diff(actionsEnv(repo.c2), repo.c1, repo.c2, "--pr", "99");
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("HTTP 404");
    expect(missing.err).toContain("GITHUB_REPOSITORY");
    expect(gh.writes()).toEqual([]);
  });
});
