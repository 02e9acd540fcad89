// Discovery streams on their own: the pure decision for one assembled update, and the push stream over
// real mTLS (full then delta, resync, a store that fails, a newer stream replacing an older one).
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { RELAY_METRICS, encodeChunks, stateChecksum } from "../../src/relay/index.js";
import type { DiscoveryAck, DiscoveryUpdate } from "../../src/relay/gen/gitmesh/relay/v1/relay.js";
import { createDiscoveryStreams, decideDiscoveryUpdate, type DiscoveryEvent } from "../../src/relay/discovery-streams.js";
import { certFor, metricValue, serveParts, state, statusOf, until, useRelayCleanup } from "./helpers.js";

const { defer, rawClient } = useRelayCleanup();

describe("decideDiscoveryUpdate (pure)", () => {
  const s1 = state({ a: 1 });
  const prev = { version: 1, checksum: stateChecksum(s1), state: s1 };
  const decide = (update: Partial<DiscoveryUpdate>, delta: { upserts: Map<string, Uint8Array>; removed?: string[] }, opts: { prev?: typeof prev | undefined; awaitingFull?: boolean; maxDiscoveryBytes?: number } = {}) =>
    decideDiscoveryUpdate({
      cluster: "alpha",
      update: { version: 2, full: false, baseVersion: 1, checksum: "", ...update },
      delta: { upserts: delta.upserts, removed: delta.removed ?? [] },
      prev: "prev" in opts ? opts.prev : prev,
      awaitingFull: opts.awaitingFull ?? false,
      maxDiscoveryBytes: opts.maxDiscoveryBytes ?? 1 << 20,
    });

  it("accepts a full snapshot whose checksum matches, and a delta on the current version", () => {
    expect(decide({ full: true, baseVersion: 0, checksum: stateChecksum(s1), version: 1 }, { upserts: s1 }, { prev: undefined, awaitingFull: true }).accept).toMatchObject({ version: 1, checksum: stateChecksum(s1) });
    const after = state({ a: 1, b: 2 });
    const d = decide({ checksum: stateChecksum(after) }, { upserts: state({ b: 2 }) });
    expect([...(d.accept?.state.keys() ?? [])]).toEqual(["a", "b"]);
  });

  it("asks for a resync for a delta before a full snapshot, on another base version, or whose result differs", () => {
    expect(decide({}, { upserts: state({}) }, { prev: undefined }).resync).toMatch(/full snapshot is required/);
    expect(decide({}, { upserts: state({}) }, { awaitingFull: true }).resync).toMatch(/full snapshot is required/);
    expect(decide({ baseVersion: 7 }, { upserts: state({}) }).resync).toMatch(/based on version 7 but the server has version 1/);
    expect(decide({ checksum: "0".repeat(64) }, { upserts: state({ b: 2 }) }).resync).toMatch(/checksum mismatch after applying delta 2/);
  });

  it("refuses a full snapshot that removes keys or whose checksum does not match, and a state above the per-cluster limit", () => {
    expect(() => decide({ full: true }, { upserts: s1, removed: ["x"] })).toThrow(expect.objectContaining({ reason: "malformed_message" }));
    expect(() => decide({ full: true, checksum: "0".repeat(64) }, { upserts: s1 })).toThrow(expect.objectContaining({ reason: "checksum_mismatch", grpcCode: grpc.status.INVALID_ARGUMENT }));
    expect(() => decide({ full: true, checksum: stateChecksum(s1) }, { upserts: s1 }, { maxDiscoveryBytes: 1 })).toThrow(expect.objectContaining({ reason: "message_too_large", message: expect.stringMatching(/would be 2 bytes decompressed, above the server's limit of 1 bytes/) }));
  });
});

describe("discovery streams over mTLS", () => {
  async function setUp(onDiscovery?: (e: DiscoveryEvent) => void | Promise<void>) {
    const connects: string[] = [];
    const s = await serveParts((deps) => createDiscoveryStreams({ ...deps, onDiscovery, onConnect: (c, k) => void connects.push(`+${c}/${k}`), onDisconnect: (c, k) => void connects.push(`-${c}/${k}`) }), { defer });
    const open = (cluster: string) => {
      const call = rawClient(s.address, certFor(cluster)).pushDiscovery();
      const acks: DiscoveryAck[] = [];
      call.on("data", (a: DiscoveryAck) => acks.push(a));
      const ended = statusOf(call);
      const send = (u: Omit<DiscoveryUpdate, "chunk" | "cluster">, upserts: Map<string, Uint8Array>, removed: string[] = []) => {
        for (const chunk of encodeChunks({ upserts, removed }, 64)) call.write({ cluster, ...u, chunk });
      };
      return { call, acks, ended, send };
    };
    return { ...s, open, connects };
  }

  it("accepts a full snapshot in chunks then a delta, keeps the state after the stream ends, and reports warm-up and connection", async () => {
    const events: DiscoveryEvent[] = [];
    const s = await setUp((e) => void events.push(e));
    const a = s.open("alpha");
    const full = state({ "service/ns/a": { port: 80 }, "service/ns/b": { port: 81 } });
    a.send({ version: 1, baseVersion: 0, full: true, checksum: stateChecksum(full) }, full);
    const next = state({ "service/ns/b": { port: 81 }, "service/ns/c": { port: 82 } });
    a.send({ version: 2, baseVersion: 1, full: false, checksum: stateChecksum(next) }, state({ "service/ns/c": { port: 82 } }), ["service/ns/a"]);
    await until(() => a.acks.length === 2, "two acks");
    expect(a.acks.map((x) => [x.version, x.resync, x.checksum])).toEqual([[1, false, stateChecksum(full)], [2, false, stateChecksum(next)]]);
    expect(events.map((e) => [e.version, e.full, [...e.delta.upserts.keys()], e.delta.removed])).toEqual([
      [1, true, ["service/ns/a", "service/ns/b"], []],
      [2, false, ["service/ns/c"], ["service/ns/a"]],
    ]);
    expect(s.part.sessions.get("alpha")?.warmed).toBe(true);
    expect(await metricValue(s.registry, RELAY_METRICS.pushClientsWarmed, { cluster: "alpha" })).toBe(1);
    a.call.end();
    await until(() => s.part.sessions.get("alpha") === undefined, "the stream closed");
    expect(s.part.state("alpha")?.checksum).toBe(stateChecksum(next));
    expect(await metricValue(s.registry, RELAY_METRICS.pushClientsWarmed, { cluster: "alpha" })).toBe(0);
    expect(s.connects).toEqual(["+alpha/push", "-alpha/push"]);
  });

  it("asks for a resync when the store fails, and ignores deltas until the next full snapshot", async () => {
    let fail = true;
    const s = await setUp(() => {
      if (fail) throw new Error("redis down");
    });
    const b = s.open("beta");
    const s1 = state({ x: 1 });
    b.send({ version: 1, baseVersion: 0, full: true, checksum: stateChecksum(s1) }, s1);
    await until(() => b.acks.length === 1, "resync ack");
    expect(b.acks[0]).toMatchObject({ version: 1, resync: true, message: "the server could not store the update" });
    fail = false;
    b.send({ version: 2, baseVersion: 1, full: false, checksum: stateChecksum(state({ x: 1, y: 2 })) }, state({ y: 2 }));
    b.send({ version: 3, baseVersion: 0, full: true, checksum: stateChecksum(s1) }, s1);
    await until(() => b.acks.length === 3, "three acks");
    expect(b.acks.map((x) => [x.version, x.resync])).toEqual([[1, true], [2, true], [3, false]]);
    expect(s.part.state("beta")?.version).toBe(3);
  });

  it("a newer stream of the same cluster replaces the older one (ABORTED); a refused update ends only its stream", async () => {
    const s = await setUp();
    const first = s.open("gamma");
    await until(() => s.part.sessions.get("gamma") !== undefined, "first stream accepted");
    const second = s.open("gamma");
    expect(await first.ended).toMatchObject({ code: grpc.status.ABORTED, details: expect.stringMatching(/replaced by a newer discovery stream/) });
    const s1 = state({ k: 1 });
    second.send({ version: 1, baseVersion: 0, full: true, checksum: "0".repeat(64) }, s1);
    expect(await second.ended).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringMatching(/checksum of a full snapshot/) });
    expect(s.part.state("gamma")).toBeUndefined();
    expect([...s.part.sessions.clusters()]).toEqual([]);
  });
});
