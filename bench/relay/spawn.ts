/**
 * Child processes of the relay bench, each started through `sh -c 'ulimit -n …; exec node …'` so that it
 * may hold 10,000 sockets: the shell raises the soft (and, as root, the hard) open-file limit before
 * Node starts, and the child reports the limit it got (/proc/self/limits) in its first message, which
 * the bench checks against what it will open.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Open files each child asks for (raised with `ulimit -n`; the bench refuses to run if a child got fewer than it needs). */
export const WANTED_OPEN_FILES = 65_536;

/** The soft open-file limit of this process (Linux /proc/self/limits), or undefined elsewhere. */
export function openFileLimit(): number | undefined {
  try {
    const line = readFileSync("/proc/self/limits", "utf8").split("\n").find((l) => l.startsWith("Max open files"));
    const soft = line?.split(/\s{2,}/)[1];
    return soft === "unlimited" ? Number.POSITIVE_INFINITY : Number(soft);
  } catch {
    return undefined;
  }
}

export interface Child {
  readonly process: ChildProcess;
  /** Sends a request and resolves with the child's next answer. */
  ask<T>(message: unknown): Promise<T>;
  /** The first message the child sent (`{type:"ready", openFiles, …}`). */
  readonly ready: Promise<{ openFiles?: number } & Record<string, unknown>>;
  kill(): void;
}

export function startChild(script: string, args: readonly string[], needFiles: number): Child {
  const file = fileURLToPath(new URL(script, import.meta.url));
  // As root the hard limit can be raised too; otherwise fall back to the hard limit we have.
  const raise = `ulimit -n ${WANTED_OPEN_FILES} 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"`;
  const child = spawn("sh", ["-c", raise, process.execPath, "--import", "tsx", "--expose-gc", file, ...args], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const waiting: ((m: unknown) => void)[] = [];
  let first: ((m: unknown) => void) | undefined;
  const ready = new Promise<{ openFiles?: number } & Record<string, unknown>>((resolve, reject) => {
    first = resolve as (m: unknown) => void;
    child.once("exit", (code) => reject(new Error(`${script} exited (${String(code)}) before it was ready`)));
  });
  child.on("message", (m) => {
    if (first) {
      const f = first;
      first = undefined;
      f(m);
      return;
    }
    waiting.shift()?.(m);
  });
  child.on("exit", () => {
    for (const w of waiting.splice(0)) w({ type: "exited" });
  });
  const checked = ready.then((m) => {
    if (m.openFiles !== undefined && m.openFiles < needFiles) {
      child.kill("SIGKILL");
      throw new Error(`${script}: open-file limit ${m.openFiles} < ${needFiles} needed (raise the hard limit: ulimit -Hn)`);
    }
    return m;
  });
  return {
    process: child,
    ready: checked,
    ask<T>(message: unknown) {
      return new Promise<T>((resolve) => {
        waiting.push(resolve as (m: unknown) => void);
        child.send(message as never);
      });
    },
    kill: () => child.kill("SIGKILL"),
  };
}

export const cpuMsOf = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;

/** Memory and CPU of a server child after a full GC. */
export interface ServerStats {
  readonly heapUsed: number;
  readonly rss: number;
  /** CPU time (user + system) of the process so far, ms. */
  readonly cpuMs: number;
  /** Open sessions (floor) or connected clusters (relay). */
  readonly connected: number;
  /** Relay: clusters with a warmed push stream and a pull stream. */
  readonly warmed?: number;
  /** Registrations answered (the registration floor). */
  readonly signed?: number;
}

export function memoryAfterGc(): { heapUsed: number; rss: number; cpuMs: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, rss: m.rss, cpuMs: cpuMsOf(process.cpuUsage()) };
}
