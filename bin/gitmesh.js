#!/usr/bin/env node
// Entry point of the `gitmesh` command. In a source checkout it runs the TypeScript sources
// through tsx; the container image ships compiled JavaScript in dist/ and no src/.
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { dirname, join } from "node:path";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const src = join(root, "src", "cli", "main.ts");
if (existsSync(src)) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(pathToFileURL(src).href);
} else {
  await import(pathToFileURL(join(root, "dist", "cli", "main.js")).href);
}
