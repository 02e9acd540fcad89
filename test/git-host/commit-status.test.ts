// The server's commit-status poster against the local GitHub (every request validated against
// GitHub's OpenAPI description) and the local GitLab (checked against GitLab's documented endpoints):
// the three states, GitLab's "failed", the description limit, and how refusals are classified.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Reaction, reactionOf } from "../../src/core/index.js";
import { CommitStatusRefusedError, createCommitStatusPoster } from "../../src/git-host/index.js";
import { startFakeGitHub, type FakeGitHub } from "./fake-github.js";
import { startFakeGitLab, type FakeGitLab } from "./fake-gitlab.js";

const SHA = "0123456789abcdef0123456789abcdef01234567";
const UNKNOWN = "fedcba9876543210fedcba9876543210fedcba98";
let gh: FakeGitHub;
let gl: FakeGitLab;

beforeAll(async () => {
  gh = await startFakeGitHub({ token: "ghs_poster_token_0123456789", owner: "acme", repo: "mesh", pulls: {}, commits: [SHA] });
  gl = await startFakeGitLab({ token: "glpat-poster0123456789", projectId: "4242", mergeRequests: {}, commits: [SHA], user: { id: 7, username: "bot" } });
});
afterAll(async () => {
  await gh.close();
  await gl.close();
});

describe("commit statuses from the server (gitmesh/apply)", () => {
  it("GitHub: pending, success and failure on the commit, descriptions within 140 characters", async () => {
    const poster = createCommitStatusPoster({ platform: "github", apiUrl: gh.url, repository: "acme/mesh", token: "ghs_poster_token_0123456789" });
    await poster.post(SHA, "pending", "accepted; applied on 0 of 2 clusters");
    await poster.post(SHA, "success", "applied on 2 clusters in 1.2 s");
    await poster.post(SHA, "failure", `rejected: ${"x".repeat(300)}`);
    expect(gh.statuses.get(SHA)?.map((s) => [s.context, s.state])).toEqual([
      ["gitmesh/apply", "pending"],
      ["gitmesh/apply", "success"],
      ["gitmesh/apply", "failure"],
    ]);
    expect(gh.statuses.get(SHA)![2]!.description!.length).toBeLessThanOrEqual(140);
    expect(gh.violations).toEqual([]);
  });

  it("GitLab: the same states, failure written as failed", async () => {
    const poster = createCommitStatusPoster({ platform: "gitlab", apiUrl: gl.apiUrl, repository: "4242", token: "glpat-poster0123456789" });
    await poster.post(SHA, "pending", "accepted");
    await poster.post(SHA, "failure", "cluster1 rejected the output: x");
    expect(gl.statuses.get(SHA)?.map((s) => [s.name, s.status])).toEqual([
      ["gitmesh/apply", "pending"],
      ["gitmesh/apply", "failed"],
    ]);
    expect(gl.violations).toEqual([]);
  });

  it("a wrong token or an unknown commit needs a human (not retried); a server error is transient", async () => {
    const wrong = createCommitStatusPoster({ platform: "github", apiUrl: gh.url, repository: "acme/mesh", token: "ghs_wrong_token_0123456789" });
    const refused = await wrong.post(SHA, "pending", "x").catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(CommitStatusRefusedError);
    expect(String(refused)).toContain("HTTP 401");
    expect(String(refused)).not.toContain("ghs_wrong_token");
    const right = createCommitStatusPoster({ platform: "github", apiUrl: gh.url, repository: "acme/mesh", token: "ghs_poster_token_0123456789" });
    expect(reactionOf(await right.post(UNKNOWN, "pending", "x").catch((e: unknown) => e))).toBe(Reaction.NeedsHuman);
    gh.fault = { status: 502, message: "Bad Gateway", when: (op) => op === "repos/create-commit-status" };
    try {
      expect(reactionOf(await right.post(SHA, "pending", "x").catch((e: unknown) => e))).toBe(Reaction.Transient);
    } finally {
      gh.fault = undefined;
    }
    expect(() => createCommitStatusPoster({ platform: "github", apiUrl: gh.url, repository: "just-a-name", token: "t" })).toThrow(/owner\/repo/);
  });
});
