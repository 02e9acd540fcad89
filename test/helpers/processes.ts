/**
 * `gitmesh` commands as child processes of an end-to-end test (bin/gitmesh.js), with their output kept
 * for the failure message:
 *
 *   const gm = createProcessGroup({ GITMESH_WEBHOOK_SECRET: SECRET });
 *   const server = gm.start("server a", ["server", ...]);
 *   await gm.poll("server healthy", async () => (await fetch(url)).ok);   // a timeout prints every live process's output
 *   await gm.stopAll();                                                    // in afterAll
 */
import { spawn, type ChildProcess } from "node:child_process";

export interface GitmeshProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** stdout and stderr so far (the last 200-400 kB). */
  output(): string;
  /** Sends `signal` (default SIGTERM; a stopped process is continued first) and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export interface ProcessGroup {
  readonly procs: readonly GitmeshProcess[];
  start(name: string, args: readonly string[]): GitmeshProcess;
  /** The tail of every live process's output. */
  tail(): string;
  /** Resolves with the first value `probe` gives that is not undefined/false; a thrown error is retried and shown on timeout. */
  poll<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs?: number, everyMs?: number): Promise<T>;
  stopAll(): Promise<void>;
}

/** Keeps the last ~200-400 KB of a child's stdout and stderr, for failure messages; returns the reader. */
export function keepOutput(child: ChildProcess): () => string {
  let out = "";
  const keep = (d: Buffer) => {
    out += d.toString();
    if (out.length > 400_000) out = out.slice(-200_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  return () => out;
}

export function createProcessGroup(env: Record<string, string> = {}): ProcessGroup {
  const procs: GitmeshProcess[] = [];
  const tail = () =>
    procs
      .filter((p) => p.child.exitCode === null)
      .map((p) => `==== ${p.name}\n${p.output().slice(-2500)}`)
      .join("\n");
  return {
    procs,
    tail,
    start(name, args) {
      const child = spawn(process.execPath, ["bin/gitmesh.js", ...args], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
      const output = keepOutput(child);
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      const p: GitmeshProcess = {
        name,
        child,
        output,
        async kill(signal = "SIGTERM") {
          if (child.exitCode === null && child.signalCode === null) {
            if (signal !== "SIGKILL") child.kill("SIGCONT");
            child.kill(signal);
          }
          await exited;
        },
      };
      procs.push(p);
      return p;
    },
    async poll(what, probe, timeoutMs = 60_000, everyMs = 250) {
      const deadline = Date.now() + timeoutMs;
      let last: string | undefined;
      for (;;) {
        try {
          const v = await probe();
          if (v !== undefined && v !== false) return v;
        } catch (err) {
          last = err instanceof Error ? err.message : String(err);
        }
        if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}${last ? ` (last error: ${last})` : ""}\n${tail()}`);
        await new Promise((r) => setTimeout(r, everyMs));
      }
    },
    async stopAll() {
      await Promise.all(procs.map((p) => p.kill()));
    },
  };
}
