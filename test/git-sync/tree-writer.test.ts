/** The tree writer against the real git: the trees and commits it writes are read back with git ls-tree / cat-file / fsck. */
import { execFileSync } from "node:child_process";
import * as nodeFs from "node:fs";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createTreeWriter, EMPTY_TREE, openObjectStore, type TreeWriter } from "../../src/git-sync/index.js";
import { createPackBuilder, writePack } from "../../src/git-sync/pack.js";
import { useTempDirs } from "../helpers/tmp.js";

const tmp = useTempDirs("gitsync-tree-writer-");
const bytes = (s: string) => Buffer.from(s, "utf8");

/** A fresh repository; `files` are committed with the git CLI, so the base tree is git's own. */
function repo(files: Record<string, string> = {}): { dir: string; git: (...args: string[]) => string; writer: TreeWriter; baseTree: string | undefined } {
  const dir = tmp();
  const git = (...args: string[]) =>
    execFileSync("git", ["-C", dir, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" } });
  git("init", "--quiet", "--initial-branch=main");
  let baseTree: string | undefined;
  if (Object.keys(files).length > 0) {
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(join(dir, path, ".."), { recursive: true });
      writeFileSync(join(dir, path), content);
    }
    git("add", "-A");
    git("-c", "user.name=t", "-c", "user.email=t@example.test", "commit", "--quiet", "-m", "base");
    baseTree = git("rev-parse", "HEAD^{tree}").trim();
  }
  return { dir, git, writer: createTreeWriter(openObjectStore(nodeFs, join(dir, ".git"))), baseTree };
}

const lsTree = (git: (...args: string[]) => string, tree: string) =>
  git("ls-tree", "-r", "-t", tree)
    .trim()
    .split("\n")
    .map((l) => l.replace(/\s[0-9a-f]{40}\t/, " "));

describe("tree writer", () => {
  it("builds a tree from nothing that git reads back, with git's entry order and ids", async () => {
    const { dir, git, writer } = repo();
    const files = { "b.txt": "b\n", "a/x.yaml": "x: 1\n", "a-b/y.yaml": "y: 2\n", "a.txt": "a\n" };
    const { tree, status, skipped } = await writer.edit(undefined, new Map(Object.entries(files).map(([p, c]) => [p, bytes(c)])));
    // git sorts a tree as if its name ended in "/": "a-b/" < "a.txt" < "a/"
    expect(git("ls-tree", "--name-only", tree!)).toBe("a-b\na.txt\na\nb.txt\n");
    expect(git("cat-file", "-p", `${tree!}:a/x.yaml`)).toBe("x: 1\n");
    expect([...status.entries()].sort()).toEqual([
      ["a-b/y.yaml", "added"],
      ["a.txt", "added"],
      ["a/x.yaml", "added"],
      ["b.txt", "added"],
    ]);
    expect(skipped).toEqual([]);
    git("fsck", "--strict", "--no-dangling");
    // the id git itself gives the same content
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(join(dir, path, ".."), { recursive: true });
      writeFileSync(join(dir, path), content);
    }
    git("add", "-A");
    expect(git("write-tree").trim()).toBe(tree);
  });

  it("changes one file deep in a tree: only the trees above it get new ids, the rest keep theirs", async () => {
    const { dir, git, writer, baseTree } = repo({ "keep/a.txt": "a\n", "deep/er/f.txt": "old\n", "deep/g.txt": "g\n", "README.md": "hi\n" });
    const edit = await writer.edit(baseTree, new Map([["deep/er/f.txt", bytes("new\n")]]));
    expect(edit.tree).not.toBe(baseTree);
    expect(edit.status).toEqual(new Map([["deep/er/f.txt", "changed"]]));
    const before = git("ls-tree", baseTree!);
    const after = git("ls-tree", edit.tree!);
    const line = (listing: string, name: string) => listing.split("\n").find((l) => l.endsWith(`\t${name}`));
    expect(line(after, "keep")).toBe(line(before, "keep"));
    expect(line(after, "README.md")).toBe(line(before, "README.md"));
    expect(line(after, "deep")).not.toBe(line(before, "deep"));
    expect(git("cat-file", "-p", `${edit.tree!}:deep/er/f.txt`)).toBe("new\n");
    expect(git("cat-file", "-p", `${edit.tree!}:deep/g.txt`)).toBe("g\n");
    // the same tree git itself would build for this content
    writeFileSync(join(dir, "deep/er/f.txt"), "new\n");
    git("add", "-A");
    expect(git("write-tree").trim()).toBe(edit.tree);
  });

  it("an unchanged write returns the same tree; deleting the last file of a directory drops the directory; deleting everything leaves no tree", async () => {
    const { git, writer, baseTree } = repo({ "a/only.txt": "1\n", "b.txt": "2\n" });
    const same = await writer.edit(baseTree, new Map([["b.txt", bytes("2\n")]]));
    expect(same.tree).toBe(baseTree);
    expect(same.status.size).toBe(0);

    const dropped = await writer.edit(baseTree, new Map([["a/only.txt", null], ["missing/x.txt", null]]));
    expect(lsTree(git, dropped.tree!)).toEqual(["100644 blob b.txt"]);
    expect(dropped.status).toEqual(new Map([["a/only.txt", "removed"]]));

    const empty = await writer.edit(dropped.tree, new Map([["b.txt", null]]));
    expect(empty.tree).toBeUndefined();
    expect(writer.writeTree([])).toBe(EMPTY_TREE);
    expect(git("cat-file", "-t", EMPTY_TREE).trim()).toBe("tree");
  });

  it("leaves paths it does not own and things in the way alone, and reports the writes it skipped", async () => {
    const { git, writer, baseTree } = repo({ "mine.txt": "m\n", "theirs.txt": "t\n", "dir/inner.txt": "i\n", "file": "f\n" });
    const owned = new Set(["mine.txt", "dir", "file/below.txt"]);
    const edit = await writer.edit(
      baseTree,
      new Map([
        ["mine.txt", null], // owned: deleted
        ["theirs.txt", null], // not owned: stays
        ["theirs2.txt", bytes("new\n")], // nothing there: written even though not owned (ownership guards existing files)
        ["dir", bytes("a file where a directory is\n")], // a tree at a leaf: skipped
        ["file/below.txt", bytes("under a file\n")], // a file where a directory of the path is: skipped
      ]),
      { owns: (p) => owned.has(p) },
    );
    expect(edit.skipped).toEqual(["dir", "file/below.txt"]);
    expect(edit.status).toEqual(new Map([["mine.txt", "removed"], ["theirs2.txt", "added"]]));
    expect(git("ls-tree", "--name-only", edit.tree!)).toBe("dir\nfile\ntheirs.txt\ntheirs2.txt\n");
    const rewrite = await writer.edit(edit.tree, new Map([["theirs.txt", bytes("mine now\n")]]), { owns: () => false });
    expect(rewrite.tree).toBe(edit.tree);
    expect(rewrite.skipped).toEqual(["theirs.txt"]);
  });

  it("keeps the modes of entries it does not touch (executables, symlinks)", async () => {
    const { git, writer, baseTree } = repo({ "run.sh": "#!/bin/sh\n", "x.txt": "x\n" });
    git("update-index", "--chmod=+x", "run.sh");
    const tree = git("write-tree").trim();
    expect(baseTree).toBeDefined();
    const edit = await writer.edit(tree, new Map([["x.txt", bytes("y\n")]]));
    expect(lsTree(git, edit.tree!)).toEqual(["100755 blob run.sh", "100644 blob x.txt"]);
  });

  it("writes a commit that git reads: tree, parents, author and committer, message normalised", async () => {
    const { git, writer, baseTree } = repo({ "a.txt": "a\n" });
    const parent = git("rev-parse", "HEAD").trim();
    const edit = await writer.edit(baseTree, new Map([["b.txt", bytes("b\n")]]));
    const author = { name: "Audit Bot", email: "bot@example.test", timestamp: 1_700_000_000, timezoneOffset: 0 };
    const commit = await writer.writeCommit({ tree: edit.tree!, parents: [parent], author, message: "\nSubject\n\nBody\n\n\n" });
    expect(git("cat-file", "-p", commit)).toBe(
      `tree ${edit.tree!}\nparent ${parent}\nauthor Audit Bot <bot@example.test> 1700000000 +0000\ncommitter Audit Bot <bot@example.test> 1700000000 +0000\n\nSubject\n\nBody\n`,
    );
    const again = await writer.writeCommit({ tree: edit.tree!, parents: [parent], author, message: "Subject\n\nBody" });
    expect(again).toBe(commit);
    const other = await writer.writeCommit({ tree: edit.tree!, parents: [], author, committer: { ...author, name: "Someone", timestamp: 1_700_000_001 }, message: "root" });
    expect(git("log", "--format=%an|%cn|%ct|%P|%s", "-1", other)).toBe("Audit Bot|Someone|1700000001||root\n");
    git("fsck", "--strict", "--no-dangling");
  });

  it("into a pack: the same ids as loose objects, a pack and index git verifies, nothing loose, only what the commit reaches", async () => {
    const files = { "a/b/c.txt": "c\n", "a/d.txt": "d\n", "e.txt": "e\n" };
    const loose = repo(files);
    const packed = repo(files);
    const parent = packed.git("rev-parse", "HEAD").trim();
    const big = Buffer.alloc(70_000, "x"); // a size header of three bytes
    const changes = new Map([["a/b/new.txt", bytes("new\n")], ["a/d.txt", null], ["big/blob.bin", big]]);
    const author = { name: "Audit Bot", email: "bot@example.test", timestamp: 1_700_000_000, timezoneOffset: -120 };
    const viaLoose = await loose.writer.edit(loose.baseTree, changes);
    const looseCommit = await loose.writer.writeCommit({ tree: viaLoose.tree!, parents: [parent], author, message: "m" });

    const into = createPackBuilder();
    const first = await packed.writer.edit(packed.baseTree, changes, { into });
    expect(first.tree).toBe(viaLoose.tree);
    // a second edit reads the first one's trees from the builder (they are in no object store yet)
    const second = await packed.writer.edit(first.tree, new Map([["e.txt", bytes("e2\n")]]), { into });
    const commit = await packed.writer.writeCommit({ tree: second.tree!, parents: [parent], author, message: "m" }, into);
    const built = into.finish([commit]);
    // the first edit's root tree is replaced by the second's: left out
    expect(built.oids).not.toContain(first.tree);
    const objectsDir = join(packed.dir, ".git", "objects");
    const looseBefore = nodeFs.readdirSync(objectsDir).filter((d) => /^[0-9a-f]{2}$/.test(d)).flatMap((d) => nodeFs.readdirSync(join(objectsDir, d))).length;
    const packFile = writePack(join(packed.dir, ".git"), built);
    const after = nodeFs.readdirSync(objectsDir).filter((d) => /^[0-9a-f]{2}$/.test(d)).flatMap((d) => nodeFs.readdirSync(join(objectsDir, d))).length;
    expect(after).toBe(looseBefore);
    // git checks the pack's entries, CRCs, checksums and the index (verify-pack), and reads the commit
    const verified = packed.git("verify-pack", "-v", packFile);
    expect(verified.split("\n").filter((l) => /^[0-9a-f]{40} (commit|tree|blob)/.test(l))).toHaveLength(built.oids.length);
    // blobs new.txt, big, e.txt; trees root, a, a/b, big; the commit
    expect(built.oids).toHaveLength(3 + 4 + 1);
    expect(packed.git("cat-file", "-p", commit)).toBe(`tree ${second.tree!}\nparent ${parent}\nauthor Audit Bot <bot@example.test> 1700000000 +0200\ncommitter Audit Bot <bot@example.test> 1700000000 +0200\n\nm\n`);
    expect(packed.git("cat-file", "-p", `${commit}:big/blob.bin`)).toBe(big.toString());
    packed.git("fsck", "--strict", "--no-dangling");
    // the same commit fields give the same commit id either way
    const viaPackTreeOnly = createPackBuilder();
    expect(await packed.writer.writeCommit({ tree: viaLoose.tree!, parents: [parent], author, message: "m" }, viaPackTreeOnly)).toBe(looseCommit);
  });
});
