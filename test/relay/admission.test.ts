// The relay admits (re)connecting agents at a bounded rate (#35 item 1): a token bucket in front of
// registrations and discovery streams; the excess gets RESOURCE_EXHAUSTED with a retry hint that the
// client honours with jitter. Counts come from the server's events and metrics, never from timings.
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { createAdmission } from "../../src/relay/admission.js";
import { RelayBusyError, retryAfterOf, toServiceError } from "../../src/relay/errors.js";
import { backoffDelay } from "../../src/core/index.js";
import { reconnectDelay, REJECTION_REASONS, RELAY_METRICS } from "../../src/relay/index.js";
import { certFor, clientKey, metricValue, testPki, until, useRelayCleanup } from "./helpers.js";

const relay = useRelayCleanup();

describe("admission (token bucket)", () => {
  it("admits the burst, then the rate; the refused get a hint sized to everyone waiting", () => {
    let t = 0;
    const a = createAdmission({ ratePerSecond: 10, burst: 3, now: () => t });
    for (const c of ["a", "b", "c"]) a.admit(c);
    const refused = (c: string) => {
      try {
        a.admit(c);
        return undefined;
      } catch (err) {
        expect(err).toBeInstanceOf(RelayBusyError);
        return (err as RelayBusyError).retryAfterMs;
      }
    };
    const first = refused("d");
    const second = refused("e");
    expect(first).toBeGreaterThan(0);
    // Two waiting take longer to admit than one.
    expect(second).toBeGreaterThan(first!);
    t += 100; // one token at 10/s
    expect(refused("d")).toBeUndefined();
    expect(refused("f")).toBeGreaterThan(0);
    // The wire form: RESOURCE_EXHAUSTED, reason and hint in the trailers.
    const se = toServiceError(new RelayBusyError("busy", 1234));
    expect(se.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(retryAfterOf(se)).toBe(1234);
  });

  it("rate 0 admits everyone", () => {
    const a = createAdmission({ ratePerSecond: 0, burst: 1 });
    for (let i = 0; i < 1000; i++) a.admit(`c${String(i)}`);
  });
});

describe("admission through the real relay", () => {
  it("many clients at once: all end connected, never more admitted per window than the rate allows", async () => {
    const CLIENTS = 60;
    const RATE = 20;
    const BURST = 5;
    const admittedAt: number[] = [];
    const s = await relay.server({ admission: { ratePerSecond: RATE, burst: BURST }, onConnect: (_c, stream) => { if (stream === "push") admittedAt.push(Date.now()); } });
    const caPem = testPki().rootCaCertPem;
    const clients = Array.from({ length: CLIENTS }, (_, i) => {
      const cluster = `load-${String(i)}`;
      return relay.client(s.address, cluster, { credentials: { certPem: certFor(cluster), keyPem: clientKey(), caPem, notAfterMs: Date.now() + 3600_000 }, renewAtFraction: 0 }, false);
    });
    for (const c of clients) c.connect();
    await until(() => s.server.connectedClusters().filter((x) => x.push && x.pull && x.warmed).length === CLIENTS, "every client connected", 180_000);
    // The excess was refused, with the reason counted.
    const refused = await metricValue(s.registry, RELAY_METRICS.rejections, { reason: REJECTION_REASONS.admissionLimited });
    expect(refused).toBeGreaterThan(0);
    expect(admittedAt.length).toBe(CLIENTS);
    // In any one-second window: at most the burst plus one second's tokens (+1 for the window's edges).
    admittedAt.sort((a, b) => a - b);
    for (let i = 0; i < admittedAt.length; i++) {
      const inWindow = admittedAt.filter((t) => t >= admittedAt[i]! && t < admittedAt[i]! + 1000).length;
      expect(inWindow).toBeLessThanOrEqual(BURST + RATE + 1);
    }
    // A busy refusal is not the cluster's refusal: nothing shows as cut off.
    expect(s.server.refusals().size).toBe(0);
  }, 240_000);
});

describe("reconnect jitter", () => {
  it("delays differ between clients (seeded random), and stay within ± jitter of the base", () => {
    const seeded = (seed: number) => () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const options = { initialMs: 500, maxMs: 30_000, factor: 2, jitter: 0.2 };
    const delays = [1, 2, 3, 4, 5].map((seed) => backoffDelay(options, 3, seeded(seed)));
    expect(new Set(delays.map((d) => Math.round(d))).size).toBe(delays.length);
    for (const d of delays) {
      expect(d).toBeGreaterThanOrEqual(4000 * 0.8);
      expect(d).toBeLessThanOrEqual(4000 * 1.2);
    }
  });

  it("a busy server's hint: clients refused together come back spread over ½–1½ of it; without one, backoff", () => {
    const seeded = (seed: number) => () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const backoff = { initialMs: 500, maxMs: 30_000, factor: 2, jitter: 0.2 };
    const hinted = Array.from({ length: 20 }, (_, i) => reconnectDelay(2000, backoff, 5, seeded(i + 1)));
    expect(new Set(hinted.map((d) => Math.round(d))).size).toBe(hinted.length);
    for (const d of hinted) {
      expect(d).toBeGreaterThanOrEqual(1000);
      expect(d).toBeLessThanOrEqual(3000);
    }
    // The hint replaces the backoff (attempt 5 would be 16 s ± 20 %).
    expect(Math.max(...hinted)).toBeLessThan(16_000 * 0.8);
    expect(reconnectDelay(undefined, backoff, 0, () => 0.5)).toBe(500);
  });
});
