/**
 * GitHub: one sticky report per pull request (issue comments starting with COMMENT_MARKER, written
 * by the token's own identity) and a commit status `gitmesh/diff`, all through @octokit/rest.
 *
 * Calls and the permission each needs (fine-grained / GITHUB_TOKEN names):
 *   GET  /repos/{o}/{r}/pulls/{n}                 pulls.get             pull-requests: read  (access check)
 *   GET  /repos/{o}/{r}/commits/{sha}             repos.getCommit       contents: read       (head is pushed)
 *   GET  /user                                    users.getAuthenticated — (a PAT's login; 403 for GITHUB_TOKEN)
 *   GET  /repos/{o}/{r}/issues/{n}/comments       issues.listComments   pull-requests: read
 *   POST /repos/{o}/{r}/issues/{n}/comments       issues.createComment  pull-requests: write
 *   PATCH/DELETE /repos/{o}/{r}/issues/comments/{id}                     pull-requests: write
 *   POST /repos/{o}/{r}/statuses/{sha}            repos.createCommitStatus  statuses: write
 */
import { Octokit } from "@octokit/rest";
import { COMMENT_MARKER } from "../git-sync/index.js";
import type { GitHubContext } from "./ci-context.js";
import { GitHostApiError } from "./errors.js";
import { shorten, STATUS_CONTEXT, type PostInput, type PostResult, type Reporter } from "./reporter.js";

/** The login GITHUB_TOKEN writes as; used when GET /user is refused (installation tokens). */
export const GITHUB_ACTIONS_LOGIN = "github-actions[bot]";
/** GitHub refuses comment bodies longer than this. */
export const GITHUB_COMMENT_MAX = 65_536;

export interface GitHubReporterOptions {
  readonly context: Pick<GitHubContext, "apiUrl" | "owner" | "repo" | "token" | "pullNumber">;
  /** Login whose marker comments are this reporter's own (default: GET /user, else github-actions[bot]). */
  readonly author?: string;
  readonly userAgent?: string;
}

const HINT =
  "check that the token can write to this repository: GITHUB_TOKEN needs `permissions: pull-requests: write` and `statuses: write` in the workflow " +
  "(a fine-grained token: Pull requests and Commit statuses read/write; a classic token: the repo scope); " +
  "a workflow run from a fork gets a read-only GITHUB_TOKEN";

export function createGitHubReporter(options: GitHubReporterOptions): Reporter {
  const { owner, repo, pullNumber } = options.context;
  const octokit = new Octokit({
    auth: options.context.token,
    baseUrl: options.context.apiUrl,
    userAgent: options.userAgent ?? "gitmesh",
    log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
  });
  const where = `${owner}/${repo}#${pullNumber}`;

  return {
    async post(input: PostInput): Promise<PostResult> {
      const written: string[] = [];
      const tooLong = input.bodies.findIndex((b) => b.length > GITHUB_COMMENT_MAX);
      if (tooLong >= 0) throw new GitHostApiError(`GitHub: comment part ${tooLong + 1} has ${input.bodies[tooLong]!.length} characters, more than GitHub's ${GITHUB_COMMENT_MAX}; lower --max-comment-chars; nothing was written`, 0, []);
      const call = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
        try {
          return await fn();
        } catch (err) {
          throw apiError(what, err, written);
        }
      };
      // 1. Access: read before writing anything.
      await call(`reading pull request ${where}`, () => octokit.rest.pulls.get({ owner, repo, pull_number: pullNumber }));
      await call(`reading head commit ${input.headSha} of ${owner}/${repo}`, () => octokit.rest.repos.getCommit({ owner, repo, ref: input.headSha, per_page: 1 }));
      let author = options.author;
      if (author === undefined) {
        try {
          author = (await octokit.rest.users.getAuthenticated()).data.login;
        } catch (err) {
          if (statusOf(err) !== 403 && statusOf(err) !== 401) throw apiError("reading the token's user", err, written);
          author = GITHUB_ACTIONS_LOGIN;
        }
      }
      const all = await call(`listing the comments of ${where}`, () => octokit.paginate(octokit.rest.issues.listComments, { owner, repo, issue_number: pullNumber, per_page: 100 }));
      // Only our own marked comments, oldest first: another author's comment is never edited or deleted.
      const mine = all.filter((c) => c.user?.login === author && (c.body ?? "").startsWith(COMMENT_MARKER)).sort((a, b) => a.id - b.id);

      // 2. Comments: update the earlier parts in place, add the rest, delete the surplus.
      const ids: number[] = [];
      let created = 0;
      let updated = 0;
      let deleted = 0;
      let url: string | undefined;
      for (const [i, body] of input.bodies.entries()) {
        const old = mine[i];
        if (old) {
          if (old.body !== body) {
            await call(`updating comment ${old.id} on ${where}`, () => octokit.rest.issues.updateComment({ owner, repo, comment_id: old.id, body }));
            written.push(`updated comment ${old.id}`);
            updated++;
          }
          ids.push(old.id);
          url ??= old.html_url;
        } else {
          const res = await call(`creating a comment on ${where}`, () => octokit.rest.issues.createComment({ owner, repo, issue_number: pullNumber, body }));
          written.push(`created comment ${res.data.id}`);
          ids.push(res.data.id);
          url ??= res.data.html_url;
          created++;
        }
      }
      for (const old of mine.slice(input.bodies.length)) {
        await call(`deleting surplus comment ${old.id} on ${where}`, () => octokit.rest.issues.deleteComment({ owner, repo, comment_id: old.id }));
        written.push(`deleted comment ${old.id}`);
        deleted++;
      }
      // 3. Status on the head commit.
      await call(`setting commit status ${STATUS_CONTEXT} on ${input.headSha}`, () =>
        octokit.rest.repos.createCommitStatus({
          owner,
          repo,
          sha: input.headSha,
          state: input.state,
          context: STATUS_CONTEXT,
          description: shorten(input.description),
          ...(url === undefined ? {} : { target_url: url }),
        }),
      );
      return { commentIds: ids, created, updated, deleted, ...(url === undefined ? {} : { url }) };
    },
  };
}

function statusOf(err: unknown): number {
  const s = (err as { status?: unknown } | null)?.status;
  return typeof s === "number" ? s : 0;
}

function apiError(what: string, err: unknown, written: readonly string[]): GitHostApiError {
  const response = (err as { response?: { data?: unknown } }).response;
  // Octokit reports a request that got no answer (refused, DNS, TLS) as status 500 without a response.
  const status = response === undefined ? 0 : statusOf(err);
  const data = response?.data as { message?: unknown } | undefined;
  const said = typeof data?.message === "string" ? data.message : status === 0 ? (err as Error).message : "";
  const reason =
    status === 401
      ? "the token was refused (expired, revoked or not a GitHub token)"
      : status === 403
        ? "the token lacks a permission"
        : status === 404
          ? "not found — wrong GITHUB_REPOSITORY or pull request number, or the token cannot see the repository"
          : status === 422
            ? "GitHub refused the request as invalid (for a commit: is the head commit pushed to this repository?)"
            : status === 0
              ? "no answer from the API — check GITHUB_API_URL and the network"
              : "the API failed — retry later";
  const hint = [401, 403, 404, 422].includes(status) ? `; ${HINT}` : "";
  const partial = written.length === 0 ? "nothing was written" : `already written: ${written.join(", ")}`;
  return new GitHostApiError(`GitHub API: ${what} failed${status ? ` (HTTP ${status}${said ? `: ${said}` : ""})` : said ? ` (${said})` : ""}: ${reason}${hint}; ${partial}`, status, written);
}
