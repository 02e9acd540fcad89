/**
 * Commit statuses from the management server: which commit reached which cluster, reported back on
 * the Git host as a status of the source commit (context `gitmesh/apply`): pending when accepted,
 * success when every registered cluster applied it, failure on a NACK or a rejected commit.
 *
 *   GitHub  POST /repos/{owner}/{repo}/statuses/{sha}   repos.createCommitStatus   (statuses: write)
 *   GitLab  POST /projects/:id/statuses/:sha            Commits.editStatus          (api scope, Developer)
 *
 * The server decides the state (src/server/commit-status.ts); this module only talks to the host,
 * through the same well-kept clients as `gitmesh diff --post`.
 */
import { Gitlab } from "@gitbeaker/rest";
import { Octokit } from "@octokit/rest";
import { NeedsHumanError, TransientError } from "../core/index.js";
import { shorten } from "./reporter.js";

export const APPLY_STATUS_CONTEXT = "gitmesh/apply";

export type CommitState = "pending" | "success" | "failure";

export interface CommitStatusTarget {
  readonly platform: "github" | "gitlab";
  /** https://api.github.com, https://ghe.example.com/api/v3, https://gitlab.example.com/api/v4 */
  readonly apiUrl: string;
  /** GitHub `owner/repo`; GitLab the project id or its path (`group/project`). */
  readonly repository: string;
  readonly token: string;
}

export interface CommitStatusPoster {
  /** Where statuses go (no token), for logs. */
  readonly describe: string;
  post(sha: string, state: CommitState, description: string, targetUrl?: string): Promise<void>;
}

/** A host error that will not go away by retrying (bad token, no permission, unknown repository). */
export class CommitStatusRefusedError extends NeedsHumanError {}

export function createCommitStatusPoster(target: CommitStatusTarget, options: { readonly context?: string } = {}): CommitStatusPoster {
  const context = options.context ?? APPLY_STATUS_CONTEXT;
  if (target.platform === "github") {
    const [owner, repo, ...rest] = target.repository.split("/");
    if (!owner || !repo || rest.length > 0) throw new CommitStatusRefusedError(`GitHub repository must be owner/repo, got ${JSON.stringify(target.repository)}`);
    const octokit = new Octokit({ auth: target.token, baseUrl: target.apiUrl.replace(/\/$/, ""), userAgent: "gitmesh-server", log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} } });
    return {
      describe: `GitHub ${owner}/${repo} (${target.apiUrl})`,
      async post(sha, state, description, targetUrl) {
        try {
          await octokit.rest.repos.createCommitStatus({ owner, repo, sha, state, context, description: shorten(description), ...(targetUrl ? { target_url: targetUrl } : {}) });
        } catch (err) {
          throw hostError(`GitHub ${owner}/${repo}: status ${state} on ${sha.slice(0, 12)}`, statusOf((err as { status?: unknown }).status), err);
        }
      },
    };
  }
  const api = new Gitlab({ host: target.apiUrl.replace(/\/api\/v4\/?$/, ""), token: target.token });
  return {
    describe: `GitLab project ${target.repository} (${target.apiUrl})`,
    async post(sha, state, description, targetUrl) {
      try {
        await api.Commits.editStatus(target.repository, sha, state === "failure" ? "failed" : state, { name: context, description: shorten(description), ...(targetUrl ? { targetUrl } : {}) });
      } catch (err) {
        const response = (err as { cause?: { response?: { status?: unknown } } }).cause?.response;
        throw hostError(`GitLab project ${target.repository}: status ${state} on ${sha.slice(0, 12)}`, statusOf(response?.status), err);
      }
    },
  };
}

const statusOf = (s: unknown): number => (typeof s === "number" ? s : 0);

/** 401/403/404/422 need a human (token, permission, repository, unknown commit); anything else is retried. */
function hostError(what: string, status: number, err: unknown): Error {
  const message = err instanceof Error ? err.message : String(err);
  if (status === 401 || status === 403 || status === 404 || status === 422) {
    const why = status === 401 ? "the token was refused" : status === 403 ? "the token lacks the permission to write commit statuses" : status === 404 ? "repository not found, or the token cannot see it" : "the host refused the request (is the commit pushed to this repository?)";
    return new CommitStatusRefusedError(`${what}: HTTP ${String(status)}: ${why}`, { cause: err });
  }
  return new TransientError(`${what}: ${status === 0 ? message : `HTTP ${String(status)}: ${message}`}`, { cause: err });
}
