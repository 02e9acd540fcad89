/** Writing a degraded replica's memory back into Redis (write-back.ts), over two memory stores: the mirror and "redis". */
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/core/index.js";
import { createMemoryStore, type DesiredRecord, type FragmentRecord, type OutputRecord, type WorkspaceStatus } from "../../src/store/index.js";
import { writeBack } from "../../src/queue/write-back.js";

const desired = (commit: string, generation: number): DesiredRecord => ({ commit, ref: "main", generation, state: {} as DesiredRecord["state"], changedKeys: [], atMs: generation });
const output = (cluster: string, version: number): OutputRecord => ({ cluster, version, sourceCommit: `c${version}`, hash: `h${version}`, resources: [], complete: true, diagnostics: [], atMs: version });
const status = (workspace: string, generation: number, atMs: number): WorkspaceStatus => ({ workspace, commit: `c${generation}`, generation, diagnostics: [], atMs });
const fragment = (workspace: string, cluster: string, hash: string): FragmentRecord => ({ workspace, cluster, hash, resources: [], commit: "c" });

describe("write-back", () => {
  it("moves the desired pointer only forward and writes outputs only where newer, returning those", async () => {
    const mirror = createMemoryStore();
    const redis = createMemoryStore();
    await mirror.putDesired(desired("c2", 2));
    await mirror.putOutputIfNewer(output("a", 3));
    await mirror.putOutputIfNewer(output("b", 1));
    await redis.putOutputIfNewer(output("b", 4));
    const written = await writeBack({ mirror, redis, unreleased: new Map(), logger: silentLogger });
    expect((await redis.getDesiredPointer())?.commit).toBe("c2");
    expect(written.map((o) => `${o.cluster}@${o.version}`)).toEqual(["a@3"]);
    expect((await redis.getOutput("b"))?.version).toBe(4);

    // Another replica's newer commit is in Redis: this replica's older one does not replace it.
    const behind = createMemoryStore();
    await behind.putDesired(desired("c1", 1));
    await writeBack({ mirror: behind, redis, unreleased: new Map(), logger: silentLogger });
    expect((await redis.getDesiredPointer())?.commit).toBe("c2");
  });

  it("does not write a workspace's older translation over a newer one in Redis", async () => {
    const mirror = createMemoryStore();
    const redis = createMemoryStore();
    await mirror.putWorkspaceStatus(status("old", 1, 5));
    await mirror.putFragments("old", [fragment("old", "a", "mine")]);
    await mirror.putWorkspaceStatus(status("new", 2, 5));
    await mirror.putFragments("new", [fragment("new", "a", "mine")]);
    await redis.putWorkspaceStatus(status("old", 2, 1));
    await redis.putFragments("old", [fragment("old", "a", "theirs")]);
    await redis.putWorkspaceStatus(status("new", 1, 9));
    await writeBack({ mirror, redis, unreleased: new Map(), logger: silentLogger });
    expect((await redis.fragmentHashes("old")).get("a")).toBe("theirs");
    expect((await redis.getWorkspaceStatus("old"))?.generation).toBe(2);
    expect((await redis.fragmentHashes("new")).get("a")).toBe("mine");
    expect((await redis.getWorkspaceStatus("new"))?.generation).toBe(2);
  });

  it("releases this replica's unit locks left in Redis and drops workspaces memory has translated since", async () => {
    const mirror = createMemoryStore();
    const redis = createMemoryStore();
    await mirror.putDesired(desired("c2", 2));
    await redis.putDesired(desired("c2", 2));
    // The promoted replica: the state of just before the outage.
    const token = (await redis.tryLock("workspace:w1", 60_000))!;
    await redis.addPending("c2", ["w1", "w2"]);
    await mirror.addPending("c2", ["w2"]);
    const unreleased = new Map([[token, "workspace:w1"]]);
    await writeBack({ mirror, redis, unreleased, logger: silentLogger });
    expect(unreleased.size).toBe(0);
    expect(await redis.tryLock("workspace:w1", 1000)).toBeDefined();
    expect(await redis.pending("c2")).toEqual(["w2"]);
  });
});
