/**
 * A real OpenSSH server for tests (Debian's openssh-server, `/usr/sbin/sshd`): started on a free
 * loopback port as the current user, with its own host key, its own authorized_keys and config in a temp
 * dir, serving the bare repositories under `root` through `git-upload-pack` / `git-receive-pack`
 * (whatever git the machine has). Pair it with `startGitServer()` and give its `root`: the same
 * repositories are then served over HTTP and SSH, and `commitFiles` writes them.
 *
 *   const git = await startGitServer();
 *   const sshd = await startSshd({ root: git.root });
 *   sshd.url("config")          // ssh://root@127.0.0.1:<port>/<root>/config.git
 *   sshd.clientKeyFile          // an authorized ed25519 key; sshd.knownHostsFile lists the host key
 *   await sshd.stop();
 *
 * Process hygiene: sshd runs under a small shell that reads its stdin (a pipe from this process) and
 * kills sshd (and removes its temp dir) when the pipe closes — on `stop()`, and when the test worker dies
 * however it dies (test/helpers/sshd.test.ts kills one with SIGKILL).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { keepOutput } from "./processes.js";
import { freePort } from "./ports.js";

export const SSHD = "/usr/sbin/sshd";

export interface SshKeyPair {
  readonly privateKeyFile: string;
  /** The `ssh-ed25519 AAAA…` line. */
  readonly publicKey: string;
}

export interface TestSshd {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  /** Directory of the bare repositories (`<name>.git`). */
  readonly root: string;
  /** A key in authorized_keys. */
  readonly clientKeyFile: string;
  /** known_hosts with exactly this server's host key for `[127.0.0.1]:<port>`. */
  readonly knownHostsFile: string;
  /** The host key's public line (`ssh-ed25519 AAAA…`). */
  readonly hostPublicKey: string;
  /** `ssh://<user>@127.0.0.1:<port><root>/<repo>.git` */
  url(repo: string): string;
  /** A new ed25519 key pair in the temp dir (not authorized unless `authorize`), optionally encrypted. */
  newKey(name: string, options?: { readonly passphrase?: string; readonly authorize?: boolean }): Promise<SshKeyPair>;
  /** sshd's log so far (LogLevel VERBOSE: accepted and refused keys, commands). */
  log(): string;
  /** Stops sshd; the temp dir is removed. */
  stop(): Promise<void>;
}

export interface SshdOptions {
  /** Directory of the bare repositories (e.g. `startGitServer().root`). */
  readonly root: string;
  /** sshd's ForceCommand: run this instead of what the client asks (e.g. `sleep 600`: a server that never answers). */
  readonly forceCommand?: string;
}

export async function startSshd(options: SshdOptions): Promise<TestSshd> {
  if (!existsSync(SSHD)) throw new Error(`${SSHD} is missing: apt-get install openssh-server`);
  const dir = mkdtempSync(join(tmpdir(), "gitmesh-sshd-"));
  const user = userInfo().username;
  ensurePrivsepDir();
  const hostKey = join(dir, "host_ed25519");
  await keygen(hostKey, "");
  const hostPublicKey = publicLine(`${hostKey}.pub`);
  const authorizedKeys = join(dir, "authorized_keys");
  writeFileSync(authorizedKeys, "");
  const port = await freePort();
  const config = join(dir, "sshd_config");
  writeFileSync(
    config,
    [
      `Port ${port}`,
      "ListenAddress 127.0.0.1",
      `HostKey ${hostKey}`,
      `PidFile ${join(dir, "sshd.pid")}`,
      `AuthorizedKeysFile ${authorizedKeys}`,
      "StrictModes no",
      "UsePAM no",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "PubkeyAuthentication yes",
      "PermitRootLogin prohibit-password",
      `AllowUsers ${user}`,
      "PrintMotd no",
      "LogLevel VERBOSE",
      ...(options.forceCommand === undefined ? [] : [`ForceCommand ${options.forceCommand}`]),
      "",
    ].join("\n"),
  );
  const knownHostsFile = join(dir, "known_hosts");
  writeFileSync(knownHostsFile, `[127.0.0.1]:${port} ${hostPublicKey}\n`);

  // sshd dies with its stdin: the shell waits on this process's pipe, then kills it and removes the temp dir.
  const child: ChildProcess = spawn("/bin/sh", ["-c", `"${SSHD}" -D -e -f "$1" </dev/null & pid=$!; cat >/dev/null; kill "$pid" 2>/dev/null; wait "$pid"; rm -rf "$2"`, "sh", config, dir], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  const output = keepOutput(child);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.stdin?.end();
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForBanner(port, () => output(), () => child.exitCode !== null);
  } catch (err) {
    await stop();
    throw err;
  }
  const api: TestSshd = {
    host: "127.0.0.1",
    port,
    user,
    root: options.root,
    clientKeyFile: "",
    knownHostsFile,
    hostPublicKey,
    url: (repo) => `ssh://${user}@127.0.0.1:${port}${join(options.root, `${repo}.git`)}`,
    async newKey(name, opts = {}) {
      const file = join(dir, name);
      await keygen(file, opts.passphrase ?? "");
      const publicKey = publicLine(`${file}.pub`);
      if (opts.authorize === true) writeFileSync(authorizedKeys, `${publicKey}\n`, { flag: "a" });
      return { privateKeyFile: file, publicKey };
    },
    log: output,
    stop,
  };
  const client = await api.newKey("client_ed25519", { authorize: true });
  return { ...api, clientKeyFile: client.privateKeyFile };
}

/** As root, sshd insists on its privilege-separation directory (Debian's service unit creates it). */
function ensurePrivsepDir(): void {
  if (typeof process.getuid === "function" && process.getuid() === 0 && !existsSync("/run/sshd")) mkdirSync("/run/sshd", { mode: 0o755, recursive: true });
}

function publicLine(file: string): string {
  return readFileSync(file, "utf8").trim().split(/\s+/).slice(0, 2).join(" ");
}

function keygen(file: string, passphrase: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("ssh-keygen", ["-q", "-t", "ed25519", "-N", passphrase, "-C", "gitmesh-test", "-f", file], { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`ssh-keygen ${file} exited ${String(code)}: ${err}`))));
  });
}

/** Resolves once the port answers with an SSH banner; fails with sshd's output when it exits first. */
async function waitForBanner(port: number, output: () => string, dead: () => boolean): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (dead()) throw new Error(`sshd exited at start:\n${output()}`);
    const banner = await new Promise<string>((resolve) => {
      const sock = createConnection({ host: "127.0.0.1", port });
      sock.setTimeout(1000, () => sock.destroy());
      sock.once("data", (d: Buffer) => {
        sock.destroy();
        resolve(d.toString());
      });
      sock.once("error", () => resolve(""));
      sock.once("close", () => resolve(""));
    });
    if (banner.startsWith("SSH-2.0-")) return;
    if (Date.now() > deadline) throw new Error(`sshd on 127.0.0.1:${port} did not answer within 15 s:\n${output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
