/**
 * GitLab: one sticky report per merge request (notes starting with COMMENT_MARKER, written by the
 * token's own user) and a commit status `gitmesh/diff`, all through @gitbeaker/rest.
 *
 * Calls (GitLab REST API v4 documentation section) — every one needs GITLAB_TOKEN, a project access
 * token (or personal token) with the `api` scope; CI_JOB_TOKEN is not accepted by these endpoints:
 *   GET    /projects/:id/merge_requests/:iid                 "Merge requests API" → Get single MR    (access check)
 *   GET    /projects/:id/repository/commits/:sha             "Commits API" → Get a single commit    (head is pushed)
 *   GET    /user                                             "Users API" → the current user           (whose notes are ours)
 *   GET    /projects/:id/merge_requests/:iid/notes           "Notes API" → List all merge request notes
 *   POST   /projects/:id/merge_requests/:iid/notes           "Notes API" → Create new merge request note
 *   PUT    /projects/:id/merge_requests/:iid/notes/:note_id  "Notes API" → Modify existing merge request note
 *   DELETE /projects/:id/merge_requests/:iid/notes/:note_id  "Notes API" → Delete a merge request note
 *   POST   /projects/:id/statuses/:sha                       "Commits API" → Set the pipeline status of a commit
 */
import { Gitlab } from "@gitbeaker/rest";
import { COMMENT_MARKER } from "../git-sync/index.js";
import type { GitLabContext } from "./ci-context.js";
import { GitHostApiError } from "./errors.js";
import { shorten, STATUS_CONTEXT, type PostInput, type PostResult, type Reporter } from "./reporter.js";

export interface GitLabReporterOptions {
  readonly context: Pick<GitLabContext, "apiUrl" | "projectId" | "token" | "mergeRequestIid">;
}

const HINT =
  "check GITLAB_TOKEN: a project access token (or personal access token) with the `api` scope and at least the Developer role " +
  "(commit statuses need Developer), not expired; CI_JOB_TOKEN cannot write notes or statuses";

export function createGitLabReporter(options: GitLabReporterOptions): Reporter {
  const { projectId, mergeRequestIid: iid } = options.context;
  const host = options.context.apiUrl.replace(/\/api\/v4\/?$/, "");
  const api = new Gitlab({ host, token: options.context.token });
  const where = `merge request !${iid} of project ${projectId}`;

  return {
    async post(input: PostInput): Promise<PostResult> {
      const written: string[] = [];
      const call = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
        try {
          return await fn();
        } catch (err) {
          throw apiError(what, err, written);
        }
      };
      // 1. Access: read before writing anything.
      await call(`reading ${where}`, () => api.MergeRequests.show(projectId, iid));
      await call(`reading head commit ${input.headSha}`, () => api.Commits.show(projectId, input.headSha));
      const me = await call("reading the token's user", () => api.Users.showCurrentUser());
      const notes = await call(`listing the notes of ${where}`, () => api.MergeRequestNotes.all(projectId, iid, { sort: "asc", orderBy: "created_at" }));
      const mine = notes
        .filter((n) => !n.system && n.author.id === me.id && n.body.startsWith(COMMENT_MARKER))
        .sort((a, b) => a.id - b.id);

      // 2. Notes: update the earlier parts in place, add the rest, delete the surplus.
      const ids: number[] = [];
      let created = 0;
      let updated = 0;
      let deleted = 0;
      for (const [i, body] of input.bodies.entries()) {
        const old = mine[i];
        if (old) {
          if (old.body !== body) {
            await call(`updating note ${old.id} on ${where}`, () => api.MergeRequestNotes.edit(projectId, iid, old.id, { body }));
            written.push(`updated note ${old.id}`);
            updated++;
          }
          ids.push(old.id);
        } else {
          const note = await call(`creating a note on ${where}`, () => api.MergeRequestNotes.create(projectId, iid, body));
          written.push(`created note ${note.id}`);
          ids.push(note.id);
          created++;
        }
      }
      for (const old of mine.slice(input.bodies.length)) {
        await call(`deleting surplus note ${old.id} on ${where}`, () => api.MergeRequestNotes.remove(projectId, iid, old.id));
        written.push(`deleted note ${old.id}`);
        deleted++;
      }
      // 3. Status on the head commit (GitLab calls failure "failed").
      await call(`setting commit status ${STATUS_CONTEXT} on ${input.headSha}`, () =>
        api.Commits.editStatus(projectId, input.headSha, input.state === "success" ? "success" : "failed", { name: STATUS_CONTEXT, description: shorten(input.description) }),
      );
      return { commentIds: ids, created, updated, deleted };
    },
  };
}

function statusOf(err: unknown): number {
  const response = ((err as { cause?: { response?: unknown } } | null)?.cause?.response ?? undefined) as { status?: unknown } | undefined;
  return typeof response?.status === "number" ? response.status : 0;
}

function apiError(what: string, err: unknown, written: readonly string[]): GitHostApiError {
  const status = statusOf(err);
  const said = (err as { cause?: { description?: unknown } }).cause?.description;
  const text = typeof said === "string" && said !== "" ? said : status === 0 ? (err as Error).message : "";
  const reason =
    status === 401
      ? "the token was refused (expired, revoked or not a GitLab token)"
      : status === 403
        ? "the token lacks a permission"
        : status === 404
          ? "not found — wrong CI_PROJECT_ID, merge request or commit, or the token cannot see the project"
          : status === 422 || status === 400
            ? "GitLab refused the request as invalid"
            : status === 0
              ? "no answer from the API — check CI_API_V4_URL and the network"
              : "the API failed — retry later";
  const hint = [400, 401, 403, 404, 422].includes(status) ? `; ${HINT}` : "";
  const partial = written.length === 0 ? "nothing was written" : `already written: ${written.join(", ")}`;
  return new GitHostApiError(`GitLab API: ${what} failed${status ? ` (HTTP ${status}${text ? `: ${text}` : ""})` : text ? ` (${text})` : ""}: ${reason}${hint}; ${partial}`, status, written);
}
