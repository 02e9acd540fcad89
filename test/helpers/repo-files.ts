import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** Every file below `dir` as repository-relative path → content (e.g. examples/repo-layout to commit to a test Git server). */
export function repoFiles(dir: string, prefix = ""): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) Object.assign(out, repoFiles(dir, rel));
    else out[rel] = readFileSync(join(dir, rel), "utf8");
  }
  return out;
}
