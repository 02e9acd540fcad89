// The server's hold on a cluster (suspend, #38) on the PullOutput stream, over real gRPC/mTLS:
//   - on the wire: a hold-aware agent is told the hold on subscribe, before the output, and again when it
//     changes (and only then); an older agent (no accepts_hold) is never sent one;
//   - the real relay client: an agent reconnecting to a cluster that became held meanwhile is told on
//     subscribe; an output that arrives while held is kept, not applied and not answered; on release it
//     is applied and ACKed; a server that states no hold before its output (an older one) lifts it.
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { createDiscoveryStreams } from "../../src/relay/discovery-streams.js";
import type { OutputAck, OutputUpdate } from "../../src/relay/gen/gitmesh/relay/v1/relay.js";
import type { OutputHold } from "../../src/relay/index.js";
import { createOutputDelivery } from "../../src/relay/output-delivery.js";
import { endWithStatus, type Malformed } from "../../src/relay/refusals.js";
import { certFor, clientKey, serveParts, state, testPki, until, useRelayCleanup } from "./helpers.js";

const { defer, rawClient, server, client } = useRelayCleanup();

const HOLD: OutputHold = { sinceMs: 1_700_000_000_000, by: "admin token", reason: "incident 4711", summary: "suspended since 2023-11-14T22:13:20.000Z by admin token (incident 4711)" };
const subscribe = (cluster: string, acceptsHold: boolean) => ({ cluster, version: 0, ack: false, resync: false, errors: [], report: false, repairs: [], acceptsHold });

