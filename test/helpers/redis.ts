/**
 * A private Redis for one test file: `const redis = await startRedis()` in `beforeAll`,
 * `await redis.stop()` in `afterAll`. Spawns `redis-server` on a free loopback port with no
 * persistence, so test runs never touch the machine's Redis or each other. When `REDIS_URL` is set,
 * uses that server instead, with a database of its own per call (1..15, four per test worker), flushed first
 * and flushed again by `stop()`. A test that simulates outages (stops and restarts the server) asks
 * for `{ outages: true }` and always gets a private `redis-server`: an external one is never stopped.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createConnection } from "node:net";
import { freePort } from "./ports.js";

export interface TestRedis {
  /** `redis://127.0.0.1:<port>/<db>` */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly db: number;
  /** Stops the server (and lets a test simulate an outage); `start()` brings it back on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

export interface StartRedisOptions {
  /** The test stops and restarts the server to simulate outages: spawn a private one even with REDIS_URL. */
  readonly outages?: boolean;
}

let sharedDb = 0;

export async function startRedis(options: StartRedisOptions = {}): Promise<TestRedis> {
  const external = options.outages ? undefined : process.env.REDIS_URL;
  if (external) {
    const u = new URL(external);
    // Test files run in parallel workers: each worker (VITEST_POOL_ID 1, 2, …) takes its own
    // databases (4 per worker) so that one file's FLUSHDB never empties another's.
    const pool = Math.max(1, Number(process.env.VITEST_POOL_ID ?? 1) || 1);
    const db = (((pool - 1) * 4 + (sharedDb++ % 4)) % 15) + 1;
    const host = u.hostname;
    const port = Number(u.port || 6379);
    await command(host, port, ["SELECT", String(db)], ["FLUSHDB"]);
    return {
      url: `redis://${u.username || u.password ? `${u.username}:${u.password}@` : ""}${host}:${port}/${db}`,
      host,
      port,
      db,
      // Teardown of an external server: leave its database empty, never stop the server itself.
      stop: async () => {
        await command(host, port, ["SELECT", String(db)], ["FLUSHDB"]);
      },
      start: () => Promise.resolve(),
    };
  }
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "gitmesh-redis-"));
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning"],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    child.on("error", (err) => {
      throw new Error(`redis-server could not be started (${err.message}); install it (apt-get install redis-server) or set REDIS_URL`);
    });
    await waitForPing("127.0.0.1", port, 10_000);
  };
  const stop = async () => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once("exit", () => resolve());
      c.kill("SIGKILL");
    });
  };
  await start();
  const handle: TestRedis = {
    url: `redis://127.0.0.1:${port}/0`,
    host: "127.0.0.1",
    port,
    db: 0,
    start,
    stop: async () => {
      await stop();
    },
  };
  process.once("exit", () => {
    child?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });
  return handle;
}

async function waitForPing(host: string, port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const reply = await command(host, port, ["PING"]);
      if (reply.includes("PONG")) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`redis-server on ${host}:${port} did not answer PING within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Sends RESP commands on a fresh connection and returns the raw reply text. */
function command(host: string, port: number, ...cmds: string[][]): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = createConnection({ host, port });
    let data = "";
    sock.setTimeout(2000, () => sock.destroy(new Error("timeout")));
    sock.on("connect", () => {
      sock.write(cmds.map((c) => `*${c.length}\r\n${c.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`).join(""));
    });
    sock.on("data", (d) => {
      data += d.toString();
      if (data.split("\r\n").length - 1 >= cmds.length) {
        sock.end();
        resolve(data);
      }
    });
    sock.on("error", reject);
  });
}
