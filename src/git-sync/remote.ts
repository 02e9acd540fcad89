/**
 * One remote repository as isomorphic-git is handed it: the URL it is given, the name logs and errors
 * show, the transport, and HTTP credentials. An http(s) URL goes through the HTTP client (credentials
 * moved out of the URL); an SSH URL (`ssh://…`, `git@host:org/repo.git`) through the SSH transport
 * (ssh-transport.ts) with the configured key and known_hosts.
 */
import type { GitAuth, GitHttpRequest, GitHttpResponse, HttpClient } from "isomorphic-git";
import type { Logger } from "../core/index.js";
import { GitAuthError } from "./errors.js";
import { GIT_HTTP_IDLE_TIMEOUT_MS, withIdleTimeout } from "./http-client.js";
import { createSshGitClient, sshPseudoUrl, type SshAuthOptions } from "./ssh-transport.js";
import { parseSshUrl } from "./ssh-url.js";
import { splitCredentials, type GitCredentials } from "./credentials.js";

/** SSH settings of a remote: the key and known_hosts, plus the idle timeout of its requests. */
export interface SshRemoteOptions extends SshAuthOptions {
  /** A request whose server sends nothing for this long fails (default GIT_HTTP_IDLE_TIMEOUT_MS, as over HTTP). */
  readonly idleTimeoutMs?: number;
}

export interface GitRemote {
  /** The URL isomorphic-git is given (for SSH a placeholder only `http` understands). */
  readonly url: string;
  /** The URL as logs, status and errors show it: no credentials. */
  readonly name: string;
  readonly http: HttpClient;
  readonly auth: GitAuth | undefined;
  readonly ssh: boolean;
}

export interface RemoteOptions {
  readonly url: string;
  readonly auth?: GitCredentials | undefined;
  readonly ssh?: SshRemoteOptions | undefined;
  /** HTTP client for an http(s) URL (default: isomorphic-git's, with an idle timeout). */
  readonly http?: HttpClient | undefined;
  readonly logger: Logger;
}

export function openRemote(options: RemoteOptions): GitRemote {
  const ssh = parseSshUrl(options.url);
  if (!ssh) {
    const { url, auth } = splitCredentials(options.url, options.auth);
    return { url, name: url, http: options.http ?? withIdleTimeout(), auth, ssh: false };
  }
  const settings = options.ssh;
  const name = ssh.display;
  if (settings === undefined) return { url: sshPseudoUrl(ssh), name, http: refuse(`${name} is an SSH URL, but no SSH private key is configured — give one (the server: GITMESH_GIT_SSH_KEY_FILE; gitmesh diff: --ssh-key)`), auth: undefined, ssh: true };
  const client = createSshGitClient({
    ...settings,
    remote: ssh,
    onHostTrusted: (host, keyType, fingerprint) =>
      options.logger.warn("SSH host trusted on first use; pin it in known_hosts", { host, keyType, fingerprint }),
  });
  return { url: sshPseudoUrl(ssh), name, http: withIdleTimeout(settings.idleTimeoutMs ?? GIT_HTTP_IDLE_TIMEOUT_MS, client), auth: undefined, ssh: true };
}

function refuse(message: string): HttpClient {
  return { request: (_req: GitHttpRequest): Promise<GitHttpResponse> => Promise.reject(new GitAuthError(message)) };
}
