/**
 * A CPU hog for tests that must hold under load (gitmesh issue #35 item 9): busy processes, four per
 * core by default (`os.availableParallelism()`), spinning until stopped. The system under test then
 * competes for the CPU as on a busy node.
 *
 * The hog runs in a process group of its own whose leader is a watchdog shell (as
 * test/helpers/real-kube.ts guards its servers): it holds a pipe from this process and kills the
 * whole group at EOF, so the busy processes die when `stop()` is called, when this test worker exits,
 * and when it is killed (SIGKILL included).
 *
 *   const hog = await startCpuHog();      // beforeAll
 *   …
 *   await hog.stop();                      // afterAll
 */
import { spawn, type ChildProcess } from "node:child_process";
import { availableParallelism } from "node:os";

export interface CpuHogOptions {
  /** Busy processes (default 4 per core: 4 × os.availableParallelism()). */
  readonly processes?: number;
}

export interface CpuHog {
  /** How many busy processes spin. */
  readonly processes: number;
  /** Process ids of the busy processes. */
  readonly pids: readonly number[];
  /** Kills them all and waits until they are gone. */
  stop(): Promise<void>;
}

// The group leader: starts the spinners, then waits for EOF on the pipe this process holds and kills
// the group (itself included). `yes > /dev/null` is a busy loop that never allocates.
const LEADER = 'n="$1"; i=0; while [ "$i" -lt "$n" ]; do yes >/dev/null & echo "$!"; i=$((i+1)); done; echo ready; cat >/dev/null; kill -KILL 0';

export async function startCpuHog(options: CpuHogOptions = {}): Promise<CpuHog> {
  const n = Math.max(1, options.processes ?? 4 * availableParallelism());
  const child: ChildProcess = spawn("/bin/sh", ["-c", LEADER, "cpu-hog", String(n)], { detached: true, stdio: ["pipe", "pipe", "ignore"] });
  child.stdin?.on("error", () => undefined);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const pids: number[] = [];
  await new Promise<void>((resolve, reject) => {
    let buf = "";
    child.once("error", reject);
    child.once("exit", () => reject(new Error(`the CPU hog exited before its ${String(n)} processes started`)));
    child.stdout?.on("data", (c: Buffer) => {
      buf += c.toString();
      const lines = buf.split("\n");
      buf = lines.pop() ?? "";
      for (const l of lines) {
        if (l === "ready") return resolve();
        if (/^\d+$/.test(l)) pids.push(Number(l));
      }
    });
  });
  child.stdout?.removeAllListeners("data");
  child.stdout?.resume();
  const killGroup = () => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  };
  // A test worker that exits normally without calling stop() still takes its hog with it.
  process.once("exit", killGroup);
  return {
    processes: n,
    pids,
    async stop() {
      process.removeListener("exit", killGroup);
      child.stdin?.end(); // the leader kills the group at EOF…
      killGroup(); // …and this does it at once
      await exited;
    },
  };
}
