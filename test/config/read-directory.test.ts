import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDesiredState, readConfigDirectory } from "../../src/config/index.js";
import { baseRepo, virtualDestination } from "./fixtures.js";

describe("readConfigDirectory", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "gitmesh-read-"));
    const files: Record<string, string> = {
      "gitmesh.yaml": "ignore:\n  - rendered/\n  - '*.draft.yaml'\n",
      "rendered/a.yaml": "broken: [\n",
      "workspaces/web/x.draft.yaml": "broken: [\n",
      "workspaces/web/extra.yml": virtualDestination("reviews", "web"),
      "README.md": "# docs\n",
      ".git/config.yaml": "broken: [\n",
    };
    for (const f of baseRepo()) files[f.path] = f.content as string;
    for (const [path, content] of Object.entries(files)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), content);
    }
    await symlink(dir, join(dir, "workspaces", "loop")); // a folder link back to the root: not followed
    await symlink(join(dir, "missing.yaml"), join(dir, "dangling.yaml"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("returns gitmesh.yaml and the YAML files that are not ignored, sorted, as bytes", async () => {
    const files = await readConfigDirectory(dir);
    expect(files.map((f) => f.path).sort()).toEqual([
      "clusters/cluster1.yaml",
      "gitmesh.yaml",
      "workspaces/web/extra.yml",
      "workspaces/web/gateway.yaml",
      "workspaces/web/policies.yaml",
      "workspaces/web/routes.yaml",
      "workspaces/web/workspace.yaml",
    ]);
    expect(files[0]!.content).toBeInstanceOf(Uint8Array);
  });

  it("loads to the same state as the same files handed in from memory", async () => {
    const fromDisk = loadDesiredState(await readConfigDirectory(dir));
    expect(fromDisk.diagnostics).toEqual([]);
    const inMemory = loadDesiredState([...baseRepo(), { path: "workspaces/web/extra.yml", content: virtualDestination("reviews", "web") }, { path: "gitmesh.yaml", content: "ignore:\n  - rendered/\n  - '*.draft.yaml'\n" }]);
    expect(fromDisk.state.objects).toEqual(inMemory.state.objects);
    expect(fromDisk.state.files).toEqual(inMemory.state.files);
  });

  it("rejects a directory that does not exist", async () => {
    await expect(readConfigDirectory(join(dir, "nope"))).rejects.toMatchObject({ code: "ENOENT" });
  });
});
