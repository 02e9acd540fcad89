/* eslint-disable @typescript-eslint/no-explicit-any -- these tests edit valid documents into deliberately malformed ones */
import { describe, expect, it } from "vitest";
import { editDistance, precompileValidators, validateDiscoverySnapshot, validateResource, type DiscoverySnapshot } from "../../src/model/index.js";
import { VALID } from "./fixtures.js";

const meta = { name: "reviews", namespace: "bookinfo-backends" };

describe("validateResource: documents that are not Gloo objects", () => {
  it("rejects non-mappings at the root", () => {
    for (const v of [null, 42, "RouteTable", [VALID.RouteTable]]) {
      const issues = validateResource(v);
      expect(issues.map((i) => [i.path, i.keyword])).toEqual([["", "type"]]);
      expect(issues[0]!.message).toContain("must be a mapping");
    }
  });

  it("requires apiVersion and kind", () => {
    expect(validateResource({ kind: "RouteTable", metadata: meta })).toEqual([
      { path: "", keyword: "required", message: expect.stringContaining("`apiVersion`") },
    ]);
    expect(validateResource({ apiVersion: "networking.gloo.solo.io/v2", metadata: meta })[0]?.message).toContain("`kind`");
  });

  it("names the supported kinds for an unknown kind, with a suggestion", () => {
    const [issue, ...rest] = validateResource({ apiVersion: "networking.gloo.solo.io/v2", kind: "RouteTabel", metadata: meta, spec: {} });
    expect(rest).toEqual([]);
    expect(issue).toMatchObject({ path: "/kind", keyword: "kind" });
    expect(issue!.message).toContain("did you mean `RouteTable`?");
    expect(issue!.message).toContain("LoadBalancerPolicy (trafficcontrol.policy.gloo.solo.io/v2)");
  });

  it("treats a Gloo v1 TrafficPolicy as unsupported, without a wild guess", () => {
    const [issue] = validateResource({ apiVersion: "networking.mesh.gloo.solo.io/v1", kind: "TrafficPolicy", metadata: meta, spec: {} });
    expect(issue).toMatchObject({ path: "/kind", keyword: "kind" });
    expect(issue!.message).not.toContain("did you mean");
  });
});

describe("validateResource: issue shape", () => {
  it("reports every independent problem, sorted by path", () => {
    const doc = structuredClone(VALID.RouteTable) as any;
    doc.spec.failureMode = "NOPE";
    doc.spec.http[0].labels = { team: 7 };
    doc.metadata.extra = true;
    expect(validateResource(doc).map((i) => [i.path, i.keyword])).toEqual([
      ["/metadata/extra", "additionalProperties"],
      ["/spec/failureMode", "enum"],
      ["/spec/http/0/labels/team", "type"],
    ]);
  });

  it("explains an empty YAML key (null)", () => {
    const doc = { apiVersion: "admin.gloo.solo.io/v2", kind: "Workspace", metadata: { name: "policies", namespace: "gloo-mesh" }, spec: null };
    expect(validateResource(doc)).toEqual([{ path: "/spec", keyword: "type", message: expect.stringContaining("expected a mapping, got null; a YAML key with nothing after it is null") }]);
  });

  it("reports a misspelt required field once, as the typo", () => {
    const doc = structuredClone(VALID.VirtualGateway) as any;
    doc.spec.listner = doc.spec.listeners;
    delete doc.spec.listeners;
    expect(validateResource(doc)).toEqual([{ path: "/spec/listner", keyword: "additionalProperties", message: "unknown field `listner`; did you mean `listeners`?" }]);
    const top = structuredClone(VALID.MirrorPolicy) as any;
    top.sepc = top.spec;
    delete top.spec;
    expect(validateResource(top).map((i) => [i.path, i.keyword])).toEqual([["/sepc", "additionalProperties"]]);
  });

  it("escapes JSON pointer segments (~ and /) in unknown keys", () => {
    const doc = structuredClone(VALID.KubernetesCluster) as any;
    doc.spec["gloo.solo.io/weird~key"] = 1;
    expect(validateResource(doc).map((i) => i.path)).toEqual(["/spec/gloo.solo.io~1weird~0key"]);
  });

  it("lists the allowed fields when no field is close", () => {
    const doc = structuredClone(VALID.KubernetesCluster) as any;
    doc.spec.zzzzzzzz = 1;
    expect(validateResource(doc)[0]!.message).toBe("unknown field `zzzzzzzz`; allowed fields: `clusterDomain`, `skipWarming`");
  });

  it("reports a required field at the parent object and names it", () => {
    const doc = structuredClone(VALID.VirtualGateway) as any;
    delete doc.spec.listeners[1].port;
    expect(validateResource(doc)).toEqual([
      { path: "/spec/listeners/1", keyword: "required", message: "missing required field `port`; add it under /spec/listeners/1" },
    ]);
  });

  it("accepts what `kubectl get -o yaml` adds (status, server-side metadata)", () => {
    const doc = structuredClone(VALID.Workspace) as any;
    doc.metadata = { ...doc.metadata, uid: "1c1e", resourceVersion: "42", generation: 3, creationTimestamp: "2024-01-01T00:00:00Z", managedFields: [] };
    doc.status = { common: { state: { approval: "ACCEPTED" } } };
    expect(validateResource(doc)).toEqual([]);
  });

  it("allows an omitted spec, as Gloo's CRDs do; a spec that is given is judged by its rules", () => {
    expect(validateResource({ apiVersion: "admin.gloo.solo.io/v2", kind: "Workspace", metadata: { name: "policies", namespace: "gloo-mesh" } })).toEqual([]);
    expect(validateResource({ apiVersion: "networking.gloo.solo.io/v2", kind: "VirtualDestination", metadata: meta })).toEqual([]);
    // virtual_destination.proto: ports is Required; at least one of hosts, services, externalServices, externalWorkloads.
    const vd = (spec: unknown) => validateResource({ apiVersion: "networking.gloo.solo.io/v2", kind: "VirtualDestination", metadata: meta, spec }).map((i) => [i.path, i.keyword, i.message]);
    expect(vd({ hosts: ["a.global"] })).toEqual([["/spec", "required", expect.stringContaining("`ports`")]]);
    expect(vd({ ports: [{ number: 80 }] })).toEqual([["/spec", "anyOf", "set at least one of `hosts`, `services`, `externalServices`, `externalWorkloads` (a list must not be empty)"]]);
    expect(vd({ services: [{ labels: { app: "a" } }], ports: [{ number: 80 }] })).toEqual([]);
  });

  it("accepts the Go duration forms and rejects the others", () => {
    const doc = structuredClone(VALID.RetryTimeoutPolicy) as any;
    for (const ok of ["10s", "1m30s", "500ms", "1h", "1.5h", "0", "250us", "1h2m3s4ms"]) {
      doc.spec.config.requestTimeout = ok;
      expect(validateResource(doc), ok).toEqual([]);
    }
    for (const bad of ["10", "10 s", "1d", "-1s", "s", "1m 30s", ""]) {
      doc.spec.config.requestTimeout = bad;
      expect(validateResource(doc).map((i) => [i.path, i.keyword]), bad).toEqual([["/spec/config/requestTimeout", "pattern"]]);
    }
  });

  it("does not mutate the document", () => {
    const doc = structuredClone(VALID.RouteTable) as any;
    doc.spec.http[0].forwardto = {};
    const before = JSON.stringify(doc);
    validateResource(doc);
    expect(JSON.stringify(doc)).toBe(before);
  });

  it("compiles every schema (including the discovery snapshot) in strict mode", () => {
    expect(() => precompileValidators()).not.toThrow();
  });
});

