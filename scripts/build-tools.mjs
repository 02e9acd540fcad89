#!/usr/bin/env node
// Builds the Go test tools under tools/ (each its own Go module with a tool.json) into a cache
// outside the repository, keyed by the tool's sources and the Go version, and writes
// .tmp/tools.json naming where every binary is. `npm test` runs it before the suite; a cache hit
// costs a hash of the tool's files. A failed build stops the run with the command that retries it:
// a missing real part is never skipped.
//
//   node scripts/build-tools.mjs [NAME ...]      build what is missing (all tools, or the named ones)
//   node scripts/build-tools.mjs --list          print each tool, its cache directory and whether it is built
//
// tools/<name>/tool.json:
//   { "description": "…", "coldMinutes": 8,
//     "build": [ { "out": "kube-apiserver", "package": "k8s.io/kubernetes/cmd/kube-apiserver" },
//                { "out": "sim.test", "test": "./simulation" } ] }
// `package` is built with `go build` (`ldflags`, optional, are added to `-s -w`, e.g. the `-X`
// version stamps a release build sets), `test` is compiled with `go test -c` (a test binary that
// vitest runs later). Environment: GITMESH_TOOLS_CACHE (default $XDG_CACHE_HOME/gitmesh/tools or
// ~/.cache/gitmesh/tools), GO (the go command; default /usr/local/go/bin/go when present, else `go`).
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const TOOLS = join(ROOT, "tools");
export const MANIFEST = join(ROOT, ".tmp", "tools.json");

export function cacheRoot() {
  if (process.env.GITMESH_TOOLS_CACHE) return process.env.GITMESH_TOOLS_CACHE;
  const base = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(base, "gitmesh", "tools");
}

export function goCommand() {
  if (process.env.GO) return process.env.GO;
  return existsSync("/usr/local/go/bin/go") ? "/usr/local/go/bin/go" : "go";
}

/** The tools: every directory under tools/ with a tool.json. */
export function listTools() {
  if (!existsSync(TOOLS)) return [];
  return readdirSync(TOOLS)
    .filter((n) => existsSync(join(TOOLS, n, "tool.json")))
    .sort()
    .map((name) => {
      const dir = join(TOOLS, name);
      const spec = JSON.parse(readFileSync(join(dir, "tool.json"), "utf8"));
      return { name, dir, spec };
    });
}

function filesUnder(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(p));
    else if (entry.isFile()) out.push(p);
  }
  return out.sort();
}

let goVersionCache;
function goVersion() {
  if (goVersionCache !== undefined) return goVersionCache;
  const r = spawnSync(goCommand(), ["env", "GOVERSION"], { encoding: "utf8", env: goEnv() });
  goVersionCache = r.status === 0 ? r.stdout.trim() : null;
  return goVersionCache;
}

/** Cache key: the Go version and every file of the tool (its sources, go.mod, go.sum, tool.json). */
export function toolKey(tool) {
  const h = createHash("sha256");
  h.update(`${goVersion() ?? "no-go"}\n`);
  for (const f of filesUnder(tool.dir)) {
    h.update(`${relative(tool.dir, f)}\n`);
    h.update(readFileSync(f));
  }
  return h.digest("hex").slice(0, 16);
}

export function toolCacheDir(tool) {
  return join(cacheRoot(), `${tool.name}-${toolKey(tool)}`);
}

function goEnv() {
  // GOTOOLCHAIN=local: never fetch another Go; GOFLAGS cleared of anything the caller set that
  // would change what is built (-mod=vendor, -race …); -trimpath keeps paths out of binaries.
  return { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-buildvcs=false", CGO_ENABLED: process.env.CGO_ENABLED ?? "0" };
}

function requiredGo(tool) {
  const mod = readFileSync(join(tool.dir, "go.mod"), "utf8");
  return /^go\s+(\d+\.\d+)/m.exec(mod)?.[1] ?? null;
}

function versionAtLeast(have, want) {
  const [ha, hb] = have.split(".").map(Number);
  const [wa, wb] = want.split(".").map(Number);
  return ha > wa || (ha === wa && hb >= wb);
}

function fail(message) {
  console.error(`\nbuild-tools: ${message}`);
  process.exit(1);
}

/** Runs a go command in the tool's module, streaming its output and a heartbeat every 30 s. */
function runGo(tool, args, label) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(goCommand(), args, { cwd: tool.dir, env: goEnv(), stdio: ["ignore", "inherit", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => {
      stderr += d;
      process.stderr.write(d);
    });
    const beat = setInterval(() => {
      process.stdout.write(`  … ${label}: ${Math.round((Date.now() - started) / 1000)} s\n`);
    }, 30_000);
    child.on("close", (code, signal) => {
      clearInterval(beat);
      resolve({ code: code ?? (signal ? 128 : 1), seconds: (Date.now() - started) / 1000, stderr });
    });
  });
}

