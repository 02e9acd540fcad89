/** Redis URLs: the forms gitmesh accepts, what each becomes, and errors that say what to write without a credential. */
import { describe, expect, it } from "vitest";
import { Cluster, Redis } from "ioredis";
import { createRedisClient, parseRedisUrl, redisKeyPrefix, RedisUrlError } from "../../src/queue/index.js";

const error = (url: string): RedisUrlError => {
  try {
    parseRedisUrl(url);
  } catch (err) {
    if (err instanceof RedisUrlError) return err;
    throw err;
  }
  throw new Error(`${url} was accepted`);
};

describe("parseRedisUrl", () => {
  it("a single server: host, port (default 6379), database, credentials, TLS", () => {
    expect(parseRedisUrl("redis://redis:6380/2")).toEqual({ kind: "standalone", tls: false, node: { host: "redis", port: 6380 }, db: 2, display: "redis://redis:6380/2" });
    expect(parseRedisUrl("rediss://:p%40ss@redis.example.com")).toEqual({ kind: "standalone", tls: true, node: { host: "redis.example.com", port: 6379 }, db: 0, password: "p@ss", display: "rediss://redis.example.com:6379/0" });
    expect(parseRedisUrl("redis://gitmesh:pw@10.0.0.1:6379?db=3")).toMatchObject({ username: "gitmesh", password: "pw", db: 3, node: { host: "10.0.0.1" } });
    expect(parseRedisUrl("redis://[::1]:7000/1")).toMatchObject({ node: { host: "::1", port: 7000 }, display: "redis://[::1]:7000/1" });
    expect(Object.isFrozen(parseRedisUrl("redis://h"))).toBe(true);
  });

  it("Sentinel: sentinels (default 26379), master name, database, Sentinel's own credentials; redis+sentinel:// and sentinelMasterId= too", () => {
    const c = parseRedisUrl("redis-sentinel://:dataPw@s1:26379,s2,s3:26380/mymaster/1?sentinelPassword=sentPw&sentinelUsername=watcher");
    expect(c).toEqual({
      kind: "sentinel",
      tls: false,
      sentinels: [
        { host: "s1", port: 26379 },
        { host: "s2", port: 26379 },
        { host: "s3", port: 26380 },
      ],
      masterName: "mymaster",
      db: 1,
      password: "dataPw",
      sentinelUsername: "watcher",
      sentinelPassword: "sentPw",
      display: "redis-sentinel://s1:26379,s2:26379,s3:26380/mymaster/1",
    });
    expect(parseRedisUrl("redis+sentinel://s1,s2/mymaster?db=4")).toMatchObject({ kind: "sentinel", db: 4, masterName: "mymaster" });
    expect(parseRedisUrl("rediss-sentinel://s1?sentinelMasterId=primary")).toMatchObject({ kind: "sentinel", tls: true, masterName: "primary", display: "rediss-sentinel://s1:26379/primary/0" });
  });

  it("Cluster: seed nodes (default 6379), no database", () => {
    expect(parseRedisUrl("redis-cluster://n1:7000,n2:7001,n3")).toEqual({
      kind: "cluster",
      tls: false,
      nodes: [
        { host: "n1", port: 7000 },
        { host: "n2", port: 7001 },
        { host: "n3", port: 6379 },
      ],
      display: "redis-cluster://n1:7000,n2:7001,n3:6379",
    });
    expect(parseRedisUrl("rediss+cluster://u:p@n1/")).toMatchObject({ kind: "cluster", tls: true, username: "u", password: "p" });
  });

  it("says what is wrong and what to write", () => {
    expect(error("localhost:6379").message).toMatch(/has no scheme; write redis:\/\/.*redis-sentinel:\/\/.*redis-cluster:\/\//);
    expect(error("http://h").message).toContain('unknown scheme "http"');
    expect(error("redis://a:6379,b:6379").message).toContain("redis-sentinel://a:6379,b:6379/<master name>, for a Cluster redis-cluster://a:6379,b:6379");
    expect(error("redis-sentinel://s1,s2,s3").message).toContain("names no master; write the name the sentinels monitor after the hosts: redis-sentinel://s1:26379,s2:26379,s3:26379/mymaster");
    expect(error("redis-sentinel://s1/a?sentinelMasterId=b").message).toContain("names two masters");
    expect(error("redis-cluster://n1,n2/3").message).toContain("a Redis Cluster has only database 0");
    expect(error("redis://h:99999").message).toContain('port "99999"');
    expect(error("redis://h/x").message).toContain('database "x"');
    expect(error("redis://h/1?db=2").message).toContain("names two databases");
    expect(error("redis://h?family=6").message).toContain('query parameter "family", which redis:// does not take (it takes db)');
    expect(error("redis://").message).toContain("names no host");
    expect(error("redis://bad_host!").message).toContain('host "bad_host!"');
    expect(error("redis://a,a").message).toContain("lists a:6379 twice");
    expect(error("redis://h#x").message).toContain("fragment");
  });

  it("never shows a credential in an error", () => {
    const cases = [
      "redis://:s3cretPw@a:1,b:2",
      "redis://user:s3cretPw@h/notadb",
      "redis-sentinel://:s3cretPw@s1,s2?sentinelPassword=s3cretPw",
      "redis-sentinel://s1/m?sentinelPassword=s3cretPw&family=4",
      "redis-cluster://:s3cretPw@n1/5",
      "redis://:s3cret/Pw@h:6379", // unencoded slash: the URL cannot be split safely
      "redis://:s3cret%Pw@h", // bad percent-encoding
      "ftp://:s3cretPw@h",
      ":s3cretPw@h:6379", // no scheme
      "redis://:s3cret Pw@h/x", // a space (not a URL character) in the password
    ];
    for (const url of cases) {
      const e = error(url);
      expect(e.message, url).not.toContain("s3cret");
      expect(e.code).toBe("RedisUrlError");
      expect(e.reaction).toBe("needs-human");
    }
    expect(error("redis://:s3cret/Pw@h:6379").message).toContain("must be percent-encoded");
  });
});

describe("redisKeyPrefix", () => {
  it("hash-tags the whole prefix on a Cluster only, once", () => {
    const cluster = parseRedisUrl("redis-cluster://n1");
    expect(redisKeyPrefix(cluster, "gitmesh:")).toBe("{gitmesh}:");
    expect(redisKeyPrefix(cluster, "gitmesh")).toBe("{gitmesh}");
    expect(redisKeyPrefix(cluster, "{gitmesh}:")).toBe("{gitmesh}:");
    expect(redisKeyPrefix(parseRedisUrl("redis://h"), "gitmesh:")).toBe("gitmesh:");
    expect(redisKeyPrefix(undefined, "gitmesh:")).toBe("gitmesh:");
    expect(() => redisKeyPrefix(cluster, ":")).toThrow(RedisUrlError);
  });
});

describe("createRedisClient", () => {
  it("builds a Redis for a server or Sentinel and a Cluster for a cluster, with the options BullMQ needs where it reads them", () => {
    const standalone = createRedisClient(parseRedisUrl("redis://:pw@h:6380/2"), { lazyConnect: true, maxRetriesPerRequest: null });
    expect(standalone).toBeInstanceOf(Redis);
    expect(standalone.options).toMatchObject({ host: "h", port: 6380, db: 2, password: "pw", maxRetriesPerRequest: null });

    const sentinel = createRedisClient(parseRedisUrl("rediss-sentinel://s1,s2:1/m/3?sentinelPassword=sp"), { lazyConnect: true });
    expect(sentinel).toBeInstanceOf(Redis);
    expect((sentinel as Redis).options).toMatchObject({ name: "m", db: 3, sentinelPassword: "sp", enableTLSForSentinelMode: true, sentinels: [{ host: "s1", port: 26379 }, { host: "s2", port: 1 }] });

    const cluster = createRedisClient(parseRedisUrl("redis-cluster://:pw@n1,n2"), { lazyConnect: true, maxRetriesPerRequest: null, enableOfflineQueue: false });
    expect(cluster).toBeInstanceOf(Cluster);
    expect((cluster as Cluster).options).toMatchObject({ enableOfflineQueue: false, redisOptions: { password: "pw", maxRetriesPerRequest: null } });
    for (const c of [standalone, sentinel, cluster]) c.disconnect();
  });

  it("a client that must not retry gives up when no sentinel answers (ioredis would ask them forever)", async () => {
    const c = createRedisClient(parseRedisUrl("redis-sentinel://127.0.0.1:1,127.0.0.1:2/m"), { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    c.on("error", () => undefined);
    await expect(c.connect()).rejects.toThrow(/All sentinels are unreachable/);
    c.disconnect();
  });
});
