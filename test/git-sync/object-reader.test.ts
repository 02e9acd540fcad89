import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deflateSync } from "node:zlib";
import { createObjectReader, parseTree } from "../../src/git-sync/object-reader.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";

describe("object reader (packed and loose objects, deltas)", () => {
  let server: GitServer;
  beforeAll(async () => {
    server = await startGitServer();
  });
  afterAll(async () => {
    await server.stop();
  });

  it("reads every object of a delta-compressed pack and loose objects exactly as git does", async () => {
    await server.createRepo("packed");
    const body = (i: number) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-${i}\ndata:\n${Array.from({ length: 40 }, (_, k) => `  key${k}: ${k === i % 40 ? "changed" : "value"}-${k}\n`).join("")}`;
    for (let round = 0; round < 3; round++) {
      await server.commitFiles("packed", Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`d${i % 4}/f${i}.yaml`, body(i + round)])), `round ${round}`);
    }
    await server.git("packed", ["gc", "--quiet", "--aggressive"]);
    // one more commit stays loose
    await server.commitFiles("packed", { "loose.yaml": "loose: true\n" }, "loose");
    const idx = readdirSync(join(server.repoPath("packed"), "objects", "pack")).find((n) => n.endsWith(".idx"))!;
    const verify = await server.git("packed", ["verify-pack", "-v", join(server.repoPath("packed"), "objects", "pack", idx)]);
    // lines of deltified objects carry "depth base-oid" after size, size-in-pack and offset
    expect(verify.split("\n").filter((l) => /^[0-9a-f]{40} \w+ +\d+ \d+ \d+ \d+ [0-9a-f]{40}$/.test(l)).length).toBeGreaterThan(10);
    const list = (await server.git("packed", ["rev-list", "--objects", "--all"])).trim().split("\n").map((l) => l.split(" ")[0]!);
    const reader = createObjectReader(server.repoPath("packed"));
    let read = 0;
    const stats = await server.git("packed", ["count-objects", "-v"]);
    expect(stats).toMatch(/in-pack: [1-9]/);
    for (const oid of list) {
      const type = (await server.git("packed", ["cat-file", "-t", oid])).trim();
      const obj = reader.read(oid);
      expect(obj.type).toBe(type);
      if (type === "tree") {
        const lsTree = (await server.git("packed", ["ls-tree", oid])).trim().split("\n").map((l) => l.split("\t")[1]);
        expect(parseTree(obj.content).map((e) => e.path)).toEqual(lsTree);
      } else {
        const expected = await server.git("packed", ["cat-file", type, oid]);
        expect(obj.content.toString("utf8")).toBe(expected);
      }
      read++;
    }
    expect(read).toBe(list.length);
    expect(reader.has("0".repeat(40))).toBe(false);
  });

  it("reads large objects (loose, packed whole and as deltas) in one piece, byte for byte, and refuses a loose object whose size is wrong", async () => {
    await server.createRepo("large");
    const yaml = (variant: string) => Array.from({ length: 12_000 }, (_, i) => `  key${i}: value-${i}-${i === 6_000 ? variant : "same"}\n`).join("");
    const noise = randomBytes(300_000);
    await server.commitFiles("large", { "big.yaml": yaml("a"), "noise.bin": noise }, "large files");
    await server.commitFiles("large", { "big.yaml": yaml("b") }, "one line changed");
    await server.git("large", ["repack", "-a", "-d", "-f", "--quiet"]);
    // loose copies written by git itself, of new content (a third variant, and other random bytes)
    const tmp = mkdtempSync(join(tmpdir(), "gitmesh-objects-"));
    try {
      writeFileSync(join(tmp, "loose.yaml"), yaml("c"));
      writeFileSync(join(tmp, "loose.bin"), randomBytes(200_000));
      const looseOids = (await server.git("large", ["hash-object", "-w", join(tmp, "loose.yaml"), join(tmp, "loose.bin")])).trim().split("\n");
      const reader = createObjectReader(server.repoPath("large"));
      const blobs = (await server.git("large", ["rev-list", "--objects", "--all"])).trim().split("\n").map((l) => l.split(" ")[0]!);
      const checked: number[] = [];
      for (const oid of [...blobs, ...looseOids]) {
        if ((await server.git("large", ["cat-file", "-t", oid])).trim() !== "blob") continue;
        const size = Number((await server.git("large", ["cat-file", "-s", oid])).trim());
        const obj = reader.read(oid);
        expect(obj.content.length).toBe(size);
        // the hash of what was read is the object's name: the bytes are git's, not only their count
        const { createHash } = await import("node:crypto");
        expect(createHash("sha1").update(`blob ${size}\0`).update(obj.content).digest("hex")).toBe(oid);
        checked.push(size);
      }
      expect(checked.filter((n) => n > 100_000).length).toBe(5);
      const verify = await server.git("large", ["verify-pack", "-v", join(server.repoPath("large"), "objects", "pack", readdirSync(join(server.repoPath("large"), "objects", "pack")).find((n) => n.endsWith(".idx"))!)]);
      expect(verify).toMatch(/ blob +\d+ \d+ \d+ 1 [0-9a-f]{40}/); // one version of big.yaml is a delta of the other

      // a loose object whose header claims one byte more than it holds
      const content = Buffer.from(yaml("d"));
      const liar = "f".repeat(40);
      mkdirSync(join(server.repoPath("large"), "objects", "ff"), { recursive: true });
      writeFileSync(join(server.repoPath("large"), "objects", "ff", liar.slice(2)), deflateSync(Buffer.concat([Buffer.from(`blob ${content.length + 1}\0`), content])));
      expect(() => reader.read(liar)).toThrow(/loose object f{40} is corrupt: \d+ bytes inflated, its header says \d+/);
      expect(reader.has(liar)).toBe(false);
      // and one cut short: an error that names it, not an inflate error without context
      const cut = "e".repeat(40);
      mkdirSync(join(server.repoPath("large"), "objects", "ee"), { recursive: true });
      const whole = deflateSync(Buffer.concat([Buffer.from(`blob ${content.length}\0`), content]));
      writeFileSync(join(server.repoPath("large"), "objects", "ee", cut.slice(2)), whole.subarray(0, whole.length >> 1));
      expect(() => reader.read(cut)).toThrow(/loose object e{40} is corrupt: unexpected end of file/);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
