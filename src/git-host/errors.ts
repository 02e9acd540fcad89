/** Errors of the git-host module: configuration (the CI environment lacks something) and API refusals. */
import { NeedsHumanError } from "../core/index.js";

/** The CI environment does not say enough to post (token, repository, pull request): a usage error. */
export class GitHostConfigError extends NeedsHumanError {}

/**
 * The platform's API refused or failed a call. `status` is the HTTP status (0 without an answer);
 * `written` says what had already been written before the failure (empty when nothing was).
 * The message names the call and what to check, never the token.
 */
export class GitHostApiError extends NeedsHumanError {
  readonly status: number;
  readonly written: readonly string[];
  constructor(message: string, status: number, written: readonly string[]) {
    super(message);
    this.status = status;
    this.written = written;
  }
}
