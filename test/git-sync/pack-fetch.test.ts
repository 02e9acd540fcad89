/**
 * The first fetch of a remote source (pack-fetch.ts, pack-index.ts): the pack streamed to disk and
 * indexed natively, checked against git itself (fsck, index-pack's own .idx, the shallow list of a
 * shallow clone), incremental fetches on top of it, and packs that arrive damaged, cut short or not at
 * all — through createGitSource against a real `git http-backend`, with a proxy that breaks answers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { createServer, request, type Server } from "node:http";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { createMemoryLogger } from "../../src/core/index.js";
import { createGitSource, GitTransportError, type DesiredStateLoader, type GitSourceFile } from "../../src/git-sync/index.js";
import { CorruptPackError, indexPack } from "../../src/git-sync/pack-index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { useTempDirs } from "../helpers/tmp.js";

const exec = promisify(execFile);

/** Keeps every file handed over (no validation: these tests are about the transport). */
function recordingLoader(): DesiredStateLoader<number> & { calls: { files: readonly GitSourceFile[] }[] } {
  const calls: { files: readonly GitSourceFile[] }[] = [];
  return {
    calls,
    load: (f) => {
      calls.push({ files: [...f].sort((a, b) => (a.path < b.path ? -1 : 1)) });
      return { state: f.length, diagnostics: [] };
    },
    update: (prev, changed) => {
      calls.push({ files: changed });
      return { state: prev, diagnostics: [], changedKeys: new Set(changed.map((c) => c.path)) };
    },
  };
}

