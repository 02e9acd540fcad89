// `gitmesh server` fails fast on a configuration that cannot work, and retries only what may recover
// (#13): each case runs the real CLI process against a real Git server (git http-backend).
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVER_ENV, SERVER_ENV_HELP } from "../../src/server/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { freePort } from "../helpers/ports.js";
import { runServer, type ServerRun } from "../helpers/server-run.js";
import { useTempDirs } from "../helpers/tmp.js";

const tempDir = useTempDirs("gitmesh-server-start-");
let git: GitServer;
let locked: GitServer;

/** Runs `gitmesh server` until it exits or `until` matches its output (then SIGTERM). */
function server(args: string[], until?: RegExp, env: Record<string, string> = {}): Promise<ServerRun> {
  return runServer(tempDir(), args, until, env);
}

beforeAll(async () => {
  git = await startGitServer();
  await git.createRepo("mesh");
  await git.commitFiles("mesh", { "clusters/cluster1.yaml": "apiVersion: admin.gloo.solo.io/v2\nkind: KubernetesCluster\nmetadata: {name: cluster1, namespace: gloo-mesh}\nspec: {clusterDomain: cluster.local}\n" }, "one cluster");
  locked = await startGitServer({ auth: { token: "the-right-token-0123456789" } });
  await locked.createRepo("mesh");
  await locked.commitFiles("mesh", { "README.md": "x\n" }, "init");
}, 60_000);
afterAll(async () => {
  await git.stop();
  await locked.stop();
});

