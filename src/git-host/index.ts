/**
 * git-host: posting the pull-request review to the forge — one sticky comment (split into parts
 * when long) and a commit status `gitmesh/diff` per pull/merge request, on GitHub (@octokit/rest)
 * or GitLab (@gitbeaker/rest). `ciContextFromEnv` reads where to post from each platform's CI
 * variables (the environment is passed in).
 */
export { ciContextFromEnv, type CiContext, type CiContextOptions, type Env, type GitHubContext, type GitLabContext, type Platform } from "./ci-context.js";
export { GitHostApiError, GitHostConfigError } from "./errors.js";
export { createGitHubReporter, GITHUB_ACTIONS_LOGIN, type GitHubReporterOptions } from "./github.js";
export { createGitLabReporter, type GitLabReporterOptions } from "./gitlab.js";
export { shorten, STATUS_CONTEXT, STATUS_DESCRIPTION_MAX, statusOfReport, type PostInput, type PostResult, type Reporter, type ReportState } from "./reporter.js";

import type { CiContext } from "./ci-context.js";
import { createGitHubReporter } from "./github.js";
import { createGitLabReporter } from "./gitlab.js";
import type { Reporter } from "./reporter.js";

/** The reporter for a detected context. */
export function createReporter(context: CiContext): Reporter {
  return context.platform === "github" ? createGitHubReporter({ context }) : createGitLabReporter({ context });
}
export { APPLY_STATUS_CONTEXT, CommitStatusRefusedError, createCommitStatusPoster, type CommitState, type CommitStatusPoster, type CommitStatusTarget } from "./commit-status.js";
