// `npm run demo -- --exit` as a user runs it: a child process of bin/gitmesh.js that must reach full
// convergence on both emulated clusters, print the summary with the audit commit, and exit 0.
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";

function runDemo(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["bin/gitmesh.js", "demo", "--exit", "--timeout", "100"], { cwd: process.cwd(), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("gitmesh demo --exit", () => {
  it("converges on cluster1 and cluster2, prints the summary with the audit commit, exits 0", async () => {
    const { code, stdout, stderr } = await runDemo();
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(stdout).toMatch(/Converged in [\d.]+s: commit [0-9a-f]{12} applied on every cluster/);
    for (const cluster of ["cluster1", "cluster2"]) {
      const row = new RegExp(`^  ${cluster}\\s+(\\d+)\\s+(\\d+)\\s+connected, applied$`, "m").exec(stdout);
      expect(row, `summary row of ${cluster}`).not.toBeNull();
      expect(Number(row![1])).toBeGreaterThan(10);
    }
    expect(stdout).toMatch(/audit branch gitmesh\/rendered: [0-9a-f]{12}/);
    expect(stdout).toContain("git commit -qam");
    // How to call the API with the demo's read token (kept in a file, never printed).
    expect(stdout).toMatch(/curl -H "Authorization: Bearer \$\(cat \S+\/api-token\)" http:\/\/127\.0\.0\.1:\d+\/api\/status/);
    expect(stdout).toMatch(/gitmesh check --server http:\/\/127\.0\.0\.1:\d+ --token-file \S+\/api-token/);
    expect(stdout).toMatch(/cluster1: agent connected/);
    expect(stdout).toMatch(/discovery received \(warmed\)/);
  }, 150_000);
});
