#!/usr/bin/env node
// The project's test command (`npm test`): every check CI runs, in the order a developer wants to
// hear about failures: generated code in sync, types, lint, architecture, then the test suite.
// Extra arguments go to vitest (e.g. `npm test -- test/loader.test.ts`), and then only vitest runs.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";

const args = process.argv.slice(2);

// What the suite needs besides node_modules; a missing piece is named with the package that brings
// it, before anything runs (a later failure deep inside a test would say much less).
const prerequisites = [
  { ok: () => has("git"), what: "git", pkg: "git" },
  { ok: () => Boolean(process.env.REDIS_URL) || has("redis-server"), what: "redis-server (or REDIS_URL)", pkg: "redis-server" },
  { ok: () => has("protoc"), what: "protoc (relay code generation check)", pkg: "protobuf-compiler" },
  { ok: () => has("kubectl"), what: "kubectl (the emulator's kubectl test)", pkg: "kubernetes-client" },
  { ok: () => has("ssh-keygen") && has("gpg"), what: "ssh-keygen and gpg (signed-commit tests sign with the real tools)", pkg: "openssh-client gnupg" },
  { ok: () => existsSync("/usr/sbin/sshd"), what: "sshd (Git over SSH tests run a private OpenSSH server on loopback)", pkg: "openssh-server" },
  { ok: () => has("chromium"), what: "chromium (the web UI's browser tests)", pkg: "chromium" },
  { ok: () => has("prometheus") && has("promtool"), what: "prometheus and promtool (the charts' dashboard and alerting rules are checked with a real Prometheus)", pkg: "prometheus" },
  {
    ok: () => spawnSync("/usr/bin/python3", ["-c", "import kubernetes"], { stdio: "ignore" }).status === 0,
    what: "the official Kubernetes Python client (the emulator's conformance suite drives it)",
    pkg: "python3-kubernetes",
  },
];
if (!existsSync("node_modules/.bin/vitest")) {
  console.error("npm test: dependencies are not installed; run `npm install` (or `npm ci`) first");
  process.exit(2);
}
if (args.length === 0) {
  const missing = prerequisites.filter((p) => !p.ok());
  if (missing.length > 0) installOrExplain(missing);
}

/**
 * A fresh machine lacks some of the tools above: install them with apt when this user may (root, or
 * sudo without a password), saying what is being installed and why; otherwise name the exact command.
 * GITMESH_NO_INSTALL=1 turns the install off (then a missing tool is only reported).
 */
function installOrExplain(missing) {
  const pkgs = missing.flatMap((m) => m.pkg.split(" "));
  const command = `apt-get update && apt-get install -y ${pkgs.join(" ")}`;
  const asRoot = typeof process.getuid === "function" && process.getuid() === 0;
  const sudo = !asRoot && has("sudo") && spawnSync("sudo", ["-n", "true"], { stdio: "ignore" }).status === 0;
  const canInstall = process.env.GITMESH_NO_INSTALL !== "1" && has("apt-get") && (asRoot || sudo);
  if (!canInstall) {
    console.error("npm test: missing on this machine:");
    for (const m of missing) console.error(`  - ${m.what}`);
    console.error(`install them with:  sudo ${command}`);
    process.exit(2);
  }
  console.log(`npm test: installing what the tests need with apt-get: ${missing.map((m) => m.what).join("; ")}`);
  const prefix = asRoot ? [] : ["sudo", "-n"];
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  for (const step of [["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "--no-install-recommends", ...pkgs]]) {
    const all = [...prefix, ...step];
    const r = spawnSync(all[0], all.slice(1), { stdio: "inherit", env });
    if (r.status !== 0) {
      console.error(`npm test: \`${all.join(" ")}\` failed (exit ${r.status ?? r.signal}); install by hand:  sudo ${command}`);
      process.exit(2);
    }
  }
  const still = missing.filter((m) => !m.ok());
  if (still.length > 0) {
    console.error(`npm test: still missing after the install: ${still.map((m) => m.what).join("; ")}`);
    process.exit(2);
  }
}

function has(cmd) {
  return spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" }).status === 0;
}
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
  run("typecheck (web UI)", "node_modules/.bin/tsc", ["-p", "web/tsconfig.json"]);
  run("lint", "node_modules/.bin/eslint", ["."]);
  run("import cycles and module front doors", "node", ["scripts/check-imports.mjs"]);
}
// The Go test tools (real kube-apiserver, etcd, helm, Istio's validation and simulation): built once
// per version into a cache outside the repository; also before a single test file, which may need them.
run("Go test tools (tools/*: built once per version, cached outside the repository)", "node", ["scripts/build-tools.mjs"]);
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
