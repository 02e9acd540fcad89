/** Where to post, from each platform's CI variables (the environment passed in, never process.env). */
import { describe, expect, it } from "vitest";
import { ciContextFromEnv, GitHostConfigError, statusOfReport } from "../../src/git-host/index.js";

const HEAD = "a".repeat(40);
const EVENT_HEAD = "b".repeat(40);
const files: Record<string, string> = { "/event.json": JSON.stringify({ pull_request: { number: 4, head: { sha: EVENT_HEAD } } }), "/push.json": JSON.stringify({ ref: "refs/heads/main" }) };
const readText = (p: string) => {
  const t = files[p];
  if (t === undefined) throw new Error(`ENOENT: ${p}`);
  return t;
};
const gh = { GITHUB_TOKEN: "t", GITHUB_REPOSITORY: "acme/mesh", GITHUB_EVENT_PATH: "/event.json" };

describe("ciContextFromEnv", () => {
  it("GitHub: pull request and head from the event, API URL defaulted; --pr uses the --head commit", () => {
    expect(ciContextFromEnv("github", gh, { headCommit: HEAD, readText })).toEqual({
      platform: "github",
      apiUrl: "https://api.github.com",
      owner: "acme",
      repo: "mesh",
      token: "t",
      pullNumber: 4,
      headSha: EVENT_HEAD,
    });
    expect(ciContextFromEnv("github", { ...gh, GITHUB_API_URL: "https://ghe.example.com/api/v3/" }, { headCommit: HEAD, readText, pr: 9 })).toMatchObject({ apiUrl: "https://ghe.example.com/api/v3", pullNumber: 9, headSha: HEAD });
  });

  it("GitHub: each missing or malformed piece is a clear configuration error", () => {
    const fails = (env: Record<string, string | undefined>, message: string) =>
      expect(() => ciContextFromEnv("github", env, { headCommit: HEAD, readText })).toThrow(expect.objectContaining({ constructor: GitHostConfigError, message: expect.stringContaining(message) }));
    fails({ ...gh, GITHUB_TOKEN: " " }, "GITHUB_TOKEN is not set");
    fails({ ...gh, GITHUB_REPOSITORY: "acme" }, "GITHUB_REPOSITORY must be owner/name");
    fails({ ...gh, GITHUB_EVENT_PATH: "/push.json" }, "no pull_request.number");
    fails({ ...gh, GITHUB_EVENT_PATH: "/missing.json" }, "cannot read the event file");
    fails({ ...gh, GITHUB_API_URL: "https://user:secret@ghe.example.com/api/v3" }, "must not carry credentials");
    fails({ ...gh, GITHUB_API_URL: "file:///etc/passwd" }, "must be an http(s) URL");
  });

  it("GitLab: merge request, project and head from CI variables; CI_JOB_TOKEN alone is refused", () => {
    const env = { GITLAB_TOKEN: "g", CI_API_V4_URL: "https://gitlab.example.com/api/v4", CI_PROJECT_ID: "12", CI_MERGE_REQUEST_IID: "3", CI_COMMIT_SHA: EVENT_HEAD };
    expect(ciContextFromEnv("gitlab", env, { headCommit: HEAD, readText })).toEqual({ platform: "gitlab", apiUrl: "https://gitlab.example.com/api/v4", projectId: "12", token: "g", mergeRequestIid: 3, headSha: EVENT_HEAD });
    expect(() => ciContextFromEnv("gitlab", { ...env, GITLAB_TOKEN: undefined, CI_JOB_TOKEN: "j" }, { headCommit: HEAD, readText })).toThrow(/GITLAB_TOKEN is not set\. CI_JOB_TOKEN is set but does not suffice/);
    expect(() => ciContextFromEnv("gitlab", { ...env, CI_MERGE_REQUEST_IID: "x" }, { headCommit: HEAD, readText })).toThrow(/positive integer/);
    expect(() => ciContextFromEnv("gitlab", { ...env, CI_API_V4_URL: "https://gitlab.example.com" }, { headCommit: HEAD, readText })).toThrow(/must end in \/api\/v4/);
  });
});

describe("statusOfReport", () => {
  const report = { base: { ref: "a", commit: HEAD }, head: { ref: "b", commit: HEAD }, clusters: [], introduced: [], fixed: [], errors: [], risks: [], bySource: [] };
  it("success without errors; failure with the first introduced error as file:line, at most 140 characters", () => {
    expect(statusOfReport({ ...report, headErrors: 0 })).toEqual({ state: "success", description: "no rendered change" });
    const long = { code: "SCHEMA", severity: "error" as const, file: "w/rt.yaml", line: 7, message: "x".repeat(300) };
    const s = statusOfReport({ ...report, introduced: [long], headErrors: 3 });
    expect(s.state).toBe("failure");
    expect(s.description.startsWith("w/rt.yaml:7: SCHEMA: xxx")).toBe(true);
    expect(s.description.endsWith("… (+2 more)")).toBe(true);
    expect(s.description.length).toBe(140);
    expect(statusOfReport({ ...report, headErrors: 1 }).description).toBe("head has 1 error (already in base)");
  });

  it("failure when head would be rejected (clusters keep base), and when a change needs consent", () => {
    const bad = { code: "YAML_SYNTAX", severity: "error" as const, file: "w/rt.yaml", line: 3, message: "bad indentation" };
    const rejected = statusOfReport({ ...report, headErrors: 2, errors: [bad, bad], rejected: { keeps: "c".repeat(40), errors: [bad, bad] } });
    expect(rejected).toEqual({ state: "failure", description: "would be rejected; clusters keep cccccccccccc: w/rt.yaml:3: YAML_SYNTAX: bad indentation (+1 more)" });
    const consent = statusOfReport({ ...report, headErrors: 0, risks: [{ kind: "mass-deletion", cluster: "cluster1", message: "m", blocking: true }] });
    expect(consent.state).toBe("failure");
    expect(consent.description).toContain("cluster1 mass-deletion");
    expect(statusOfReport({ ...report, headErrors: 0, risks: [{ kind: "security-policy-removed", cluster: "cluster1", message: "m", blocking: false }] }).state).toBe("success");
  });
});
