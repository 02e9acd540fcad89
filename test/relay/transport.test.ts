// The relay's gRPC listener on its own (real TLS on 127.0.0.1:0): it serves the handlers it is given,
// hands undecodable requests to them instead of failing, and reports grpc-js's size refusals as relay refusals.
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { RELAY_METRICS } from "../../src/relay/index.js";
import type { CertificateResponse, RegisterRequest } from "../../src/relay/gen/gitmesh/relay/v1/relay.js";
import { assertDecoded, type Malformed } from "../../src/relay/refusals.js";
import { certFor, channelOptions, metricValue, registrationClient, rejectionsLogged, serveParts, testPki, useRelayCleanup, type PartDeps } from "./helpers.js";

const { defer, rawClient } = useRelayCleanup();

/** Register only: echoes the cluster it was sent. */
const echoRegister = ({ refusals }: PartDeps) => ({
  register: refusals.unary<RegisterRequest | Malformed, CertificateResponse>("Register", (call) => {
    const req = call.request;
    assertDecoded(req, "RegisterRequest");
    return Promise.resolve({ certificatePem: req.cluster, caPem: "", notAfterMs: 1 });
  }),
});

function unary<Res>(send: (cb: (err: grpc.ServiceError | null, res: Res) => void) => void): Promise<Res> {
  return new Promise((resolve, reject) => send((err, res) => (err ? reject(err) : resolve(res))));
}

describe("relay transport", () => {
  it("serves the handlers it is given over TLS; the other RPCs answer UNIMPLEMENTED", async () => {
    const s = await serveParts(echoRegister, { defer });
    const reg = registrationClient(s.address);
    defer(() => reg.close());
    expect(await unary<CertificateResponse>((cb) => reg.register({ cluster: "alpha", token: "", csrPem: "" }, cb))).toMatchObject({ certificatePem: "alpha" });
    const relay = rawClient(s.address, certFor("alpha"));
    await expect(unary((cb) => relay.renew({ cluster: "alpha", csrPem: "" }, cb))).rejects.toMatchObject({ code: grpc.status.UNIMPLEMENTED });
    await expect(s.transport.start()).rejects.toThrow(/already started/);
  });

  it("hands a request that does not decode to the handler, which refuses it as malformed (not grpc-js's bare INTERNAL)", async () => {
    const s = await serveParts(echoRegister, { defer });
    const raw = new grpc.Client(s.address, grpc.credentials.createSsl(Buffer.from(testPki().rootCaCertPem)), channelOptions);
    defer(() => raw.close());
    const err = await unary((cb) =>
      raw.makeUnaryRequest("/gitmesh.relay.v1.Registration/Register", (b: Buffer) => b, (b: Buffer) => b, Buffer.from([0xff, 0xff, 0xff, 0xff]), cb),
    ).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringMatching(/could not decode a RegisterRequest/) });
    expect(rejectionsLogged(s, "malformed_message")).toHaveLength(1);
  });

  it("reports a message above maxMessageBytes as a relay refusal: the limit and the fix, logged with the caller's cluster, counted", async () => {
    const s = await serveParts(echoRegister, { defer, maxMessageBytes: 64 * 1024 });
    const relay = rawClient(s.address, certFor("alpha"));
    const err = await unary((cb) => relay.renew({ cluster: "alpha", csrPem: "x".repeat(100 * 1024) }, cb)).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED, details: expect.stringMatching(/max message size of 65536 bytes; lower the agent's chunk size/) });
    expect(rejectionsLogged(s, "message_too_large").map((r) => r.fields.cluster)).toEqual(["alpha"]);
    expect(await metricValue(s.registry, RELAY_METRICS.rejections, { reason: "message_too_large" })).toBe(1);
  });

  it("stops: the port is released, a second stop does nothing", async () => {
    const s = await serveParts(echoRegister);
    expect(s.transport.serving).toBe(true);
    await s.transport.stop();
    await s.transport.stop();
    expect(s.transport.serving).toBe(false);
    const reg = registrationClient(s.address);
    defer(() => reg.close());
    const err = await unary((cb) => reg.register({ cluster: "alpha", token: "", csrPem: "" }, new grpc.Metadata(), { deadline: Date.now() + 2000 }, cb)).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: grpc.status.UNAVAILABLE });
  });
});