async function build(tool) {
  const final = toolCacheDir(tool);
  const retry = `node scripts/build-tools.mjs ${tool.name}`;
  const want = requiredGo(tool);
  const have = goVersion();
  if (have === null) fail(`no Go toolchain found (tried \`${goCommand()}\`); tools/${tool.name} needs Go ${want ?? "1.26"}+ (set GO=/path/to/go), then retry:  ${retry}`);
  if (want && !versionAtLeast(have.replace(/^go/, ""), want)) {
    fail(`tools/${tool.name} needs Go ${want}+, found ${have} at \`${goCommand()}\` (set GO=/path/to/go), then retry:  ${retry}`);
  }
  const tmp = `${final}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const cold = tool.spec.coldMinutes ? ` (a cold build takes about ${tool.spec.coldMinutes} min on 2 cores)` : "";
  console.log(`build-tools: tools/${tool.name}: ${tool.spec.description ?? ""}${cold}`);
  const dl = await runGo(tool, ["mod", "download"], `downloading modules of tools/${tool.name}`);
  if (dl.code !== 0) fail(`\`go mod download\` in tools/${tool.name} failed (exit ${dl.code}); retry:  ${retry}`);
  for (const step of tool.spec.build) {
    const out = join(tmp, step.out);
    const args = step.test
      ? ["test", "-c", "-trimpath", "-o", out, step.test]
      : ["build", "-trimpath", `-ldflags=-s -w${step.ldflags ? ` ${step.ldflags}` : ""}`, "-o", out, step.package];
    const r = await runGo(tool, args, `building ${step.out}`);
    if (r.code !== 0) fail(`\`go ${args.join(" ")}\` in tools/${tool.name} failed (exit ${r.code}); retry:  ${retry}`);
    console.log(`build-tools: built ${step.out} in ${r.seconds.toFixed(0)} s (${(statSync(out).size / 2 ** 20).toFixed(0)} MiB)`);
  }
  writeFileSync(join(tmp, ".complete"), `${new Date().toISOString()}\n`);
  rmSync(final, { recursive: true, force: true });
  mkdirSync(dirname(final), { recursive: true });
  renameSync(tmp, final);
}

function isBuilt(tool) {
  return existsSync(join(toolCacheDir(tool), ".complete"));
}

function writeManifest(tools) {
  const manifest = {};
  for (const tool of tools) {
    const dir = toolCacheDir(tool);
    manifest[tool.name] = { dir, built: isBuilt(tool), binaries: Object.fromEntries(tool.spec.build.map((s) => [s.out, join(dir, s.out)])) };
  }
  mkdirSync(dirname(MANIFEST), { recursive: true });
  writeFileSync(MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`);
}

async function main() {
  const args = process.argv.slice(2);
  const all = listTools();
  if (args.includes("--help") || args.includes("-h")) {
    console.log(readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n").filter((l) => l.startsWith("//")).map((l) => l.slice(3)).join("\n"));
    return;
  }
  if (args.includes("--list")) {
    for (const t of all) console.log(`${t.name}\t${isBuilt(t) ? "built" : "missing"}\t${toolCacheDir(t)}`);
    return;
  }
  const unknown = args.filter((a) => !all.some((t) => t.name === a));
  if (unknown.length > 0) fail(`no tool named ${unknown.join(", ")} (tools: ${all.map((t) => t.name).join(", ")})`);
  const chosen = args.length > 0 ? all.filter((t) => args.includes(t.name)) : all;
  const missing = chosen.filter((t) => !isBuilt(t));
  if (missing.length > 0) console.log(`build-tools: building ${missing.map((t) => t.name).join(", ")} into ${cacheRoot()}`);
  for (const tool of missing) await build(tool);
  writeManifest(all);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