/** Similar files (so git stores most as deltas of each other), changed a little at every revision. */
function files(revision: number, count: number): Record<string, string> {
  return Object.fromEntries(
    Array.from({ length: count }, (_, i) => [
      `apps/team-${i % 7}/svc-${i}.yaml`,
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: svc-${i}\n  namespace: team-${i % 7}\ndata:\n${Array.from({ length: 40 }, (_, l) => `  key${l}: "value ${l} of service ${i}${l === i % 40 ? ` rev ${revision}` : ""}"\n`).join("")}`,
    ]),
  );
}

type Fault = "none" | "cut" | "truncate" | "checksum" | "error-band";

/** An HTTP proxy in front of the Git server that breaks the answer to the next upload-pack POST as told. */
async function startBreakingProxy(target: string): Promise<{ url: string; fault: Fault; stop(): Promise<void> }> {
  const t = new URL(target);
  const state = { fault: "none" as Fault };
  const server: Server = createServer((req, res) => {
    const up = request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers }, (upRes) => {
      const fault = req.method === "POST" && req.url!.endsWith("/git-upload-pack") ? state.fault : "none";
      if (fault === "none") {
        res.writeHead(upRes.statusCode!, upRes.headers);
        upRes.pipe(res);
        return;
      }
      const chunks: Buffer[] = [];
      upRes.on("data", (c: Buffer) => chunks.push(c));
      upRes.on("end", () => {
        let body = Buffer.concat(chunks);
        const headers = { "content-type": upRes.headers["content-type"] ?? "application/x-git-upload-pack-result" };
        if (fault === "cut") {
          // half the answer, then the connection is gone (no clean end of the response)
          res.writeHead(200, headers);
          res.write(body.subarray(0, body.length >> 1), () => res.socket!.destroy());
          return;
        }
        if (fault === "truncate") body = body.subarray(0, body.length - 100);
        if (fault === "checksum") {
          // the last byte of the pack's SHA-1 trailer: just before the closing flush packet "0000"
          body = Buffer.from(body);
          body[body.length - 5] = body[body.length - 5]! ^ 0xff;
        }
        if (fault === "error-band") {
          // the server fails half way: a side-band error packet instead of the rest of the pack
          const msg = Buffer.from("\x03fatal: out of memory, malloc failed\n");
          const head = Buffer.from((msg.length + 4).toString(16).padStart(4, "0"));
          body = Buffer.concat([body.subarray(0, body.length >> 1).subarray(0, findPacketBoundary(body, body.length >> 1)), head, msg]);
        }
        res.writeHead(200, { ...headers, "content-length": String(body.length) });
        res.end(body);
      });
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    get fault() {
      return state.fault;
    },
    set fault(f: Fault) {
      state.fault = f;
    },
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The start of the pkt-line packet that contains `at` (so a packet can be put in after whole packets). */
function findPacketBoundary(body: Buffer, at: number): number {
  let pos = 0;
  for (;;) {
    const len = parseInt(body.toString("latin1", pos, pos + 4), 16);
    const next = pos + (len === 0 ? 4 : len);
    if (next > at) return pos;
    pos = next;
  }
}

describe("first fetch: the pack streamed to disk and indexed natively", () => {
  let server: GitServer;
  const tmp = useTempDirs("pack-fetch-");
  beforeAll(async () => {
    server = await startGitServer();
    await server.createRepo("deltas");
    for (let rev = 0; rev < 3; rev++) await server.commitFiles("deltas", files(rev, 120), `revision ${rev}`);
  });
  afterAll(() => server.stop());

  const git = (gitdir: string, args: string[]) => exec("git", ["--git-dir", gitdir, ...args], { maxBuffer: 64 << 20 }).then((r) => r.stdout);

  it("gives git's own index and shallow list, reads every file, and incremental fetches build on it", async () => {
    const cacheDir = tmp();
    const loader = recordingLoader();
    const source = createGitSource({ location: { kind: "remote", url: server.url("deltas"), cacheDir }, loader, logger: createMemoryLogger("t").logger });
    const first = await source.sync();
    expect(first.kind).toBe("updated");
    const tip = (await server.revParse("deltas", "main"))!;
    expect(first.commit.oid).toBe(tip);
    const want = files(2, 120);
    expect(loader.calls[0]!.files.map((f) => [f.path, Buffer.from(f.content).toString()])).toEqual(Object.entries(want).sort(([a], [b]) => (a < b ? -1 : 1)));

    const packDir = join(cacheDir, "objects", "pack");
    const names = readdirSync(packDir).sort();
    expect(names).toHaveLength(2);
    const pack = join(packDir, names[1]!);
    expect(names[0]).toMatch(/^pack-[0-9a-f]{40}\.idx$/);
    // the pack holds deltas (so the test covers their resolution), and git's index-pack writes the very same .idx
    expect(await git(cacheDir, ["verify-pack", "-v", join(packDir, names[0]!)])).toMatch(/chain length = 1:/);
    const gitIdx = join(tmp(), "git.idx");
    await exec("git", ["index-pack", "-o", gitIdx, pack]);
    expect(readFileSync(join(packDir, names[0]!)).equals(readFileSync(gitIdx))).toBe(true);
    // the shallow list is what `git clone --depth=1` writes, and git finds the repository whole
    const clone = join(tmp(), "clone.git");
    await exec("git", ["clone", "--quiet", "--bare", "--depth=1", server.url("deltas"), clone]);
    expect(readFileSync(join(cacheDir, "shallow"), "utf8")).toBe(readFileSync(join(clone, "shallow"), "utf8"));
    await git(cacheDir, ["fsck", "--strict", "--no-dangling", tip]);

    // an incremental fetch (isomorphic-git, a thin pack against the objects indexed here)
    await server.commitFiles("deltas", { "apps/team-3/svc-10.yaml": `${want["apps/team-3/svc-10.yaml"]!}# edited\n` }, "one file");
    const second = await source.sync();
    expect(second.kind === "updated" && second.parsedPaths).toEqual(["apps/team-3/svc-10.yaml"]);
    expect(Buffer.from(loader.calls[1]!.files[0]!.content).toString()).toContain("# edited");
    await git(cacheDir, ["fsck", "--no-dangling", (await server.revParse("deltas", "main"))!]);
  });

  it("fetches the whole history without a depth (no shallow list)", async () => {
    const cacheDir = tmp();
    const source = createGitSource({ location: { kind: "remote", url: server.url("deltas"), cacheDir, depth: null }, loader: recordingLoader(), logger: createMemoryLogger("t").logger });
    expect((await source.sync()).kind).toBe("updated");
    expect(existsSync(join(cacheDir, "shallow"))).toBe(false);
    expect((await git(cacheDir, ["rev-list", "--count", "refs/heads/main"])).trim()).toBe((await server.git("deltas", ["rev-list", "--count", "main"])).trim());
    await git(cacheDir, ["fsck", "--strict", "--no-dangling"]);
  });

  it("fetches an annotated tag: the tag object and the commit it names", async () => {
    const tip = (await server.revParse("deltas", "main"))!;
    await server.git("deltas", ["-c", "user.name=t", "-c", "user.email=t@t", "tag", "-a", "-m", "release", "v1", tip]);
    const cacheDir = tmp();
    const source = createGitSource({ location: { kind: "remote", url: server.url("deltas"), cacheDir }, ref: "v1", loader: recordingLoader(), logger: createMemoryLogger("t").logger });
    const outcome = await source.sync();
    expect(outcome.kind).toBe("updated");
    expect(outcome.commit.oid).toBe(tip);
    expect((await git(cacheDir, ["cat-file", "-t", readFileSync(join(cacheDir, "refs", "heads", "v1"), "utf8").trim()])).trim()).toBe("tag");
  });

  describe("a pack that arrives broken leaves nothing behind", () => {
    let proxy: Awaited<ReturnType<typeof startBreakingProxy>>;
    beforeAll(async () => {
      proxy = await startBreakingProxy(server.url("deltas").replace(/\/deltas\.git$/, ""));
    });
    afterAll(() => proxy.stop());

    const cases: [Fault, RegExp][] = [
      ["cut", /the Git server closed the connection after \d+ bytes of the pack|socket hang up|aborted|ECONNRESET/],
      ["truncate", /the Git server closed the connection after \d+ bytes of the pack/],
      ["checksum", /pack checksum mismatch/],
      ["error-band", /the Git server failed while sending the pack: fatal: out of memory/],
    ];
    for (const [fault, message] of cases) {
      it(`${fault}: a transport error that says so; no pack, index, shallow list or ref; the next sync succeeds`, async () => {
        const cacheDir = tmp();
        const source = createGitSource({ location: { kind: "remote", url: `${proxy.url}/deltas.git`, cacheDir }, loader: recordingLoader(), logger: createMemoryLogger("t").logger, retry: { attempts: 1 } });
        proxy.fault = fault;
        const err = await source.sync().catch((e: unknown) => e);
        expect(err).toBeInstanceOf(GitTransportError);
        expect((err as Error).message).toMatch(message);
        expect(readdirSync(join(cacheDir, "objects", "pack"))).toEqual([]);
        expect(existsSync(join(cacheDir, "shallow"))).toBe(false);
        expect(existsSync(join(cacheDir, "refs", "heads", "main"))).toBe(false);
        expect(source.status().lastError?.code).toBe("GitTransportError");

        proxy.fault = "none";
        const healed = await source.sync();
        expect(healed.kind).toBe("updated");
        await git(cacheDir, ["fsck", "--strict", "--no-dangling", healed.commit.oid]);
      });
    }
  });
});

