/**
 * Which repository paths the loader reads. Only `.yaml`/`.yml` files count; built-in rules skip
 * hidden files and folders (`.git/`, `.github/`, …) and `node_modules/`; `gitmesh.yaml` adds
 * glob patterns (gitignore-like, without negation):
 *
 * - `*` matches any characters except `/`, `?` one such character, `**` any characters including `/`;
 * - a pattern without a `/` (e.g. `*.draft.yaml`, `vendor`) matches any single path segment, at any depth;
 * - a pattern with a `/` is anchored at the repository root (a leading `/` is optional);
 * - a pattern ending in `/` (e.g. `rendered/`) matches that folder and everything under it.
 */

export const SETTINGS_FILE = "gitmesh.yaml";

export interface PathFilter {
  /** True when the path is not read as configuration. */
  isIgnored(path: string): boolean;
  /** True when a folder (path without trailing slash) can be skipped entirely. */
  isIgnoredDir(path: string): boolean;
}

export function isYamlPath(path: string): boolean {
  return path.endsWith(".yaml") || path.endsWith(".yml");
}

function builtinIgnored(segments: readonly string[]): boolean {
  return segments.some((s) => s.startsWith(".") || s === "node_modules");
}

interface CompiledPattern {
  readonly regex: RegExp;
  /** Matches one segment instead of a whole path. */
  readonly segment: boolean;
  /** Matches a folder and all below it. */
  readonly dir: boolean;
}

export function compileGlob(glob: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") {
      if (glob[i + 1] === "*") {
        i++;
        if (glob[i + 1] === "/") {
          i++;
          re += "(?:.*/)?";
        } else re += ".*";
      } else re += "[^/]*";
    } else if (c === "?") re += "[^/]";
    else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

function compile(pattern: string): CompiledPattern {
  const dir = pattern.endsWith("/");
  let body = dir ? pattern.slice(0, -1) : pattern;
  const segment = !body.includes("/");
  if (body.startsWith("/")) body = body.slice(1);
  return { regex: compileGlob(body), segment, dir };
}

export function createPathFilter(patterns: readonly string[]): PathFilter {
  const compiled = patterns.filter((p) => p.trim() !== "").map((p) => compile(p.trim()));
  // Does a rule match the folder or file made of the first `count` segments?
  const matchesPrefix = (segments: readonly string[], count: number, leafIsFile: boolean): boolean => {
    const prefix = segments.slice(0, count).join("/");
    const last = segments[count - 1]!;
    for (const p of compiled) {
      if (p.dir && leafIsFile) continue; // `rendered/` matches folders, not a file named `rendered`
      if (p.segment ? p.regex.test(last) : p.regex.test(prefix)) return true;
    }
    return false;
  };
  const check = (path: string, isFile: boolean): boolean => {
    const segments = path.split("/").filter((s) => s !== "");
    if (segments.length === 0) return false;
    if (builtinIgnored(segments)) return true;
    for (let n = 1; n <= segments.length; n++) {
      if (matchesPrefix(segments, n, isFile && n === segments.length)) return true;
    }
    return false;
  };
  return {
    isIgnored: (path) => check(path, true),
    isIgnoredDir: (path) => check(path, false),
  };
}
