#!/usr/bin/env node
// Entry point of the `gitmesh` command.
// - The container image ships compiled JavaScript in dist/ and no src/: it runs dist/cli/main.js.
// - A source checkout runs .build/cli/main.js, compiled by `npm install` (scripts/build-cli.mjs), while
//   that build is newer than every file of src/; otherwise (a source edited since, or no build) it runs
//   the TypeScript sources through tsx, which compiles on every start. GITMESH_FROM_SOURCE=1 forces tsx.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { dirname, join } from "node:path";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const src = join(root, "src");
const args = process.argv.slice(2);

/**
 * The only sources the top-level help runs (src/cli/main.ts loads a command's module only when that command
 * runs; test/cli/startup.test.ts keeps it so): for `gitmesh`, `gitmesh --help` and `gitmesh help` the build is
 * fresh when these are older than it, without walking all of src/ (a stat per file: most of what the launcher
 * added to the help's start).
 */
const HELP_SOURCES = ["cli/main.ts", "cli/io.ts"];
const topLevelHelp = args.length === 0 || (args.length === 1 && (args[0] === "--help" || args[0] === "-h" || args[0] === "help"));

/** Whether .build/ was compiled after the last change to src/ (a file saved, added, removed or renamed). */
function buildIsFresh() {
  let built;
  try {
    built = statSync(join(root, ".build", ".stamp")).mtimeMs;
  } catch {
    return false;
  }
  if (topLevelHelp) return HELP_SOURCES.every((f) => (statSync(join(src, f), { throwIfNoEntry: false })?.mtimeMs ?? 0) <= built);
  const newer = (dir) => {
    // A directory's mtime moves when an entry is added, removed or renamed in it.
    if (statSync(dir).mtimeMs > built) return true;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory() ? newer(path) : statSync(path).mtimeMs > built) return true;
    }
    return false;
  };
  return !newer(src);
}

if (args.length === 1 && (args[0] === "--version" || args[0] === "-v")) {
  // Answered before any module or the TypeScript loader is loaded: scripts and pre-commit hooks call it.
  const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  process.stdout.write(`${version}\n`);
} else if (!existsSync(src)) {
  await import(pathToFileURL(join(root, "dist", "cli", "main.js")).href);
} else if (process.env.GITMESH_FROM_SOURCE !== "1" && buildIsFresh()) {
  // The top-level help as the build kept it (scripts/build-cli.mjs): the same text the CLI prints, without
  // loading it; without arguments it goes to stderr, as the CLI's does.
  const help = topLevelHelp ? readKeptHelp() : undefined;
  if (help !== undefined) (args.length === 0 ? process.stderr : process.stdout).write(help);
  else await import(pathToFileURL(join(root, ".build", "cli", "main.js")).href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import(pathToFileURL(join(src, "cli", "main.ts")).href);
}

/** .build/help.txt, or undefined when the build kept none. */
function readKeptHelp() {
  try {
    return readFileSync(join(root, ".build", "help.txt"), "utf8");
  } catch {
    return undefined;
  }
}
