/**
 * The audit writer's packs (#39 item 2): each commit's new objects written once into a pack in the
 * writer's repository and pushed as they are over smart HTTP (`git http-backend`), checked with the
 * real git: `fsck --strict` on both sides, a clone by the git CLI, file contents; the branch moved by
 * someone else during the push; a connection cut while the pack goes up, and one cut after the server
 * took it; a server that refuses the update (a hook: `ng` with its reason).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { chmodSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { canonicalYaml, createMemoryLogger } from "../../src/core/index.js";
import { createAuditWriter, MANIFEST_PATH, type AuditInput, type RenderedResource } from "../../src/git-sync/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { useTempDirs } from "../helpers/tmp.js";

const exec = promisify(execFile);
const gitEnv = { ...process.env, GIT_TERMINAL_PROMPT: "0", GIT_CONFIG_NOSYSTEM: "1", HOME: tmpdir() };
const BRANCH = "gitmesh/rendered";
const REF = `refs/heads/${BRANCH}`;
const fast = { initialDelayMs: 10, attempts: 4 };

function vs(cluster: string, ns: string, name: string, rev = 0): RenderedResource {
  return {
    apiVersion: "networking.istio.io/v1",
    kind: "VirtualService",
    metadata: { name, namespace: ns, labels: { "gitmesh.io/cluster": cluster } },
    spec: { hosts: [`${name}.${ns}.svc.cluster.local`], revision: rev },
  };
}

/** `clusters` clusters of `per` VirtualServices in 3 namespaces; `edit` changes one resource of c1. */
function fleet(clusters: number, per: number, edit = 0, sourceCommit = "1".repeat(40)): AuditInput {
  const out = new Map<string, RenderedResource[]>();
  const discovery = new Map<string, unknown>();
  for (let c = 0; c < clusters; c++) {
    const name = `c${c}`;
    out.set(name, Array.from({ length: per }, (_, i) => vs(name, `ns-${i % 3}`, `svc-${i}`, c === 1 && i === 4 ? edit : 0)));
    discovery.set(name, { cluster: name, namespaces: [{ name: "ns-0" }, { name: "ns-1" }, { name: "ns-2" }] });
  }
  return { clusters: out, discovery, sourceCommit, sourceRef: "refs/heads/main", timestamp: 1_700_000_000 + edit };
}

const git = async (gitDir: string, args: readonly string[]) => (await exec("git", ["--git-dir", gitDir, ...args], { env: gitEnv, maxBuffer: 64 << 20 })).stdout;
const packsIn = (gitDir: string) => readdirSync(join(gitDir, "objects", "pack")).filter((f) => f.endsWith(".pack"));
const looseIn = (gitDir: string) => readdirSync(join(gitDir, "objects")).filter((d) => /^[0-9a-f]{2}$/.test(d)).flatMap((d) => readdirSync(join(gitDir, "objects", d)));
/** Objects of a pack file, by `git verify-pack` (which also checks every object and the checksums). */
const packObjects = async (gitDir: string, pack: string) => (await git(gitDir, ["verify-pack", "-v", join(gitDir, "objects", "pack", pack)])).split("\n").filter((l) => /^[0-9a-f]{40} (commit|tree|blob)/.test(l)).length;

interface CutProxy {
  readonly url: string;
  /** Receive-pack POSTs seen. */
  posts: number;
  stop(): Promise<void>;
}

/**
 * A proxy in front of the Git server that breaks the first receive-pack POST: `request` forwards only the
 * first half of its body and then destroys both connections (the server never gets the whole pack);
 * `response` forwards it all, lets the server answer in full, and then destroys the client's connection
 * without a byte of the answer (the update landed; the client cannot know).
 */
