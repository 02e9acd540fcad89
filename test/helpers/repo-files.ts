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

/**
 * Changes to the example's bookinfo-backends workspace (it selects cluster1 and cluster2 by name, not
 * cluster3): each call raises `requestTimeout` by one second, from 6 s; `seconds()` is the last one set.
 */
export function backendsTimeoutChanges(): { next(): Record<string, string>; seconds(): number } {
  const path = "workspaces/bookinfo-backends/resilience.yaml";
  let seconds = 5;
  return {
    next() {
      seconds += 1;
      return { [path]: readFileSync(join("examples/repo-layout", path), "utf8").replace(/requestTimeout: \d+s/, `requestTimeout: ${String(seconds)}s`) };
    },
    seconds: () => seconds,
  };
}
