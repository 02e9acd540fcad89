// The Git server of the git-sync benchmarks in its own process (git-server-child.ts), so that its CPU
// and memory are not the measured side's.
import { spawn, type ChildProcess } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

/** Starts git-server-child.ts on `root`; resolves with its base URL once it listens. */
export function startServerProcess(root: string): Promise<{ baseUrl: string; child: ChildProcess }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", join(here, "git-server-child.ts"), root], { stdio: ["pipe", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      if (out.includes("\n")) resolve({ baseUrl: out.split("\n")[0]!.trim(), child });
    });
    child.on("error", reject);
    child.on("exit", (code) => reject(new Error(`git server process exited with ${String(code)}`)));
  });
}
