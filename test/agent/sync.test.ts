// What counts as drift: the live object must hold every field the agent applied; what the API server
// adds on its own (defaults, also inside list items of built-in kinds) is not drift.
import { describe, expect, it } from "vitest";
import { containsFields, inSync, type KubeObject } from "../../src/agent/index.js";

const service = (ports: unknown[]): KubeObject => ({ apiVersion: "v1", kind: "Service", metadata: { name: "gw", namespace: "istio-gateways", labels: { "gitmesh.io/managed": "true" } }, spec: { type: "LoadBalancer", ports } });

describe("containsFields / inSync", () => {
  it("a list item the API server completed with defaults is in sync", () => {
    const want = service([{ name: "http2", port: 80, targetPort: 8080 }]);
    const live = service([{ name: "http2", port: 80, targetPort: 8080, protocol: "TCP", nodePort: 31380 }]);
    expect(inSync(live, want)).toBe(true);
  });

  it("in a custom resource (no server defaults), a key added inside a list item is drift", () => {
    const vs = (http: unknown[]): KubeObject => ({ apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: "r", namespace: "ns" }, spec: { hosts: ["r"], http } });
    expect(inSync(vs([{ route: [{ destination: { host: "r" } }], fault: { abort: { httpStatus: 503 } } }]), vs([{ route: [{ destination: { host: "r" } }] }]))).toBe(false);
  });

  it("a changed, missing, extra or reordered list item is drift", () => {
    const want = service([{ name: "http2", port: 80 }, { name: "https", port: 443 }]);
    expect(inSync(service([{ name: "http2", port: 8080 }, { name: "https", port: 443 }]), want)).toBe(false);
    expect(inSync(service([{ name: "http2", port: 80 }]), want)).toBe(false);
    expect(inSync(service([{ name: "http2", port: 80 }, { name: "https", port: 443 }, { name: "x", port: 1 }]), want)).toBe(false);
    expect(inSync(service([{ name: "https", port: 443 }, { name: "http2", port: 80 }]), want)).toBe(false);
  });

  it("scalars and scalar lists must be equal", () => {
    expect(containsFields(["a", "b"], ["a", "b"])).toBe(true);
    expect(containsFields(["a", "b", "c"], ["a", "b"])).toBe(false);
    expect(containsFields({ a: 1 }, [1])).toBe(false);
    expect(containsFields([{ a: 1, b: 2 }], [{ a: 1 }])).toBe(false);
    expect(containsFields([{ a: 1, b: 2 }], [{ a: 1 }], true)).toBe(true);
    expect(containsFields("1", 1)).toBe(false);
  });
});
