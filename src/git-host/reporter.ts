/** The one interface both platforms implement, and the status a diff report earns. */
import { Severity, type Diagnostic } from "../core/index.js";
import { reportFails, type DiffReport } from "../git-sync/index.js";

/** Commit status context (GitHub `context`, GitLab `name`). */
export const STATUS_CONTEXT = "gitmesh/diff";
/** GitHub's limit for a status description; GitLab's is larger, the same text is used. */
export const STATUS_DESCRIPTION_MAX = 140;

export type ReportState = "success" | "failure";

export interface PostInput {
  /** Comment bodies in order, each starting with COMMENT_MARKER (renderMarkdown's output). */
  readonly bodies: readonly string[];
  /** Commit that gets the status. */
  readonly headSha: string;
  readonly state: ReportState;
  /** Shortened to STATUS_DESCRIPTION_MAX characters. */
  readonly description: string;
}

export interface PostResult {
  /** Ids of the comments (notes) that now hold the report, in order. */
  readonly commentIds: readonly number[];
  readonly created: number;
  readonly updated: number;
  /** Surplus comments of an earlier, longer report. */
  readonly deleted: number;
  /** Link to the first comment, when the platform gives one. */
  readonly url?: string;
}

export interface Reporter {
  /**
   * Checks access first (reads the pull/merge request and the head commit), then creates or
   * updates in place one sticky comment per body, deletes surplus parts of an earlier report, and
   * sets the commit status. Throws GitHostApiError, naming what failed and what to check.
   */
  post(input: PostInput): Promise<PostResult>;
}

/**
 * `failure` when head would be rejected (its first error), when a change cannot apply without consent (a
 * mass deletion), or when head has errors (the first introduced one as `file:line: message`); `success` otherwise.
 */
export function statusOfReport(report: DiffReport): { state: ReportState; description: string } {
  const at = (d: Diagnostic) => `${d.file ? `${d.file}:${String(d.line ?? 1)}: ` : ""}${d.code}: ${d.message}`;
  if (report.rejected !== undefined) {
    const [first] = report.rejected.errors;
    const n = report.rejected.errors.length;
    const more = n > 1 ? ` (+${String(n - 1)} more)` : "";
    return { state: "failure", description: shorten(`would be rejected; clusters keep ${report.rejected.keeps.slice(0, 12)}${first ? `: ${at(first)}` : ""}`, STATUS_DESCRIPTION_MAX - more.length) + more };
  }
  if (!reportFails(report)) {
    const n = report.clusters.length;
    return { state: "success", description: n === 0 ? "no rendered change" : `${n} cluster${n === 1 ? "" : "s"} change, no errors` };
  }
  if (report.headErrors === 0) {
    // What fails is a change that needs consent.
    const blocking = report.risks.filter((r) => r.blocking);
    return { state: "failure", description: shorten(`needs consent: ${blocking.map((r) => `${r.cluster} ${r.kind}`).join(", ")} (Gitmesh-Allow-Deletion trailer)`) };
  }
  const first = report.introduced.find((d) => d.severity === Severity.Error);
  const text = first
    ? at(first)
    : `head has ${report.headErrors} error${report.headErrors === 1 ? "" : "s"} (already in base)`;
  const more = report.headErrors > 1 && first ? ` (+${report.headErrors - 1} more)` : "";
  return { state: "failure", description: shorten(text, STATUS_DESCRIPTION_MAX - more.length) + more };
}

export function shorten(text: string, max: number = STATUS_DESCRIPTION_MAX): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length <= max ? one : one.slice(0, max - 1) + "…";
}