describe("gitmesh server start-up", () => {
  it("a Git server that accepts and then says nothing: the request fails after GITMESH_GIT_IDLE_TIMEOUT_SECONDS and is retried; the server starts once Git answers", async () => {
    // The Git server holds its first two requests open and never answers them (until released at the end).
    let held = 0;
    const parked = git.hold(() => held++ < 2);
    try {
      const r = await server(["--git-url", git.url("mesh")], /gitmesh server started/, { [SERVER_ENV.gitIdleTimeoutSeconds]: "1" });
      expect(r.matched).toBe(true);
      expect(held).toBeGreaterThan(2);
      expect(r.out).toMatch(/the Git server sent nothing for 1000 ms \(http:\/\/127\.0\.0\.1:\d+\/mesh\.git/);
    } finally {
      parked.release();
    }
  });

  it("a Git idle timeout that is not 1–3600 seconds: usage error (exit 2) naming the variable", async () => {
    const r = await server(["--git-url", git.url("mesh")], undefined, { [SERVER_ENV.gitIdleTimeoutSeconds]: "0" });
    expect(r.code).toBe(2);
    expect(r.out).toContain('Git idle timeout (GITMESH_GIT_IDLE_TIMEOUT_SECONDS) "0" is invalid: seconds from 1 to 3600');
  });

  it("a --git-local path that does not exist, or is not a repository: usage error (exit 2) saying which", async () => {
    const missing = await server(["--git-local", join(tempDir(), "nope")]);
    expect(missing.code).toBe(2);
    expect(missing.out).toMatch(/--git-local .*nope: no such directory/);
    const plain = tempDir();
    mkdirSync(join(plain, "config"));
    const notRepo = await server(["--git-local", plain]);
    expect(notRepo.code).toBe(2);
    expect(notRepo.out).toContain("not a Git repository (no .git)");
    expect(notRepo.out).not.toContain("running");
  }, 90_000);

  it("a branch that does not exist (local or remote), a repository that does not exist, refused credentials: exit 1 with what to fix, nothing left running", async () => {
    const repo = tempDir();
    execFileSync("git", ["init", "-q", "-b", "main", repo]);
    execFileSync("git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.test", "commit", "-q", "--allow-empty", "-m", "init"]);
    const localBranch = await server(["--git-local", repo, "--branch", "releases"]);
    expect(localBranch.code).toBe(1);
    expect(localBranch.out).toMatch(/cannot start: the configuration repository .* \(ref releases\): .*releases.*; fix --git-url \/ --git-local, --branch \(GITMESH_GIT_BRANCH\)/);
    expect(localBranch.out).not.toMatch(/running \(relay/);

    const remoteBranch = await server(["--git-url", git.url("mesh"), "--branch", "releases"]);
    expect(remoteBranch.code).toBe(1);
    expect(remoteBranch.out).toContain("cannot start");
    expect(remoteBranch.out).toContain("(ref releases)");

    const noRepo = await server(["--git-url", git.url("no-such-repo")]);
    expect(noRepo.code).toBe(1);
    expect(noRepo.out).toContain("cannot start");

    const refused = await server(["--git-url", locked.url("mesh")], undefined, { GITMESH_GIT_PASSWORD: "a-wrong-token-0123456789" });
    expect(refused.code).toBe(1);
    expect(refused.out).toContain("cannot start");
    expect(refused.out).toContain("GITMESH_GIT_PASSWORD");
    // The credential itself is never printed.
    expect(refused.out).not.toContain("a-wrong-token-0123456789");
  }, 120_000);

  it("a Git server that cannot be reached is retried: the server runs and says it retries", async () => {
    const closed = await freePort();
    const r = await server(["--git-url", `http://127.0.0.1:${String(closed)}/mesh.git`, "--poll-interval", "1"], /could not be reached; retrying/);
    expect(r.matched).toBe(true);
    expect(r.out).toMatch(/running \(relay :\d+, HTTP :\d+\)|could not be reached; retrying/);
  }, 90_000);

  it("every setting is documented: each environment variable in --help and the README, each flag in the README", () => {
    const help = execFileSync(process.execPath, ["bin/gitmesh.js", "server", "--help"], { encoding: "utf8" });
    const readme = readFileSync("README.md", "utf8");
    for (const [key, name] of Object.entries(SERVER_ENV)) {
      expect(help, `--help documents ${name}`).toContain(name);
      expect(readme, `README documents ${name}`).toContain(`\`${name}\``);
      expect(SERVER_ENV_HELP[key as keyof typeof SERVER_ENV].length, name).toBeGreaterThan(10);
    }
    const flags = [...help.matchAll(/^ {2}(--[a-z-]+)/gm)].map((m) => m[1]!).filter((f) => f !== "--help");
    expect(flags.length).toBeGreaterThan(20);
    for (const f of flags) expect(readme, `README mentions ${f}`).toContain(f);
  });

  it("leader-lease timings out of order: usage error (exit 2) naming the three variables (#35)", async () => {
    const r = await server(["--git-url", git.url("mesh")], undefined, { [SERVER_ENV.leaseDurationSeconds]: "5", [SERVER_ENV.leaseRenewDeadlineSeconds]: "6" });
    expect(r.code).toBe(2);
    expect(r.out).toContain("lease timings must satisfy GITMESH_LEASE_RETRY_PERIOD_SECONDS < GITMESH_LEASE_RENEW_DEADLINE_SECONDS < GITMESH_LEASE_DURATION_SECONDS (got 2, 6, 5)");
  });

  it("a Redis that cannot be reached at start: exit 1 naming the URL without its password and the opt-in; with --redis-optional it starts degraded (#35)", async () => {
    const port = await freePort(); // nothing listens there
    const url = `redis://:s3cret-redis-pass@127.0.0.1:${String(port)}/0`;
    const env = { [SERVER_ENV.redisConnectTimeoutSeconds]: "1" };
    const refused = await server(["--git-url", git.url("mesh"), "--redis-url", url], undefined, env);
    expect(refused.code).toBe(1);
    expect(refused.out).toContain(`cannot reach Redis at redis://127.0.0.1:${String(port)}/0 within 1 s`);
    expect(refused.out).toContain("--redis-optional");
    expect(refused.out).not.toContain("s3cret-redis-pass");
    expect(refused.out).not.toMatch(/running \(relay/);

    // Optional Redis needs the relay PKI elsewhere: in that Redis, nothing could start while it is down.
    const noPki = await server(["--git-url", git.url("mesh"), "--redis-url", url, "--redis-optional"], undefined, env);
    expect(noPki.code).toBe(2);
    expect(noPki.out).toContain("--redis-optional (GITMESH_REDIS_OPTIONAL) needs the relay PKI outside Redis");

    const optional = await server(["--git-url", git.url("mesh"), "--redis-url", url, "--redis-optional", "--pki-dir", tempDir()], /gitmesh server \S+ running/, env);
    expect(optional.matched).toBe(true);
    expect(optional.out).toMatch(/WARN.*Redis cannot be reached: starting degraded/);
    expect(optional.out).not.toContain("s3cret-redis-pass");
    const viaEnv = await server(["--git-url", git.url("mesh"), "--redis-url", url, "--pki-dir", tempDir()], /gitmesh server \S+ running/, { ...env, [SERVER_ENV.redisOptional]: "true" });
    expect(viaEnv.matched).toBe(true);
  }, 90_000);

  it("a good repository starts", async () => {
    const r = await server(["--git-url", git.url("mesh")], /gitmesh server \S+ running/);
    expect(r.matched).toBe(true);
  }, 90_000);
});
