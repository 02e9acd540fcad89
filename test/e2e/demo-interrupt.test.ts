import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { startDemo } from "../helpers/demo.js";

// Ctrl-C on `gitmesh demo` as a terminal sends it (SIGINT to the demo's process group). The first one
// stops what started and exits; a second one quits at once. Waits are for the demo's own lines, with
// bounds only a hang reaches.
describe("gitmesh demo and Ctrl-C", () => {
  it("a Ctrl-C during the start stops every part, removes its files and exits 130, without calling it a failure", async () => {
    const demo = startDemo([]);
    const log = (await demo.waitFor(/log: (\S+)\/server\.log\)/, 150_000))[1]!;
    await demo.waitFor(/Agents: started/, 150_000);
    demo.interrupt();
    expect(await demo.exited, demo.output()).toBe(130);
    const out = demo.output();
    expect(out).toContain("demo: stopping (Ctrl-C again to quit at once)");
    expect(out).toMatch(/Stopping the demo: cluster2 agent, cluster2 emulator, cluster1 agent, cluster1 emulator, server, git server/);
    expect(out).toContain("Stopped; its temporary files are removed");
    expect(out).not.toContain("demo failed");
    expect(out).not.toMatch(/did not stop within/);
    // Nothing outlives the stop (an agent's retries once did, and the demo never exited).
    expect(out).not.toMatch(/still running .* after its stop/);
    expect(out).not.toContain("no full convergence");
    expect(existsSync(log), "the demo's directory is removed").toBe(false);
  }, 300_000);

  it("a second Ctrl-C quits at once and says where its files are", async () => {
    const demo = startDemo([]);
    await demo.waitFor(/Server: starting/, 150_000);
    demo.interrupt();
    await demo.waitFor(/demo: stopping \(Ctrl-C again to quit at once\)/, 60_000);
    demo.interrupt();
    expect(await demo.exited, demo.output()).toBe(130);
    expect(demo.output()).toMatch(/demo: quitting at once; files kept in \/\S+gitmesh-demo-/);
  }, 300_000);

  it("Ctrl-C once it runs ends it normally (exit 0)", async () => {
    const demo = startDemo([]);
    await demo.waitFor(/Running; Ctrl-C to stop\./, 200_000);
    demo.interrupt();
    expect(await demo.exited, demo.output()).toBe(0);
    expect(demo.output()).toContain("Stopped; its temporary files are removed");
    expect(demo.output()).not.toMatch(/still running .* after its stop|did not stop within/);
  }, 300_000);
});
