/**
 * `gitmesh worker` through the real command: configuration mistakes are usage errors (exit 2) that name
 * the flag or variable; a running worker answers /healthz, /readyz and /metrics, reports not-ready while
 * Redis is down and ready again when it returns, and stops cleanly on SIGTERM.
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/ports.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis({ outages: true });
});
afterAll(async () => {
  await redis.stop();
});

function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["bin/gitmesh.js", "worker", ...args], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, REDIS_URL: "", ...env } });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.on("close", (code) => resolve({ code, out }));
  });
}

const until = async (what: string, probe: () => Promise<boolean>, ms = 30_000) => {
  const deadline = Date.now() + ms;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

describe("gitmesh worker", () => {
  it("refuses a configuration it cannot run with, naming the flag (exit 2)", async () => {
    const none = await run([]);
    expect(none.code).toBe(2);
    expect(none.out).toContain("--redis-url or REDIS_URL");
    const bad = await run(["--redis-url", "http://redis:6379", "--concurrency", "0", "--job-lock", "-1"]);
    expect(bad.code).toBe(2);
    expect(bad.out).toContain('Redis URL "http://redis:6379" has the unknown scheme "http"; write redis://');
    expect(bad.out).toContain('concurrency (--concurrency or GITMESH_WORKER_CONCURRENCY) "0" is invalid');
    expect(bad.out).toContain('job lock (--job-lock or GITMESH_JOB_LOCK_SECONDS) "-1" is invalid');
    // The retention settings are the servers' (same variables); a bad one is named.
    const retention = await run(["--redis-url", "redis://127.0.0.1:1"], { GITMESH_RETENTION_COMMITS: "0", GITMESH_RETENTION_MAX_AGE_HOURS: "soon" });
    expect(retention.code).toBe(2);
    expect(retention.out).toContain('retention (GITMESH_RETENTION_COMMITS) "0" is invalid: an integer ≥ 1');
    expect(retention.out).toContain('retention (GITMESH_RETENTION_MAX_AGE_HOURS) "soon" is invalid: hours ≥ 1');
    const help = await run(["--help"]);
    expect(help.code).toBe(0);
    for (const flag of ["--redis-url", "--concurrency", "--job-lock", "--shutdown-timeout", "--http-port", "GITMESH_REDIS_PREFIX"]) expect(help.out).toContain(flag);
  }, 60_000);

  it("serves health, readiness and metrics; is not ready while Redis is down; stops on SIGTERM", async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ["bin/gitmesh.js", "worker", "--http-host", "127.0.0.1", "--http-port", String(port), "--log-format", "json"], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, REDIS_URL: redis.url } });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    const base = `http://127.0.0.1:${String(port)}`;
    try {
      await until("ready", async () => (await fetch(`${base}/readyz`)).ok);
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics).toContain('gitmesh_pipeline_queue_depth{type="workspace"}');
      expect(metrics).toContain('gitmesh_pipeline_mode{mode="redis"} 1');
      expect((await fetch(`${base}/api/status`)).status).toBe(404);

      await redis.stop();
      await until("not ready without Redis", async () => (await fetch(`${base}/readyz`)).status === 503);
      expect(await (await fetch(`${base}/readyz`)).text()).toMatch(/not ready: Redis unreachable/);
      expect((await fetch(`${base}/healthz`)).status).toBe(200); // alive: no restart for a Redis outage
      await redis.start();
      await until("ready again", async () => (await fetch(`${base}/readyz`)).ok, 30_000);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
    expect(out).toContain('"msg":"worker stopped"');
    expect(out).not.toMatch(/redis:\/\/[^"\s]*:[^@"\s]+@/); // no password-bearing URL in the log
  }, 90_000);
});
