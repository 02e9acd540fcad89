/** SSH remote spellings, known_hosts matching, and the server's SSH settings (pure parts of #38 item 1). */
import { describe, expect, it } from "vitest";
import { createHmac, randomBytes } from "node:crypto";
import { isSshUrl, keyFingerprint, parseKnownHosts, parseSshUrl, verifyHostKey } from "../../src/git-sync/index.js";
import { parseServerConfig } from "../../src/server/index.js";

const ED = "AAAAC3NzaC1lZDI1NTE5AAAAIHnP3TQ1aZk6cKJ7QQZZb7nH7MHQvX2Gm0gY7xvNhY3T";
const ED2 = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
const blob = (b64: string) => Buffer.from(b64, "base64");

describe("SSH URLs", () => {
  it.each([
    ["git@github.com:org/repo.git", { user: "git", host: "github.com", port: 22, path: "org/repo.git" }],
    ["github.com:org/repo.git", { user: "git", host: "github.com", port: 22, path: "org/repo.git" }],
    ["deploy@git.example.com:/srv/git/mesh.git", { user: "deploy", host: "git.example.com", port: 22, path: "/srv/git/mesh.git" }],
    ["git@[::1]:repo.git", { user: "git", host: "::1", port: 22, path: "repo.git" }],
    ["ssh://git@gitlab.example.com:2222/group/sub/repo.git", { user: "git", host: "gitlab.example.com", port: 2222, path: "/group/sub/repo.git" }],
    ["ssh://host.example/~alice/repo.git", { user: "git", host: "host.example", port: 22, path: "~alice/repo.git" }],
    ["git+ssh://git@[2001:db8::1]:22/repo.git", { user: "git", host: "2001:db8::1", port: 22, path: "/repo.git" }],
  ])("%s", (url, expected) => {
    expect(parseSshUrl(url)).toMatchObject(expected);
  });

  it.each(["https://github.com/org/repo.git", "http://h/r.git", "/srv/git/repo.git", "./relative/dir", "C:\\repos\\x", "file:///srv/repo.git", "ssh://host", "ssh://host/", "dir/with:colon", ""])("%s is not an SSH URL", (url) => {
    expect(isSshUrl(url)).toBe(false);
  });

  it("never keeps a password written into an ssh:// URL", () => {
    const parsed = parseSshUrl("ssh://git:hunter2@host.example/repo.git");
    expect(parsed?.display).toBe("ssh://git@host.example/repo.git");
    expect(JSON.stringify(parsed)).not.toContain("hunter2");
  });
});

describe("known_hosts", () => {
  it("matches plain, [host]:port, wildcard and hashed names; a negated pattern vetoes", () => {
    const salt = randomBytes(20);
    const hashed = `|1|${salt.toString("base64")}|${createHmac("sha1", salt).update("[git.example.com]:2222").digest("base64")}`;
    const kh = parseKnownHosts(
      [
        "# comment",
        `github.com,140.82.112.3 ssh-ed25519 ${ED}`,
        `[gitlab.internal]:2222 ssh-ed25519 ${ED}`,
        `*.corp.example,!evil.corp.example ssh-ed25519 ${ED}`,
        `${hashed} ssh-ed25519 ${ED}`,
        "garbage line",
        `@cert-authority *.example.com ssh-ed25519 ${ED2}`,
      ].join("\n"),
    );
    expect(verifyHostKey(kh, "github.com", 22, blob(ED))).toEqual({ kind: "match", line: 2 });
    expect(verifyHostKey(kh, "gitlab.internal", 2222, blob(ED)).kind).toBe("match");
    expect(verifyHostKey(kh, "gitlab.internal", 22, blob(ED)).kind).toBe("unknown");
    expect(verifyHostKey(kh, "git.corp.example", 22, blob(ED)).kind).toBe("match");
    expect(verifyHostKey(kh, "evil.corp.example", 22, blob(ED)).kind).toBe("unknown");
    expect(verifyHostKey(kh, "git.example.com", 2222, blob(ED))).toEqual({ kind: "match", line: 5 });
    // a host known only through a certificate authority is not trusted by it
    expect(verifyHostKey(kh, "a.example.com", 22, blob(ED2)).kind).toBe("unknown");
  });

  it("tells a changed key (with the expected fingerprint and line) from an unknown host, and honours @revoked", () => {
    const kh = parseKnownHosts(`github.com ssh-ed25519 ${ED}\n@revoked * ssh-ed25519 ${ED2}\n`);
    const changed = verifyHostKey(kh, "github.com", 22, blob(ED2));
    expect(changed.kind).toBe("revoked");
    const other = parseKnownHosts(`github.com ssh-ed25519 ${ED}\n`);
    const verdict = verifyHostKey(other, "github.com", 22, blob(ED2));
    expect(verdict.kind).toBe("changed");
    if (verdict.kind === "changed") expect(verdict.expected.map((k) => [k.line, keyFingerprint(k.key)])).toEqual([[1, keyFingerprint(blob(ED))]]);
    expect(keyFingerprint(blob(ED))).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
  });
});

describe("server configuration of an SSH Git URL", () => {
  const parse = (env: Record<string, string>) => parseServerConfig({ gitUrl: "git@github.com:org/mesh.git", ...env }, { identity: "t" });

  it("needs a key and a known_hosts (or trust on first use asked for), naming the variables", () => {
    const { problems } = parse({});
    expect(problems.join("\n")).toContain("GITMESH_GIT_SSH_KEY_FILE");
    expect(problems.join("\n")).toContain("GITMESH_GIT_SSH_KNOWN_HOSTS_FILE");
    const tofu = parse({ gitSshKeyFile: "/k", gitSshAcceptNewHostKeys: "true" });
    expect(tofu.problems.filter((p) => p.includes("SSH"))).toEqual([]);
    expect(tofu.config?.git).toMatchObject({ kind: "remote", ssh: { privateKeyFile: "/k", acceptUnknownHosts: true } });
  });

  it("takes key, passphrase and known_hosts; refuses HTTP credentials with an SSH URL", () => {
    const ok = parse({ gitSshKeyFile: "/etc/gitmesh/git-ssh/identity", gitSshKnownHostsFile: "/etc/gitmesh/git-ssh/known_hosts", gitSshKeyPassphrase: "pp" });
    expect(ok.config?.git).toEqual({
      kind: "remote",
      url: "git@github.com:org/mesh.git",
      username: undefined,
      password: undefined,
      ssh: { privateKeyFile: "/etc/gitmesh/git-ssh/identity", knownHostsFile: "/etc/gitmesh/git-ssh/known_hosts", passphrase: "pp", acceptUnknownHosts: false },
    });
    const mixed = parse({ gitSshKeyFile: "/k", gitSshKnownHostsFile: "/kh", gitPassword: "tok" });
    expect(mixed.problems.join("\n")).toContain("are for http(s) URLs");
    expect(parseServerConfig({ gitUrl: "ftp://x/y" }, { identity: "t" }).problems.join("\n")).toContain("ssh://[user@]host[:port]/path");
  });
});
