// core's health endpoint over a real socket: what the agent and `gitmesh worker` serve on their HTTP port.
import { Counter, Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { createHealthEndpoint, createMemoryLogger, type HealthEndpoint } from "../../src/core/index.js";

describe("health endpoint", () => {
  let endpoint: HealthEndpoint | undefined;
  afterEach(async () => {
    await endpoint?.stop();
    endpoint = undefined;
  });
  const get = async (path: string, method = "GET") => {
    const res = await fetch(`http://127.0.0.1:${String(endpoint!.port)}${path}`, { method });
    return { status: res.status, type: res.headers.get("content-type"), body: await res.text() };
  };

  it("answers /healthz, /readyz with the current reason, /metrics from the registry, 404 and 405", async () => {
    const registry = new Registry();
    new Counter({ name: "test_things_total", help: "things", registers: [registry] }).inc(3);
    let reason: string | undefined = "informers not synced";
    endpoint = createHealthEndpoint({ port: 0, host: "127.0.0.1", registry, notReadyReason: () => reason, logger: createMemoryLogger("t").logger, notFound: "not found: a test (/healthz)\n" });
    await endpoint.start();
    expect(endpoint.port).toBeGreaterThan(0);
    expect(await get("/healthz")).toEqual({ status: 200, type: "text/plain; charset=utf-8", body: "ok\n" });
    expect(await get("/readyz")).toMatchObject({ status: 503, body: "not ready: informers not synced\n" });
    reason = undefined;
    expect(await get("/readyz?verbose")).toMatchObject({ status: 200, body: "ok\n" });
    const metrics = await get("/metrics");
    expect(metrics.status).toBe(200);
    expect(metrics.type).toBe(registry.contentType);
    expect(metrics.body).toContain("test_things_total 3");
    expect(await get("/elsewhere")).toMatchObject({ status: 404, body: "not found: a test (/healthz)\n" });
    expect(await get("/healthz", "POST")).toMatchObject({ status: 405, body: "method not allowed\n" });
  });

  it("a failing metrics collection is a 500 and an error log; stop closes the port", async () => {
    const mem = createMemoryLogger("t");
    endpoint = createHealthEndpoint({ port: 0, host: "127.0.0.1", registry: { contentType: "text/plain", metrics: () => Promise.reject(new Error("collector broke")) }, notReadyReason: () => undefined, logger: mem.logger });
    await endpoint.start();
    expect(await get("/metrics")).toMatchObject({ status: 500, body: "metrics collection failed\n" });
    expect(mem.records.some((r) => r.msg === "metrics collection failed" && JSON.stringify(r).includes("collector broke"))).toBe(true);
    const port = endpoint.port;
    expect(await get("/healthz")).toMatchObject({ status: 200 });
    await endpoint.stop();
    await expect(fetch(`http://127.0.0.1:${String(port)}/healthz`)).rejects.toThrow();
  });

  it("start rejects when the port is taken", async () => {
    endpoint = createHealthEndpoint({ port: 0, host: "127.0.0.1", registry: new Registry(), notReadyReason: () => undefined, logger: createMemoryLogger("t").logger });
    await endpoint.start();
    const second = createHealthEndpoint({ port: endpoint.port!, host: "127.0.0.1", registry: new Registry(), notReadyReason: () => undefined, logger: createMemoryLogger("t").logger });
    await expect(second.start()).rejects.toMatchObject({ code: "EADDRINUSE" });
  });
});
