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
// The top-level help as the compiled CLI prints it (the same on every terminal: src/cli/main.ts): bin/gitmesh.js
// prints this copy for `gitmesh`, `--help`, `-h` and `help` while the build is fresh, loading no module at all
// (the help then starts as fast as `--version`; bench/cli/startup.bench.ts). No copy: the launcher runs the CLI.
const helpFile = join(out, "help.txt");
rmSync(helpFile, { force: true });
const help = spawnSync(process.execPath, [join(out, "cli", "main.js"), "--help"], { cwd: root, encoding: "utf8", env: { ...process.env, COLUMNS: "" } });
if (help.status === 0 && help.stdout.includes("Usage: gitmesh")) writeFileSync(helpFile, help.stdout);
else console.log(`gitmesh: the top-level help could not be kept (${(help.stderr || help.stdout).trim().split("\n")[0] ?? ""}); \`gitmesh --help\` runs the CLI`);
writeFileSync(stamp, `${new Date(started).toISOString()}\n`);
// The stamp carries the time the compile started: a source saved while tsc ran is newer, so not taken as built.
utimesSync(stamp, started / 1000, started / 1000);
console.log(`gitmesh: CLI compiled into .build/ in ${((Date.now() - started) / 1000).toFixed(1)} s`);
