// Reading Git (src/server/git-polling.ts) against a real Git server over HTTP: the first sync, fail-fast
// on a branch that does not exist, a follower that serves webhook hints only, and the trigger swapped
// when the role changes (leadership, or the pipeline running degraded).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { createMemoryLogger, NeedsHumanError } from "../../src/core/index.js";
import type { DesiredState } from "../../src/config/index.js";
import type { SyncOutcome } from "../../src/git-sync/index.js";
import { createGitPolling, type GitPolling } from "../../src/server/git-polling.js";
import { serverGitLocations } from "../../src/server/git-locations.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { useTempDirs } from "../helpers/tmp.js";

const cluster = (c: string) => ({ [`clusters/${c}.yaml`]: `apiVersion: admin.gloo.solo.io/v2\nkind: KubernetesCluster\nmetadata: {name: ${c}, namespace: gloo-mesh}\nspec: {clusterDomain: cluster.local}\n` });

let git: GitServer;
const tempDir = useTempDirs("gitmesh-git-polling-");
beforeAll(async () => {
  git = await startGitServer();
  await git.createRepo("mesh");
  await git.commitFiles("mesh", cluster("cluster1"), "first");
});
afterAll(() => git.stop());

/** A polling part whose outcomes are awaited by commit. */
function setup(opts: { leader: { value: boolean }; ref?: string; pollIntervalMs?: number }) {
  const outcomes: SyncOutcome<DesiredState>[] = [];
  const waiters: { sha: string; resolve: () => void }[] = [];
  const mem = createMemoryLogger("server");
  const controller = new AbortController();
  const polling: GitPolling = createGitPolling({
    location: serverGitLocations({ kind: "remote", url: git.url("mesh"), username: undefined, password: undefined }, tempDir()).source,
    name: git.url("mesh"),
    ref: opts.ref ?? "main",
    pollIntervalMs: opts.pollIntervalMs ?? 100,
    debounceMs: 10,
    onOutcome: (o) => {
      outcomes.push(o);
      for (const w of waiters.filter((x) => x.sha === o.commit.oid)) w.resolve();
      return Promise.resolve();
    },
    isLeader: () => opts.leader.value,
    logger: mem.logger,
    signal: controller.signal,
  });
  const outcomeOf = (sha: string) => (outcomes.some((o) => o.commit.oid === sha) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ sha, resolve })));
  return { polling, outcomes, outcomeOf, mem, controller };
}

describe("git polling", () => {
  it("the first sync hands the branch's commit to onOutcome", async () => {
    const { polling, outcomes } = setup({ leader: { value: true } });
    await polling.firstSync();
    expect(outcomes.map((o) => o.kind)).toEqual(["updated"]);
    expect(outcomes[0]?.commit.oid).toBe(await git.revParse("mesh", "main"));
    expect(polling.status().lastGood?.commit).toBe(outcomes[0]?.commit.oid);
  });

  it("a branch that does not exist stops the start with what to fix", async () => {
    const { polling, outcomes } = setup({ leader: { value: true }, ref: "no-such-branch" });
    const err = await polling.firstSync().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NeedsHumanError);
    expect((err as Error).message).toMatch(/^cannot start: the configuration repository http:\/\/127\.0\.0\.1:\d+\/mesh\.git \(ref no-such-branch\): .*fix --git-url \/ --git-local, --branch \(GITMESH_GIT_BRANCH\)/);
    expect(outcomes).toEqual([]);
  });

  it("a follower syncs on webhook hints only; once it leads it polls, and stops polling when it follows again", async () => {
    const leader = { value: false };
    const { polling, outcomeOf, mem } = setup({ leader });
    polling.start("redis");
    expect(polling.polling()).toBe(false);
    await polling.idle();

    const hinted = await git.commitFiles("mesh", cluster("cluster2"), "hinted");
    expect(polling.hint({ ref: "refs/heads/main", sha: hinted })).toBe("accepted");
    expect(polling.hint({ ref: "refs/heads/other", sha: hinted })).toBe("ignored");
    await outcomeOf(hinted);

    leader.value = true;
    polling.reconcile();
    expect(polling.polling()).toBe(true);
    const polled = await git.commitFiles("mesh", cluster("cluster3"), "polled");
    await outcomeOf(polled);

    leader.value = false;
    polling.reconcile("redis");
    expect(polling.polling()).toBe(false);
    // While the pipeline runs without Redis there is no shared state: every replica polls.
    polling.reconcile("degraded");
    expect(polling.polling()).toBe(true);
    expect(mem.records.filter((r) => r.msg === "polling Git" || r.msg.startsWith("not polling Git")).map((r) => r.msg)).toEqual(["polling Git", "not polling Git (the leader does)", "polling Git"]);
    await polling.stop();
  });

  it("after the server began stopping the role is not changed any more", async () => {
    const leader = { value: false };
    const { polling, controller } = setup({ leader });
    polling.start("redis");
    controller.abort();
    leader.value = true;
    polling.reconcile();
    expect(polling.polling()).toBe(false);
    await polling.stop();
  });
});

describe("git locations", () => {
  it("a remote repository gets one cache per use under the data directory, credentials out of its name", () => {
    const at = serverGitLocations({ kind: "remote", url: "https://user:pw@git.example/mesh.git", username: "bot", password: "s3cret" }, "/data");
    expect(at.name).not.toContain("pw");
    expect(at.source).toEqual({ kind: "remote", url: "https://user:pw@git.example/mesh.git", cacheDir: join("/data", "source.git"), auth: { username: "bot", password: "s3cret" } });
    expect(at.diff).toMatchObject({ cacheDir: join("/data", "diff.git") });
    expect(at.audit).toMatchObject({ cacheDir: join("/data", "audit.git") });
    expect(serverGitLocations({ kind: "remote", url: "https://git.example/mesh.git", username: undefined, password: "t" }, "/d").source).toMatchObject({ auth: { username: "git", password: "t" } });
    expect(serverGitLocations({ kind: "local", path: "/repo" }, "/d")).toEqual({ source: { kind: "local", path: "/repo" }, diff: { kind: "local", path: "/repo" }, audit: { kind: "local", path: "/repo" }, name: "/repo" });
  });
});
