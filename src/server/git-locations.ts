/**
 * Where the server reads and writes Git, from its configuration (pure): the configuration source, the
 * copy `/api/diff` reads, and the audit branch's target. A remote repository gets one object cache per
 * use under the data directory, so a diff or an audit push never disturbs the live source's cache.
 */
import { join } from "node:path";
import { stripCredentials } from "../core/index.js";
import type { AuditTarget, GitLocation } from "../git-sync/index.js";
import type { GitSourceConfig } from "./config.js";

export interface ServerGitLocations {
  /** The configuration source (remote: cached in `<dataDir>/source.git`). */
  readonly source: GitLocation;
  /** What `/api/diff` reads (remote: its own cache, `<dataDir>/diff.git`). */
  readonly diff: GitLocation;
  /** Where audit commits go (remote: built in `<dataDir>/audit.git`, then pushed). */
  readonly audit: AuditTarget;
  /** The repository as logs and the API name it: the local path, or the URL without credentials. */
  readonly name: string;
}

/** The locations of one configured repository; `dataDir` holds the caches of a remote one; `idleTimeoutMs` bounds an SSH request's silence (as the HTTP client's). */
export function serverGitLocations(git: GitSourceConfig, dataDir: string, idleTimeoutMs?: number): ServerGitLocations {
  if (git.kind === "local") {
    const local = { kind: "local", path: git.path } as const;
    return { source: local, diff: local, audit: local, name: git.path };
  }
  const auth = git.password !== undefined ? { auth: { username: git.username ?? "git", password: git.password } } : {};
  const ssh = git.ssh === undefined ? {} : { ssh: { ...git.ssh, ...(idleTimeoutMs === undefined ? {} : { idleTimeoutMs }) } };
  const remote = (cache: string) => ({ kind: "remote", url: git.url, cacheDir: join(dataDir, cache), ...auth, ...ssh }) as const;
  return { source: remote("source.git"), diff: remote("diff.git"), audit: remote("audit.git"), name: stripCredentials(git.url) };
}
