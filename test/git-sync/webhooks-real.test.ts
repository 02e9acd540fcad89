/**
 * The webhook handlers against real deliveries: every push, ping and pull_request payload of
 * `@octokit/webhooks-examples` (GitHub's published examples), signed by `@octokit/webhooks-methods`
 * (GitHub's own reference implementation of X-Hub-Signature-256), and a push event in the shape GitLab
 * documents (docs.gitlab.com, "Webhook events", Push events; fixture in test/fixtures/git-sync).
 *
 * Why gitmesh keeps its own HMAC check instead of calling webhooks-methods' `verify` at request time:
 * that `verify` is asynchronous (Web Crypto) while the handlers are synchronous functions of
 * (headers, body); the check is HMAC-SHA256 over the raw bytes compared in constant time (8 lines in
 * webhooks.ts), and this test holds it to the reference in both directions on real payloads.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { sign, verify } from "@octokit/webhooks-methods";
import type { WebhookDefinition } from "@octokit/webhooks-examples";
import { describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import { createWebhookHandlers, signBody, type PushEvent } from "../../src/git-sync/index.js";

const SECRET = "It's a Secret to Everybody";
// The package is one JSON document (its `main`): read it as JSON, typed by the package's declarations.
const examples = createRequire(import.meta.url)("@octokit/webhooks-examples") as WebhookDefinition[];
const eventsNamed = (name: string): readonly Record<string, unknown>[] => (examples.find((e) => e.name === name)?.examples ?? []) as Record<string, unknown>[];

function handlers() {
  const pushes: PushEvent[] = [];
  const mem = createMemoryLogger("git-sync.webhooks");
  const h = createWebhookHandlers({ githubSecret: SECRET, gitlabToken: "gl-token", onPush: (e) => (pushes.push(e), "accepted"), logger: mem.logger });
  return { h, pushes, mem };
}

describe("webhooks: real GitHub deliveries (@octokit/webhooks-examples)", () => {
  it("has the payloads this test relies on", () => {
    expect(eventsNamed("push").length).toBeGreaterThanOrEqual(5);
    expect(eventsNamed("ping").length).toBeGreaterThanOrEqual(1);
    expect(eventsNamed("pull_request").length).toBeGreaterThanOrEqual(1);
  });

  it("every push example, signed by GitHub's reference signer, is accepted as a hint for its ref and commit; deletions are ignored", async () => {
    const { h, pushes } = handlers();
    for (const payload of eventsNamed("push")) {
      const body = JSON.stringify(payload);
      const r = h.github({ headers: { "X-GitHub-Event": "push", "X-Hub-Signature-256": await sign(SECRET, body), "Content-Type": "application/json" }, body });
      const deleted = payload.deleted === true || /^0{40}$/.test(String(payload.after));
      if (deleted) {
        expect(r.status).toBe(200);
        expect(r.body).toContain("ignored");
      } else {
        expect(r.status).toBe(202);
        expect(pushes.at(-1)).toEqual({ provider: "github", repo: (payload.repository as { full_name: string }).full_name, ref: payload.ref, sha: payload.after });
      }
    }
    expect(pushes.length).toBeGreaterThan(0);
  });

  it("ping answers pong, pull_request is not a push", async () => {
    const { h, pushes } = handlers();
    for (const payload of eventsNamed("ping")) {
      const body = JSON.stringify(payload);
      expect(h.github({ headers: { "x-github-event": "ping", "x-hub-signature-256": await sign(SECRET, body) }, body })).toEqual({ status: 200, body: "pong\n" });
    }
    for (const payload of eventsNamed("pull_request").slice(0, 5)) {
      const body = JSON.stringify(payload);
      const r = h.github({ headers: { "x-github-event": "pull_request", "x-hub-signature-256": await sign(SECRET, body) }, body });
      expect(r.status).toBe(200);
      expect(r.body).toContain("ignored: event pull_request");
    }
    expect(pushes).toEqual([]);
  });

  it("a tampered body, another secret, or a missing signature is refused (401) and nothing is hinted", async () => {
    const { h, pushes, mem } = handlers();
    const payload = eventsNamed("push").find((p) => p.deleted !== true)!;
    const body = JSON.stringify(payload);
    const signature = await sign(SECRET, body);
    const tampered = body.replace(String(payload.after), "1".repeat(40));
    expect(h.github({ headers: { "x-github-event": "push", "x-hub-signature-256": signature }, body: tampered }).status).toBe(401);
    expect(h.github({ headers: { "x-github-event": "push", "x-hub-signature-256": await sign("another secret", body) }, body }).status).toBe(401);
    expect(h.github({ headers: { "x-github-event": "push" }, body }).status).toBe(401);
    expect(pushes).toEqual([]);
    expect(JSON.stringify(mem.records)).not.toContain(signature.slice(7, 30));
  });

  it("gitmesh's signer and GitHub's reference agree both ways", async () => {
    for (const payload of eventsNamed("push")) {
      const body = JSON.stringify(payload);
      expect(signBody(SECRET, body)).toBe(await sign(SECRET, body));
      expect(await verify(SECRET, body, signBody(SECRET, body))).toBe(true);
    }
  });
});

describe("webhooks: GitLab's documented push event", () => {
  const body = readFileSync(new URL("../fixtures/git-sync/gitlab-push-event.json", import.meta.url), "utf8");

  it("is a hint for checkout_sha on its ref, with the project path", () => {
    const { h, pushes } = handlers();
    const r = h.gitlab({ headers: { "X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "gl-token", "Content-Type": "application/json" }, body });
    expect(r.status).toBe(202);
    expect(pushes).toEqual([{ provider: "gitlab", repo: "platform/mesh-config", ref: "refs/heads/main", sha: "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678" }]);
  });

  it("a wrong token is refused; another event kind is ignored", () => {
    const { h, pushes } = handlers();
    expect(h.gitlab({ headers: { "X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "gl-token2" }, body }).status).toBe(401);
    expect(h.gitlab({ headers: { "X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": "gl-token" }, body }).body).toContain("ignored");
    expect(pushes).toEqual([]);
  });
});
