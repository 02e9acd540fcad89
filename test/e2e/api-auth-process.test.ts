// API authentication and HTTPS as a user meets them: a real `gitmesh server` process serving its HTTP
// port over TLS (--http-tls-cert/--http-tls-key) with tokens generated once in --pki-dir, and real
// `gitmesh check` processes with and without the token, with the wrong one, and against the TLS port
// with and without --ca-file. The server's output never holds a token.
import { spawn, type ChildProcess } from "node:child_process";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { createCapturingIo } from "../../src/cli/io.js";
import { runGit } from "../../src/devtools/index.js";
import { createSelfSignedCa, issueServerCertificate } from "../../src/relay/index.js";
import { freePort } from "../helpers/ports.js";

let dir: string;
let server: ChildProcess | undefined;
let serverOut = "";
let base: string;
let caFile: string;

function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const clean = { ...process.env };
    delete clean.GITMESH_API_TOKEN;
    delete clean.GITMESH_API_TOKEN_FILE;
    const child = spawn(process.execPath, ["bin/gitmesh.js", ...args], { stdio: ["ignore", "pipe", "pipe"], env: { ...clean, ...env } });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("close", (code) => resolve({ code, out, err }));
  });
}

function healthz(ca: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${base}/healthz`, { ca }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gitmesh-api-auth-e2e-"));
  const repo = join(dir, "repo");
  await cp("examples/repo-layout", repo, { recursive: true });
  await runGit(["init", "--quiet", "-b", "main"], {}, repo);
  await runGit(["add", "-A"], {}, repo);
  await runGit(["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "config"], {}, repo);
  const ca = createSelfSignedCa({ commonName: "e2e-http-ca" });
  const cert = issueServerCertificate(ca, { authority: "localhost", additionalSans: ["127.0.0.1"] });
  caFile = join(dir, "ca.crt");
  await writeFile(caFile, ca.certPem);
  await writeFile(join(dir, "http.crt"), cert.certPem);
  await writeFile(join(dir, "http.key"), cert.keyPem, { mode: 0o600 });
  const httpPort = await freePort();
  base = `https://127.0.0.1:${String(httpPort)}`;
  server = spawn(
    process.execPath,
    [
      "bin/gitmesh.js", "server", "--git-local", repo, "--no-audit", "--pki-dir", join(dir, "pki"), "--data-dir", join(dir, "data"),
      "--relay-host", "127.0.0.1", "--relay-port", String(await freePort()), "--http-host", "127.0.0.1", "--http-port", String(httpPort),
      "--http-tls-cert", join(dir, "http.crt"), "--http-tls-key", join(dir, "http.key"), "--warming-window", "0", "--log-format", "json",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  server.stdout!.on("data", (d: Buffer) => (serverOut += d.toString()));
  server.stderr!.on("data", (d: Buffer) => (serverOut += d.toString()));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if ((await healthz(ca.certPem).catch(() => 0)) === 200) break;
    if (Date.now() > deadline || server.exitCode !== null) throw new Error(`server did not start:\n${serverOut}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}, 90_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server!.once("exit", r));
    server.kill("SIGTERM");
    await exited;
  }
  await rm(dir, { recursive: true, force: true });
}, 30_000);

describe("gitmesh check against a real server with API tokens over HTTPS", () => {
  it("real check processes: no token is exit 2 naming --token-file and where the token is; the read token works; a wrong one is exit 1, never echoed", async () => {
    const tokenFile = join(dir, "pki", "api-token-read");
    const read = (await readFile(tokenFile, "utf8")).trim();
    const admin = (await readFile(join(dir, "pki", "api-token-admin"), "utf8")).trim();
    expect(read).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const wrongToken = "w".repeat(43);
    const [anonymous, ok, wrong] = await Promise.all([
      run(["check", "--server", base, "--ca-file", caFile]),
      run(["check", "--server", base, "--ca-file", caFile, "--token-file", tokenFile]),
      run(["check", "--server", base, "--ca-file", caFile], { GITMESH_API_TOKEN: wrongToken }),
    ]);
    expect(anonymous.code).toBe(2);
    expect(anonymous.err).toContain("answered 401");
    expect(anonymous.err).toContain("--token-file");
    expect(anonymous.err).toContain("gitmesh-api-tokens");
    expect(anonymous.err).toContain("api-token-read");
    expect([0, 1]).toContain(ok.code);
    expect(ok.out).toMatch(/^gitmesh server \S+: (HEALTHY|UNHEALTHY)/);
    expect(ok.out + ok.err).not.toContain(read);
    expect(wrong.code).toBe(1);
    expect(wrong.err).toContain("not valid");
    expect(wrong.err).not.toContain(wrongToken);
    expect(serverOut).toContain("API request refused");
    for (const t of [read, admin, wrongToken]) expect(serverOut).not.toContain(t);
  }, 180_000);

  it("in-process: env token and token file, the admin token reads too; HTTPS needs --ca-file; --ca-file needs https; host:port means http", async () => {
    const tokenFile = join(dir, "pki", "api-token-read");
    const read = (await readFile(tokenFile, "utf8")).trim();
    const check = async (args: string[], env: Record<string, string> = {}) => {
      const saved = { GITMESH_API_TOKEN: process.env.GITMESH_API_TOKEN, GITMESH_API_TOKEN_FILE: process.env.GITMESH_API_TOKEN_FILE };
      delete process.env.GITMESH_API_TOKEN;
      delete process.env.GITMESH_API_TOKEN_FILE;
      Object.assign(process.env, env);
      try {
        const io = createCapturingIo();
        const code = await main(["check", ...args], io);
        return { code, out: io.stdout(), err: io.stderr() };
      } finally {
        delete process.env.GITMESH_API_TOKEN;
        delete process.env.GITMESH_API_TOKEN_FILE;
        if (saved.GITMESH_API_TOKEN !== undefined) process.env.GITMESH_API_TOKEN = saved.GITMESH_API_TOKEN;
        if (saved.GITMESH_API_TOKEN_FILE !== undefined) process.env.GITMESH_API_TOKEN_FILE = saved.GITMESH_API_TOKEN_FILE;
      }
    };
    const env = await check(["--server", base, "--ca-file", caFile, "--output", "json"], { GITMESH_API_TOKEN: read });
    expect([0, 1]).toContain(env.code);
    expect((JSON.parse(env.out) as { status: { replica: string } }).status.replica).toBeTruthy();
    const asAdmin = await check(["--server", base, "--ca-file", caFile], { GITMESH_API_TOKEN_FILE: join(dir, "pki", "api-token-admin") });
    expect([0, 1]).toContain(asAdmin.code);
    expect(asAdmin.out).toMatch(/^gitmesh server/);
    const untrusted = await check(["--server", base, "--token-file", tokenFile]);
    expect(untrusted.code).toBe(1);
    expect(untrusted.err).toMatch(/certificate/i);
    expect(untrusted.err).toContain("--ca-file");
    const plain = await check(["--server", base.replace("https", "http"), "--ca-file", caFile, "--token-file", tokenFile]);
    expect(plain.code).toBe(2);
    expect(plain.err).toContain("--ca-file is for an https --server");
    // host:port is taken as http:// (the TLS port does not answer plain HTTP: unreachable, exit 1, not "Invalid URL").
    const hostPort = await check(["--server", base.replace("https://", ""), "--token-file", tokenFile, "--timeout", "2"]);
    expect(hostPort.code).toBe(1);
    expect(hostPort.err).toContain(`cannot read http://${base.replace("https://", "")}/api/status`);
    const missing = await check(["--server", base, "--token-file", join(dir, "nope")]);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain(`cannot read --token-file ${join(dir, "nope")}: ENOENT`);
    const bad = await check(["--server", "ftp://x"]);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain("--server must be http:// or https://");
  }, 60_000);
});
