// The audit writer's file system client (read-sync-fs.ts): isomorphic-git must see what it sees from
// node:fs — contents, stats, directory listings, and failures as rejections with their `code`.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createReadSyncFs } from "../../src/git-sync/read-sync-fs.js";
import { useTempDirs } from "../helpers/tmp.js";

const tempDir = useTempDirs("gitmesh-read-sync-fs-");

type Promises = Record<string, (...args: unknown[]) => Promise<unknown>>;

describe("createReadSyncFs", () => {
  it("reads as node:fs does, and a missing path is a rejection with code ENOENT, never a throw", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "sub"));
    writeFileSync(join(dir, "sub", "a"), "hello");
    const fs = (createReadSyncFs() as unknown as { promises: Promises }).promises;
    expect((await fs.readFile!(join(dir, "sub", "a"))) as Buffer).toEqual(Buffer.from("hello"));
    expect(await fs.readFile!(join(dir, "sub", "a"), "utf8")).toBe("hello");
    expect(((await fs.stat!(join(dir, "sub", "a"))) as { size: number }).size).toBe(5);
    expect(await fs.readdir!(join(dir, "sub"))).toEqual(["a"]);
    let pending: Promise<unknown> | undefined;
    expect(() => (pending = fs.readFile!(join(dir, "missing")))).not.toThrow();
    await expect(pending).rejects.toMatchObject({ code: "ENOENT" });
    await expect(fs.lstat!(join(dir, "sub", "a", "below-a-file"))).rejects.toMatchObject({ code: "ENOTDIR" });
    await fs.writeFile!(join(dir, "b"), "written");
    expect(await fs.readFile!(join(dir, "b"), "utf8")).toBe("written");
  });
});
