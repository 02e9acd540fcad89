/**
 * The container image cannot be built here (no Docker engine), so this checks what the image
 * relies on: the build stage's `tsc -p tsconfig.build.json` emits dist/cli/main.js, and the runtime
 * layout (package.json + bin/ + dist/ + node_modules, no src/) runs `gitmesh`; the Dockerfile's
 * user matches the charts' runAsUser and it exposes the charts' ports. Development code (src/devtools,
 * the Kubernetes API emulator, the `demo`, `simulate` and `kube-emulator` commands) is not in the build, and those
 * commands say so instead of failing with a stack trace.
 */
import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "./helm.js";

const run = promisify(execFile);
let app = "";

beforeAll(async () => {
  app = mkdtempSync(join(tmpdir(), "gitmesh-image-"));
  // Same compiler and config as `npm run build` in the Dockerfile, into a private outDir. Type
  // errors fail `npm run build` (and CI's typecheck); here only the emitted layout matters.
  await run(join(ROOT, "node_modules", ".bin", "tsc"), ["-p", join(ROOT, "tsconfig.build.json"), "--outDir", join(app, "dist")], { cwd: ROOT }).catch(
    (err: unknown) => {
      if (!existsSync(join(app, "dist", "cli", "main.js"))) throw err;
    },
  );
  cpSync(join(ROOT, "bin"), join(app, "bin"), { recursive: true });
  cpSync(join(ROOT, "package.json"), join(app, "package.json"));
  symlinkSync(join(ROOT, "node_modules"), join(app, "node_modules"));
}, 300_000);
afterAll(() => {
  if (app !== "") rmSync(app, { recursive: true, force: true });
});

