/**
 * Where to post, from the CI environment each platform provides — no flags needed in CI.
 * The environment and the event file are passed in (the CLI is the only place that reads
 * process.env); explicit options (`--pr`, the resolved `--head`) fill what the environment lacks.
 */
import { GitHostConfigError } from "./errors.js";

export type Platform = "github" | "gitlab";

export interface GitHubContext {
  readonly platform: "github";
  /** REST API root, `GITHUB_API_URL` (default https://api.github.com). */
  readonly apiUrl: string;
  readonly owner: string;
  readonly repo: string;
  readonly token: string;
  readonly pullNumber: number;
  /** The pull request's head commit: the event's pull_request.head.sha, else the diffed head commit. */
  readonly headSha: string;
}

export interface GitLabContext {
  readonly platform: "gitlab";
  /** `CI_API_V4_URL`, e.g. https://gitlab.com/api/v4. */
  readonly apiUrl: string;
  /** `CI_PROJECT_ID` (numeric id or url-encoded path). */
  readonly projectId: string;
  readonly token: string;
  readonly mergeRequestIid: number;
  /** `CI_COMMIT_SHA`, else the diffed head commit. */
  readonly headSha: string;
}

export type CiContext = GitHubContext | GitLabContext;

export type Env = Readonly<Record<string, string | undefined>>;

export interface CiContextOptions {
  /** `--pr N`: the pull/merge request number; overrides the environment. */
  readonly pr?: number;
  /** The commit `--head` resolved to; used for the status when the environment names none (and with --pr). */
  readonly headCommit: string;
  /** Reads a file (GitHub's event payload at `GITHUB_EVENT_PATH`); throws when it cannot. */
  readonly readText: (path: string) => string;
}

export function ciContextFromEnv(platform: Platform, env: Env, options: CiContextOptions): CiContext {
  return platform === "github" ? gitHubContext(env, options) : gitLabContext(env, options);
}

const set = (env: Env, name: string): string | undefined => {
  const v = env[name];
  return v === undefined || v.trim() === "" ? undefined : v.trim();
};

function gitHubContext(env: Env, options: CiContextOptions): GitHubContext {
  const token = set(env, "GITHUB_TOKEN");
  if (token === undefined) {
    throw new GitHostConfigError(
      "--post github: GITHUB_TOKEN is not set. In GitHub Actions pass it to the step (env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}) " +
        "and grant the job `permissions: pull-requests: write, statuses: write`",
    );
  }
  const repository = set(env, "GITHUB_REPOSITORY");
  const m = repository === undefined ? null : /^([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)$/.exec(repository);
  if (!m) {
    throw new GitHostConfigError(
      repository === undefined
        ? "--post github: GITHUB_REPOSITORY is not set (owner/name; GitHub Actions sets it)"
        : `--post github: GITHUB_REPOSITORY must be owner/name, not ${JSON.stringify(repository)}`,
    );
  }
  const apiUrl = (set(env, "GITHUB_API_URL") ?? "https://api.github.com").replace(/\/+$/, "");
  checkUrl("GITHUB_API_URL", apiUrl);

  let pullNumber = options.pr;
  let headSha: string | undefined;
  if (pullNumber === undefined) {
    const eventPath = set(env, "GITHUB_EVENT_PATH");
    if (eventPath === undefined) {
      throw new GitHostConfigError("--post github: no pull request — GITHUB_EVENT_PATH is not set (outside a pull_request workflow, pass --pr <number>)");
    }
    let event: unknown;
    try {
      event = JSON.parse(options.readText(eventPath));
    } catch (err) {
      throw new GitHostConfigError(`--post github: cannot read the event file GITHUB_EVENT_PATH=${eventPath}: ${(err as Error).message}`);
    }
    const pr = (event as { pull_request?: { number?: unknown; head?: { sha?: unknown } } } | null)?.pull_request;
    if (typeof pr?.number !== "number" || !Number.isInteger(pr.number) || pr.number < 1) {
      throw new GitHostConfigError(
        "--post github: the event in GITHUB_EVENT_PATH has no pull_request.number — run the workflow `on: pull_request` (or pull_request_target), or pass --pr <number>",
      );
    }
    pullNumber = pr.number;
    if (typeof pr.head?.sha === "string" && /^[0-9a-f]{40}$/.test(pr.head.sha)) headSha = pr.head.sha;
  }
  return { platform: "github", apiUrl, owner: m[1]!, repo: m[2]!, token, pullNumber, headSha: headSha ?? options.headCommit };
}

function gitLabContext(env: Env, options: CiContextOptions): GitLabContext {
  const token = set(env, "GITLAB_TOKEN");
  if (token === undefined) {
    const job = set(env, "CI_JOB_TOKEN") === undefined ? "" : " CI_JOB_TOKEN is set but does not suffice: GitLab's job token is not accepted for merge-request notes or commit statuses.";
    throw new GitHostConfigError(
      `--post gitlab: GITLAB_TOKEN is not set.${job} Create a project access token with the \`api\` scope (role Developer) and add it as a masked CI/CD variable GITLAB_TOKEN`,
    );
  }
  const apiUrl = set(env, "CI_API_V4_URL")?.replace(/\/+$/, "");
  if (apiUrl === undefined) throw new GitHostConfigError("--post gitlab: CI_API_V4_URL is not set (GitLab CI sets it, e.g. https://gitlab.com/api/v4)");
  checkUrl("CI_API_V4_URL", apiUrl);
  if (!/\/api\/v4$/.test(apiUrl)) throw new GitHostConfigError(`--post gitlab: CI_API_V4_URL must end in /api/v4, not ${apiUrl}`);
  const projectId = set(env, "CI_PROJECT_ID");
  if (projectId === undefined) throw new GitHostConfigError("--post gitlab: CI_PROJECT_ID is not set (GitLab CI sets it)");
  let iid = options.pr;
  if (iid === undefined) {
    const raw = set(env, "CI_MERGE_REQUEST_IID");
    if (raw === undefined) {
      throw new GitHostConfigError("--post gitlab: no merge request — CI_MERGE_REQUEST_IID is not set (run the job in a merge request pipeline: rules: - if: $CI_PIPELINE_SOURCE == \"merge_request_event\"), or pass --pr <iid>");
    }
    iid = Number(raw);
    if (!Number.isInteger(iid) || iid < 1) throw new GitHostConfigError(`--post gitlab: CI_MERGE_REQUEST_IID must be a positive integer, not ${JSON.stringify(raw)}`);
  }
  const sha = options.pr === undefined ? set(env, "CI_COMMIT_SHA") : undefined;
  return { platform: "gitlab", apiUrl, projectId, token, mergeRequestIid: iid, headSha: sha !== undefined && /^[0-9a-f]{40}$/.test(sha) ? sha : options.headCommit };
}

function checkUrl(name: string, value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new GitHostConfigError(`${name} is not a URL: ${JSON.stringify(value)}`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new GitHostConfigError(`${name} must be an http(s) URL, not ${value}`);
  if (url.username !== "" || url.password !== "") throw new GitHostConfigError(`${name} must not carry credentials`);
}
