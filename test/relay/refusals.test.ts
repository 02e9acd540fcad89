// The relay's refusals, pure: how a rejection is answered, logged, counted and remembered.
import * as grpc from "@grpc/grpc-js";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import { REJECTION_REASONS, RELAY_METRICS, RelayRejectedError, reasonOf } from "../../src/relay/index.js";
import { RegisterRequest } from "../../src/relay/gen/gitmesh/relay/v1/relay.js";
import { createRelayMetrics } from "../../src/relay/metrics.js";
import { assertDecoded, checkNamedCluster, createRefusals, tolerant, wireRejection, type ServiceStatus } from "../../src/relay/refusals.js";
import { WireError } from "../../src/relay/wire.js";
import { metricValue } from "./helpers.js";

function setUp() {
  const mem = createMemoryLogger("relay");
  const registry = new Registry();
  let t = 1_000;
  const refusals = createRefusals({ logger: mem.logger, metrics: createRelayMetrics(registry), now: () => t });
  const answered: ServiceStatus[] = [];
  const answer = (se: ServiceStatus) => void answered.push(se);
  return { mem, registry, refusals, answered, answer, tick: (ms: number) => (t += ms) };
}

describe("refusals", () => {
  it("answer a rejection with its status and reason trailer, log it at warn, count it, and remember it per cluster until the cluster connects", async () => {
    const { mem, registry, refusals, answered, answer, tick } = setUp();
    const err = new RelayRejectedError(REJECTION_REASONS.certificateRevoked, grpc.status.PERMISSION_DENIED, "revoked: reissue");
    refusals.refuse(err, { rpc: "PushDiscovery", cluster: "alpha" }, answer);
    tick(5);
    refusals.refuse(err, { rpc: "Register", cluster: "beta" }, answer);
    expect(answered.map((a) => [a.code, a.details, reasonOf(a)])).toEqual([
      [grpc.status.PERMISSION_DENIED, "revoked: reissue", "certificate_revoked"],
      [grpc.status.PERMISSION_DENIED, "revoked: reissue", "certificate_revoked"],
    ]);
    expect(mem.records.filter((r) => r.msg === "relay rejected a request").map((r) => [r.level, r.fields.reason, r.fields.code, r.fields.cluster])).toEqual([
      ["warn", "certificate_revoked", "PERMISSION_DENIED", "alpha"],
      ["warn", "certificate_revoked", "PERMISSION_DENIED", "beta"],
    ]);
    expect(await metricValue(registry, RELAY_METRICS.rejections, { reason: "certificate_revoked" })).toBe(2);
    // A Register refusal proves no identity: it is not kept as the cluster's refusal.
    expect([...refusals.last()]).toEqual([["alpha", { reason: "certificate_revoked", message: "revoked: reissue", atMs: 1_000 }]]);
    refusals.forget("alpha");
    expect(refusals.last().size).toBe(0);
  });

  it("answer any other error as a failure: logged at error, not counted as a rejection, not remembered", async () => {
    const { mem, registry, refusals, answered, answer } = setUp();
    refusals.refuse(new Error("boom"), { rpc: "Renew", cluster: "alpha" }, answer);
    expect(answered[0]?.code).toBe(grpc.status.INTERNAL);
    expect(answered[0]?.details).toMatch(/internal relay error: .*boom/);
    expect(mem.records.map((r) => [r.level, r.msg])).toEqual([["error", "relay request failed"]]);
    expect(await metricValue(registry, RELAY_METRICS.rejections)).toBe(0);
    expect(refusals.last().size).toBe(0);
  });

  it("end a stream with the refusal's status", () => {
    const { refusals } = setUp();
    const emitted: unknown[] = [];
    refusals.endStream({ emit: (_e, err) => emitted.push(err) > 0 }, new RelayRejectedError(REJECTION_REASONS.clusterMismatch, grpc.status.PERMISSION_DENIED, "mismatch"), { rpc: "PullOutput" });
    expect(emitted).toMatchObject([{ code: grpc.status.PERMISSION_DENIED, details: "mismatch" }]);
  });

  it("answer a unary call with the work's result, or with its refusal and the request's fields", async () => {
    const { mem, refusals } = setUp();
    const call = (request: string) => ({ request, getPeer: () => "ipv4:127.0.0.1:5" }) as unknown as grpc.ServerUnaryCall<string, string>;
    const handler = refusals.unary<string, string>("Echo", async (c, fields) => {
      fields.cluster = c.request;
      await Promise.resolve();
      if (c.request === "bad") throw new RelayRejectedError(REJECTION_REASONS.invalidRequest, grpc.status.INVALID_ARGUMENT, "bad request");
      return c.request.toUpperCase();
    });
    const answer = (request: string) => new Promise<[unknown, unknown]>((resolve) => handler(call(request), (err, res) => resolve([err, res])));
    expect(await answer("ok")).toEqual([null, "OK"]);
    const [err] = await answer("bad");
    expect(err).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: "bad request" });
    expect(mem.records.at(-1)?.fields).toMatchObject({ rpc: "Echo", peer: "ipv4:127.0.0.1:5", cluster: "bad", reason: "invalid_request" });
  });
});

describe("shared rejections", () => {
  it("a message that did not decode is refused as malformed_message naming its type; a decoded one passes", () => {
    const decode = tolerant((b) => RegisterRequest.decode(b));
    const bad = decode(Buffer.from([0xff, 0xff, 0xff]));
    expect(() => assertDecoded(bad, "RegisterRequest")).toThrow(expect.objectContaining({ reason: "malformed_message", grpcCode: grpc.status.INVALID_ARGUMENT, message: expect.stringMatching(/could not decode a RegisterRequest/) }));
    const good = decode(Buffer.from(RegisterRequest.encode({ cluster: "alpha", token: "t", csrPem: "" }).finish()));
    assertDecoded(good, "RegisterRequest");
    expect(good.cluster).toBe("alpha");
  });

  it("a message naming another cluster is refused; naming none or the caller's own passes", () => {
    expect(() => checkNamedCluster("alpha", "")).not.toThrow();
    expect(() => checkNamedCluster("alpha", "alpha")).not.toThrow();
    expect(() => checkNamedCluster("alpha", "beta")).toThrow(expect.objectContaining({ reason: "cluster_mismatch", grpcCode: grpc.status.PERMISSION_DENIED }));
  });

  it("wire errors become too-large or malformed rejections; anything else passes through", () => {
    expect(wireRejection(new WireError("too_large", "big"))).toMatchObject({ reason: "message_too_large", grpcCode: grpc.status.RESOURCE_EXHAUSTED, message: "big" });
    expect(wireRejection(new WireError("malformed", "order"))).toMatchObject({ reason: "malformed_message", grpcCode: grpc.status.INVALID_ARGUMENT });
    const other = new Error("x");
    expect(wireRejection(other)).toBe(other);
  });
});