describe("editDistance", () => {
  it("counts insertions, deletions, substitutions and transpositions", () => {
    expect(editDistance("forwardTo", "forwardTo")).toBe(0);
    expect(editDistance("forwardto", "forwardTo")).toBe(1);
    expect(editDistance("fowradTo", "forwardTo")).toBe(2);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("hosts", "host")).toBe(1);
  });
});

const snapshot: DiscoverySnapshot = {
  cluster: "cluster1",
  namespaces: [{ name: "bookinfo-backends", labels: { "istio.io/rev": "1-20" } }],
  services: [
    {
      name: "reviews",
      namespace: "bookinfo-backends",
      labels: { app: "reviews" },
      selector: { app: "reviews" },
      ports: [{ name: "http", port: 9080, targetPort: 9080, protocol: "TCP" }],
      type: "ClusterIP",
      clusterIP: "10.96.0.10",
    },
  ],
  workloads: [{ kind: "Deployment", name: "reviews-v1", namespace: "bookinfo-backends", podLabels: { app: "reviews", version: "v1" }, serviceAccount: "bookinfo-reviews", localities: [{ region: "us-east1", zone: "us-east1-b" }] }],
  localities: [{ region: "us-east1", zone: "us-east1-b" }],
  meshes: [{ revision: "1-20", namespace: "istio-system", trustDomain: "cluster1", istiodServiceAccount: "istiod-1-20" }],
  gateways: [{ kind: "east-west", name: "istio-eastwestgateway", namespace: "istio-gateways", podLabels: { istio: "eastwestgateway" }, ports: [{ name: "tls", port: 15443, targetPort: 15443, protocol: "TCP" }], addresses: ["172.18.0.10"] }],
  istioObjects: [],
};

describe("validateDiscoverySnapshot", () => {
  it("accepts a realistic snapshot", () => {
    expect(validateDiscoverySnapshot(snapshot)).toEqual([]);
  });

  it("reports missing sections, bad enums and unknown fields at their nodes", () => {
    const bad = structuredClone(snapshot) as any;
    delete bad.meshes;
    bad.services[0].type = "Headless";
    bad.workloads[0].serviceaccount = "x";
    expect(validateDiscoverySnapshot(bad).map((i) => [i.path, i.keyword])).toEqual([
      ["", "required"],
      ["/services/0/type", "enum"],
      ["/workloads/0/serviceaccount", "additionalProperties"],
    ]);
  });

  it("rejects a non-object", () => {
    expect(validateDiscoverySnapshot("cluster1").map((i) => [i.path, i.keyword])).toEqual([["", "type"]]);
  });
});
