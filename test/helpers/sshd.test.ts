import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { startSshd } from "./sshd.js";

/** True while something accepts connections on the port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ host: "127.0.0.1", port });
    sock.once("connect", () => {
      sock.destroy();
      resolve(true);
    });
    sock.once("error", () => resolve(false));
  });
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("test helper: private sshd", () => {
  it("stop() ends sshd", async () => {
    const sshd = await startSshd({ root: tmpdir() });
    expect(await listening(sshd.port)).toBe(true);
    expect(sshd.log()).toContain("Server listening on 127.0.0.1");
    await sshd.stop();
    expect(await listening(sshd.port)).toBe(false);
  });

  it("sshd dies with the process that started it, even one killed with SIGKILL", async () => {
    const script = `import { startSshd } from "./test/helpers/sshd.ts"; const s = await startSshd({ root: "/tmp" }); console.log("port", s.port); setInterval(() => {}, 1000);`;
    const worker = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    const port = await new Promise<number>((resolve, reject) => {
      let out = "";
      worker.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        const m = /port (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      worker.once("exit", (code) => reject(new Error(`worker exited ${String(code)} before starting sshd`)));
    });
    expect(await listening(port)).toBe(true);
    worker.kill("SIGKILL");
    await until("sshd to stop after its parent died", async () => !(await listening(port)));
  });
});
