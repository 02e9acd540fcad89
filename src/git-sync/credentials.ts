/** HTTP credentials of a remote repository, and moving them out of a URL (so it can be logged). */
import type { GitAuth } from "isomorphic-git";
import { stripCredentials } from "../core/index.js";

export type GitCredentials =
  | { readonly username: string; readonly password: string }
  /** Sent as HTTP basic with `username` (default `x-access-token`, which GitHub, GitLab and Gitea accept). */
  | { readonly token: string; readonly username?: string };

/** Moves `user:pass@` out of a URL into credentials; explicit `auth` wins. */
export function splitCredentials(url: string, auth: GitCredentials | undefined): { url: string; auth: GitAuth | undefined } {
  let clean = url;
  let fromUrl: GitAuth | undefined;
  try {
    const u = new URL(url);
    if (u.username !== "" || u.password !== "") {
      fromUrl = { username: decodeURIComponent(u.username), password: decodeURIComponent(u.password) };
      u.username = "";
      u.password = "";
      clean = u.toString();
    }
  } catch {
    clean = stripCredentials(url);
  }
  if (auth) {
    return {
      url: clean,
      auth: "token" in auth ? { username: auth.username ?? "x-access-token", password: auth.token } : { username: auth.username, password: auth.password },
    };
  }
  return { url: clean, auth: fromUrl };
}
