/** Small formatting helpers shared by the pages. */

export function short(sha: string | null | undefined): string {
  return sha ? sha.slice(0, 12) : "–";
}

/** "12 s ago", "3 min ago", "2 h ago" (relative to `now`). */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return "never";
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86_400)} d ago`;
}

/** The colour class of a sync state (the server's answer, src/server/cluster-sync.ts): amber while it resolves by itself, red when a person must act. */
export function syncClass(state: string): "ok" | "warn" | "error" {
  if (state === "in-sync" || state === "applied") return "ok";
  if (state === "refused" || state === "cut-off") return "error";
  return "warn";
}

/** A duration in ms as "850 ms" / "2.4 s" / "3 min". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60_000)} min`;
}

/**
 * Links into the Git host when the repository is on one gitmesh knows (GitHub, GitLab, Gitea-style
 * hosts are not guessed): the commit page and a file at a line. The URL arrives without credentials.
 */
export function gitHost(repository: string | undefined): { commit(sha: string): string; file(sha: string, path: string, line?: number): string } | undefined {
  if (!repository) return undefined;
  const m = /^https:\/\/(github\.com|gitlab\.com)\/(.+?)(?:\.git)?\/?$/.exec(repository);
  if (!m) return undefined;
  const base = `https://${m[1]!}/${m[2]!}`;
  const sep = m[1] === "gitlab.com" ? "/-" : "";
  return {
    commit: (sha) => `${base}${sep}/commit/${sha}`,
    file: (sha, path, line) => `${base}${sep}/blob/${sha}/${path}${line === undefined ? "" : `#L${line}`}`,
  };
}
