// `npm run demo` as a user runs it: child processes of bin/gitmesh.js.
//   --exit: full convergence on both emulated clusters, the summary with the audit commit, exit 0;
//   without --exit: the printed "push a change" commands, run exactly as printed, change a policy that
//     converges on the clusters; a rejected commit is said once, not at every poll;
//   REDIS_URL: an unreachable one falls back with one clear line; a reachable one is left without any
//     key of the demo (no relay CA key, no tokens) once it exits.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { startDemo } from "../helpers/demo.js";
import { freePort } from "../helpers/ports.js";
import { startRedis } from "../helpers/redis.js";

describe("gitmesh demo", () => {
  it("--exit converges on cluster1 and cluster2, prints the summary with the audit commit, exits 0", async () => {
    const demo = startDemo(["--exit"]);
    const code = await demo.exited;
    const stdout = demo.output();
    expect(code, stdout).toBe(0);
    expect(stdout).toMatch(/Converged in [\d.]+s: commit [0-9a-f]{12} applied on every cluster/);
    for (const cluster of ["cluster1", "cluster2"]) {
      // Istio objects rendered and found in the cluster: the same count (every one of them is there).
      const row = new RegExp(`^  ${cluster}\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)\\s+connected, applied$`, "m").exec(stdout);
      expect(row, `summary row of ${cluster}`).not.toBeNull();
      expect(Number(row![1])).toBeGreaterThan(10);
      expect(row![2]).toBe(row![1]);
    }
    expect(stdout).not.toContain("not in the cluster");
    // The one resource that is not an Istio object says what it is for.
    expect(stdout).toMatch(/cluster1: also IssuedCertificate \S+: the agent turns it into istiod's intermediate CA/);
    expect(stdout).toMatch(/audit branch gitmesh\/rendered: [0-9a-f]{12}/);
    // The demo directory, server and clusters are gone after --exit: no command pointing at them.
    expect(stdout).not.toContain("git commit -qam");
    expect(stdout).not.toContain("curl -H");
    expect(stdout).not.toContain("--kubeconfig");
    expect(stdout).toContain("Run `npm run demo` (without --exit) to query the server, the clusters, and push a change");
    expect(stdout).toMatch(/cluster1: agent connected/);
    expect(stdout).toMatch(/discovery received \(warmed\)/);
    // It says what it does before each slow step, in the order it does it, and what to do next once all is stopped.
    const progress = [
      /^gitmesh demo: the whole system on this machine/m,
      /^\[ *[\d.]+s\] Loading the server, relay, agent and Kubernetes emulator modules …$/m,
      /^\[ *[\d.]+s\] Redis: /m,
      /^\[ *[\d.]+s\] Git: examples\/repo-layout pushed to /m,
      /^\[ *[\d.]+s\] Server: starting — relay certificate authority, first sync of the Git repository, translation pipeline …$/m,
      /^\[ *[\d.]+s\] Server: relay on /m,
      /^\[ *[\d.]+s\] cluster1: Kubernetes API emulator on /m,
      /^\[ *[\d.]+s\] cluster2: Kubernetes API emulator on /m,
      /^\[ *[\d.]+s\] Agents: started; next they register with the relay, send discovery \(warming\), and apply the first translation …$/m,
      /^\[ *[\d.]+s\] cluster1: output v\d+ translated/m,
      // The server's own summary of the cluster (src/server/cluster-sync.ts), printed when it changes.
      /^\[ *[\d.]+s\] cluster1: in sync: applied [0-9a-f]{12} \(v\d+\)$/m,
      /^Converged in /m,
      /^\[ *[\d.]+s\] Stopping the demo: cluster2 agent, .*, server, git server.* …$/m,
      /^\[ *[\d.]+s\] Stopped; its temporary files are removed$/m,
      /^Run `npm run demo` \(without --exit\)/m,
    ];
    const at = progress.map((re) => ({ re: String(re), index: re.exec(stdout)?.index ?? -1 }));
    expect(at.filter((p) => p.index < 0).map((p) => p.re), "progress lines missing").toEqual([]);
    expect(at.map((p) => p.index), "progress lines out of order").toEqual(at.map((p) => p.index).sort((a, b) => a - b));
    expect(stdout.trimEnd().endsWith("push a change and watch it converge."), "what to do next is the last line").toBe(true);
  }, 150_000);

  it("the printed push hint, run as printed, converges; a rejected commit is reported once", async () => {
    const demo = startDemo([]);
    try {
      await demo.waitFor(/Running; Ctrl-C to stop\./, 150_000);
      // How to call the API with the demo's read token (kept in a file, never printed), while it runs.
      expect(demo.output()).toMatch(/curl -H "Authorization: Bearer \$\(cat \S+\/api-token\)" http:\/\/127\.0\.0\.1:\d+\/api\/status/);
      expect(demo.output()).toMatch(/gitmesh check --server http:\/\/127\.0\.0\.1:\d+ --token-file \S+\/api-token/);
      const hint = (await demo.waitFor(/Push a change and watch it converge \(in another terminal\):\n((?: {2}.+\n)+)/, 1000))[1]!;
      const commands = hint
        .split("\n")
        .map((l) => l.trim())
        .filter(Boolean);
      expect(commands[0]).toMatch(/^cd \//);
      expect(commands.some((c) => c.startsWith("sed -i"))).toBe(true);
      // Exactly the printed lines, in one shell, as a user pastes them.
      execFileSync("sh", ["-ec", commands.join("\n")], { stdio: "pipe", env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.test", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.test" } });
      const work = commands[0]!.slice(3);
      const pushed = execFileSync("git", ["-C", work, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
      const m = await demo.waitFor(new RegExp(`commit ${pushed.slice(0, 12)} converged on cluster1, cluster2`), 120_000);
      expect(m).not.toBeNull();
      // A broken commit: said once, however long it stays rejected.
      writeFileSync(join(work, "workspaces", "broken.yaml"), "apiVersion: networking.gloo.solo.io/v2\nkind: RouteTable\nmetadata: {name: [oops\n");
      execFileSync("sh", ["-ec", 'git add -A && git -c user.name=t -c user.email=t@example.test commit -qm broken && git push -q origin HEAD:main'], { cwd: work, stdio: "pipe" });
      const bad = execFileSync("git", ["-C", work, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
      await demo.waitFor(new RegExp(`commit ${bad.slice(0, 12)} REJECTED`), 60_000);
      await new Promise((r) => setTimeout(r, 3000));
      expect(demo.output().split(`commit ${bad.slice(0, 12)} REJECTED`).length - 1).toBe(1);
      expect(demo.output()).not.toContain(`new commit ${bad.slice(0, 12)}`);
    } finally {
      demo.interrupt();
      await demo.exited;
    }
  }, 300_000);

  it("REDIS_URL: an unreachable one falls back with one clear line; a reachable one keeps no key of the demo after it exits", async () => {
    const closed = await freePort();
    const fallback = startDemo(["--exit"], { REDIS_URL: `redis://127.0.0.1:${String(closed)}` });
    expect(await fallback.exited, fallback.output()).toBe(0);
    expect(fallback.output()).toMatch(new RegExp(`Redis: REDIS_URL \\(redis://127\\.0\\.0\\.1:${String(closed)}\\) cannot be reached \\(.+\\); using a private redis-server instead`));
    expect(fallback.output()).not.toMatch(/ECONNREFUSED.*\n\s+at /);

    const redis = await startRedis();
    try {
      const demo = startDemo(["--exit"], { REDIS_URL: redis.url });
      expect(await demo.exited, demo.output()).toBe(0);
      expect(demo.output()).toContain("Redis: using REDIS_URL");
      const client = new Redis(redis.url);
      try {
        expect(await client.keys("*"), "keys the demo left behind").toEqual([]);
      } finally {
        client.disconnect();
      }
    } finally {
      await redis.stop();
    }
  }, 300_000);
});