async function startCutProxy(target: string, mode: "request" | "response"): Promise<CutProxy> {
  const to = new URL(target);
  const state = { posts: 0 };
  const server: Server = createServer((req, res) => {
    const isPost = req.method === "POST" && (req.url ?? "").endsWith("/git-receive-pack");
    if (isPost) state.posts++;
    const cut = isPost && state.posts === 1;
    const up = httpRequest({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (upRes) => {
      if (cut && mode === "response") {
        upRes.resume();
        upRes.on("end", () => res.socket?.destroy());
        return;
      }
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      upRes.pipe(res);
    });
    up.on("error", () => res.socket?.destroy());
    if (cut && mode === "request") {
      const half = Number(req.headers["content-length"] ?? 0) / 2;
      let sent = 0;
      req.on("data", (chunk: Buffer) => {
        if (sent >= half) return;
        up.write(chunk.subarray(0, Math.max(0, half - sent)));
        sent += chunk.length;
        if (sent >= half) {
          up.destroy();
          req.socket.destroy();
        }
      });
      return;
    }
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    get posts() {
      return state.posts;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("audit writer: one pack per commit, pushed as it is", () => {
  let server: GitServer;
  const tmp = useTempDirs("gitsync-audit-pack-");
  beforeAll(async () => {
    server = await startGitServer();
  });
  afterAll(() => server.stop());

  it("writes the first commit as one pack, pushes exactly it, then small packs; git reads everything", async () => {
    await server.createRepo("packs");
    // isomorphic-git's fetch (a restarted writer below) needs the remote HEAD to name a branch
    await server.commitFiles("packs", { "policy.yaml": "x: 1\n" }, "source");
    const cache = tmp();
    const mem = createMemoryLogger();
    const w = createAuditWriter({ target: { kind: "remote", url: server.url("packs"), cacheDir: cache }, logger: mem.logger, retry: fast });
    const first = await w.write(fleet(6, 20));
    expect(first.commit).toBeDefined();
    // locally: one pack, nothing loose, and git verifies it
    expect(packsIn(cache)).toHaveLength(1);
    expect(looseIn(cache)).toEqual([]);
    // 6 clusters × 20 files + 6 discovery + manifest = 127 blobs; trees: root, clusters, 6 clusters, 18 namespaces,
    // 18 kinds, discovery, .gitmesh = 46; the commit
    expect(await packObjects(cache, packsIn(cache)[0]!)).toBe(127 + 46 + 1);
    await git(cache, ["fsck", "--strict", "--no-dangling"]);
    // the remote has the branch and the very pack we wrote (receive-pack keeps a pack of more than unpackLimit objects)
    const remote = server.repoPath("packs");
    expect(await server.revParse("packs", REF)).toBe(first.commit);
    await git(remote, ["fsck", "--strict", "--no-dangling"]);
    const ours = readFileSync(join(cache, "objects", "pack", packsIn(cache)[0]!));
    expect(packsIn(remote).filter((p) => readFileSync(join(remote, "objects", "pack", p)).equals(ours))).toHaveLength(1);

    // the git CLI clones the branch and finds the files
    const clone = join(tmp(), "clone");
    await exec("git", ["clone", "--quiet", "--branch", BRANCH, server.url("packs"), clone], { env: gitEnv });
    expect(readFileSync(join(clone, "clusters/c3/ns-1/virtualservice/svc-7.yaml"), "utf8")).toBe(canonicalYaml(vs("c3", "ns-1", "svc-7")));
    expect(readFileSync(join(clone, MANIFEST_PATH), "utf8").split("\n")).toContain("discovery/c5.yaml");

    // one changed resource: a pack of the blob, the trees above it (root, clusters, c1, ns-1, virtualservice) and the commit
    const second = await w.write(fleet(6, 20, 1, "2".repeat(40)));
    expect(second.changes).toEqual([{ cluster: "c1", added: 0, changed: 1, removed: 0, discovery: false }]);
    const fresh = packsIn(cache).filter((p) => !readFileSync(join(cache, "objects", "pack", p)).equals(ours));
    expect(fresh).toHaveLength(1);
    expect(await packObjects(cache, fresh[0]!)).toBe(1 + 5 + 1);
    expect(looseIn(cache)).toEqual([]);
    await git(cache, ["fsck", "--strict", "--no-dangling"]);
    await git(remote, ["fsck", "--strict", "--no-dangling"]);
    await exec("git", ["-C", clone, "pull", "--quiet", "--ff-only"], { env: gitEnv });
    expect(readFileSync(join(clone, "clusters/c1/ns-1/virtualservice/svc-4.yaml"), "utf8")).toBe(canonicalYaml(vs("c1", "ns-1", "svc-4", 1)));
    expect((await git(remote, ["rev-list", REF])).trim().split("\n")).toEqual([second.commit, first.commit]);

    // a second writer with a fresh cache (a restart) fetches the tip and goes on from it
    const w2 = createAuditWriter({ target: { kind: "remote", url: server.url("packs"), cacheDir: tmp() }, logger: mem.logger, retry: fast });
    const third = await w2.write(fleet(5, 20, 1, "3".repeat(40)));
    expect(third.changes.map((c) => c.cluster)).toEqual(["c5"]);
    expect((await git(remote, ["rev-list", REF])).trim().split("\n")).toEqual([third.commit, second.commit, first.commit]);
    await git(remote, ["fsck", "--strict", "--no-dangling"]);
  });

  it("someone else moves the branch during the push: the update is refused, the commit rebuilt on their tip, nothing lost", async () => {
    await server.createRepo("moved");
    await server.commitFiles("moved", { "policy.yaml": "x: 1\n" }, "source");
    const cache = tmp();
    const mem = createMemoryLogger();
    const w = createAuditWriter({ target: { kind: "remote", url: server.url("moved"), cacheDir: cache }, logger: mem.logger, retry: fast });
    const first = await w.write(fleet(3, 5));
    const held = server.hold((r) => r.method === "POST" && r.service === "git-receive-pack" && r.path.startsWith("/moved.git"));
    const pending = w.write(fleet(3, 5, 2, "2".repeat(40)));
    await held.waitFor(1);
    // a person commits to the branch with git while our pack is on its way
    const theirs = await server.commitFiles("moved", { "README.md": "hand-written\n" }, "docs", { branch: BRANCH });
    held.release();
    const second = await pending;
    expect(second.attempts).toBe(2);
    expect(mem.records.some((r) => r.msg.startsWith("audit branch moved"))).toBe(true);
    const remote = server.repoPath("moved");
    expect((await git(remote, ["rev-list", "--first-parent", REF])).trim().split("\n")).toEqual([second.commit, theirs, first.commit]);
    expect(await git(remote, ["show", `${REF}:README.md`])).toBe("hand-written\n");
    expect(await git(remote, ["show", `${REF}:clusters/c1/ns-1/virtualservice/svc-4.yaml`])).toBe(canonicalYaml(vs("c1", "ns-1", "svc-4", 2)));
    await git(remote, ["fsck", "--strict", "--no-dangling"]);
    await git(cache, ["fsck", "--strict"]);
  });

  it("a connection cut while the pack goes up is retried; nothing half-written anywhere", async () => {
    await server.createRepo("cut");
    const proxy = await startCutProxy(server.baseUrl, "request");
    try {
      const mem = createMemoryLogger();
      const cache = tmp();
      const w = createAuditWriter({ target: { kind: "remote", url: `${proxy.url}/cut.git`, cacheDir: cache }, logger: mem.logger, retry: fast });
      const r = await w.write(fleet(4, 30));
      expect(proxy.posts).toBe(2);
      expect(r.attempts).toBe(1);
      expect(mem.records.some((x) => x.msg.includes("failed, retrying"))).toBe(true);
      const remote = server.repoPath("cut");
      expect(await server.revParse("cut", REF)).toBe(r.commit);
      await git(remote, ["fsck", "--strict", "--no-dangling"]);
      await git(cache, ["fsck", "--strict", "--no-dangling"]);
      expect(await git(remote, ["show", `${REF}:clusters/c3/ns-2/virtualservice/svc-29.yaml`])).toBe(canonicalYaml(vs("c3", "ns-2", "svc-29")));
    } finally {
      await proxy.stop();
    }
  });

  it("an answer lost after the server updated the branch: the retry sees the update and pushes nothing twice", async () => {
    await server.createRepo("lost");
    const proxy = await startCutProxy(server.baseUrl, "response");
    try {
      const w = createAuditWriter({ target: { kind: "remote", url: `${proxy.url}/lost.git`, cacheDir: tmp() }, logger: createMemoryLogger().logger, retry: fast });
      const r = await w.write(fleet(2, 10));
      expect(proxy.posts).toBe(1);
      expect(await server.revParse("lost", REF)).toBe(r.commit);
      expect((await git(server.repoPath("lost"), ["rev-list", REF])).trim().split("\n")).toEqual([r.commit]);
      await git(server.repoPath("lost"), ["fsck", "--strict", "--no-dangling"]);
    } finally {
      await proxy.stop();
    }
  });

  it("a server that refuses the update (ng from a hook) fails the write with its reason, without retrying", async () => {
    const remote = await server.createRepo("refused");
    const hook = join(remote, "hooks", "pre-receive");
    writeFileSync(hook, "#!/bin/sh\necho 'audit branch is frozen' >&2\nexit 1\n");
    chmodSync(hook, 0o755);
    const w = createAuditWriter({ target: { kind: "remote", url: server.url("refused"), cacheDir: tmp() }, logger: createMemoryLogger().logger, retry: fast });
    const before = server.requests.filter((r) => r.method === "POST" && r.path.startsWith("/refused.git")).length;
    await expect(w.write(fleet(2, 3))).rejects.toThrow(/refused the update of refs\/heads\/gitmesh\/rendered: pre-receive hook declined/);
    expect(server.requests.filter((r) => r.method === "POST" && r.path.startsWith("/refused.git")).length - before).toBe(1);
    expect(await server.revParse("refused", REF)).toBeUndefined();
  });

  it("local target: packs in the repository itself; small packs are merged once they pile up", async () => {
    const repo = await server.createRepo("local-packs");
    const mem = createMemoryLogger();
    const w = createAuditWriter({ target: { kind: "local", path: repo }, logger: mem.logger, packLimit: 4 });
    const commits: string[] = [];
    for (let i = 0; i < 9; i++) commits.push((await w.write(fleet(3, 6, i, String(i).repeat(40)))).commit!);
    expect(looseIn(repo)).toEqual([]);
    expect(packsIn(repo).length).toBeLessThanOrEqual(5);
    expect(mem.records.some((r) => r.msg.includes("merged small packs"))).toBe(true);
    expect((await git(repo, ["rev-list", REF])).trim().split("\n")).toEqual([...commits].reverse());
    await git(repo, ["fsck", "--strict", "--no-dangling"]);
    for (let i = 0; i < 9; i++) expect(await git(repo, ["show", `${commits[i]!}:clusters/c1/ns-1/virtualservice/svc-4.yaml`])).toBe(canonicalYaml(vs("c1", "ns-1", "svc-4", i)));
    // the writer goes on reading after the merge (its reader was renewed)
    const next = await w.write(fleet(3, 6, 100, "a".repeat(40)));
    expect(next.changes).toEqual([{ cluster: "c1", added: 0, changed: 1, removed: 0, discovery: false }]);
  });

  it("later commits look only at what changed since the writer's own last commit, and give the tree a full comparison gives", async () => {
    const repo = await server.createRepo("incremental");
    await server.commitFiles("incremental", { "clusters/c0/ns-0/virtualservice/svc-0.yaml": "hand: written\n", "README.md": "x\n" }, "human", { branch: BRANCH });
    const w = createAuditWriter({ target: { kind: "local", path: repo }, logger: createMemoryLogger().logger });
    const skipped = ["clusters/c0/ns-0/virtualservice/svc-0.yaml"];
    expect((await w.write(fleet(3, 6))).skipped).toEqual(skipped);
    // one changed resource: the foreign file is still reported (not looked at again) and still theirs
    const one = await w.write(fleet(3, 6, 1, "2".repeat(40)));
    expect(one.changes).toEqual([{ cluster: "c1", added: 0, changed: 1, removed: 0, discovery: false }]);
    expect(one.skipped).toEqual(skipped);
    // a cluster gone and one added: its files go and come, the manifest follows
    const moved = fleet(3, 6, 1, "3".repeat(40));
    const clusters = new Map(moved.clusters);
    const discovery = new Map(moved.discovery);
    clusters.delete("c2");
    discovery.delete("c2");
    clusters.set("c9", [vs("c9", "ns-0", "svc-0")]);
    discovery.set("c9", { cluster: "c9" });
    const changed = await w.write({ ...moved, clusters, discovery });
    expect(changed.changes.map((c) => `${c.cluster} +${c.added} -${c.removed}`)).toEqual(["c2 +0 -6", "c9 +1 -0"]);
    expect(changed.skipped).toEqual(skipped);
    expect(await git(repo, ["show", `${REF}:clusters/c0/ns-0/virtualservice/svc-0.yaml`])).toBe("hand: written\n");
    const manifest = (await git(repo, ["show", `${REF}:${MANIFEST_PATH}`])).trim().split("\n");
    expect(manifest).toContain("clusters/c9/ns-0/virtualservice/svc-0.yaml");
    expect(manifest.some((p) => p.startsWith("clusters/c2/") || p === skipped[0])).toBe(false);
    // a writer without memory compares every path with the tree: nothing to commit, the same skipped path
    const fresh = await createAuditWriter({ target: { kind: "local", path: repo }, logger: createMemoryLogger().logger }).write({ ...moved, clusters, discovery });
    expect(fresh.commit).toBeUndefined();
    expect(fresh.skipped).toEqual(skipped);
    await git(repo, ["fsck", "--strict", "--no-dangling"]);
  });
});
