import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canonicalYaml, createMemoryLogger } from "../../src/core/index.js";
import { createAuditWriter, MANIFEST_PATH, type AuditInput, type RenderedResource } from "../../src/git-sync/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { useTempDirs } from "../helpers/tmp.js";

const TOKEN = "audit-token-secret-55";
const BRANCH = "gitmesh/rendered";

function vs(cluster: string, ns: string, name: string, host: string): RenderedResource {
  return {
    apiVersion: "networking.istio.io/v1",
    kind: "VirtualService",
    metadata: { name, namespace: ns, labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": cluster } },
    spec: { hosts: [host], http: [{ route: [{ destination: { host } }] }] },
  };
}
const peerAuth = (cluster: string): RenderedResource => ({
  apiVersion: "security.istio.io/v1",
  kind: "PeerAuthentication",
  metadata: { name: "default", namespace: "istio-system", labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": cluster } },
  spec: { mtls: { mode: "STRICT" } },
});
const clusterScoped: RenderedResource = { apiVersion: "v1", kind: "Namespace", metadata: { name: "web" } };

function input(over: Partial<AuditInput> = {}): AuditInput {
  return {
    clusters: new Map([
      ["c1", [vs("c1", "web", "a", "a.example.com"), vs("c1", "web", "b", "b.example.com"), peerAuth("c1"), clusterScoped]],
      ["c2", [vs("c2", "web", "a", "a.example.com"), peerAuth("c2")]],
    ]),
    discovery: new Map<string, unknown>([
      ["c1", { cluster: "c1", namespaces: [{ name: "web", labels: {} }] }],
      ["c2", { cluster: "c2", namespaces: [] }],
    ]),
    sourceCommit: "1111111111111111111111111111111111111111",
    sourceRef: "refs/heads/main",
    timestamp: 1_700_000_000,
    ...over,
  };
}

describe("audit branch writer", () => {
  let server: GitServer;
  const tmp = useTempDirs("gitsync-audit-");
  beforeAll(async () => {
    server = await startGitServer({ auth: { token: TOKEN } });
  });
  afterAll(() => server.stop());
  const lsTree = async (repo: string, rev: string) => (await server.git(repo, ["ls-tree", "-r", "--name-only", rev])).trim().split("\n");

  it("writes the layout, then commits incrementally; nothing when unchanged", async () => {
    await server.createRepo("out");
    await server.commitFiles("out", { "README.md": "source repo\n" }, "init");
    const mem = createMemoryLogger("git-sync.audit");
    const writer = createAuditWriter({ target: { kind: "local", path: server.repoPath("out") }, identity: { name: "Audit Bot", email: "bot@example.test" }, logger: mem.logger });

    const first = await writer.write(input());
    expect(first.commit).toBeDefined();
    expect(await lsTree("out", BRANCH)).toEqual([
      MANIFEST_PATH,
      "clusters/c1/_cluster/namespace/web.yaml",
      "clusters/c1/istio-system/peerauthentication/default.yaml",
      "clusters/c1/web/virtualservice/a.yaml",
      "clusters/c1/web/virtualservice/b.yaml",
      "clusters/c2/istio-system/peerauthentication/default.yaml",
      "clusters/c2/web/virtualservice/a.yaml",
      "discovery/c1.yaml",
      "discovery/c2.yaml",
    ]);
    expect(await server.git("out", ["show", `${BRANCH}:clusters/c1/web/virtualservice/a.yaml`])).toBe(canonicalYaml(vs("c1", "web", "a", "a.example.com")));
    expect(await server.git("out", ["log", "-1", "--format=%an <%ae> %at|%cn <%ce> %ct", BRANCH])).toBe("Audit Bot <bot@example.test> 1700000000|Audit Bot <bot@example.test> 1700000000\n");
    const msg1 = await server.git("out", ["log", "-1", "--format=%B", BRANCH]);
    expect(msg1).toContain("c1: +4 ~0 -0, discovery updated");
    expect(await server.git("out", ["log", "-1", "--format=%(trailers:key=Source-Commit,valueonly)%(trailers:key=Source-Ref,valueonly)", BRANCH])).toBe(
      "1111111111111111111111111111111111111111\nrefs/heads/main\n\n",
    );
    // the source branch is untouched
    expect(await lsTree("out", "main")).toEqual(["README.md"]);

    const c2Tree = (await server.git("out", ["rev-parse", `${BRANCH}:clusters/c2`])).trim();
    const second = await writer.write(
      input({
        sourceCommit: "2222222222222222222222222222222222222222",
        timestamp: 1_700_000_100,
        clusters: new Map([
          ["c1", [vs("c1", "web", "a", "a2.example.com"), peerAuth("c1"), clusterScoped, vs("c1", "api", "new", "n.example.com")]],
          ["c2", [vs("c2", "web", "a", "a.example.com"), peerAuth("c2")]],
        ]),
      }),
    );
    expect(second.commit).toBeDefined();
    expect(second.changes).toEqual([{ cluster: "c1", added: 1, changed: 1, removed: 1, discovery: false }]);
    expect(await server.git("out", ["rev-parse", `${BRANCH}~1`])).toBe(first.commit! + "\n");
    // the unchanged cluster's subtree is reused as is
    expect((await server.git("out", ["rev-parse", `${BRANCH}:clusters/c2`])).trim()).toBe(c2Tree);
    const changed = (await server.git("out", ["diff", "--no-renames", "--name-status", `${BRANCH}~1`, BRANCH])).trim().split("\n").sort();
    expect(changed).toEqual([
      `M\t${MANIFEST_PATH}`,
      "A\tclusters/c1/api/virtualservice/new.yaml",
      "D\tclusters/c1/web/virtualservice/b.yaml",
      "M\tclusters/c1/web/virtualservice/a.yaml",
    ].sort());
    const msg2 = await server.git("out", ["log", "-1", "--format=%B", BRANCH]);
    expect(msg2).toMatch(/^Render 222222222222 \(main\): 1 cluster changed\n\nc1: \+1 ~1 -1\n\nSource-Commit: 2{40}\nSource-Ref: refs\/heads\/main\n/);

    const tip = await server.revParse("out", BRANCH);
    const again = await writer.write(input({
      sourceCommit: "3333333333333333333333333333333333333333",
      clusters: new Map([
        ["c1", [vs("c1", "web", "a", "a2.example.com"), peerAuth("c1"), clusterScoped, vs("c1", "api", "new", "n.example.com")]],
        ["c2", [vs("c2", "web", "a", "a.example.com"), peerAuth("c2")]],
      ]),
    }));
    expect(again.commit).toBeUndefined();
    expect(await server.revParse("out", BRANCH)).toBe(tip);

    // every object the writer made is valid for git (tree entry order, modes, zlib)
    await server.git("out", ["fsck", "--strict", "--no-dangling"]);

    // a discovery-only change gets its own commit
    const disc = await writer.write(input({
      clusters: new Map([
        ["c1", [vs("c1", "web", "a", "a2.example.com"), peerAuth("c1"), clusterScoped, vs("c1", "api", "new", "n.example.com")]],
        ["c2", [vs("c2", "web", "a", "a.example.com"), peerAuth("c2")]],
      ]),
      discovery: new Map<string, unknown>([["c1", { cluster: "c1", namespaces: [{ name: "web", labels: {} }] }], ["c2", { cluster: "c2", namespaces: [{ name: "x", labels: {} }] }]]),
    }));
    expect(disc.changes).toEqual([{ cluster: "c2", added: 0, changed: 0, removed: 0, discovery: true }]);
    expect(await server.git("out", ["log", "-1", "--format=%s", BRANCH])).toContain("Discovery update");
  });

  it("is deterministic: the same inputs give the same tree and commit in another repository", async () => {
    const oids: string[] = [];
    for (const repo of ["det1", "det2"]) {
      await server.createRepo(repo);
      const w = createAuditWriter({ target: { kind: "local", path: server.repoPath(repo) }, logger: createMemoryLogger().logger });
      const r = await w.write(input());
      oids.push(`${r.tree} ${r.commit}`);
    }
    expect(oids[0]).toBe(oids[1]);
  });

  it("never deletes or rewrites files it did not generate", async () => {
    await server.createRepo("keep");
    await server.commitFiles("keep", {
      "README.md": "about this branch\n",
      ".github/workflows/ci.yaml": "on: push\n",
      "clusters/c1/NOTES.md": "hand-written\n",
      "clusters/c1/web/virtualservice/b.yaml": "hand: written\n",
    }, "human files", { branch: BRANCH });
    const mem = createMemoryLogger();
    const w = createAuditWriter({ target: { kind: "local", path: server.repoPath("keep") }, logger: mem.logger });
    const r = await w.write(input());
    expect(r.skipped).toEqual(["clusters/c1/web/virtualservice/b.yaml"]);
    expect(await server.git("keep", ["show", `${BRANCH}:clusters/c1/web/virtualservice/b.yaml`])).toBe("hand: written\n");
    expect(mem.records.some((x) => x.msg.includes("did not generate"))).toBe(true);
    // the cluster disappears from the output: its generated files go, the human ones stay
    await w.write(input({ clusters: new Map([["c2", [vs("c2", "web", "a", "a.example.com"), peerAuth("c2")]]]), discovery: new Map([["c2", { cluster: "c2" }]]) }));
    const files = await lsTree("keep", BRANCH);
    expect(files).toEqual([
      ".github/workflows/ci.yaml",
      MANIFEST_PATH,
      "README.md",
      "clusters/c1/NOTES.md",
      "clusters/c1/web/virtualservice/b.yaml",
      "clusters/c2/istio-system/peerauthentication/default.yaml",
      "clusters/c2/web/virtualservice/a.yaml",
      "discovery/c2.yaml",
    ]);
    expect(await server.git("keep", ["show", `${BRANCH}:README.md`])).toBe("about this branch\n");
  });

  it("pushes to a remote with a token; racing writers both land, the loser rebuilt on the winner", async () => {
    await server.createRepo("remote-out");
    await server.commitFiles("remote-out", { "policy.yaml": "x: 1\n" }, "source", { branch: "main" });
    await server.commitFiles("remote-out", { "README.md": "x\n" }, "init", { branch: BRANCH });
    const mem = createMemoryLogger("git-sync.audit");
    const mk = () => createAuditWriter({ target: { kind: "remote", url: server.url("remote-out"), auth: { token: TOKEN }, cacheDir: tmp() }, logger: mem.logger });
    const a = mk();
    const b = mk();
    const held = server.hold((r) => r.method === "POST" && r.service === "git-receive-pack" && r.path.startsWith("/remote-out.git"));
    const inA = input({ sourceCommit: "a".repeat(40) });
    const inB = input({ sourceCommit: "b".repeat(40), clusters: new Map([["c1", [vs("c1", "web", "z", "z.example.com")]]]) });
    const pa = a.write(inA);
    const pb = b.write(inB);
    await held.waitFor(2);
    held.release();
    const [ra, rb] = await Promise.all([pa, pb]);
    expect(ra.commit).toBeDefined();
    expect(rb.commit).toBeDefined();
    expect([ra.attempts, rb.attempts].sort()).toEqual([1, 2]);
    const log = (await server.git("remote-out", ["log", "--format=%H", BRANCH])).trim().split("\n");
    expect(log).toContain(ra.commit);
    expect(log).toContain(rb.commit);
    expect(log).toHaveLength(3);
    expect(await lsTree("remote-out", BRANCH)).toContain("README.md");
    expect(mem.text()).not.toContain(TOKEN);
    expect(mem.records.some((x) => x.msg.startsWith("audit branch moved"))).toBe(true);

    // nothing changed → no push at all
    const posts = server.requests.filter((r) => r.service === "git-receive-pack" && r.method === "POST").length;
    const winner = ra.attempts === 2 ? { w: a, i: inA } : { w: b, i: inB };
    expect((await winner.w.write(winner.i)).commit).toBeUndefined();
    expect(server.requests.filter((r) => r.service === "git-receive-pack" && r.method === "POST").length).toBe(posts);
  });

  it("local writers racing on one repository both land (ref lock compare-and-swap)", async () => {
    await server.createRepo("local-race");
    const mk = () => createAuditWriter({ target: { kind: "local", path: server.repoPath("local-race") }, logger: createMemoryLogger().logger });
    const results = await Promise.all([
      mk().write(input({ sourceCommit: "c".repeat(40) })),
      mk().write(input({ sourceCommit: "d".repeat(40), clusters: new Map([["c9", [peerAuth("c9")]]]) })),
    ]);
    const log = (await server.git("local-race", ["log", "--format=%H", BRANCH])).trim().split("\n");
    for (const r of results) expect(log).toContain(r.commit);
    expect(log).toHaveLength(2);
  });
});
