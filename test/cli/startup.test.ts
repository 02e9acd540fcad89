/**
 * What `gitmesh --help` loads: the top-level help lists every command by name and summary without
 * loading any command's module, core, or their dependencies (ajv, gRPC, yaml, isomorphic-git,
 * prom-client …), so it starts about as fast as Node itself (bench/cli/startup.bench.ts measures it);
 * bin/gitmesh.js relies on it to check only main.ts and io.ts for freshness before the help. A command's own
 * help loads that command. Proved by running the CLI's sources with a module resolve hook that records
 * every module the process loads.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const HOOKS = `
import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(process.env.GITMESH_TEST_LOADED, r.url + "\\n");
  return r;
}
`;

/** Every module URL `gitmesh <args>` (run from the sources) resolved, and its output. */
function loaded(args: readonly string[]): { stdout: string; sources: string[]; packages: string[] } {
  const dir = mkdtempSync(join(tmpdir(), "gitmesh-startup-"));
  dirs.push(dir);
  const log = join(dir, "loaded.txt");
  const register = join(dir, "register.mjs");
  writeFileSync(join(dir, "hooks.mjs"), HOOKS);
  writeFileSync(register, `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(join(dir, "hooks.mjs")).href)});\n`);
  writeFileSync(log, "");
  const r = spawnSync(process.execPath, ["--import", "tsx", "--import", register, join(root, "src", "cli", "main.ts"), ...args], {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, GITMESH_TEST_LOADED: log },
  });
  expect(r.stderr).toBe("");
  expect(r.status).toBe(0);
  const urls = [...new Set(readFileSync(log, "utf8").split("\n").filter((u) => u.startsWith("file:")))].map((u) => fileURLToPath(u));
  const sources = urls.filter((p) => p.startsWith(join(root, "src"))).map((p) => p.slice(root.length));
  const packages = [...new Set(urls.flatMap((p) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(p)?.[1] ?? []))].filter((p) => p !== "tsx").sort();
  return { stdout: r.stdout, sources: [...new Set(sources)].sort(), packages };
}

describe("gitmesh --help starts without loading the commands", () => {
  it("loads main.ts, io.ts and commander only, and still lists every command", () => {
    const help = loaded(["--help"]);
    expect(help.stdout).toMatch(/^Usage: gitmesh/);
    for (const command of ["validate", "render", "agent", "server", "worker", "check", "cluster", "diff"]) expect(help.stdout).toMatch(new RegExp(`\\n  ${command} `));
    expect(help.sources).toEqual(["src/cli/io.ts", "src/cli/main.ts"]);
    expect(help.packages).toEqual(["commander"]);
  });

  it("loads a command's module (and what it needs) for that command's help", () => {
    const help = loaded(["help", "validate"]);
    expect(help.stdout).toMatch(/^Usage: gitmesh validate/);
    expect(help.sources).toContain("src/cli/validate.ts");
    expect(help.sources).not.toContain("src/cli/server.ts");
  });
});
