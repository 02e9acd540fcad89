// Leader election on a real coordination.k8s.io/v1 Lease, each replica authenticated as the agent's
// ServiceAccount under the chart's RBAC (create Leases; get and update only the one named
// gitmesh-agent). Short timings keep the test quick; the agent processes of e2e.test.ts run the
// production ones (15 s / 10 s / 2 s).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import { createKubeClient, createLeaderElector, withFieldOwner } from "../../src/agent/index.js";
import { AGENT_NAMESPACE, getObject, startAgentCluster, until, type AgentCluster } from "./cluster.js";

/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are untyped JSON here */
type Obj = Record<string, any>;

let cluster: AgentCluster;
beforeAll(async () => {
  cluster = await startAgentCluster();
}, 180_000);
afterAll(async () => {
  await (cluster as AgentCluster | undefined)?.stop();
});

const LEASE = `/apis/coordination.k8s.io/v1/namespaces/${AGENT_NAMESPACE}/leases/gitmesh-agent`;
const lease = async () => (await getObject(cluster.kube, LEASE)) as Obj | undefined;

function replica(identity: string, log: string[], name?: string) {
  const client = createKubeClient(cluster.agentKc());
  return createLeaderElector({
    reader: client,
    writer: withFieldOwner(client),
    namespace: AGENT_NAMESPACE,
    ...(name === undefined ? {} : { name }),
    identity,
    leaseDurationMs: 2000,
    renewDeadlineMs: 1500,
    retryPeriodMs: 250,
    onStartedLeading: () => {
      log.push(`${identity} leads`);
    },
    onStoppedLeading: () => {
      log.push(`${identity} stops`);
    },
    logger: createMemoryLogger(identity).logger,
  });
}

describe("leader election on a real Lease, as the agent's ServiceAccount", () => {
  it("one leader; a silent leader is replaced after the lease duration; a graceful stop hands over at once", async () => {
    const log: string[] = [];
    const a = replica("agent-a", log);
    const crashA = new AbortController();
    await a.start(crashA.signal);
    await until("a leads", () => a.isLeader);
    const created = (await lease())!;
    expect(created.spec).toMatchObject({ holderIdentity: "agent-a", leaseDurationSeconds: 2, leaseTransitions: 0 });
    expect(String(created.spec.renewTime)).toMatch(/\.\d{6}Z$/);
    expect(((created.metadata.managedFields ?? []) as Obj[]).map((m) => String(m.manager))).toEqual(["gitmesh-agent"]);
    const b = replica("agent-b", log);
    const stopB = new AbortController();
    await b.start(stopB.signal);
    await new Promise((r) => setTimeout(r, 1500));
    expect([a.isLeader, b.isLeader]).toEqual([true, false]);
    // a keeps renewing: renewTime moves, the holder stays.
    const renewed = (await lease())!;
    expect(renewed.spec.holderIdentity).toBe("agent-a");
    expect(renewed.spec.renewTime).not.toBe(created.spec.renewTime);

    // a goes silent (no renewals, no release): b takes over once a's record stayed unchanged for the lease duration.
    crashA.abort();
    const silentAt = Date.now();
    await until("b leads", () => b.isLeader, 10_000);
    expect(Date.now() - silentAt).toBeGreaterThanOrEqual(1500);
    const taken = (await lease())!;
    expect(taken.spec).toMatchObject({ holderIdentity: "agent-b", leaseTransitions: 1 });
    expect(a.isLeader).toBe(false);

    // A graceful stop releases the Lease (holder cleared): a new replica takes it without waiting.
    const c = replica("agent-c", log);
    await c.start(new AbortController().signal);
    await b.stop();
    expect((await lease())!.spec.holderIdentity).toBe("");
    const releasedAt = Date.now();
    await until("c leads", () => c.isLeader, 5000);
    expect(Date.now() - releasedAt).toBeLessThan(2000); // under a lease duration
    expect((await lease())!.spec).toMatchObject({ holderIdentity: "agent-c", leaseTransitions: 2 });
    await c.stop();
    await a.stop();
    expect(log).toEqual(["agent-a leads", "agent-a stops", "agent-b leads", "agent-b stops", "agent-c leads", "agent-c stops"]);
  }, 60_000);

  it("the chart grants get and update on one Lease name only: a replica configured with another name is refused, never leads, and says the Lease is unreachable", async () => {
    const log: string[] = [];
    const d = replica("agent-d", log, "another-lease");
    await d.start(new AbortController().signal);
    await new Promise((r) => setTimeout(r, 2000));
    expect(d.isLeader).toBe(false);
    expect(d.leaseReachable).toBe(false);
    expect(log).toEqual([]);
    // Its first request, a get of the Lease, is forbidden (403), so it never gets as far as a create.
    expect(await getObject(cluster.kube, `/apis/coordination.k8s.io/v1/namespaces/${AGENT_NAMESPACE}/leases/another-lease`)).toBeUndefined();
    await d.stop();
  }, 30_000);
});
