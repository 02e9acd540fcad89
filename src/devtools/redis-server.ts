/**
 * Redis for the demo and the fleet simulator: a private `redis-server` on a free loopback port (no
 * persistence, its files in a directory of the caller), a reachability probe for a given URL, and
 * removal of one prefix's keys from a Redis the caller does not own.
 *
 *   const redis = await startPrivateRedis(join(tmp, "redis"));   // undefined: redis-server not installed
 *   …; await redis.stop();
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { createConnection, createServer } from "node:net";
import { createRedisClient, parseRedisUrl, redisKeyPrefix, redisUrlProblem, scanRedisKeys } from "../queue/index.js";

export interface PrivateRedis {
  /** `redis://127.0.0.1:<port>/0` */
  readonly url: string;
  /** Process id of the redis-server (its memory and CPU can be read from /proc). */
  readonly pid: number | undefined;
  readonly stop: () => Promise<void>;
}

/** Starts `redis-server` on a free port of 127.0.0.1 (no RDB, no AOF); undefined when it cannot be started (not installed) or does not answer PING within 5 s. */
export async function startPrivateRedis(dir: string): Promise<PrivateRedis | undefined> {
  await mkdir(dir, { recursive: true });
  const port = await freePort();
  // Its own process group: a terminal's Ctrl-C (SIGINT to the foreground group) must not stop Redis before
  // the caller stopped what uses it (a server whose Redis vanished mid-stop hangs in its queue's close).
  // The caller stops it last; if the caller exits first, the exit hook below ends it.
  const child: ChildProcess = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning"], { stdio: "ignore", detached: true });
  const killOnExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  };
  process.once("exit", killOnExit);
  child.once("exit", () => process.off("exit", killOnExit));
  const failed = await new Promise<boolean>((resolveStart) => {
    child.once("error", () => resolveStart(true));
    setTimeout(() => resolveStart(false), 150);
  });
  if (failed) return undefined;
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    if (await ping(port)) {
      return {
        url: `redis://127.0.0.1:${String(port)}/0`,
        pid: child.pid,
        stop: () =>
          new Promise<void>((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done();
            child.once("exit", () => done());
            child.kill("SIGTERM");
          }),
      };
    }
    await sleep(50);
  }
  killOnExit();
  return undefined;
}

/** Why a Redis URL (any form gitmesh takes: single server, Sentinel, Cluster) cannot be used (undefined: it answers PING). */
export async function redisUnreachable(url: string): Promise<string | undefined> {
  const problem = redisUrlProblem(url);
  if (problem !== undefined) return problem;
  const client = createRedisClient(parseRedisUrl(url), { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, connectTimeout: 2000, retryStrategy: () => null });
  let cause: string | undefined;
  client.on("error", (err: Error) => (cause ??= err.message));
  try {
    await client.connect();
    await client.ping();
    return undefined;
  } catch (err) {
    // The socket error (ECONNREFUSED …) says more than the driver's "Connection is closed."
    return cause ?? (err instanceof Error ? err.message : String(err));
  } finally {
    client.disconnect();
  }
}

/** Removes every key starting with `prefix` (the server's: hash-tagged on a Cluster) from a Redis the caller does not own. */
export async function removeRedisKeys(url: string, prefix: string): Promise<void> {
  const config = parseRedisUrl(url);
  const client = createRedisClient(config, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  client.on("error", () => undefined);
  try {
    await client.connect();
    const keys = await scanRedisKeys(client, `${redisKeyPrefix(config, prefix)}*`);
    for (let i = 0; i < keys.length; i += 500) await client.del(...keys.slice(i, i + 500));
  } finally {
    client.disconnect();
  }
}

/** A TCP port of 127.0.0.1 that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const srv = createServer();
    srv.on("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (addr && typeof addr === "object" ? done(addr.port) : fail(new Error("no port"))));
    });
  });
}

function ping(port: number): Promise<boolean> {
  return new Promise((done) => {
    const sock = createConnection({ host: "127.0.0.1", port });
    sock.setTimeout(500, () => {
      sock.destroy();
      done(false);
    });
    sock.on("connect", () => sock.write("PING\r\n"));
    sock.on("data", (d) => {
      sock.end();
      done(d.toString().includes("PONG"));
    });
    sock.on("error", () => done(false));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
