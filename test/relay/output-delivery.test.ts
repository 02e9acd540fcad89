// Output delivery on its own: the pure bound on drift reports, and the pull stream over real mTLS
// (full on subscribe, deltas after, ACK/NACK and applied versions, resync on request).
import { describe, expect, it } from "vitest";
import type { OutputUpdate } from "../../src/relay/gen/gitmesh/relay/v1/relay.js";
import { DRIFT_LIMITS, boundDriftRepairs, createOutputDelivery, type OutputAckEvent, type OutputNackEvent } from "../../src/relay/output-delivery.js";
import { certFor, serveParts, state, until, useRelayCleanup } from "./helpers.js";

const { defer, rawClient } = useRelayCleanup();

describe("boundDriftRepairs (pure)", () => {
  it("keeps at most DRIFT_LIMITS, cuts long strings, and never dates a repair after now", () => {
    const many = Array.from({ length: 80 }, (_, i) => ({ key: `k${i}`.padEnd(400, "x"), why: i % 2 ? "deleted" : "weird", atMs: i === 0 ? 9e15 : i === 1 ? -1 : 5, managers: Array.from({ length: 9 }, () => "m".repeat(200)) }));
    const out = boundDriftRepairs(many, 1000);
    expect(out).toHaveLength(DRIFT_LIMITS.repairs);
    expect(out[0]).toMatchObject({ why: "changed", atMs: 1000 });
    expect(out[1]).toMatchObject({ why: "deleted", atMs: 1000 });
    expect(out[2]?.atMs).toBe(5);
    expect(out[0]?.key).toHaveLength(DRIFT_LIMITS.keyChars);
    expect(out[0]?.managers).toHaveLength(DRIFT_LIMITS.managers);
    expect(out[0]?.managers[0]).toHaveLength(DRIFT_LIMITS.managerChars);
  });
});

describe("output delivery over mTLS", () => {
  it("sends the latest output in full on subscribe, then deltas; records ACKs as applied versions and reports NACKs; resends in full on resync", async () => {
    const acks: OutputAckEvent[] = [];
    const nacks: OutputNackEvent[] = [];
    const s = await serveParts((deps) => createOutputDelivery({ ...deps, onAck: (e) => void acks.push(e), onNack: (e) => void nacks.push(e) }), { defer });
    s.part.publish("alpha", { version: 1, sourceCommit: "c1", complete: true, resources: state({ a: 1, b: 2 }) });
    const call = rawClient(s.address, certFor("alpha")).pullOutput();
    const updates: OutputUpdate[] = [];
    call.on("data", (u: OutputUpdate) => updates.push(u));
    call.on("error", () => undefined);
    call.write({ cluster: "alpha", version: 0, ack: false, resync: false, errors: [], report: false, repairs: [], acceptsHold: false });
    await until(() => updates.length === 1, "the full output");
    expect(updates[0]).toMatchObject({ version: 1, baseVersion: 0, full: true, complete: true, sourceCommit: "c1" });
    call.write({ cluster: "alpha", version: 1, ack: true, resync: false, errors: [], report: false, repairs: [], acceptsHold: false });
    await until(() => acks.length === 1, "ack of version 1");
    expect(s.part.applied().get("alpha")).toMatchObject({ version: 1, sourceCommit: "c1" });

    s.part.publish("alpha", { version: 2, sourceCommit: "c2", complete: false, resources: state({ a: 1, b: 3 }) });
    await until(() => updates.length === 2, "the delta");
    expect(updates[1]).toMatchObject({ version: 2, baseVersion: 1, full: false, sourceCommit: "c2" });
    call.write({ cluster: "alpha", version: 2, ack: false, resync: false, errors: [{ key: "b", message: "denied" }], report: false, repairs: [], acceptsHold: false });
    call.write({ cluster: "alpha", version: 99, ack: true, resync: false, errors: [], report: false, repairs: [], acceptsHold: false });
    await until(() => nacks.length === 1, "nack of version 2");
    expect(nacks[0]).toMatchObject({ cluster: "alpha", version: 2, sourceCommit: "c2", errors: [{ key: "b", message: "denied" }] });
    expect(s.part.applied().get("alpha")?.version).toBe(1);
    call.write({ cluster: "alpha", version: 2, ack: false, resync: true, errors: [], report: false, repairs: [], acceptsHold: false });
    await until(() => updates.length === 3, "the full resend");
    expect(updates[2]).toMatchObject({ version: 2, full: true, baseVersion: 0 });
    expect(s.mem.records.some((r) => r.msg.startsWith("agent acknowledged an output version this stream did not send"))).toBe(true);
    call.end();
  });
});
