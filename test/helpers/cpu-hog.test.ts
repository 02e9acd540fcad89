// The CPU hog's processes spin while it runs and are gone after stop(), and after the process that
// started them is killed with SIGKILL (no exit hook runs then: the watchdog's pipe closes).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { startCpuHog } from "./cpu-hog.js";

/** Whether `pid` is a live process (a zombie awaiting its parent counts as gone). */
function alive(pid: number): boolean {
  try {
    return !/\) Z /.test(readFileSync(`/proc/${String(pid)}/stat`, "utf8"));
  } catch {
    return false;
  }
}

async function until(what: string, probe: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("cpu hog", () => {
  it("starts four busy processes per core by default and stops them all", async () => {
    const hog = await startCpuHog();
    try {
      expect(hog.processes).toBe(4 * availableParallelism());
      expect(hog.pids).toHaveLength(hog.processes);
      expect(hog.pids.every(alive)).toBe(true);
    } finally {
      await hog.stop();
    }
    await until("every busy process gone", () => !hog.pids.some(alive));
  });

  it("its processes die with the test worker that started them, even killed with SIGKILL", async () => {
    const helper = fileURLToPath(new URL("./cpu-hog.ts", import.meta.url));
    const script = `import { startCpuHog } from ${JSON.stringify(helper)}; const h = await startCpuHog({ processes: 3 }); console.log(JSON.stringify(h.pids)); setInterval(() => {}, 1000);`;
    const worker = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    const pids = await new Promise<number[]>((resolve, reject) => {
      let out = "";
      worker.once("exit", (code) => reject(new Error(`the worker exited (${String(code)}) before starting its hog`)));
      worker.stdout.on("data", (c: Buffer) => {
        out += c.toString();
        const line = out.split("\n").find((l) => l.startsWith("["));
        if (line !== undefined) resolve(JSON.parse(line) as number[]);
      });
    });
    expect(pids).toHaveLength(3);
    expect(pids.every(alive)).toBe(true);
    worker.kill("SIGKILL");
    await until("the hog's processes gone after its worker was killed", () => !pids.some(alive));
  });
});
