/**
 * Disk → SourceFile[]: every `.yaml`/`.yml` file under a directory that the root gitmesh.yaml does
 * not ignore, plus gitmesh.yaml itself (so the loader sees the same settings). Symbolic links to
 * folders are not followed (no loops). Rejects when `dir` cannot be read (an infrastructure error).
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { createPathFilter, isYamlPath, SETTINGS_FILE } from "./ignore.js";
import { DEFAULT_ADMIN_NAMESPACE, DEFAULT_AUDIT_BRANCH, parseSettings } from "./settings.js";
import type { SourceFile } from "./types.js";

export async function readConfigDirectory(dir: string): Promise<SourceFile[]> {
  const files: SourceFile[] = [];
  let settingsContent: Uint8Array | undefined;
  try {
    settingsContent = await readFile(join(dir, SETTINGS_FILE));
    files.push({ path: SETTINGS_FILE, content: settingsContent });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  // Bad settings are reported by the loader; here only the ignore rules matter.
  const { settings } = parseSettings(settingsContent, { adminNamespace: DEFAULT_ADMIN_NAMESPACE, auditBranch: DEFAULT_AUDIT_BRANCH });
  const filter = createPathFilter(settings.ignore);

  const walk = async (rel: string): Promise<void> => {
    const entries = await readdir(rel === "" ? dir : join(dir, rel), { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const path = rel === "" ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) {
        if (!filter.isIgnoredDir(path)) await walk(path);
      } else if ((e.isFile() || e.isSymbolicLink()) && isYamlPath(path) && path !== SETTINGS_FILE && !filter.isIgnored(path)) {
        try {
          files.push({ path, content: await readFile(join(dir, path)) });
        } catch (err) {
          // A dangling symbolic link or a folder behind a link: not a configuration file.
          const code = (err as NodeJS.ErrnoException).code;
          if (code !== "ENOENT" && code !== "EISDIR") throw err;
        }
      }
    }
  };
  await walk("");
  return files;
}
