/**
 * git-sync errors, grouped by how the caller must react (CONVENTIONS §5). Every message has had
 * credentials stripped (`stripCredentials`), so errors can be logged and shown in status as they are.
 */
import { describeError, NeedsHumanError, RetryLaterError, stripCredentials, TransientError } from "../core/index.js";

/** The Git server refused our credentials (401/403). Retrying will not help: fix the token. */
export class GitAuthError extends NeedsHumanError {}

/** The repository, branch, tag or commit does not exist on the server. */
export class GitRefNotFoundError extends NeedsHumanError {}

/** Network or server failure while talking to Git (5xx, connection refused, reset). Retry with backoff. */
export class GitTransportError extends TransientError {}

/** A webhook announced a commit that the server does not serve yet (replica lag). Retry after a delay. */
export class CommitNotYetVisibleError extends RetryLaterError {}

/** The audit branch moved under us more often than `maxPushAttempts`; the next write will try again. */
export class AuditPushConflictError extends TransientError {}

interface IsoGitErrorShape {
  code?: unknown;
  data?: { statusCode?: unknown; reason?: unknown } | undefined;
}

/** Maps an isomorphic-git / network error to one of ours, with a credential-free message. */
export function classifyGitError(err: unknown, what: string): Error {
  if (err instanceof GitAuthError || err instanceof GitRefNotFoundError || err instanceof GitTransportError || err instanceof GitHostKeyError) return err;
  const e = (typeof err === "object" && err !== null ? err : {}) as IsoGitErrorShape;
  const code = typeof e.code === "string" ? e.code : "";
  const status = typeof e.data?.statusCode === "number" ? e.data.statusCode : undefined;
  const message = `${what}: ${stripCredentials(describeError(err))}`;
  const cause = { code, status };
  if (code === "UserCanceledError" || status === 401 || status === 403) {
    return new GitAuthError(`${message} — check the configured token or username/password`, { cause });
  }
  if (code === "NotFoundError" || status === 404) {
    return new GitRefNotFoundError(`${message} — check the repository URL and ref`, { cause });
  }
  return new GitTransportError(message, { cause });
}

/**
 * The SSH server's host key is not the one known_hosts lists for it (unknown, changed or revoked).
 * Never retried: a changed key may be an attack; a person checks the fingerprint and updates known_hosts.
 */
export class GitHostKeyError extends NeedsHumanError {}
