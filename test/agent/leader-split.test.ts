// Leader election that cannot split (gitmesh issue #12, point 7): whole agents with a real relay;
// agent A reaches the API through a proxy that stalls (holds requests and watch streams), agent B
// directly.
import { afterEach, describe, expect, it } from "vitest";
import { KubeConfig } from "@kubernetes/client-node";
import { eventually } from "../helpers/kube.js";
import { metricValue, vs } from "./helpers.js";
import { startRelayEnv, type RelayEnv } from "./relay-env.js";
import { startStallProxy, type StallProxy } from "./stall-proxy.js";

let env: RelayEnv | undefined;
let proxy: StallProxy | undefined;
afterEach(async () => {
  proxy?.release();
  await env?.stop();
  await proxy?.stop();
  env = undefined;
  proxy = undefined;
});

function viaProxy(e: RelayEnv, url: string): KubeConfig {
  const o = e.kube.emulator.kubeconfigObject();
  const kc = new KubeConfig();
  kc.loadFromString(JSON.stringify({ ...o, clusters: o.clusters.map((c) => ({ ...c, cluster: { ...c.cluster, server: url } })) }));
  return kc;
}

const readyz = async (port: number | undefined) => {
  const r = await fetch(`http://127.0.0.1:${String(port)}/readyz`);
  return { code: r.status, text: await r.text() };
};
/** Like eventually, for an async probe. */
async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
const lease = (e: RelayEnv) => e.kube.emulator.get("coordination.k8s.io/v1", "Lease", "gitmesh", "gitmesh-agent")?.spec as { holderIdentity?: string; renewTime?: string; leaseTransitions?: number } | undefined;
const holder = (e: RelayEnv) => (e.kube.emulator.get("coordination.k8s.io/v1", "Lease", "gitmesh", "gitmesh-agent")?.spec as { holderIdentity?: string } | undefined)?.holderIdentity;

describe("leader election that cannot split", () => {
  it("renewal does not wait for start-up: a leader whose informers stall keeps its Lease, and the standby stays standby", async () => {
    env = await startRelayEnv();
    const e = env;
    proxy = await startStallProxy(e.kube.url);
    // discovery's lists and watches hang; the Lease goes through
    proxy.stall((r) => /\/(pods|services|nodes|namespaces)(\?|$)/.test(r.path));
    // timings with room for a loaded machine: lease 3 s, renew deadline 2 s, retry 0.3 s
    const timings = { leaseDurationMs: "3000", renewDeadlineMs: "2000", retryPeriodMs: "300" };
    const a = e.agent("agent-a", { kc: viaProxy(e, proxy.url), ...timings });
    await a.start();
    await eventually("a leads", () => a.isLeader, 10_000);
    const b = e.agent("agent-b", timings);
    await b.start();
    // well past the lease duration: the old code stopped renewing here and b took over
    await new Promise((r) => setTimeout(r, 7000));
    expect(holder(e)).toBe("agent-a");
    expect(a.isLeader).toBe(true);
    expect(b.isLeader).toBe(false);
    expect(await readyz(a.httpPort)).toEqual({ code: 503, text: "not ready: informers have not listed yet\n" });
    // start-up completes once the API answers
    proxy.release();
    await until("a ready", async () => (await readyz(a.httpPort)).code === 200);
  }, 60_000);

  it("a leader that cannot reach the API stops leading at its renew deadline (not leader, not ready, stops applying); the standby takes over", async () => {
    env = await startRelayEnv();
    const e = env;
    proxy = await startStallProxy(e.kube.url);
    const a = e.agent("agent-a", { kc: viaProxy(e, proxy.url) });
    await a.start();
    await until("a leads and is ready", async () => a.isLeader && (await readyz(a.httpPort)).code === 200);
    const b = e.agent("agent-b");
    await b.start();
    expect((await e.publish(1, [vs("r1", "bookinfo", "r1")])).ack).toBe(true);

    // the API hangs for a (requests held, watches silent)
    proxy.stall();
    await eventually("a steps down", () => !a.isLeader, 5_000);
    expect(await metricValue(e.registries.get(a)!, "gitmesh_agent_leader")).toBe(0);
    const r = await readyz(a.httpPort);
    expect(r.code).toBe(503);
    expect(r.text).toContain("leader Lease gitmesh/gitmesh-agent could not be read or renewed");
    expect(e.logs.get(a)!.records.some((x) => x.msg === "stopped leading" && JSON.stringify(x).includes("renew deadline"))).toBe(true);
    await eventually("b takes over", () => b.isLeader && holder(e) === "agent-b", 10_000);
    expect(a.isLeader).toBe(false);

    // b applies; a, cut off, never becomes leader again while stalled
    await eventually("b connected", () => b.relayLink?.connected, 20_000);
    expect((await e.publish(2, [vs("r1", "bookinfo", "r1"), vs("r2", "bookinfo", "r2")])).ack).toBe(true);
    expect(e.kube.emulator.get("networking.istio.io/v1", "VirtualService", "bookinfo", "r2")).toBeDefined();
    expect(a.isLeader).toBe(false);
  }, 60_000);

  it("renewal never waits behind apply: while an apply hangs longer than a whole lease, the leader keeps renewing, keeps its term, and the apply completes after", async () => {
    env = await startRelayEnv();
    const e = env;
    proxy = await startStallProxy(e.kube.url);
    const timings = { leaseDurationMs: "3000", renewDeadlineMs: "2000", retryPeriodMs: "300" };
    const a = e.agent("agent-a", { kc: viaProxy(e, proxy.url), ...timings });
    await a.start();
    await until("a leads and is ready", async () => a.isLeader && (await readyz(a.httpPort)).code === 200);
    const b = e.agent("agent-b", timings);
    await b.start();
    expect((await e.publish(1, [vs("r1", "bookinfo", "r1")])).ack).toBe(true);
    const transitions = lease(e)?.leaseTransitions;

    // the API holds a's writes of VirtualServices (server-side apply PATCHes): the apply of v2 hangs
    proxy.stall((r) => r.method === "PATCH" && r.path.includes("/virtualservices/"));
    const applied = e.publish(2, [vs("r1", "bookinfo", "r1"), vs("r2", "bookinfo", "r2")]);
    await eventually("the apply hangs on the API", () => proxy!.held > 0, 10_000);
    const hungAt = Date.parse(lease(e)!.renewTime!);
    // renewals go on past a whole lease duration while the apply still hangs
    await eventually("renewed for longer than a lease during the apply", () => Date.parse(lease(e)!.renewTime!) - hungAt > 3000 + 300, 20_000);
    expect(proxy.held).toBeGreaterThan(0);
    expect(a.isLeader).toBe(true);
    expect(b.isLeader).toBe(false);
    expect(lease(e)).toMatchObject({ holderIdentity: "agent-a", leaseTransitions: transitions });
    expect(e.logs.get(a)!.records.some((x) => x.msg === "stopped leading")).toBe(false);

    proxy.release();
    expect((await applied).ack).toBe(true);
    expect(e.kube.emulator.get("networking.istio.io/v1", "VirtualService", "bookinfo", "r2")).toBeDefined();
  }, 60_000);
});