describe("holds on the output stream", () => {
  it("tells a hold-aware agent its hold on subscribe before the output and again when it changes; an older agent is never sent one", async () => {
    const holds = new Map<string, OutputHold>([["alpha", HOLD], ["beta", HOLD]]);
    const s = await serveParts((deps) => createOutputDelivery({ ...deps, holdOf: (c) => holds.get(c) }), { defer });
    s.part.publish("alpha", { version: 1, sourceCommit: "c1", complete: true, resources: state({ a: 1 }) });
    s.part.publish("beta", { version: 1, sourceCommit: "c1", complete: true, resources: state({ a: 1 }) });

    const updates: OutputUpdate[] = [];
    const call = rawClient(s.address, certFor("alpha")).pullOutput();
    call.on("data", (u: OutputUpdate) => updates.push(u));
    call.on("error", () => undefined);
    call.write(subscribe("alpha", true));
    const older: OutputUpdate[] = [];
    const oldCall = rawClient(s.address, certFor("beta")).pullOutput();
    oldCall.on("data", (u: OutputUpdate) => older.push(u));
    oldCall.on("error", () => undefined);
    oldCall.write(subscribe("beta", false));

    await until(() => updates.length === 2 && older.length === 1, "the hold and the output");
    expect(updates[0]).toMatchObject({ version: 0, chunk: undefined, hold: { held: true, sinceMs: HOLD.sinceMs, by: "admin token", reason: "incident 4711", summary: HOLD.summary } });
    expect(updates[1]).toMatchObject({ version: 1, full: true, hold: undefined });
    expect(older[0]).toMatchObject({ version: 1, full: true, hold: undefined });

    // Nothing changed: nobody is told anything.
    s.part.holdsChanged();
    holds.delete("alpha");
    holds.delete("beta");
    s.part.holdsChanged();
    s.part.holdsChanged();
    await until(() => updates.length === 3, "the release");
    expect(updates[2]).toMatchObject({ version: 0, chunk: undefined, hold: { held: false, by: "", summary: "" } });

    // The next message is the output, not a repeated notice; the older agent got output only.
    s.part.publish("alpha", { version: 2, sourceCommit: "c2", complete: true, resources: state({ a: 2 }) });
    s.part.publish("beta", { version: 2, sourceCommit: "c2", complete: true, resources: state({ a: 2 }) });
    await until(() => updates.length === 4 && older.length === 2, "version 2");
    expect(updates[3]).toMatchObject({ version: 2, baseVersion: 1, hold: undefined });
    expect(older.every((u) => u.hold === undefined && u.chunk !== undefined)).toBe(true);

    // Held again (the fleet this time): told at once.
    holds.set("alpha", { ...HOLD, summary: `${HOLD.summary} [whole fleet]` });
    s.part.holdsChanged();
    await until(() => updates.length === 5, "the second hold");
    expect(updates[4]?.hold).toMatchObject({ held: true, summary: `${HOLD.summary} [whole fleet]` });
    call.end();
    oldCall.end();
  });

  it("the relay client: reconnecting to a held cluster it is told on subscribe; what arrives while held is kept, then applied and ACKed on release", async () => {
    const holds = new Map<string, OutputHold>();
    const s = await server({ holdOf: (c) => holds.get(c) });
    const told: (OutputHold | undefined)[] = [];
    const applied: number[] = [];
    s.server.publishOutput("alpha", { version: 1, sourceCommit: "c1", complete: true, resources: state({ a: 1 }) });
    const c = client(s.address, "alpha", {
      onHold: (h) => void told.push(h),
      onOutput: (e) => {
        applied.push(e.version);
        return { ack: true };
      },
    });
    c.connect();
    await until(() => s.server.appliedVersions().get("alpha")?.version === 1, "version 1 applied");
    // Not held: the server said so on subscribe, and nothing changed for the agent.
    expect(told).toEqual([]);
    expect(c.status().hold).toBeUndefined();

    // The cluster becomes held where this stream is not told (holdsChanged not called: as on a replica the
    // agent moves to); the agent reconnects and is told on subscribe.
    holds.set("alpha", HOLD);
    s.server.disconnect("alpha", "test: cut the streams");
    await until(() => told.length === 1, "the hold, on the new session");
    expect(c.status().sessions).toBeGreaterThanOrEqual(2);
    expect(told[0]).toEqual(HOLD);
    expect(c.status().hold).toEqual(HOLD);

    // Output that arrives while held (the full resend of the new session, then version 2) is kept, not applied or answered.
    s.server.publishOutput("alpha", { version: 2, sourceCommit: "c2", complete: true, resources: state({ a: 2 }) });
    await until(() => c.status().outputVersion === 2, "version 2 received");
    expect(applied).toEqual([1]);
    expect(s.server.appliedVersions().get("alpha")?.version).toBe(1);

    // Another reconnect while held: still held, told nothing new (the same hold).
    s.server.disconnect("alpha", "test: cut the streams again");
    await until(() => c.status().sessions >= 3 && c.status().connected, "a third session");
    await until(() => c.status().outputVersion === 2 && s.server.connectedClusters().some((x) => x.cluster === "alpha" && x.pull), "version 2 resent");
    expect(told).toHaveLength(1);
    expect(applied).toEqual([1]);

    // Released: the newest output kept is applied and ACKed.
    holds.delete("alpha");
    s.server.holdsChanged();
    await until(() => s.server.appliedVersions().get("alpha")?.version === 2, "version 2 applied after the release");
    expect(told).toEqual([HOLD, undefined]);
    expect(applied).toEqual([1, 2]);
    expect(c.status().hold).toBeUndefined();
  });

  it("the relay client: a server that states no hold before its output (one older than holds) lifts the hold", async () => {
    const holds = new Map<string, OutputHold>([["alpha", HOLD]]);
    /** false: the server behaves as one older than holds (it never sends one). */
    let speaksHolds = true;
    const s = await serveParts(
      (deps) => {
        const discovery = createDiscoveryStreams(deps);
        const output = createOutputDelivery({ ...deps, holdOf: (c) => holds.get(c) });
        const pullOutput = (call: grpc.ServerDuplexStream<OutputAck | Malformed, OutputUpdate>) => {
          const write = call.write.bind(call) as (m: OutputUpdate, cb?: () => void) => boolean;
          call.write = ((m: OutputUpdate, cb?: () => void) => (!speaksHolds && m.hold !== undefined ? true : write(m, cb))) as typeof call.write;
          output.pullOutput(call);
        };
        return { pushDiscovery: discovery.pushDiscovery, pullOutput, output };
      },
      { defer },
    );
    s.part.output.publish("alpha", { version: 1, sourceCommit: "c1", complete: true, resources: state({ a: 1 }) });
    const told: (OutputHold | undefined)[] = [];
    const applied: number[] = [];
    const c = client(s.address, "alpha", {
      credentials: { certPem: certFor("alpha"), keyPem: clientKey(), caPem: testPki().rootCaCertPem, notAfterMs: Date.now() + 3600_000 },
      onHold: (h) => void told.push(h),
      onOutput: (e) => {
        applied.push(e.version);
        return { ack: true };
      },
    }, false);
    c.connect();
    await until(() => told.length === 1 && c.status().outputVersion === 1, "the hold, then version 1 kept");
    expect(applied).toEqual([]);

    // The server is replaced by an older one: the next session states no hold before the output.
    speaksHolds = false;
    endWithStatus(s.part.output.sessions.get("alpha")!.call, { code: grpc.status.UNAVAILABLE, details: "test: server replaced" });
    await until(() => s.part.output.applied().get("alpha")?.version === 1, "version 1 applied on the new session");
    expect(told).toEqual([HOLD, undefined]);
    expect(applied).toEqual([1]);
  });
});
