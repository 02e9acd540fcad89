import { describe, expect, it } from "vitest";
import { diffSnapshots, emptySnapshot, snapshotEntries, type DiscoverySnapshot } from "../../src/discovery/index.js";
import { applyStateDelta, diffStates, relayStateFromSnapshot, snapshotFromRelayState, stateChecksum } from "../../src/relay/index.js";

function snapshot(ports: number[]): DiscoverySnapshot {
  return {
    ...emptySnapshot("east"),
    namespaces: [{ name: "shop", labels: { "istio-injection": "enabled" } }],
    services: ports.map((port, i) => ({ name: `svc-${i}`, namespace: "shop", labels: { app: `svc-${i}` }, ports: [{ name: "http", port, protocol: "TCP" }] })),
  } as unknown as DiscoverySnapshot; // only the fields the entry keys need
}

describe("discovery snapshot ⇄ relay state", () => {
  it("round-trips, and a delta of relay states matches the discovery delta", () => {
    const a = snapshot([80, 81]);
    const b = snapshot([80, 82, 83]);
    const sa = relayStateFromSnapshot(a);
    expect([...sa.keys()]).toEqual([...snapshotEntries(a).keys()]);
    const back = snapshotFromRelayState(sa, "east");
    expect(back.ok && stateChecksum(relayStateFromSnapshot(back.snapshot))).toBe(stateChecksum(sa));
    const sb = relayStateFromSnapshot(b);
    const delta = diffStates(sa, sb);
    const d = diffSnapshots(a, b);
    expect([...delta.upserts.keys()].sort()).toEqual([...d.added, ...d.changed].map((e) => e.key).sort());
    expect(delta.removed).toEqual([...d.removed]);
    expect(stateChecksum(applyStateDelta(sa, delta))).toBe(stateChecksum(sb));
  });

  it("the agent's encoding (entries → JSON bytes) gives the same checksum as the helper", () => {
    const s = snapshot([80]);
    const agentStyle = new Map([...snapshotEntries(s)].map(([k, v]) => [k, new TextEncoder().encode(JSON.stringify(v))]));
    expect(stateChecksum(agentStyle)).toBe(stateChecksum(relayStateFromSnapshot(s)));
  });

  it("reports bad JSON and a header naming another cluster instead of throwing", () => {
    const s = relayStateFromSnapshot(snapshot([80]));
    const bad = new Map(s).set("service/shop/svc-0", new TextEncoder().encode("{not json"));
    const r1 = snapshotFromRelayState(bad, "east");
    expect(r1.ok).toBe(false);
    expect(!r1.ok && r1.message).toMatch(/service\/shop\/svc-0.*not UTF-8 JSON/);
    const r2 = snapshotFromRelayState(s, "west");
    expect(!r2.ok && r2.message).toMatch(/names cluster "east" but was sent with the certificate of cluster "west"/);
  });
});
