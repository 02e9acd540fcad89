import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createMemoryLogger } from "../../src/core/index.js";
import { createGitSource, createSyncTrigger, createWebhookHandlers, signBody, type SyncOutcome } from "../../src/git-sync/index.js";
import type { DesiredState } from "../../src/config/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { recordingLoader, routeTable, workspace } from "./fixtures.js";

const SECRET = "hook-secret-42";

function waitFor(pred: () => boolean, timeoutMs = 10_000): Promise<void> {
  const start = Date.now();
  return new Promise((resolve, reject) => {
    const tick = () => {
      if (pred()) resolve();
      else if (Date.now() - start > timeoutMs) reject(new Error("timed out waiting for condition"));
      else setTimeout(tick, 10);
    };
    tick();
  });
}

describe("webhook handlers", () => {
  const pushes: unknown[] = [];
  const mem = createMemoryLogger("git-sync.webhooks");
  const handlers = createWebhookHandlers({
    githubSecret: SECRET,
    gitlabToken: "gl-token-7",
    genericSecret: SECRET,
    onPush: (e) => {
      pushes.push(e);
      return "accepted";
    },
    logger: mem.logger,
  });
  const sha = "a".repeat(40);

  it("accepts a GitHub push with a valid X-Hub-Signature-256 and extracts ref and SHA", () => {
    const body = JSON.stringify({ ref: "refs/heads/main", after: sha, repository: { full_name: "org/cfg" } });
    const res = handlers.github({ headers: { "X-Hub-Signature-256": signBody(SECRET, body), "X-GitHub-Event": "push" }, body: Buffer.from(body) });
    expect(res.status).toBe(202);
    expect(pushes.at(-1)).toEqual({ provider: "github", repo: "org/cfg", ref: "refs/heads/main", sha });
    expect(handlers.github({ headers: { "x-hub-signature-256": signBody(SECRET, "{}"), "x-github-event": "ping" }, body: "{}" }).status).toBe(200);
  });

  it("answers 401 to bad or missing signatures and logs them without the payload", () => {
    const count = pushes.length;
    const body = JSON.stringify({ ref: "refs/heads/main", after: sha, marker: "PAYLOAD-MARKER-xyz" });
    const forged = signBody("wrong-secret", body);
    expect(handlers.github({ headers: { "x-hub-signature-256": forged }, body }).status).toBe(401);
    expect(handlers.github({ headers: {}, body }).status).toBe(401);
    // a signature over other bytes (body tampered after signing)
    expect(handlers.github({ headers: { "x-hub-signature-256": signBody(SECRET, body) }, body: body.replace("main", "evil") }).status).toBe(401);
    expect(handlers.gitlab({ headers: { "x-gitlab-token": "nope" }, body }).status).toBe(401);
    expect(handlers.generic({ headers: { "x-signature-256": forged }, body }).status).toBe(401);
    expect(pushes.length).toBe(count);
    const logged = mem.text();
    expect(mem.records.filter((r) => r.msg === "webhook rejected: bad signature")).toHaveLength(5);
    expect(logged).not.toContain("PAYLOAD-MARKER");
    expect(logged).not.toContain(forged.slice(7));
    expect(logged).not.toContain("nope");
  });

  it("accepts GitLab (X-Gitlab-Token) and the generic HMAC header; ignores deletions and non-push events", () => {
    const gl = JSON.stringify({ ref: "refs/heads/main", checkout_sha: sha, after: sha, project: { path_with_namespace: "grp/cfg" } });
    expect(handlers.gitlab({ headers: { "X-Gitlab-Token": "gl-token-7", "X-Gitlab-Event": "Push Hook" }, body: gl }).status).toBe(202);
    expect(pushes.at(-1)).toEqual({ provider: "gitlab", repo: "grp/cfg", ref: "refs/heads/main", sha });
    const gen = JSON.stringify({ repo: "cfg", ref: "refs/heads/main", sha: sha.toUpperCase() });
    expect(handlers.generic({ headers: { "x-signature-256": signBody(SECRET, gen) }, body: gen }).status).toBe(202);
    expect(pushes.at(-1)).toEqual({ provider: "generic", repo: "cfg", ref: "refs/heads/main", sha });
    const count = pushes.length;
    const del = JSON.stringify({ ref: "refs/heads/main", after: "0".repeat(40) });
    expect(handlers.github({ headers: { "x-hub-signature-256": signBody(SECRET, del) }, body: del }).body).toContain("ignored");
    expect(handlers.github({ headers: { "x-hub-signature-256": signBody(SECRET, del), "x-github-event": "issues" }, body: del }).body).toContain("ignored");
    expect(handlers.github({ headers: { "x-hub-signature-256": signBody(SECRET, "not json") }, body: "not json" }).status).toBe(400);
    expect(pushes.length).toBe(count);
  });

  it("answers 404 for providers that are not configured", () => {
    const h = createWebhookHandlers({ onPush: () => "accepted", logger: mem.logger });
    expect(h.github({ headers: {}, body: "{}" }).status).toBe(404);
  });
});

