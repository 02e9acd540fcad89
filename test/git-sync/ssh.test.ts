/**
 * Git over SSH against a real OpenSSH server (test/helpers/sshd.ts) serving bare repositories with the
 * machine's git-upload-pack / git-receive-pack: the source's clone and incremental fetch, the audit
 * branch push, and every refusal a user meets (wrong key, unknown, changed and revoked host key,
 * missing repository, encrypted key without its passphrase), each with its error class and advice.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { main } from "../../src/cli/main.js";
import { createCapturingIo } from "../../src/cli/io.js";
import { createMemoryLogger } from "../../src/core/index.js";
import { createAuditWriter, createGitSource, GitAuthError, GitHostKeyError, GitRefNotFoundError, GitTransportError, type SshRemoteOptions } from "../../src/git-sync/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { repoFiles } from "../helpers/repo-files.js";
import { runServer } from "../helpers/server-run.js";
import { startSshd, type TestSshd } from "../helpers/sshd.js";
import { useTempDirs } from "../helpers/tmp.js";
import { recordingLoader, routeTable, workspace } from "./fixtures.js";

const PASSPHRASE = "correct horse battery staple 42";
const EXAMPLE = join(import.meta.dirname, "..", "..", "examples", "repo-layout");
const DISCOVERY = join(import.meta.dirname, "..", "..", "examples", "discovery");
const TIMEOUT_FILE = "workspaces/gateways/retry-timeout-httpbin.yaml";

async function diff(args: string[], env: Record<string, string> = {}) {
  const io = { ...createCapturingIo(), env: { ...process.env, ...env } };
  const code = await main(["diff", ...args], io);
  return { code, out: io.stdout(), err: io.stderr() };
}

describe("Git over SSH (real sshd)", () => {
  let git: GitServer;
  let sshd: TestSshd;
  const tmp = useTempDirs("gitsync-ssh-");
  beforeAll(async () => {
    git = await startGitServer();
    sshd = await startSshd({ root: git.root });
    await git.createRepo("cfg");
    await git.commitFiles("cfg", { "ws/workspace.yaml": workspace("web"), "ws/a.yaml": routeTable("web", "a", "a.example.com") }, "initial");
  });
  afterAll(async () => {
    await sshd.stop();
    await git.stop();
  });

  const ssh = (over: Partial<SshRemoteOptions> = {}): SshRemoteOptions => ({ privateKeyFile: sshd.clientKeyFile, knownHostsFile: sshd.knownHostsFile, ...over });
  const source = (url: string, options: SshRemoteOptions, logger = createMemoryLogger("git-sync").logger) =>
    createGitSource({ location: { kind: "remote", url, cacheDir: tmp(), ssh: options }, loader: recordingLoader(), logger, retry: { attempts: 1 } });
  const until = async (check: () => boolean, log: () => string) => {
    const deadline = Date.now() + 15_000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out; sshd log:\n${log()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const errorOf = async (p: Promise<unknown>): Promise<Error> => {
    try {
      await p;
    } catch (err) {
      return err as Error;
    }
    throw new Error("expected a failure");
  };

  it("clones over ssh://, then fetches only a new commit", async () => {
    const mem = createMemoryLogger("git-sync");
    const src = source(sshd.url("cfg"), ssh(), mem.logger);
    const first = await src.sync();
    expect(first.kind).toBe("updated");
    if (first.kind !== "updated") return;
    expect(first.parsedPaths).toEqual(["ws/a.yaml", "ws/workspace.yaml"]);
    expect(first.commit.oid).toBe(await git.revParse("cfg", "main"));

    // a poll that finds nothing new: one exec of git-upload-pack on the connection already open
    // (its advertisement's channel carries the request that follows), no new connection
    const mark = sshd.log().length;
    expect((await src.sync()).kind).toBe("unchanged");
    const polled = sshd.log().slice(mark);
    expect(polled.match(/Starting session: command/g)).toHaveLength(1);
    expect(polled).not.toContain("Accepted publickey");

    const second = await git.commitFiles("cfg", { "ws/a.yaml": routeTable("web", "a", "a2.example.com") }, "change a");
    const next = await src.sync();
    expect(next.kind).toBe("updated");
    if (next.kind !== "updated") return;
    expect(next.commit.oid).toBe(second);
    expect(next.parsedPaths).toEqual(["ws/a.yaml"]);
    expect(src.status().source).toBe(sshd.url("cfg"));
    expect(sshd.log()).toContain("Accepted publickey");
  });

  it("reads with an encrypted key and its passphrase; without it, says the key is encrypted", async () => {
    const key = await sshd.newKey("encrypted", { passphrase: PASSPHRASE, authorize: true });
    const mem = createMemoryLogger("git-sync");
    const ok = await source(sshd.url("cfg"), ssh({ privateKeyFile: key.privateKeyFile, passphrase: PASSPHRASE }), mem.logger).sync();
    expect(ok.kind).toBe("updated");
    expect(mem.text()).not.toContain(PASSPHRASE);

    const err = await errorOf(source(sshd.url("cfg"), ssh({ privateKeyFile: key.privateKeyFile })).sync());
    expect(err).toBeInstanceOf(GitAuthError);
    expect(err.message).toContain(key.privateKeyFile);
    expect(err.message).toMatch(/encrypted: give its passphrase/);

    const wrong = await errorOf(source(sshd.url("cfg"), ssh({ privateKeyFile: key.privateKeyFile, passphrase: "not it" })).sync());
    expect(wrong).toBeInstanceOf(GitAuthError);
    expect(wrong.message).toMatch(/passphrase does not decrypt it/);
    expect(wrong.message).not.toContain("not it");
  });

  it("refuses a key the server does not authorize, naming the key file and what to do", async () => {
    const stranger = await sshd.newKey("stranger");
    const mem = createMemoryLogger("git-sync");
    const err = await errorOf(source(sshd.url("cfg"), ssh({ privateKeyFile: stranger.privateKeyFile }), mem.logger).sync());
    expect(err).toBeInstanceOf(GitAuthError);
    expect(err.message).toContain(`refused the key ${stranger.privateKeyFile}`);
    expect(err.message).toContain("deploy key");
    expect(mem.text()).not.toContain("PRIVATE KEY");
  });

  it("refuses a host that known_hosts does not list, with its fingerprint; trusts it on first use only when asked", async () => {
    const empty = join(tmp(), "known_hosts");
    writeFileSync(empty, "# nothing yet\nother.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnP3TQ1aZk6cKJ7QQZZb7nH7MHQvX2Gm0gY7xvNhY3T\n");
    const err = await errorOf(source(sshd.url("cfg"), ssh({ knownHostsFile: empty })).sync());
    expect(err).toBeInstanceOf(GitHostKeyError);
    expect(err.message).toContain(`[127.0.0.1]:${sshd.port}`);
    expect(err.message).toMatch(/ssh-ed25519 SHA256:[A-Za-z0-9+/]{43}/);
    expect(err.message).toContain(`ssh-keyscan -p ${sshd.port} 127.0.0.1`);

    const mem = createMemoryLogger("git-sync");
    const tofu = await source(sshd.url("cfg"), ssh({ knownHostsFile: empty, acceptUnknownHosts: true }), mem.logger).sync();
    expect(tofu.kind).toBe("updated");
    expect(mem.text()).toContain("trusted on first use");
  });

  it("refuses a changed host key (a man in the middle) even when trust on first use is allowed", async () => {
    const other = await sshd.newKey("impostor_host");
    const known = join(tmp(), "known_hosts");
    writeFileSync(known, `[127.0.0.1]:${sshd.port} ${other.publicKey}\n`);
    const err = await errorOf(source(sshd.url("cfg"), ssh({ knownHostsFile: known, acceptUnknownHosts: true })).sync());
    expect(err).toBeInstanceOf(GitHostKeyError);
    expect(err.message).toContain("CHANGED");
    expect(err.message).toContain("(line 1)");
    expect(err.message).toContain(known);
  });

  it("refuses a host whose known_hosts key type the server no longer has (a changed key, not a network error)", async () => {
    const known = join(tmp(), "known_hosts");
    // an ECDSA key for the host; this sshd has only an ed25519 host key
    writeFileSync(known, `[127.0.0.1]:${sshd.port} ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBEmKSENjQEezOmxkZMy7opKgwFB9nkt5YRrYMjNuG5N87uRgg6CLrbo5wAdT/y6v0mKV0U2w0WZ2YB/++Tpockg=\n`);
    const err = await errorOf(source(sshd.url("cfg"), ssh({ knownHostsFile: known })).sync());
    expect(err).toBeInstanceOf(GitHostKeyError);
    expect(err.message).toContain("lists ecdsa-sha2-nistp256 keys for it, and the server offers none of those types");
  });

  it("refuses a host key marked @revoked", async () => {
    const known = join(tmp(), "known_hosts");
    writeFileSync(known, `@revoked * ${sshd.hostPublicKey}\n[127.0.0.1]:${sshd.port} ${sshd.hostPublicKey}\n`);
    const err = await errorOf(source(sshd.url("cfg"), ssh({ knownHostsFile: known })).sync());
    expect(err).toBeInstanceOf(GitHostKeyError);
    expect(err.message).toMatch(/line 1 .* @revoked/);
  });

  it("says a missing repository is missing (not an authentication problem)", async () => {
    const err = await errorOf(source(sshd.url("no-such-repo"), ssh()).sync());
    expect(err).toBeInstanceOf(GitRefNotFoundError);
    expect(err.message).toContain("the repository does not exist");
    expect(err.message).toContain("no-such-repo.git");
  });

  it("a server that accepts the command and then says nothing: the request fails after the idle timeout, and its connection is closed", async () => {
    const mute = await startSshd({ root: git.root, forceCommand: "sleep 600" });
    try {
      const err = await errorOf(source(mute.url("cfg"), { privateKeyFile: mute.clientKeyFile, knownHostsFile: mute.knownHostsFile, idleTimeoutMs: 300 }).sync());
      expect(err).toBeInstanceOf(GitTransportError);
      expect(err.message).toContain("the Git server sent nothing for 300 ms");
      // the stalled connection was closed, not kept for the next request
      await until(() => /Received disconnect|Disconnected from user/.test(mute.log()), () => mute.log());
    } finally {
      await mute.stop();
    }
  });

  it("pushes audit commits over SSH and rebuilds on a branch another writer moved", async () => {
    await git.createRepo("audit");
    await git.commitFiles("audit", { "README.md": "the configuration\n" }, "initial");
    const writer = createAuditWriter({ target: { kind: "remote", url: sshd.url("audit"), cacheDir: tmp(), ssh: ssh() }, logger: createMemoryLogger().logger });
    const vs = (host: string) => ({ apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: "a", namespace: "web" }, spec: { hosts: [host] } });
    const input = (host: string) => ({ clusters: new Map([["c1", [vs(host)]]]), discovery: new Map(), sourceCommit: "a".repeat(40), sourceRef: "refs/heads/main", timestamp: 1_700_000_000 });
    const first = await writer.write(input("a.example.com"));
    expect(first.commit).toBeDefined();
    expect(await git.revParse("audit", "gitmesh/rendered")).toBe(first.commit);
    expect(await git.git("audit", ["show", "gitmesh/rendered:clusters/c1/web/virtualservice/a.yaml"])).toContain("a.example.com");

    // someone else commits to the branch: the next write fetches over SSH and builds on it
    const theirs = await git.commitFiles("audit", { "README.md": "hand-written\n" }, "docs", { branch: "gitmesh/rendered" });
    const second = await writer.write(input("b.example.com"));
    expect(second.commit).toBeDefined();
    expect((await git.git("audit", ["rev-parse", "gitmesh/rendered^"])).trim()).toBe(theirs);
    expect(await git.git("audit", ["show", "gitmesh/rendered:README.md"])).toBe("hand-written\n");
  });

  it("refuses to push with a key the server does not authorize", async () => {
    await git.createRepo("audit-denied");
    const stranger = await sshd.newKey("stranger2");
    const writer = createAuditWriter({ target: { kind: "remote", url: sshd.url("audit-denied"), cacheDir: tmp(), ssh: ssh({ privateKeyFile: stranger.privateKeyFile }) }, logger: createMemoryLogger().logger, retry: { attempts: 1 } });
    const err = await errorOf(writer.write({ clusters: new Map(), discovery: new Map([["c1", { a: 1 }]]), sourceCommit: "b".repeat(40), sourceRef: "refs/heads/main", timestamp: 1_700_000_000 }));
    expect(err).toBeInstanceOf(GitAuthError);
    expect(await git.revParse("audit-denied", "gitmesh/rendered")).toBeUndefined();
  });

  describe("gitmesh diff --repo <ssh URL>", () => {
    let base: string;
    let head: string;
    beforeAll(async () => {
      await git.createRepo("mesh");
      const files = repoFiles(EXAMPLE);
      base = await git.commitFiles("mesh", files, "base");
      head = await git.commitFiles("mesh", { [TIMEOUT_FILE]: files[TIMEOUT_FILE]!.replace("requestTimeout: 5s", "requestTimeout: 7s") }, "slower httpbin");
    });

    it("renders the change between two commits read over SSH", async () => {
      const r = await diff(["--repo", sshd.url("mesh"), "--base", base, "--head", "main", "--discovery", DISCOVERY, "--ssh-key", sshd.clientKeyFile, "--ssh-known-hosts", sshd.knownHostsFile]);
      expect(r.err).toContain("head: 0 error(s)");
      expect(r.code).toBe(0);
      expect(r.out).toContain("-      timeout: 5s");
      expect(r.out).toContain("+      timeout: 7s");
      expect(r.out).toContain(head.slice(0, 7));
    });

    it("takes the key from ~/.ssh and its passphrase from GITMESH_SSH_KEY_PASSPHRASE, as ssh would", async () => {
      const home = tmp();
      mkdirSync(join(home, ".ssh"));
      const key = await sshd.newKey("home_key", { passphrase: PASSPHRASE, authorize: true });
      copyFileSync(key.privateKeyFile, join(home, ".ssh", "id_ed25519"));
      copyFileSync(sshd.knownHostsFile, join(home, ".ssh", "known_hosts"));
      const r = await diff(["--repo", sshd.url("mesh"), "--base", base, "--head", head, "--discovery", DISCOVERY, "--format", "json"], { HOME: home, GITMESH_SSH_KEY_PASSPHRASE: PASSPHRASE });
      expect(r.err).not.toContain(PASSPHRASE);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.out).head.commit).toBe(head);
    });

    it("refuses an unknown host (exit 1, the fingerprint and what to do) and names a missing repository (exit 2)", async () => {
      const known = join(tmp(), "known_hosts");
      writeFileSync(known, "");
      const unknown = await diff(["--repo", sshd.url("mesh"), "--base", base, "--head", head, "--discovery", DISCOVERY, "--ssh-key", sshd.clientKeyFile, "--ssh-known-hosts", known]);
      expect(unknown.code).toBe(1);
      expect(unknown.err).toMatch(/host key of \[127\.0\.0\.1\]:\d+ \(ssh-ed25519 SHA256:[A-Za-z0-9+/]{43}\) is not in/);

      const missing = await diff(["--repo", sshd.url("nowhere"), "--base", base, "--head", head, "--discovery", DISCOVERY, "--ssh-key", sshd.clientKeyFile, "--ssh-known-hosts", sshd.knownHostsFile]);
      expect(missing.code).toBe(2);
      expect(missing.err).toContain("the repository does not exist");
    });
  });

  describe("gitmesh server --git-url <ssh URL>", () => {
    const server = (args: string[], until?: RegExp, env: Record<string, string> = {}) => runServer(tmp(), args, until, env);

    it("starts from a repository read over SSH, the key's passphrase never printed", async () => {
      const key = await sshd.newKey("server_key", { passphrase: PASSPHRASE, authorize: true });
      const tip = await git.revParse("cfg", "main");
      const r = await server(["--git-url", sshd.url("cfg"), "--git-ssh-key", key.privateKeyFile, "--git-ssh-known-hosts", sshd.knownHostsFile, "--no-audit"], /gitmesh server started/, { GITMESH_GIT_SSH_KEY_PASSPHRASE: PASSPHRASE });
      expect(r.matched, r.out).toBe(true);
      expect(r.out).toContain(tip!.slice(0, 12));
      expect(r.out).not.toContain(PASSPHRASE);
    }, 90_000);

    it("a changed host key stops the start (exit 1) with the fingerprints and the settings to fix", async () => {
      const other = await sshd.newKey("server_impostor");
      const known = join(tmp(), "known_hosts");
      writeFileSync(known, `[127.0.0.1]:${sshd.port} ${other.publicKey}\n`);
      const r = await server(["--git-url", sshd.url("cfg"), "--git-ssh-key", sshd.clientKeyFile, "--git-ssh-known-hosts", known]);
      expect(r.code).toBe(1);
      expect(r.out).toContain("cannot start");
      expect(r.out).toContain("CHANGED");
      expect(r.out).toContain("GITMESH_GIT_SSH_KNOWN_HOSTS_FILE");
      expect(r.out).not.toMatch(/running \(relay/);
    }, 90_000);

    it("an SSH URL without a key is a usage error (exit 2) naming the flag and variable", async () => {
      const r = await server(["--git-url", "git@github.com:acme/mesh.git"]);
      expect(r.code).toBe(2);
      expect(r.out).toContain("--git-ssh-key <file> or GITMESH_GIT_SSH_KEY_FILE");
    });
  });
});