describe("indexPack against git index-pack", () => {
  const tmp = useTempDirs("pack-index-");
  let repo: string;
  beforeAll(async () => {
    repo = tmp();
    const run = (args: string[]) => exec("git", ["-C", repo, ...args]);
    await run(["init", "--quiet"]);
    for (let rev = 0; rev < 6; rev++) {
      for (const [path, content] of Object.entries(files(rev, 30))) {
        const abs = join(repo, path.replace(/\//g, "_"));
        writeFileSync(abs, content);
      }
      await run(["add", "-A"]);
      await run(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", `rev ${rev}`]);
    }
  });

  const packOf = async (flags: string[], revs: string): Promise<Buffer> => {
    const { stdout } = await exec("sh", ["-c", `printf '%s\\n' ${revs} | git -C "$0" pack-objects --stdout --revs ${flags.join(" ")}`, repo], { encoding: "buffer", maxBuffer: 64 << 20 });
    return stdout;
  };
  const gitIndex = async (pack: Buffer): Promise<Buffer> => {
    const dir = tmp();
    writeFileSync(join(dir, "p.pack"), pack);
    await exec("git", ["index-pack", "-o", join(dir, "p.idx"), join(dir, "p.pack")]);
    return readFileSync(join(dir, "p.idx"));
  };

  it("writes the same .idx as git for ofs-delta and ref-delta packs", async () => {
    for (const flags of [["--delta-base-offset"], []]) {
      const pack = await packOf(flags, "HEAD");
      const ours = indexPack(pack);
      expect(ours.idx.equals(await gitIndex(pack))).toBe(true);
      expect(ours.checksum).toBe(pack.subarray(pack.length - 20).toString("hex"));
    }
  });

  it("refuses truncated, damaged and thin packs with a clear error", async () => {
    const pack = await packOf(["--delta-base-offset"], "HEAD");
    expect(() => indexPack(pack.subarray(0, pack.length - 50))).toThrow(CorruptPackError);
    const damaged = Buffer.from(pack);
    damaged[damaged.length >> 1] = damaged[damaged.length >> 1]! ^ 0x55;
    expect(() => indexPack(damaged)).toThrow(/pack checksum mismatch/);
    // a thin pack: deltas against objects of HEAD~1 that it does not carry
    const thin = await packOf(["--thin"], "HEAD ^HEAD~1");
    expect(() => indexPack(thin)).toThrow(/which the pack does not hold/);
  });
});
