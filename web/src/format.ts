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

const ZONE_KEY = "gitmesh.zone";

/** The zone times are shown in: UTC unless the user picked another (an IANA name, kept in localStorage). */
export function timeZone(): string {
  const z = localStorage.getItem(ZONE_KEY);
  return z && validZone(z) ? z : "UTC";
}

export function setTimeZone(zone: string): void {
  if (zone === "UTC" || !validZone(zone)) localStorage.removeItem(ZONE_KEY);
  else localStorage.setItem(ZONE_KEY, zone);
}

export function validZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-GB", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** An instant as "2026-11-29 08:01:32 UTC" (24-hour clock, the zone always named), in `zone` (default: timeZone()). */
export function clock(at: string | number | null | undefined, zone = timeZone()): string {
  if (at === null || at === undefined || at === "") return "–";
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return "–";
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-GB", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23", timeZoneName: "short" })
      .formatToParts(d)
      .map((p) => [p.type, p.value]),
  ) as Record<string, string>;
  const name = zone === "UTC" ? "UTC" : `${parts.timeZoneName ?? ""} (${zone})`;
  return `${parts.year ?? ""}-${parts.month ?? ""}-${parts.day ?? ""} ${parts.hour ?? ""}:${parts.minute ?? ""}:${parts.second ?? ""} ${name}`;
}

/** Whether `text` contains every word of `query` (case-insensitive); an empty query matches everything. */
export function matches(query: string, ...text: readonly (string | null | undefined)[]): boolean {
  const hay = text.filter(Boolean).join(" ").toLowerCase();
  return query
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((w) => hay.includes(w));
}
