/**
 * User mistakes are data (CONVENTIONS §4): every problem in a user's input becomes a Diagnostic that
 * travels with the results and ends up in CLI output, status, the PR report and the API.
 */

export const Severity = {
  Error: "error",
  Warning: "warning",
  Info: "info",
} as const;
export type Severity = (typeof Severity)[keyof typeof Severity];

/** Identifies the configuration object a diagnostic is attached to. */
export interface ObjectRef {
  readonly apiVersion?: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
  readonly cluster?: string;
}

export interface Diagnostic {
  /** Stable, UPPER_SNAKE code; documented per module; safe to match on in scripts. */
  readonly code: string;
  readonly severity: Severity;
  /** Path of the source file relative to the repository root (POSIX separators). */
  readonly file?: string;
  /** 1-based line and column of the offending YAML node. */
  readonly line?: number;
  readonly column?: number;
  /** JSON path inside the document, e.g. `/spec/http/0/forwardTo`. */
  readonly path?: string;
  /** What is wrong and what to do about it. */
  readonly message: string;
  readonly object?: ObjectRef;
}

const severityRank: Record<Severity, number> = { error: 0, warning: 1, info: 2 };

/** Deterministic order: file, line, column, severity, code, message. */
export function compareDiagnostics(a: Diagnostic, b: Diagnostic): number {
  return (
    cmp(a.file ?? "", b.file ?? "") ||
    (a.line ?? 0) - (b.line ?? 0) ||
    (a.column ?? 0) - (b.column ?? 0) ||
    severityRank[a.severity] - severityRank[b.severity] ||
    cmp(a.code, b.code) ||
    cmp(a.path ?? "", b.path ?? "") ||
    cmp(a.message, b.message)
  );
}

export function sortDiagnostics(list: readonly Diagnostic[]): Diagnostic[] {
  return [...list].sort(compareDiagnostics);
}

export function hasErrors(list: readonly Diagnostic[]): boolean {
  return list.some((d) => d.severity === Severity.Error);
}

/** `file:line:col: severity CODE: message` — the format compilers use, so editors can jump to it. */
export function formatDiagnostic(d: Diagnostic): string {
  const where = d.file ? `${d.file}:${d.line ?? 1}:${d.column ?? 1}: ` : "";
  const path = d.path ? ` (at ${d.path})` : "";
  return `${where}${d.severity} ${d.code}: ${d.message}${path}`;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
