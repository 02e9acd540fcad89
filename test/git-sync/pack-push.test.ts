/**
 * The audit writer's push to a remote as one pack (pack-push.ts), against a real `git http-backend`:
 * what arrives is a complete, valid history (git fsck), the branch holds exactly what the writer built,
 * a later commit sends only what changed, and refused credentials are an authentication error.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import { createAuditWriter, GitAuthError, type AuditInput, type RenderedResource } from "../../src/git-sync/index.js";
import { createObjectReader } from "../../src/git-sync/object-reader.js";
import { objectsToSend } from "../../src/git-sync/pack-push.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { useTempDirs } from "../helpers/tmp.js";

const TOKEN = "pack-push-token-81";
const BRANCH = "gitmesh/rendered";

const vs = (cluster: string, name: string, timeout: string): RenderedResource => ({
  apiVersion: "networking.istio.io/v1",
  kind: "VirtualService",
  metadata: { name, namespace: "web", labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": cluster } },
  spec: { hosts: [`${name}.example.com`], http: [{ route: [{ destination: { host: `${name}.web.svc.cluster.local` } }], timeout }] },
});

/** 40 clusters × 25 objects, every object's timeout given by `timeoutOf`. */
function fleet(sourceCommit: string, timeoutOf: (cluster: number, i: number) => string): AuditInput {
  const clusters = new Map<string, RenderedResource[]>();
  const discovery = new Map<string, unknown>();
  for (let c = 0; c < 40; c++) {
    clusters.set(`c${String(c)}`, Array.from({ length: 25 }, (_, i) => vs(`c${String(c)}`, `svc-${String(i)}`, timeoutOf(c, i))));
    discovery.set(`c${String(c)}`, { cluster: `c${String(c)}`, namespaces: [{ name: "web", labels: {} }] });
  }
  return { clusters, discovery, sourceCommit, sourceRef: "refs/heads/main", timestamp: 1_700_000_000 };
}

describe("audit push as one pack", () => {
  let server: GitServer;
  const tmp = useTempDirs("gitsync-packpush-");
  beforeAll(async () => {
    server = await startGitServer({ auth: { token: TOKEN } });
  });
  afterAll(async () => {
    await server.stop();
  });

  it("a first commit of a thousand files and a one-file change land whole, and the second sends only what changed", async () => {
    await server.createRepo("fleet-audit");
    const cacheDir = tmp();
    const writer = createAuditWriter({ target: { kind: "remote", url: server.url("fleet-audit"), auth: { token: TOKEN }, cacheDir }, logger: createMemoryLogger().logger });
    const first = await writer.write(fleet("a".repeat(40), () => "5s"));
    expect(first.commit).toBeDefined();
    const second = await writer.write(fleet("b".repeat(40), (c, i) => (c === 7 && i === 3 ? "9s" : "5s")));
    expect(second.changes).toEqual([{ cluster: "c7", added: 0, changed: 1, removed: 0, discovery: false }]);

    // The remote's history is complete and valid, and its branch is exactly what the writer built.
    await server.git("fleet-audit", ["fsck", "--strict", "--no-dangling"]);
    expect((await server.git("fleet-audit", ["rev-parse", BRANCH])).trim()).toBe(second.commit);
    expect((await server.git("fleet-audit", ["rev-parse", `${BRANCH}~1`])).trim()).toBe(first.commit);
    const files = (await server.git("fleet-audit", ["ls-tree", "-r", "--name-only", BRANCH])).trim().split("\n");
    expect(files.filter((f) => f.startsWith("clusters/"))).toHaveLength(40 * 25);
    const changed = files.find((f) => f.startsWith("clusters/c7/") && f.includes("svc-3"))!;
    expect(await server.git("fleet-audit", ["show", `${BRANCH}:${changed}`])).toContain("timeout: 9s");

    // What the second push carried: the commit, the trees on the path to the one file, the file.
    const sent = objectsToSend(createObjectReader(cacheDir), second.commit!, first.commit);
    const depth = changed.split("/").length; // trees from the root to the file's directory, plus the blob
    expect(sent.length).toBeLessThanOrEqual(1 + depth + 1);
    expect(sent).toContain(second.commit);
    // …against every object of the first commit.
    expect(objectsToSend(createObjectReader(cacheDir), first.commit!, undefined).length).toBeGreaterThan(40 * 25);
  });

  it("a writer whose credentials are refused gets an authentication error, and nothing moves", async () => {
    await server.createRepo("denied-audit");
    const writer = createAuditWriter({ target: { kind: "remote", url: server.url("denied-audit"), auth: { token: "wrong" }, cacheDir: tmp() }, logger: createMemoryLogger().logger, retry: { attempts: 1 } });
    await expect(writer.write(fleet("c".repeat(40), () => "5s"))).rejects.toBeInstanceOf(GitAuthError);
    expect((await server.git("denied-audit", ["for-each-ref"])).trim()).toBe("");
  });
});
