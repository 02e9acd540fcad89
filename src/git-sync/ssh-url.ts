/**
 * Git's two spellings of an SSH remote, parsed as git parses them (`git help urls`):
 *
 * - `ssh://[user@]host[:port]/path` (also `git+ssh://`, `ssh+git://`); a path starting `/~` is relative
 *   to a home directory (`ssh://host/~/repo.git` → `~/repo.git`);
 * - the scp-like `[user@]host:path` (`git@github.com:org/repo.git`): only when no `/` comes before the
 *   first `:`; the path is relative to the login's home directory unless it starts with `/`.
 *   An IPv6 host is written in brackets: `git@[::1]:repo.git`.
 *
 * A password in an ssh:// URL is never used (keys only) and never kept: `display` is the URL without it.
 */

/** An SSH remote: where to connect and which repository path to hand to `git-upload-pack` / `git-receive-pack`. */
export interface SshUrl {
  /** Login name (default `git`, as GitHub, GitLab, Gitea and Bitbucket expect). */
  readonly user: string;
  readonly host: string;
  /** Default 22. */
  readonly port: number;
  /** Repository path as the server's git sees it: absolute, `~`-relative, or relative to the home directory. */
  readonly path: string;
  /** The URL as logs and errors show it (no password). */
  readonly display: string;
}

/** Login name when a URL has none. */
export const DEFAULT_SSH_USER = "git";

const SSH_SCHEME = /^(?:ssh|git\+ssh|ssh\+git):\/\//i;

/** True for `ssh://…` and scp-like `[user@]host:path` remotes (false for http(s), file and local paths). */
export function isSshUrl(url: string): boolean {
  return parseSshUrl(url) !== undefined;
}

/** The parts of an SSH remote, or undefined when `url` is not one. */
export function parseSshUrl(url: string): SshUrl | undefined {
  if (SSH_SCHEME.test(url)) return parseSchemeUrl(url);
  return parseScpLike(url);
}

function parseSchemeUrl(url: string): SshUrl | undefined {
  let u: URL;
  try {
    // WHATWG URL parses only special schemes' hosts fully; swap the scheme for one that is special.
    u = new URL(url.replace(SSH_SCHEME, "http://"));
  } catch {
    return undefined;
  }
  if (u.hostname === "" || u.search !== "" || u.hash !== "") return undefined;
  const host = u.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = u.port === "" ? 22 : Number(u.port);
  const user = u.username === "" ? DEFAULT_SSH_USER : decodeURIComponent(u.username);
  const rawPath = decodeURIComponent(u.pathname);
  if (rawPath === "/" || rawPath === "") return undefined;
  const path = rawPath.startsWith("/~") ? rawPath.slice(1) : rawPath;
  const userPart = u.username === "" ? "" : `${u.username}@`;
  const hostPart = host.includes(":") ? `[${host}]` : host;
  return { user, host, port, path, display: `ssh://${userPart}${hostPart}${u.port === "" ? "" : `:${u.port}`}${u.pathname}` };
}

/** `[user@]host:path` — never a Windows drive (`C:\…`), a URL with a scheme, or a path with `/` before the colon. */
function parseScpLike(url: string): SshUrl | undefined {
  if (url.includes("://")) return undefined;
  const m = /^(?:([^@/:\s]+)@)?(\[[^\]/\s]+\]|[^@/:[\]\s]+):(.+)$/.exec(url);
  if (!m) return undefined;
  const [, user, rawHost = "", path = ""] = m;
  if (/^[A-Za-z]$/.test(rawHost)) return undefined;
  const host = rawHost.replace(/^\[(.*)\]$/, "$1");
  if (host === "" || path.trim() === "") return undefined;
  return { user: user ?? DEFAULT_SSH_USER, host, port: 22, path, display: url };
}

/** The command line git runs on the server: `git-upload-pack '<path>'`, quoted as git's `sq_quote_buf` does. */
export function sshGitCommand(service: "git-upload-pack" | "git-receive-pack", path: string): string {
  return `${service} '${path.replace(/['!]/g, (c) => `'\\${c}'`)}'`;
}
