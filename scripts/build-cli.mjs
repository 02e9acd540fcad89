#!/usr/bin/env node
// Compiles the checkout's CLI into .build/ so that `gitmesh` starts without compiling TypeScript on
// every run (bin/gitmesh.js runs .build/ while it is newer than every source file). Run by `npm install`
// (the `prepare` script) and by `npm test`. A type error does not stop `npm install`: tsc still emits,
// but no stamp is written, so bin/gitmesh.js keeps running the sources through tsx and says nothing wrong.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, ".build");
const stamp = join(out, ".stamp");
if (!existsSync(join(root, "src"))) process.exit(0); // an installed package: dist/ is what runs
let tsc;
try {
  tsc = createRequire(join(root, "package.json")).resolve("typescript/bin/tsc");
} catch {
  console.log("gitmesh: TypeScript is not installed (production install?); `gitmesh` runs the sources through tsx");
  process.exit(0);
}
const started = Date.now();
rmSync(stamp, { force: true });
const r = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.cli.json")], { cwd: root, encoding: "utf8" });
if (r.status !== 0) {
  const errors = (r.stdout + r.stderr).split("\n").filter((l) => / error TS\d+/.test(l));
  console.log(`gitmesh: the CLI was not compiled (${errors.length} type error(s), first: ${errors[0] ?? r.stderr.trim()}); \`gitmesh\` runs the sources through tsx until \`npm run build:cli\` succeeds`);
  process.exit(0);
}
mkdirSync(out, { recursive: true });
writeFileSync(stamp, `${new Date(started).toISOString()}\n`);
// The stamp carries the time the compile started: a source saved while tsc ran is newer, so not taken as built.
utimesSync(stamp, started / 1000, started / 1000);
console.log(`gitmesh: CLI compiled into .build/ in ${((Date.now() - started) / 1000).toFixed(1)} s`);
