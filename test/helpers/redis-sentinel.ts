/**
 * A real Redis Sentinel setup for one test file: a primary, a replica and three sentinels, each a
 * `redis-server` process on a free loopback port, with short failure detection (down-after 1 s,
 * failover-timeout 3 s) so that a failover takes a few seconds. `const ha = await startSentinel()` in
 * `beforeAll`, `await ha.stop()` in `afterAll`: every process is SIGKILLed and its directory removed
 * (also on process exit, so a failing test leaves nothing running). Always private: an external
 * REDIS_URL is not used here.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports.js";
import { ask, waitFor } from "./redis-probe.js";

export interface TestSentinel {
  /** `redis-sentinel://127.0.0.1:<s1>,127.0.0.1:<s2>,127.0.0.1:<s3>/<masterName>` */
  readonly url: string;
  readonly masterName: string;
  /** Ports of the two data nodes (the first starts as primary). */
  readonly dataPorts: readonly number[];
  readonly sentinelPorts: readonly number[];
  /** The primary's port as a majority of the sentinels reports it now. */
  primaryPort(): Promise<number>;
  /** SIGKILLs the data node on `port` (the signal is sent before this returns; resolves when it exited). */
  kill(port: number): Promise<void>;
  /** Waits until the sentinels have promoted a node other than `oldPrimary` and it answers as primary; returns its port. */
  waitForFailover(oldPrimary: number, timeoutMs?: number): Promise<number>;
  /** Processes still running (tests of the helper itself). */
  running(): number;
  stop(): Promise<void>;
}

export interface StartSentinelOptions {
  readonly masterName?: string;
  /** Sentinel `down-after-milliseconds`. Default 1000. */
  readonly downAfterMs?: number;
  /** Sentinel `failover-timeout`. Default 3000. */
  readonly failoverTimeoutMs?: number;
}

export async function startSentinel(options: StartSentinelOptions = {}): Promise<TestSentinel> {
  const masterName = options.masterName ?? "gitmesh-test";
  const dir = mkdtempSync(join(tmpdir(), "gitmesh-sentinel-"));
  const procs = new Map<number, ChildProcess>();
  const exitHook = () => {
    for (const c of procs.values()) c.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", exitHook);

  const spawnServer = async (port: number, args: string[]): Promise<void> => {
    const child = spawn("redis-server", args, { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", (err) => {
      stderr += `could not start redis-server (${err.message}); install it (apt-get install redis-server)`;
    });
    procs.set(port, child);
    await waitFor(async () => (await ask(port, (c) => c.ping())) === "PONG", 10_000, () => `redis-server on ${port} did not answer PING: ${stderr}`);
  };
  const dataArgs = (port: number) => ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--dbfilename", `dump-${port}.rdb`, "--repl-diskless-sync-delay", "0", "--loglevel", "warning"];

  try {
    const primary = await freePort();
    const replica = await freePort();
    await spawnServer(primary, dataArgs(primary));
    await spawnServer(replica, [...dataArgs(replica), "--replicaof", "127.0.0.1", String(primary)]);
    await waitFor(async () => /master_link_status:up/.test((await ask(replica, (c) => c.info("replication"))) ?? ""), 10_000, () => "the replica did not sync with the primary");

    // Each sentinel is told its peers and the replica up front (fixed ids), instead of discovering
    // them (hello messages every 2 s, INFO every 10 s): the setup is ready in well under a second.
    const sentinels: { port: number; id: string }[] = [];
    for (let i = 0; i < 3; i++) sentinels.push({ port: await freePort(), id: randomBytes(20).toString("hex") });
    const sentinelPorts = sentinels.map((s) => s.port);
    for (const me of sentinels) {
      const conf = join(dir, `sentinel-${me.port}.conf`);
      writeFileSync(
        conf,
        [
          `port ${me.port}`,
          "bind 127.0.0.1",
          `dir ${dir}`,
          `sentinel myid ${me.id}`,
          `sentinel monitor ${masterName} 127.0.0.1 ${primary} 2`,
          `sentinel down-after-milliseconds ${masterName} ${options.downAfterMs ?? 1000}`,
          `sentinel failover-timeout ${masterName} ${options.failoverTimeoutMs ?? 3000}`,
          `sentinel parallel-syncs ${masterName} 1`,
          `sentinel known-replica ${masterName} 127.0.0.1 ${replica}`,
          ...sentinels.filter((s) => s !== me).map((s) => `sentinel known-sentinel ${masterName} 127.0.0.1 ${s.port} ${s.id}`),
          "",
        ].join("\n"),
      );
      await spawnServer(me.port, [conf, "--sentinel", "--loglevel", "warning"]);
    }
    // A failover needs the sentinels to know each other and the replica.
    await waitFor(
      async () => {
        for (const s of sentinelPorts) {
          const peers = await ask(s, (c) => c.call("SENTINEL", "SENTINELS", masterName) as Promise<unknown[]>);
          const replicas = await ask(s, (c) => c.call("SENTINEL", "REPLICAS", masterName) as Promise<unknown[]>);
          if (peers?.length !== 2 || replicas?.length !== 1) return false;
        }
        return true;
      },
      20_000,
      () => "the sentinels did not discover each other and the replica",
    );

    const primaryPort = async (): Promise<number> => {
      const votes = new Map<number, number>();
      for (const s of sentinelPorts) {
        const addr = await ask(s, (c) => c.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", masterName) as Promise<string[] | null>);
        if (addr?.[1] !== undefined) votes.set(Number(addr[1]), (votes.get(Number(addr[1])) ?? 0) + 1);
      }
      const [best] = [...votes].sort((a, b) => b[1] - a[1]);
      if (best === undefined || best[1] < 2) throw new Error(`no majority of sentinels agrees on a primary (${JSON.stringify([...votes])})`);
      return best[0];
    };

    return {
      url: `redis-sentinel://${sentinelPorts.map((p) => `127.0.0.1:${p}`).join(",")}/${masterName}`,
      masterName,
      dataPorts: [primary, replica],
      sentinelPorts,
      primaryPort,
      async kill(port) {
        const c = procs.get(port);
        if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
        const exited = new Promise<void>((resolve) => c.once("exit", () => resolve()));
        c.kill("SIGKILL");
        await exited;
      },
      async waitForFailover(oldPrimary, timeoutMs = 20_000) {
        let now = oldPrimary;
        await waitFor(
          async () => {
            now = await primaryPort().catch(() => oldPrimary);
            return now !== oldPrimary && /role:master/.test((await ask(now, (c) => c.info("replication"))) ?? "");
          },
          timeoutMs,
          () => `no failover away from ${oldPrimary} within ${timeoutMs} ms`,
        );
        return now;
      },
      running: () => [...procs.values()].filter((c) => c.exitCode === null && c.signalCode === null).length,
      async stop() {
        await Promise.all(
          [...procs.values()].map(async (c) => {
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
