/**
 * A real Redis Cluster for one test file: three masters (`cluster-enabled yes`, no replicas), each a
 * `redis-server` on a free loopback port with its cluster bus on another free port, joined with
 * `redis-cli --cluster create`. `const cluster = await startRedisCluster()` in `beforeAll`,
 * `await cluster.stop()` in `afterAll`: every process is SIGKILLed and its directory removed (also on
 * process exit).
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./ports.js";
import { ask, waitFor } from "./redis-probe.js";

export interface TestRedisCluster {
  /** `redis-cluster://127.0.0.1:<p1>,127.0.0.1:<p2>,127.0.0.1:<p3>` */
  readonly url: string;
  readonly ports: readonly number[];
  running(): number;
  stop(): Promise<void>;
}

const run = promisify(execFile);

export async function startRedisCluster(masters = 3): Promise<TestRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), "gitmesh-cluster-"));
  const procs: ChildProcess[] = [];
  const exitHook = () => {
    for (const c of procs) c.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", exitHook);
  try {
    const ports: number[] = [];
    for (let i = 0; i < masters; i++) {
      const port = await freePort();
      const bus = await freePort();
      const child = spawn(
        "redis-server",
        [
          "--port", String(port), "--cluster-port", String(bus), "--bind", "127.0.0.1",
          "--cluster-enabled", "yes", "--cluster-config-file", join(dir, `nodes-${port}.conf`), "--cluster-node-timeout", "2000",
          "--save", "", "--appendonly", "no", "--dir", dir, "--dbfilename", `dump-${port}.rdb`, "--loglevel", "warning",
        ],
        { stdio: ["ignore", "ignore", "inherit"] },
      );
      procs.push(child);
      ports.push(port);
    }
    for (const port of ports) await waitFor(async () => (await ask(port, (c) => c.ping())) === "PONG", 10_000, () => `redis-server on ${port} did not answer PING`);
    await run("redis-cli", ["--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "0", "--cluster-yes"], { timeout: 30_000 });
    for (const port of ports) await waitFor(async () => /cluster_state:ok/.test((await ask(port, (c) => c.cluster("INFO"))) ?? ""), 20_000, () => `the cluster is not ok on ${port}`);
    return {
      url: `redis-cluster://${ports.map((p) => `127.0.0.1:${p}`).join(",")}`,
      ports,
      running: () => procs.filter((c) => c.exitCode === null && c.signalCode === null).length,
      async stop() {
        await Promise.all(
          procs.map(async (c) => {
            if (c.exitCode !== null || c.signalCode !== null) return;
            const exited = new Promise<void>((resolve) => c.once("exit", () => resolve()));
            c.kill("SIGKILL");
            await exited;
          }),
        );
        process.removeListener("exit", exitHook);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    exitHook();
    process.removeListener("exit", exitHook);
    throw err;
  }
}
