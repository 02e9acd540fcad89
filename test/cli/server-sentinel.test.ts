/**
 * The management server's composition root on Redis Sentinel: the configuration takes the Sentinel and
 * Cluster URL forms, and `startServerProcess` with a redis-sentinel:// URL keeps working through a
 * failover — its pipeline, its leader lease and its secret store all follow the promoted replica.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import { startServerProcess, type RunningServer } from "../../src/cli/server.js";
import { createRedisClient, parseRedisUrl, type RedisClient } from "../../src/queue/index.js";
import { parseServerConfig } from "../../src/server/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { freePort } from "../helpers/ports.js";
import { startSentinel, type TestSentinel } from "../helpers/redis-sentinel.js";
import { repoFiles } from "../helpers/repo-files.js";
import { until } from "../queue/fixture.js";

describe("server configuration: Redis URL forms", () => {
  const base = { gitUrl: "https://git.example.com/mesh.git" };
  it("takes a single server, Sentinel and Cluster URLs", () => {
    for (const redisUrl of ["redis://:pw@redis:6379/0", "rediss://redis:6380", "redis-sentinel://:pw@s1:26379,s2:26379,s3:26379/mymaster?sentinelPassword=x", "redis+sentinel://s1/mymaster", "redis-cluster://n1:6379,n2:6379,n3:6379"]) {
      const { problems } = parseServerConfig({ ...base, redisUrl }, { identity: "r1" });
      expect(problems, redisUrl).toEqual([]);
    }
  });

  it("a bad one is a problem naming the flag and the variable and what to write, without the password", () => {
    const { problems } = parseServerConfig({ ...base, redisUrl: "redis://:s3cret@a:6379,b:6379" }, { identity: "r1" });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain("redis-sentinel://a:6379,b:6379/<master name>");
    expect(problems[0]).toContain("(--redis-url or REDIS_URL)");
    expect(problems[0]).not.toContain("s3cret");
  });
});

describe("gitmesh server on Redis Sentinel", () => {
  let ha: TestSentinel;
  let git: GitServer;
  let server: RunningServer;
  let tmp: string;
  let client: RedisClient;
  const mem = createMemoryLogger("server");

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "gitmesh-sentinel-server-"));
    ha = await startSentinel();
    git = await startGitServer();
    await git.createRepo("mesh");
    await git.commitFiles("mesh", repoFiles("examples/repo-layout"), "bookinfo on two clusters");
    const { config, problems } = parseServerConfig(
      {
        gitUrl: git.url("mesh"),
        redisUrl: ha.url,
        redisPrefix: "ha-server",
        relayHost: "127.0.0.1",
        relayPort: String(await freePort()),
        httpHost: "127.0.0.1",
        httpPort: String(await freePort()),
        pollIntervalSeconds: "1",
        relayAdditionalSans: "127.0.0.1",
        dataDir: join(tmp, "data"),
        auditBranch: "",
      },
      { identity: "replica-1" },
    );
    expect(problems).toEqual([]);
    server = await startServerProcess(config!, mem.logger, { leaseMs: 2_000 });
    client = createRedisClient(parseRedisUrl(ha.url), { maxRetriesPerRequest: 1 });
    client.on("error", () => undefined);
  }, 60_000);

  afterAll(async () => {
    await server.stop();
    client.disconnect();
    await git.stop();
    await ha.stop();
    rmSync(tmp, { recursive: true, force: true });
  }, 60_000);

  type Status = { pipeline: { mode: string }; leader: boolean; store: string; commit: { sha: string } | null };
  const status = async () => (await server.server.api.status()) as Status;
  // While the primary dies a read of the status may fail (the HTTP API answers 500 then): ask again.
  const polled = async (): Promise<Partial<Status>> => ((await server.server.api.status().catch(() => undefined)) as Status | undefined) ?? {};

  it("runs through a failover: pipeline, leader lease and secret store follow the promoted replica", async () => {
    const first = await git.revParse("mesh", "main");
    await until(async () => (await polled()).commit?.sha === first && (await polled()).leader === true, 30_000, "the first commit, as leader");
    expect((await status()).pipeline.mode).toBe("redis");
    // What the server keeps in Redis went through the sentinels to the primary.
    expect(await client.exists("ha-server:relay:pki", "ha-server:lock:server-leader")).toBe(2);
    expect(JSON.parse((await client.get("ha-server:desired:pointer"))!)).toMatchObject({ commit: first });

    const oldPrimary = await ha.primaryPort();
    await ha.kill(oldPrimary);
    await until(async () => (await polled()).pipeline?.mode === "degraded", 10_000, "degraded while there is no primary");
    await ha.waitForFailover(oldPrimary);
    await until(async () => (await polled()).pipeline?.mode === "redis", 30_000, "the pipeline back on the promoted replica");

    // A new commit is taken by the leader and stored on the new primary.
    const second = await git.commitFiles("mesh", { "README.md": "# the mesh\n" }, "a commit after the failover");
    await until(async () => (await polled()).commit?.sha === second, 30_000, "the commit after the failover");
    await until(async () => JSON.parse((await client.get("ha-server:desired:pointer").catch(() => null)) ?? "{}").commit === second, 10_000, "the desired pointer on the new primary");
    // The lease: on the promoted replica, held by this (only) replica again.
    await until(async () => (await polled()).leader === true, 10_000, "leading again");
    expect(await client.exists("ha-server:lock:server-leader")).toBe(1);
    // The secret store writes through the sentinels too: a credential minted now is on the new primary.
    await server.server.mintCredential("cluster1");
    expect(await client.hexists("ha-server:relay:identities", "cluster1")).toBe(1);
  }, 90_000);
});
