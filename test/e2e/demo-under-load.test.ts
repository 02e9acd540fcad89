// `gitmesh demo --exit` next to a CPU hog (four busy processes per core, gitmesh issue #35 item 9):
// it converges on both clusters, and no lease is lost on the way — neither the server's leader lock
// ("lock lost") nor an agent's Lease ("stopped leading"), read from the demo's own log (--keep).
// With the 3 s leases the demo's agents had before, a busy machine lost them 21 times in one run.
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCpuHog, type CpuHog } from "../helpers/cpu-hog.js";
import { startDemo } from "../helpers/demo.js";

let hog: CpuHog | undefined;
let kept: string | undefined;
beforeAll(async () => {
  hog = await startCpuHog();
});
afterAll(async () => {
  await hog?.stop();
  if (kept !== undefined) rmSync(kept, { recursive: true, force: true });
});

/** JSON log records of the demo's server and agents. */
function records(log: string): { msg?: string; why?: string }[] {
  return log
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { msg?: string; why?: string });
}

describe("gitmesh demo under a CPU hog", () => {
  it("--exit converges on cluster1 and cluster2 with no lease lost (server lock, agent Leases)", async () => {
    const demo = startDemo(["--exit", "--keep", "--timeout", "400"]);
    const code = await demo.exited;
    const stdout = demo.output();
    kept = /Stopped; files kept in (\S+)/.exec(stdout)?.[1];
    expect(code, stdout.slice(-3000)).toBe(0);
    expect(stdout).toMatch(/Converged in [\d.]+s: commit [0-9a-f]{12} applied on every cluster/);
    for (const cluster of ["cluster1", "cluster2"]) expect(stdout).toMatch(new RegExp(`^  ${cluster}\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)\\s+connected, applied$`, "m"));
    expect(kept, "the kept directory").toBeDefined();
    const logFile = join(kept!, "server.log");
    expect(existsSync(logFile)).toBe(true);
    const log = records(readFileSync(logFile, "utf8"));
    // the agents did lead (the log is the one to read), and nobody lost a lease before the demo stopped them
    expect(log.filter((r) => r.msg === "became leader").length).toBeGreaterThanOrEqual(2);
    expect(log.filter((r) => (r.msg === "stopped leading" && r.why !== "stopping") || r.msg === "lock lost"), "lease losses").toEqual([]);
    expect(log.filter((r) => r.msg === "stopped leading")).toHaveLength(2); // each agent once, when the demo stopped
  }, 480_000);
});
