import { spawn } from "node:child_process";

export interface ServerRun {
  readonly code: number | null;
  /** stdout and stderr together. */
  readonly out: string;
  /** True when `until` matched (the server was then stopped with SIGTERM). */
  readonly matched: boolean;
}

/**
 * Runs `gitmesh server` (bin/gitmesh.js, relay and HTTP on free loopback ports, human logs, `dataDir`)
 * until it exits or `until` matches its output (then SIGTERM); killed after 60 s in any case.
 */
export function runServer(dataDir: string, args: readonly string[], until?: RegExp, env: Record<string, string> = {}): Promise<ServerRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["bin/gitmesh.js", "server", "--relay-port", "0", "--http-port", "0", "--relay-host", "127.0.0.1", "--http-host", "127.0.0.1", "--log-format", "human", "--data-dir", dataDir, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...env },
    });
    let out = "";
    let matched = false;
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      if (until && !matched && until.test(out)) {
        matched = true;
        child.kill("SIGTERM");
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, out, matched });
    });
  });
}
