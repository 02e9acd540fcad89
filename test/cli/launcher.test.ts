import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

// bin/gitmesh.js in a checkout: the CLI compiled by `npm install` (.build/) while it is newer than every
// source, the TypeScript sources through tsx otherwise. Proved on a copy of the launcher beside a tiny
// src/ and .build/ whose entry points say which one ran.
const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function checkout(): { root: string; run: (env?: NodeJS.ProcessEnv, args?: readonly string[]) => string; age: (path: string, secondsAgo: number) => void } {
  const root = mkdtempSync(join(tmpdir(), "gitmesh-launcher-"));
  dirs.push(root);
  mkdirSync(join(root, "bin"));
  copyFileSync(join(repoRoot, "bin", "gitmesh.js"), join(root, "bin", "gitmesh.js"));
  writeFileSync(join(root, "package.json"), JSON.stringify({ name: "x", version: "9.9.9", type: "module" }));
  symlinkSync(join(repoRoot, "node_modules"), join(root, "node_modules"));
  mkdirSync(join(root, "src", "cli"), { recursive: true });
  writeFileSync(join(root, "src", "cli", "main.ts"), 'const from: string = "sources";\nconsole.log(from);\n');
  writeFileSync(join(root, "src", "cli", "io.ts"), "export {};\n");
  mkdirSync(join(root, "src", "translate"));
  writeFileSync(join(root, "src", "translate", "index.ts"), "export {};\n");
  mkdirSync(join(root, ".build", "cli"), { recursive: true });
  writeFileSync(join(root, ".build", "cli", "main.js"), 'console.log("build");\n');
  writeFileSync(join(root, ".build", ".stamp"), "");
  const age = (path: string, secondsAgo: number) => {
    const t = Date.now() / 1000 - secondsAgo;
    utimesSync(join(root, path), t, t);
  };
  // Everything older than the stamp: the build is fresh.
  for (const p of ["src/cli/main.ts", "src/cli/io.ts", "src/cli", "src/translate/index.ts", "src/translate", "src"]) age(p, 120);
  age(".build/.stamp", 60);
  const run = (env: NodeJS.ProcessEnv = {}, args: readonly string[] = ["validate", "."]) => {
    const r = spawnSync(process.execPath, [join(root, "bin", "gitmesh.js"), ...args], { encoding: "utf8", env: { ...process.env, GITMESH_FROM_SOURCE: "", ...env } });
    expect(r.stderr).toBe("");
    return r.stdout.trim();
  };
  return { root, run, age };
}

describe("bin/gitmesh.js in a source checkout", () => {
  it("runs the compiled CLI while it is newer than every source", () => {
    expect(checkout().run()).toBe("build");
  });

  it("runs the sources once a source file was saved after the build", () => {
    const c = checkout();
    c.age("src/cli/main.ts", 0);
    expect(c.run()).toBe("sources");
  });

  it("runs the sources once a file was added to src/ after the build", () => {
    const c = checkout();
    writeFileSync(join(c.root, "src", "cli", "new.ts"), "export {};\n");
    c.age("src/cli/new.ts", 120); // its own time says old; the directory's says an entry came after the build
    expect(c.run()).toBe("sources");
  });

  it("runs the sources without a stamp (the last compile failed or never ran), and when asked to", () => {
    const c = checkout();
    expect(c.run({ GITMESH_FROM_SOURCE: "1" })).toBe("sources");
    rmSync(join(c.root, ".build", ".stamp"));
    expect(c.run()).toBe("sources");
  });

  it("for the top-level help, looks only at the sources that help runs (main.ts, io.ts)", () => {
    const c = checkout();
    c.age("src/translate/index.ts", 0);
    // A command runs the sources (its modules changed); the top-level help loads none of them and runs the build.
    expect(c.run()).toBe("sources");
    for (const args of [["--help"], ["-h"], ["help"], []]) expect(c.run({}, args)).toBe("build");
    // A command's own help loads its module: the whole check.
    expect(c.run({}, ["help", "validate"])).toBe("sources");
    for (const file of ["src/cli/main.ts", "src/cli/io.ts"]) {
      const d = checkout();
      d.age(file, 0);
      expect(d.run({}, ["--help"])).toBe("sources");
    }
  });

  it("prints the top-level help the build kept, loading neither (no arguments: on stderr, as the CLI does), only while fresh", () => {
    const c = checkout();
    writeFileSync(join(c.root, ".build", "help.txt"), "Usage: gitmesh (kept)\n");
    const raw = (args: readonly string[]) => spawnSync(process.execPath, [join(c.root, "bin", "gitmesh.js"), ...args], { encoding: "utf8", env: { ...process.env, GITMESH_FROM_SOURCE: "" } });
    for (const args of [["--help"], ["-h"], ["help"]]) expect(raw(args)).toMatchObject({ status: 0, stdout: "Usage: gitmesh (kept)\n", stderr: "" });
    expect(raw([])).toMatchObject({ status: 0, stdout: "", stderr: "Usage: gitmesh (kept)\n" });
    // A command and a command's help still run the CLI.
    expect(c.run({}, ["help", "validate"])).toBe("build");
    // main.ts saved since the build: the copy may be stale, the sources run.
    c.age("src/cli/main.ts", 0);
    expect(c.run({}, ["--help"])).toBe("sources");
  });

  it("answers --version without loading either", () => {
    const c = checkout();
    const r = spawnSync(process.execPath, [join(c.root, "bin", "gitmesh.js"), "--version"], { encoding: "utf8" });
    expect(r.stdout).toBe("9.9.9\n");
  });
});
