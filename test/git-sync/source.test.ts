import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { createMemoryLogger } from "../../src/core/index.js";
import { getObject } from "../../src/config/index.js";
import { CommitNotYetVisibleError, createGitSource, GitAuthError, GitTransportError } from "../../src/git-sync/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { useTempDirs } from "../helpers/tmp.js";
import { brokenRouteTable, recordingLoader, routeTable, workspace } from "./fixtures.js";

const TOKEN = "ghp_supersecret_token_123";
const execFileP = promisify(execFile);

describe("git source (remote over smart HTTP)", () => {
  let server: GitServer;
  const tmp = useTempDirs("gitsync-cache-");
  beforeAll(async () => {
    server = await startGitServer({ auth: { token: TOKEN } });
  });
  afterAll(() => server.stop());

  it("clones, then fetches a new commit and parses only the files that changed", async () => {
    await server.createRepo("cfg");
    await server.commitFiles("cfg", {
      "workspaces/web/workspace.yaml": workspace("web"),
      "workspaces/web/a.yaml": routeTable("web", "a", "a.example.com"),
      "workspaces/web/b.yaml": routeTable("web", "b", "b.example.com"),
      "workspaces/api/workspace.yaml": workspace("api"),
      "workspaces/api/c.yaml": routeTable("api", "c", "c.example.com"),
      "README.md": "# config\n",
      // bulk that a re-clone would transfer again and an incremental fetch must not
      ...Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`docs/page-${i}.md`, `page ${i} ${"lorem ipsum ".repeat(20 + (i % 7))}\n`])),
    }, "initial");
    const loader = recordingLoader();
    const mem = createMemoryLogger("git-sync");
    const source = createGitSource({ location: { kind: "remote", url: server.url("cfg"), auth: { token: TOKEN }, cacheDir: tmp() }, loader, logger: mem.logger });

    const first = await source.sync();
    expect(first.kind).toBe("updated");
    if (first.kind !== "updated") return;
    expect(first.full).toBe(true);
    expect(first.parsedPaths).toEqual([
      "workspaces/api/c.yaml",
      "workspaces/api/workspace.yaml",
      "workspaces/web/a.yaml",
      "workspaces/web/b.yaml",
      "workspaces/web/workspace.yaml",
    ]);
    expect(Object.keys(first.state.objects)).toHaveLength(5);
    // the token went over the wire as basic auth, never into the URL or the logs
    const authed = server.requests.filter((r) => r.authorization !== undefined);
    expect(authed.length).toBeGreaterThan(0);
    expect(Buffer.from(authed[0]!.authorization!.replace("Basic ", ""), "base64").toString()).toBe(`x-access-token:${TOKEN}`);
    expect(mem.text()).not.toContain(TOKEN);

    // second commit: modify a.yaml, delete b.yaml, touch a non-YAML file
    const second = await server.commitFiles("cfg", {
      "workspaces/web/a.yaml": routeTable("web", "a", "a2.example.com"),
      "workspaces/web/b.yaml": null,
      "README.md": "# config v2\n",
    }, "change a, drop b");
    const before = server.requests.length;
    const next = await source.sync();
    expect(next.kind).toBe("updated");
    if (next.kind !== "updated") return;
    expect(next.commit.oid).toBe(second);
    expect(next.full).toBe(false);
    expect(next.parsedPaths).toEqual(["workspaces/web/a.yaml"]);
    expect(next.removedPaths).toEqual(["workspaces/web/b.yaml"]);
    expect([...next.changedKeys].sort()).toEqual(["RouteTable//web/a", "RouteTable//web/b"]);
    expect(loader.calls.at(-1)).toEqual({ kind: "update", paths: ["workspaces/web/a.yaml"], removed: ["workspaces/web/b.yaml"] });
    expect(getObject(next.state, "RouteTable//web/b")).toBeUndefined();
    expect((getObject(next.state, "RouteTable//web/a")?.spec as { hosts: string[] }).hosts).toEqual(["a2.example.com"]);
    // an incremental fetch: one ref discovery and one upload-pack, no re-clone
    const fetches = server.requests.slice(before).filter((r) => r.status === 200);
    expect(fetches.map((r) => `${r.method} ${r.service}`)).toEqual(["GET git-upload-pack", "POST git-upload-pack"]);
    const clonePack = server.requests.find((r) => r.method === "POST" && r.path === "/cfg.git/git-upload-pack")!.responseBytes;
    expect(fetches[1]!.responseBytes * 5).toBeLessThan(clonePack);

    // nothing new: unchanged, loader not called
    const calls = loader.calls.length;
    expect((await source.sync()).kind).toBe("unchanged");
    expect(loader.calls.length).toBe(calls);

    // a commit outside the configuration (README only) changes nothing
    await server.commitFiles("cfg", { "README.md": "# v3\n" }, "docs");
    expect((await source.sync()).kind).toBe("unchanged");
    expect(loader.calls.length).toBe(calls);
  });

  it("rejects a commit that does not validate and keeps the last good state", async () => {
    await server.createRepo("rej");
    await server.commitFiles("rej", { "ws.yaml": workspace("web"), "a.yaml": routeTable("web", "a", "a.example.com") }, "good");
    const mem = createMemoryLogger("git-sync");
    const source = createGitSource({ location: { kind: "remote", url: server.url("rej"), auth: { token: TOKEN }, cacheDir: tmp() }, loader: recordingLoader(), logger: mem.logger });
    const good = await source.sync();
    expect(good.kind).toBe("updated");

    const bad = await server.commitFiles("rej", { "a.yaml": brokenRouteTable("web", "a"), "b.yaml": routeTable("web", "b", "b.example.com") }, "break a");
    const rejected = await source.sync();
    expect(rejected.kind).toBe("rejected");
    if (rejected.kind !== "rejected" || good.kind !== "updated") return;
    expect(rejected.state).toBe(good.state);
    expect(source.current()?.commit.oid).toBe(good.commit.oid);
    const status = source.status();
    expect(status.lastGood?.commit).toBe(good.commit.oid);
    expect(status.rejection?.commit).toBe(bad);
    const errors = status.rejection!.diagnostics.filter((d) => d.severity === "error");
    expect(errors[0]).toMatchObject({ file: "a.yaml", line: 7, code: "SCHEMA_VIOLATION" });
    const warn = mem.records.find((r) => r.msg.startsWith("commit rejected"));
    expect(warn?.fields.commit).toBe(bad);
    expect(JSON.stringify(warn?.fields.errors)).toContain("a.yaml:7:");

    // syncing again does not re-parse the rejected commit
    expect((await source.sync()).kind).toBe("rejected");

    // the fix is diffed against the last GOOD commit: both a.yaml and b.yaml are parsed
    const fixed = await server.commitFiles("rej", { "a.yaml": routeTable("web", "a", "fixed.example.com") }, "fix a");
    const after = await source.sync();
    expect(after.kind).toBe("updated");
    if (after.kind !== "updated") return;
    expect(after.commit.oid).toBe(fixed);
    expect(after.parsedPaths).toEqual(["a.yaml", "b.yaml"]);
    expect(source.status().rejection).toBeUndefined();
  });

  it("rejects a commit whose Gloo apiVersion is mistyped (the policy is not silently dropped), and accepts it once gitmesh.yaml ignores a kind another tool applies", async () => {
    await server.createRepo("typo");
    await server.commitFiles("typo", { "ws.yaml": workspace("web"), "a.yaml": routeTable("web", "a", "a.example.com") }, "good");
    const source = createGitSource({ location: { kind: "remote", url: server.url("typo"), auth: { token: TOKEN }, cacheDir: tmp() }, loader: recordingLoader(), logger: createMemoryLogger("git-sync").logger });
    const good = await source.sync();
    expect(good.kind).toBe("updated");
    const retry = "apiVersion: resilience.policy.gloo.solo.io/v1\nkind: RetryTimeoutPolicy\nmetadata: {name: r, namespace: web}\nspec: {config: {retries: {attempts: 3}}}\n";
    const bad = await server.commitFiles("typo", { "retry.yaml": retry }, "retries (typo in apiVersion)");
    const rejected = await source.sync();
    expect(rejected.kind).toBe("rejected");
    expect(source.current()?.commit.oid).toBe(good.kind === "updated" ? good.commit.oid : "");
    expect(source.status().rejection?.commit).toBe(bad);
    expect(source.status().rejection?.diagnostics).toEqual([expect.objectContaining({ file: "retry.yaml", line: 1, code: "UNKNOWN_GLOO_KIND", severity: "error" })]);

    const ext = "apiVersion: security.policy.gloo.solo.io/v2\nkind: ClientTLSPolicy\nmetadata: {name: auth, namespace: web}\nspec: {}\n";
    await server.commitFiles("typo", { "retry.yaml": retry.replace("/v1", "/v2"), "auth.yaml": ext }, "ext auth");
    expect((await source.sync()).kind).toBe("rejected");
    const fixed = await server.commitFiles("typo", { "gitmesh.yaml": "ignoreKinds: [ClientTLSPolicy]\n" }, "client TLS is applied by another tool");
    const accepted = await source.sync();
    expect(accepted.kind).toBe("updated");
    expect(source.current()?.commit.oid).toBe(fixed);
  });

  it("reads only a sub-path, with paths relative to it", async () => {
    await server.createRepo("sub");
    await server.commitFiles("sub", { "mesh/ws.yaml": workspace("web"), "mesh/x/a.yaml": routeTable("web", "a", "a.example.com"), "other/ignored.yaml": "not: config\n" }, "init");
    const source = createGitSource({ location: { kind: "remote", url: server.url("sub"), auth: { token: TOKEN }, cacheDir: tmp() }, subPath: "mesh", loader: recordingLoader(), logger: createMemoryLogger().logger });
    const r = await source.sync();
    expect(r.kind === "updated" && r.parsedPaths).toEqual(["ws.yaml", "x/a.yaml"]);
    await server.commitFiles("sub", { "other/ignored.yaml": "still: not config\n" }, "outside");
    expect((await source.sync()).kind).toBe("unchanged");
    await server.commitFiles("sub", { "mesh": null, "mesh/ws.yaml": null, "mesh/x/a.yaml": null }, "remove mesh");
    const gone = await source.sync();
    expect(gone.kind).toBe("rejected");
    expect(gone.kind === "rejected" && gone.rejection.diagnostics[0]?.code).toBe("GIT_SUBPATH_MISSING");
  });

  it("reads a local repository from its object store, at a branch, tag or commit", async () => {
    await server.createRepo("local");
    const c1 = await server.commitFiles("local", { "ws.yaml": workspace("web") }, "one");
    await server.git("local", ["tag", "-a", "-m", "release", "v1", c1]);
    await server.commitFiles("local", { "a.yaml": routeTable("web", "a", "a.example.com") }, "two");
    const mk = (ref: string) => createGitSource({ location: { kind: "local", path: server.repoPath("local") }, ref, loader: recordingLoader(), logger: createMemoryLogger().logger });
    const main = await mk("main").sync();
    expect(main.kind === "updated" && main.parsedPaths).toEqual(["a.yaml", "ws.yaml"]);
    const tag = await mk("v1").sync();
    expect(tag.commit.oid).toBe(c1);
    expect(tag.kind === "updated" && tag.parsedPaths).toEqual(["ws.yaml"]);
    const pinned = await mk(c1).sync();
    expect(pinned.commit.oid).toBe(c1);
    // a working clone (objects under .git/, packed by clone) reads the same way
    const work = tmp();
    await execFileP("git", ["clone", "--quiet", server.repoPath("local"), work]);
    const fromClone = await createGitSource({ location: { kind: "local", path: work }, ref: "main", loader: recordingLoader(), logger: createMemoryLogger().logger }).sync();
    expect(fromClone.commit.oid).toBe(main.commit.oid);
    expect(fromClone.kind === "updated" && fromClone.parsedPaths).toEqual(["a.yaml", "ws.yaml"]);
  });

  it("follows a webhook's SHA, and reports a SHA the server does not serve yet as retry-later", async () => {
    await server.createRepo("hint");
    const c1 = await server.commitFiles("hint", { "ws.yaml": workspace("web") }, "one");
    const source = createGitSource({ location: { kind: "remote", url: server.url("hint"), auth: { token: TOKEN }, cacheDir: tmp() }, loader: recordingLoader(), logger: createMemoryLogger().logger, retry: { attempts: 1 } });
    expect((await source.sync({ sha: c1 })).commit.oid).toBe(c1);
    const c2 = await server.commitFiles("hint", { "a.yaml": routeTable("web", "a", "a.example.com") }, "two");
    expect((await source.sync({ sha: c2 })).commit.oid).toBe(c2);
    const unknown = "1234567890123456789012345678901234567890";
    const err = await source.sync({ sha: unknown }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommitNotYetVisibleError);
    expect((err as CommitNotYetVisibleError).retryAfterMs).toBeGreaterThan(0);
    expect(source.current()?.commit.oid).toBe(c2);
  });

  it("brings into force only commits on the followed branch: a hint naming another branch's commit is ignored", async () => {
    await server.createRepo("offbranch");
    // The test server, like GitHub, serves any commit reachable from any ref by its SHA.
    const c1 = await server.commitFiles("offbranch", { "ws.yaml": workspace("web") }, "one");
    await server.git("offbranch", ["branch", "feature", "main"]);
    const mem = createMemoryLogger("git-sync");
    const source = createGitSource({ location: { kind: "remote", url: server.url("offbranch"), auth: { token: TOKEN }, cacheDir: tmp() }, loader: recordingLoader(), logger: mem.logger, retry: { attempts: 1 } });
    expect((await source.sync()).commit.oid).toBe(c1);
    // A commit on a feature branch that descends from main's tip: a (signed) hint for main names it.
    const evil = await server.commitFiles("offbranch", { "a.yaml": routeTable("web", "a", "evil.example.com") }, "not reviewed", { branch: "feature" });
    const outcome = await source.sync({ sha: evil }).catch((e: unknown) => e);
    expect(outcome).toBeInstanceOf(CommitNotYetVisibleError); // it may still reach main: retry later
    expect((outcome as Error).message).toContain("not on the tip of main");
    expect(source.current()?.commit.oid).toBe(c1);
    // main moves on without it: the poll brings main's tip, and the same hint now changes nothing.
    const c2 = await server.commitFiles("offbranch", { "a.yaml": routeTable("web", "a", "a.example.com") }, "two");
    expect((await source.sync()).commit.oid).toBe(c2);
    const again = await source.sync({ sha: evil });
    expect(again.commit.oid).toBe(c2);
    // A commit of no branch history at all (an orphan) is ignored outright, with a warning.
    const orphan = await server.commitFiles("offbranch", { "a.yaml": routeTable("web", "a", "orphan.example.com") }, "orphan", { branch: "orphan" });
    expect((await source.sync({ sha: orphan })).commit.oid).toBe(c2);
    expect(mem.records.some((r) => r.msg.includes("not on the followed branch") && r.fields.hint === orphan)).toBe(true);
  });

  it("retries fetch failures with exponential backoff", async () => {
    await server.createRepo("flaky");
    await server.commitFiles("flaky", { "ws.yaml": workspace("web") }, "one");
    const mem = createMemoryLogger("git-sync");
    const delays: number[] = [];
    const source = createGitSource({
      location: { kind: "remote", url: server.url("flaky"), auth: { token: TOKEN }, cacheDir: tmp() },
      loader: recordingLoader(),
      logger: mem.logger,
      retry: { attempts: 4, initialDelayMs: 10, sleep: (ms) => { delays.push(ms); return Promise.resolve(); } },
    });
    server.failNext(2, 503);
    expect((await source.sync()).kind).toBe("updated");
    expect(delays).toEqual([10, 20]);
    expect(mem.records.filter((r) => r.msg === "fetch failed, retrying")).toHaveLength(2);

    server.failNext(10, 502);
    const err = await source.sync().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitTransportError);
    expect(delays).toEqual([10, 20, 10, 20, 40]);
    expect(source.status().lastError?.code).toBe("GitTransportError");
    server.failNext(0);
  });

  it("never puts credentials in logs, errors or status", async () => {
    await server.createRepo("secret");
    await server.commitFiles("secret", { "ws.yaml": workspace("web") }, "one");
    const wrong = "wrong_token_987654";
    const mem = createMemoryLogger("git-sync");
    const withCredsInUrl = server.url("secret").replace("http://", `http://bob:${wrong}@`);
    const source = createGitSource({ location: { kind: "remote", url: withCredsInUrl, cacheDir: tmp() }, loader: recordingLoader(), logger: mem.logger, retry: { attempts: 1 } });
    const err = await source.sync().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitAuthError);
    const text = `${(err as Error).message} ${JSON.stringify(source.status())} ${mem.text()}`;
    expect(text).not.toContain(wrong);
    expect(text).toContain(server.url("secret"));
    expect(source.status().source).toBe(server.url("secret"));
    // credentials from the URL were used as basic auth
    const sent = server.requests.filter((r) => r.path.startsWith("/secret.git") && r.authorization);
    expect(Buffer.from(sent[0]!.authorization!.replace("Basic ", ""), "base64").toString()).toBe(`bob:${wrong}`);

    const good = createGitSource({ location: { kind: "remote", url: server.url("secret"), auth: { username: "bob", password: TOKEN }, cacheDir: tmp() }, loader: recordingLoader(), logger: mem.logger });
    expect((await good.sync()).kind).toBe("updated");
    expect(mem.text()).not.toContain(TOKEN);
  });
});