describe("sync trigger against a real Git server", () => {
  let server: GitServer;
  const dirs: string[] = [];
  beforeAll(async () => {
    server = await startGitServer();
  });
  afterAll(async () => {
    await server.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const setup = async (repo: string, pollIntervalMs: number, debounceMs = 100) => {
    await server.createRepo(repo);
    const first = await server.commitFiles(repo, { "ws.yaml": workspace("web") }, "one");
    const cacheDir = mkdtempSync(join(tmpdir(), "gitsync-trig-"));
    dirs.push(cacheDir);
    const mem = createMemoryLogger("git-sync");
    const source = createGitSource({ location: { kind: "remote", url: server.url(repo), cacheDir }, loader: recordingLoader(), logger: mem.logger, retry: { attempts: 1 } });
    const outcomes: SyncOutcome<DesiredState>[] = [];
    const trigger = createSyncTrigger({ source, ref: "main", repo: `org/${repo}`, pollIntervalMs, debounceMs, onOutcome: (o) => void outcomes.push(o), logger: mem.logger });
    const handlers = createWebhookHandlers({ githubSecret: SECRET, onPush: (e) => trigger.hint(e), logger: mem.logger });
    const push = (sha: string) => {
      const body = JSON.stringify({ ref: "refs/heads/main", after: sha, repository: { full_name: `org/${repo}` } });
      return handlers.github({ headers: { "x-hub-signature-256": signBody(SECRET, body), "x-github-event": "push" }, body });
    };
    trigger.start();
    await waitFor(() => outcomes.length === 1);
    expect(outcomes[0]!.commit.oid).toBe(first);
    return { source, trigger, outcomes, push, mem };
  };

  it("a webhook makes the source fetch the pushed SHA; the same push again is a duplicate", async () => {
    const { trigger, outcomes, push } = await setup("hooked", 0);
    const sha = await server.commitFiles("hooked", { "a.yaml": routeTable("web", "a", "a.example.com") }, "two");
    expect(push(sha)).toEqual({ status: 202, body: "accepted\n" });
    await waitFor(() => outcomes.length === 2);
    expect(outcomes[1]).toMatchObject({ kind: "updated", commit: { oid: sha } });
    expect(push(sha)).toEqual({ status: 200, body: "duplicate\n" });
    expect(trigger.hint({ repo: "org/other", ref: "refs/heads/main", sha: "b".repeat(40) })).toBe("ignored");
    expect(trigger.hint({ repo: "org/hooked", ref: "refs/heads/dev", sha: "b".repeat(40) })).toBe("ignored");
    await trigger.stop();
    expect(outcomes).toHaveLength(2);
  });

  it("debounces a burst of pushes into one fetch of the newest SHA", async () => {
    const { trigger, outcomes, push } = await setup("burst", 0, 300);
    const shas: string[] = [];
    for (let i = 0; i < 5; i++) shas.push(await server.commitFiles("burst", { [`r${i}.yaml`]: routeTable("web", `r${i}`, `r${i}.example.com`) }, `r${i}`));
    const before = server.requests.filter((r) => r.path.startsWith("/burst.git") && r.method === "POST").length;
    for (const sha of shas) expect(push(sha).status).toBe(202);
    await trigger.idle();
    await trigger.stop();
    expect(outcomes).toHaveLength(2);
    expect(outcomes[1]).toMatchObject({ kind: "updated", commit: { oid: shas[4] } });
    const posts = server.requests.filter((r) => r.path.startsWith("/burst.git") && r.method === "POST").length;
    expect(posts - before).toBe(1);
  });

  it("a webhook whose sync failed is accepted again when redelivered", async () => {
    const { trigger, outcomes, push, mem } = await setup("redeliver", 0);
    const sha = await server.commitFiles("redeliver", { "a.yaml": routeTable("web", "a", "a.example.com") }, "two");
    server.failNext(1000);
    expect(push(sha).status).toBe(202);
    await waitFor(() => mem.records.some((r) => r.msg.startsWith("sync failed; polling will retry")));
    server.failNext(0);
    expect(push(sha)).toEqual({ status: 202, body: "accepted\n" });
    await waitFor(() => outcomes.some((o) => o.commit.oid === sha));
    expect(push(sha).body).toBe("duplicate\n");
    await trigger.stop();
  });

  it("polling picks up a push whose webhook never arrived", async () => {
    const { trigger, outcomes } = await setup("polled", 100);
    const sha = await server.commitFiles("polled", { "a.yaml": routeTable("web", "a", "a.example.com") }, "two");
    await waitFor(() => outcomes.some((o) => o.kind === "updated" && o.commit.oid === sha));
    await trigger.stop();
  });
});