describe("container image layout", () => {
  it("runs gitmesh from dist/ when src/ is absent", async () => {
    expect(existsSync(join(app, "src"))).toBe(false);
    const help = await run(process.execPath, [join(app, "bin", "gitmesh.js"), "--help"], { cwd: app });
    expect(help.stdout).toContain("Usage: gitmesh");
    expect(help.stdout).toContain("validate");
    const version = await run(process.execPath, [join(app, "bin", "gitmesh.js"), "--version"], { cwd: app });
    expect(version.stdout.trim()).toBe((JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version);
  });

  it("validates the example repository from compiled code (schemas are embedded, not read from disk)", async () => {
    const r = await run(process.execPath, [join(app, "bin", "gitmesh.js"), "validate", join(ROOT, "examples", "repo-layout")], { cwd: app });
    expect(r.stdout).toMatch(/0 errors/);
  });

  it("leaves the development code out of the build: no devtools, no emulator, no demo, simulate or kube-emulator command", () => {
    const dist = join(app, "dist");
    const emitted = (readdirSync(dist, { recursive: true }) as string[]).filter((f) => f.endsWith(".js")).map((f) => f.split("\\").join("/"));
    // The production commands are there (so an empty or failed build cannot pass this test) …
    for (const f of ["cli/main.js", "cli/server.js", "cli/agent.js", "server/index.js", "agent/index.js"]) expect(emitted).toContain(f);
    // … the development ones are not, and nothing that is shipped imports them.
    for (const dir of ["devtools/", "kube-emulator/"]) expect(emitted.filter((f) => f.startsWith(dir))).toEqual([]);
    expect(emitted).not.toContain("cli/demo.js");
    expect(emitted).not.toContain("cli/kube-emulator.js");
    expect(emitted).not.toContain("cli/simulate.js");
    for (const f of emitted) {
      const code = readFileSync(join(dist, f), "utf8");
      expect(code, f).not.toMatch(/from "[^"]*\/(devtools|kube-emulator)\/index\.js"/);
      expect(code, f).not.toMatch(/import\("[^"]*(devtools|kube-emulator|demo|simulate)[^"]*"\)/);
    }
  });

  it("`demo`, `simulate` and `kube-emulator` say they are development commands (exit 1, no stack trace); the help says so too", async () => {
    for (const args of [["demo"], ["kube-emulator", "--port", "0"], ["simulate", "--clusters", "3"], ["help", "demo"]]) {
      const r = await run(process.execPath, [join(app, "bin", "gitmesh.js"), ...args], { cwd: app }).then(
        () => ({ code: 0, stdout: "", stderr: "" }),
        (err: unknown) => err as { code: number; stdout: string; stderr: string },
      );
      const name = args[0] === "help" ? args[1] : args[0];
      expect(r.code, args.join(" ")).toBe(1);
      expect(r.stderr).toBe(
        `gitmesh: '${name}' is a development command; this build does not ship it (the container image leaves out src/devtools, ` +
          `src/kube-emulator and their commands). Run it from a source checkout: npm ci, then node bin/gitmesh.js ${name}\n`,
      );
    }
    const help = await run(process.execPath, [join(app, "bin", "gitmesh.js"), "--help"], { cwd: app });
    expect(help.stdout).toContain("demo, simulate and kube-emulator are development commands: they run from a source checkout; the container image does not ship them.");
  });

  it("renders GET /api/diff in its worker thread from compiled code (the worker's entry is dist/server/diff-worker.js)", async () => {
    const repo = mkdtempSync(join(tmpdir(), "gitmesh-image-diff-"));
    const scriptFile = `${repo}.mjs`;
    try {
      cpSync(join(ROOT, "examples", "repo-layout"), repo, { recursive: true });
      const git = (...args: string[]) => run("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args], { cwd: repo });
      await git("init", "-q", "-b", "main");
      await git("add", "-A");
      await git("commit", "-q", "-m", "base");
      const sha = (await git("rev-parse", "HEAD")).stdout.trim();
      const script =
        `import { createDiffService } from ${JSON.stringify(pathToFileURL(join(app, "dist", "server", "index.js")).href)};\n` +
        `import { createMemoryLogger } from ${JSON.stringify(pathToFileURL(join(app, "dist", "core", "index.js")).href)};\n` +
        `const service = createDiffService({ location: { kind: "local", path: ${JSON.stringify(repo)} }, discovery: async () => [], logger: createMemoryLogger("diff").logger });\n` +
        `const report = await service.diff(${JSON.stringify(sha)}, ${JSON.stringify(sha)});\n` +
        `await service.close();\n` +
        `process.stdout.write(JSON.stringify(report));\n`;
      writeFileSync(scriptFile, script);
      const r = await run(process.execPath, [scriptFile], { cwd: app });
      const report = JSON.parse(r.stdout) as { base: { commit: string }; head: { commit: string }; clusters: unknown[] };
      expect(report.base.commit).toBe(sha);
      expect(report.head.commit).toBe(sha);
      expect(report.clusters).toEqual([]);
    } finally {
      rmSync(repo, { recursive: true, force: true });
      rmSync(scriptFile, { force: true });
    }
  });

  it("Dockerfile: multi-stage build, non-root user matching the charts, the charts' ports", () => {
    const dockerfile = readFileSync(join(ROOT, "Dockerfile"), "utf8");
    expect(dockerfile.match(/^FROM /gm)).toHaveLength(2);
    expect(dockerfile).toMatch(/^RUN npm ci\b/m);
    expect(dockerfile).toMatch(/npm run build/);
    expect(dockerfile).toMatch(/^USER 10001:10001$/m);
    expect(dockerfile).toMatch(/^EXPOSE 9900 9091 9977$/m);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["gitmesh"\]$/m);
    for (const chart of ["gitmesh-server", "gitmesh-agent"]) {
      expect(readFileSync(join(ROOT, "charts", chart, "templates", "deployment.yaml"), "utf8")).toContain("runAsUser: 10001");
    }
    // Everything the build stage copies must not be excluded by .dockerignore.
    const ignored = readFileSync(join(ROOT, ".dockerignore"), "utf8").split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"));
    for (const needed of ["src", "bin", "package.json", "package-lock.json", "tsconfig.json", "tsconfig.build.json"]) expect(ignored).not.toContain(needed);
  });
});
