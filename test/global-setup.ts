/**
 * Runs once before the test files (vitest globalSetup). The web UI is built here, once, when its sources
 * are newer than the build: test files that serve it (test/web, test/e2e/status-truth) used to build it
 * themselves, and two builds into dist/web at once left one test's browser on a half-written UI.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

export default function setup(): void {
  const built = join("dist", "web", "index.html");
  if (existsSync(built) && statSync(built).mtimeMs >= newestMtime("web")) return;
  execFileSync(process.execPath, ["node_modules/vite/bin/vite.js", "build", "web", "--config", "web/vite.config.mjs", "--logLevel", "warn"], { stdio: "inherit" });
}
