#!/usr/bin/env node
// Entry point of the `gitmesh` command. In a source checkout it runs the TypeScript sources
// through tsx; the container image ships compiled JavaScript in dist/ and no src/.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { dirname, join } from "node:path";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const src = join(root, "src", "cli", "main.ts");
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === "--version" || args[0] === "-v")) {
  // Answered before any module or the TypeScript loader is loaded: scripts and pre-commit hooks call it.
  const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  process.stdout.write(`${version}\n`);
} else if (existsSync(src)) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(pathToFileURL(src).href);
} else {
  await import(pathToFileURL(join(root, "dist", "cli", "main.js")).href);
}
