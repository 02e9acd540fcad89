import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readdirSync } from "node:fs";
import { join } from "node:path";
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
});
