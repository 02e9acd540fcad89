#!/usr/bin/env node
// The project's test command (`npm test`): every check CI runs, in the order a developer wants to
// hear about failures: generated code in sync, types, lint, architecture, then the test suite.
// Extra arguments go to vitest (e.g. `npm test -- test/loader.test.ts`), and then only vitest runs.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";

const args = process.argv.slice(2);
const run = (label, cmd, cmdArgs) => {
  process.stdout.write(`\n==> ${label}\n`);
  const r = spawnSync(cmd, cmdArgs, { stdio: "inherit" });
  if (r.status !== 0) {
    console.error(`\n${label} failed (exit ${r.status ?? r.signal})`);
    process.exit(r.status ?? 1);
  }
};
if (args.length === 0) {
  run("generated types are up to date", "node", ["scripts/gen-types.mjs", "--check"]);
  run("generated relay protocol code is up to date", "node", ["scripts/gen-proto.mjs", "--check"]);
  run("typecheck", "node_modules/.bin/tsc", ["-p", "tsconfig.json", "--noEmit"]);
  run("lint", "node_modules/.bin/eslint", ["."]);
  run("import cycles and module front doors", "node", ["scripts/check-imports.mjs"]);
}
mkdirSync(".tmp", { recursive: true });
process.stdout.write("\n==> tests\n");
const r = spawnSync("node_modules/.bin/vitest", ["run", "--reporter=default", "--reporter=json", "--outputFile.json=.tmp/vitest.json", ...args], {
  stdio: "inherit",
});
let summary = "";
try {
  const j = JSON.parse(readFileSync(".tmp/vitest.json", "utf8"));
  summary = `tests: ${j.numPassedTests} passed, ${j.numFailedTests} failed` + (j.numPendingTests ? `, ${j.numPendingTests} skipped` : "");
} catch {
  summary = "tests: 0 passed, 1 failed";
}
console.log(`\n${summary}`);
process.exit(r.status ?? 1);
