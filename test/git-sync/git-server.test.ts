import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { startGitServer, type GitServer } from "../helpers/git-server.js";

const exec = promisify(execFile);
const gitEnv = { ...process.env, GIT_TERMINAL_PROMPT: "0", GIT_CONFIG_NOSYSTEM: "1", HOME: tmpdir() };

describe("test/helpers/git-server", () => {
  let server: GitServer;
  const dirs: string[] = [];
  beforeAll(async () => {
    server = await startGitServer({ auth: { token: "tok-123" } });
  });
  afterAll(async () => {
    await server.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("serves commits to the git CLI, accepts pushes, and rejects missing credentials", async () => {
    await server.createRepo("r");
    const first = await server.commitFiles("r", { "a/b.yaml": "x: 1\n", "c.txt": "c\n" }, "first", { date: 1_700_000_000 });
    const second = await server.commitFiles("r", { "c.txt": null, "d.yaml": "d: 2\n" }, "second", { date: 1_700_000_100 });
    expect(await server.git("r", ["rev-parse", "main~1"])).toBe(first + "\n");

    const dir = mkdtempSync(join(tmpdir(), "gs-clone-"));
    dirs.push(dir);
    const authed = server.url("r").replace("http://", "http://x:tok-123@");
    await exec("git", ["clone", "--quiet", authed, dir], { env: gitEnv });
    expect(readFileSync(join(dir, "a/b.yaml"), "utf8")).toBe("x: 1\n");
    expect((await exec("git", ["-C", dir, "rev-parse", "HEAD"], { env: gitEnv })).stdout.trim()).toBe(second);

    writeFileSync(join(dir, "e.yaml"), "e: 3\n");
    await exec("git", ["-C", dir, "add", "e.yaml"], { env: gitEnv });
    await exec("git", ["-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "e"], { env: gitEnv });
    await exec("git", ["-C", dir, "push", "-q", "origin", "main"], { env: gitEnv });
    const pushed = (await exec("git", ["-C", dir, "rev-parse", "HEAD"], { env: gitEnv })).stdout.trim();
    expect(await server.revParse("r", "refs/heads/main")).toBe(pushed);
    expect(server.requests.some((r) => r.service === "git-receive-pack" && r.status === 200)).toBe(true);

    await expect(exec("git", ["ls-remote", server.url("r")], { env: gitEnv })).rejects.toThrow();
    expect(server.requests.at(-1)?.status).toBe(401);
  });

  it("injects failures and holds requests", async () => {
    await server.createRepo("h");
    await server.commitFiles("h", { "x": "1" }, "x");
    const authed = server.url("h").replace("http://", "http://x:tok-123@");
    server.failNext(1, 503);
    await expect(exec("git", ["ls-remote", authed], { env: gitEnv })).rejects.toThrow();
    const held = server.hold((r) => r.path.startsWith("/h.git/info/refs"));
    let done = false;
    const p = exec("git", ["ls-remote", authed], { env: gitEnv }).then(() => (done = true));
    await held.waitFor(1);
    expect(done).toBe(false);
    held.release();
    await p;
    expect(done).toBe(true);
  });
});
