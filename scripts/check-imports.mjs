#!/usr/bin/env node
// Two architectural rules from CONVENTIONS.md, checked in CI:
//  1. no import cycles anywhere in src/ (type-only imports excluded: they vanish at run time);
//  2. a module has a front door: code outside src/<module>/ imports only src/<module>/index.js.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve, dirname, sep } from "node:path";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..");
const src = join(root, "src");
let failures = 0;

// --- rule 2: front doors ---------------------------------------------------------------
function* walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* walk(p);
    else if (p.endsWith(".ts")) yield p;
  }
}
const importRe = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;
for (const file of walk(src)) {
  const own = relative(src, file).split(sep)[0];
  const text = readFileSync(file, "utf8");
  for (const m of text.matchAll(importRe)) {
    const spec = m[1] ?? m[2];
    if (!spec?.startsWith(".")) continue;
    const target = relative(src, resolve(dirname(file), spec));
    const [mod, ...rest] = target.split(sep);
    if (!mod || mod === own || mod.startsWith("..")) continue;
    if (rest.length === 0) continue; // a top-level file in src/
    if (rest.join("/") !== "index.js") {
      console.error(`${relative(root, file)}: imports ${spec}; import ../${mod}/index.js instead (front-door rule)`);
      failures++;
    }
  }
}

// --- rule 1: cycles --------------------------------------------------------------------
const dpdm = join(root, "node_modules", ".bin", "dpdm");
try {
  execFileSync(dpdm, ["--no-warning", "--no-tree", "-T", "--exit-code", "circular:1", "src/**/*.ts"], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
  });
} catch (err) {
  console.error(String(err.stdout ?? ""));
  console.error("import cycles found (see above)");
  failures++;
}
if (failures > 0) process.exit(1);
console.log("imports: no cycles, front doors respected");
