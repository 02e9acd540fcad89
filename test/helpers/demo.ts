// `gitmesh demo` as a child process of bin/gitmesh.js, as a user runs it (test/e2e/demo.test.ts, the
// web UI's browser tests): its output, a wait for a line, and its exit.
import { spawn, type ChildProcess } from "node:child_process";

export interface Demo {
  readonly child: ChildProcess;
  output(): string;
  /** Resolves when the output matches (or rejects after `ms`). */
  waitFor(re: RegExp, ms: number): Promise<RegExpExecArray>;
  exited: Promise<number | null>;
  /** Ctrl-C as a terminal sends it: SIGINT to the demo's whole process group (the demo and what it spawned). */
  interrupt(): void;
}

export function startDemo(args: string[], env: Record<string, string | undefined> = {}): Demo {
  // Its own process group, as a shell runs a foreground job, so that Ctrl-C can reach every process of it.
  const child = spawn(process.execPath, ["bin/gitmesh.js", "demo", "--timeout", "100", ...args], { cwd: process.cwd(), stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env }, detached: true });
  let out = "";
  const waiters: (() => void)[] = [];
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const w of waiters.splice(0)) w();
  };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return {
    child,
    output: () => out,
    exited,
    interrupt: () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGINT");
      } catch {
        // Already gone.
      }
    },
    waitFor: (re, ms) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`demo did not print ${String(re)} within ${String(ms)} ms:\n${out.slice(-3000)}`)), ms);
        const check = () => {
          const m = re.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(m);
          } else waiters.push(check);
        };
        check();
      }),
  };
}

