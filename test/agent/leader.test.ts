// Leader election between two replicas on a Lease in the emulator.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLeaderElector, type LeaderElector } from "../../src/agent/index.js";
import { eventually, startKube, type StartedKube } from "../helpers/kube.js";
import { parts } from "./helpers.js";

let kube: StartedKube;
beforeEach(async () => {
  kube = await startKube({ seed: [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } }] });
});
afterEach(async () => {
  await kube.stop();
});

function replica(identity: string, log: string[]) {
  const p = parts(kube, identity);
  const elector = createLeaderElector({
    reader: p.client,
    writer: p.writer,
    namespace: "gitmesh",
    identity,
    leaseDurationMs: 600,
    renewDeadlineMs: 400,
    retryPeriodMs: 100,
    onStartedLeading: () => {
      log.push(`${identity} leads`);
    },
    onStoppedLeading: () => {
      log.push(`${identity} stops`);
    },
    logger: p.logger,
  });
  return elector;
}

const holder = () => (kube.emulator.get("coordination.k8s.io/v1", "Lease", "gitmesh", "gitmesh-agent")?.spec as { holderIdentity?: string } | undefined)?.holderIdentity;

describe("leader election", () => {
  it("exactly one leader; a standby takes over when the leader goes silent, and on a graceful stop at once", async () => {
    const log: string[] = [];
    const a = replica("agent-a", log);
    const aCrash = new AbortController();
    await a.start(aCrash.signal);
    await eventually("a leads", () => a.isLeader);
    const b = replica("agent-b", log);
    const c = replica("agent-c", log);
    await b.start(new AbortController().signal);
    await c.start(new AbortController().signal);
    await new Promise((r) => setTimeout(r, 800));
    expect([a.isLeader, b.isLeader, c.isLeader]).toEqual([true, false, false]);
    expect(holder()).toBe("agent-a");

    // a freezes (no more renewals, no release): one of b/c takes over after the lease duration
    aCrash.abort();
    const next = await eventually("takeover", () => (b.isLeader ? b : c.isLeader ? c : undefined), 5000);
    const other: LeaderElector = next === b ? c : b;
    expect(holder()).toBe(next === b ? "agent-b" : "agent-c");
    const lease = kube.emulator.get("coordination.k8s.io/v1", "Lease", "gitmesh", "gitmesh-agent")!.spec as { leaseTransitions: number; renewTime: string };
    expect(lease.leaseTransitions).toBe(1);
    expect(lease.renewTime).toMatch(/\.\d{6}Z$/);
    await new Promise((r) => setTimeout(r, 500));
    expect(other.isLeader).toBe(false);

    // graceful stop releases the lease (holder cleared at once, not left to expire), so the remaining
    // standby may take it without waiting out a lease duration
    await next.stop();
    expect(["", next === b ? "agent-c" : "agent-b"]).toContain(holder());
    await eventually("other takes over", () => other.isLeader, 5000);
    expect(log.filter((l) => l.endsWith("leads"))).toHaveLength(3);
    expect(log).toContain(`${next === b ? "agent-b" : "agent-c"} stops`);
    await other.stop();
    await a.stop();
    expect(holder()).toBe("");
  });

  it("a leader that cannot renew steps down", async () => {
    const log: string[] = [];
    const a = replica("agent-a", log);
    await a.start(new AbortController().signal);
    await eventually("a leads", () => a.isLeader);
    kube.emulator.faults.failRequests();
    await eventually("a steps down", () => !a.isLeader, 5000);
    // isLeader turns false at the deadline; the leader-only parts are stopped right after
    await eventually("a stopped its parts", () => log.length === 2, 5000);
    expect(log).toEqual(["agent-a leads", "agent-a stops"]);
    kube.emulator.faults.clear();
    await eventually("a leads again", () => a.isLeader, 5000);
    await a.stop();
  });
});
