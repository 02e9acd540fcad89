/** A one-policy change re-runs only its workspace and re-assembles only the clusters it affects. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadDesiredState, updateDesiredState } from "../../src/config/index.js";
import { affectedWorkspaces, retranslate, translateAll } from "../../src/translate/index.js";
import { FIXTURES, loadCase, renderOutput } from "./golden.js";

const OPS = `
apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata: {name: ops, namespace: gloo-mesh}
spec:
  workloadClusters:
  - name: cluster1
    namespaces: [{name: istio-system}]
---
apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata: {name: istiod, namespace: istio-system}
spec:
  hosts: [istiod.istio-system.svc.cluster.local]
  http:
  - name: all
    forwardTo: {destinations: [{ref: {name: istiod}, port: {number: 15012}}]}
`;

const policy = (timeout: string): string => `
apiVersion: resilience.policy.gloo.solo.io/v2
kind: RetryTimeoutPolicy
metadata: {name: ops-timeout, namespace: istio-system}
spec:
  config: {requestTimeout: ${timeout}}
`;

describe("incremental translation", () => {
  it("re-runs one workspace and re-assembles only its cluster; the result equals a full translation", () => {
    const base = loadCase("route-policies");
    const discovery = new Map(base.discovery);
    const c1 = discovery.get("cluster1")!;
    discovery.set("cluster1", {
      ...c1,
      services: [...c1.services, { name: "istiod", namespace: "istio-system", labels: {}, selector: { app: "istiod" }, ports: [{ name: "grpc", port: 15012, targetPort: 15012, protocol: "TCP" }], type: "ClusterIP" }],
    });
    const baseInput = readFileSync(join(FIXTURES, "route-policies", "input.yaml"), "utf8");
    const files = [
      { path: "base.yaml", content: baseInput },
      { path: "ops/routes.yaml", content: OPS },
      { path: "ops/policy.yaml", content: policy("5s") },
    ];
    const before = loadDesiredState(files).state;
    const prev = translateAll(before, discovery);

    const update = updateDesiredState(before, [{ path: "ops/policy.yaml", content: policy("7s") }], []);
    expect([...update.changedKeys]).toEqual(["RetryTimeoutPolicy//istio-system/ops-timeout"]);
    const affected = affectedWorkspaces({ desired: before, discovery }, { desired: update.state, discovery }, { changedKeys: update.changedKeys });
    expect(affected).toEqual(["ops"]);

    const { result, reassembled } = retranslate(prev, update.state, discovery, affected);
    expect(reassembled).toEqual(["cluster1"]);
    expect(result.clusters.get("cluster2")).toBe(prev.clusters.get("cluster2"));
    expect(result.workspaces.get("bookinfo")).toBe(prev.workspaces.get("bookinfo"));
    expect(renderOutput(result)).toBe(renderOutput(translateAll(update.state, discovery)));
    const vs = result.clusters.get("cluster1")!.resources.find((r) => r.metadata.name === "routetable-istiod-istio-system-cluster1-ops")!;
    expect((vs.spec.http as { timeout?: string }[])[0]!.timeout).toBe("7s");
    expect(renderOutput(result)).not.toBe(renderOutput(prev));
    expect(result.diagnostics.filter((d) => d.code === "INVALID_OUTPUT")).toEqual([]);
  });

  it("an object a policy references by name (RateLimitServerSettings) re-renders the policy's routes in the gateway's workspace", () => {
    const base = loadCase("rate-limit");
    const input = readFileSync(join(FIXTURES, "rate-limit", "input.yaml"), "utf8");
    const before = loadDesiredState([{ path: "input.yaml", content: input }]).state;
    const prev = translateAll(before, base.discovery);
    const update = updateDesiredState(before, [{ path: "input.yaml", content: input.replace("requestTimeout: 200ms", "requestTimeout: 1s") }], []);
    expect([...update.changedKeys]).toEqual(["RateLimitServerSettings//bookinfo-frontends/rate-limit-server"]);
    const affected = affectedWorkspaces({ desired: before, discovery: base.discovery }, { desired: update.state, discovery: base.discovery }, { changedKeys: update.changedKeys });
    // The settings live in bookinfo's namespace; the gateway filter that uses them is rendered by "gateways".
    expect(affected).toEqual(expect.arrayContaining(["bookinfo", "gateways"]));
    const { result } = retranslate(prev, update.state, base.discovery, affected);
    expect(renderOutput(result)).toBe(renderOutput(translateAll(update.state, base.discovery)));
    expect(renderOutput(result)).toContain("timeout: 1s");
  });

  it("a cluster's discovery change touches the workspaces with namespaces there (and their importers)", () => {
    const c = loadCase("cross-workspace");
    const next = new Map(c.discovery);
    next.set("cluster2", { ...next.get("cluster2")!, services: [] });
    expect(affectedWorkspaces({ desired: c.desired, discovery: c.discovery }, { desired: c.desired, discovery: next }, { discoveryClusters: ["cluster2"] })).toEqual(["bookinfo", "gateways"]);
    expect(affectedWorkspaces({ desired: c.desired, discovery: c.discovery }, { desired: c.desired, discovery: next }, { changedKeys: ["RouteTable//bookinfo-frontends/exported"] })).toEqual(["bookinfo", "gateways"]);
    expect(affectedWorkspaces({ desired: c.desired, discovery: c.discovery }, { desired: c.desired, discovery: next }, { changedKeys: ["VirtualGateway//istio-gateways/gw"] })).toEqual(["gateways"]);
    expect(affectedWorkspaces({ desired: c.desired, discovery: c.discovery }, { desired: c.desired, discovery: next }, { changedKeys: ["WorkspaceSettings//istio-gateways/gateways"] })).toEqual(["bookinfo", "gateways"]);
  });

  it("a route policy also touches the workspaces that render its route tables on their gateways", () => {
    const c = loadCase("cross-workspace");
    const same = { desired: c.desired, discovery: c.discovery };
    // bookinfo exports its route tables to gateways, which imports them: a bookinfo route policy changes gateways' VirtualServices.
    expect(affectedWorkspaces(same, same, { changedKeys: ["RetryTimeoutPolicy//bookinfo-backends/any"] })).toEqual([]);
    const withPolicy = loadDesiredState([
      { path: "input.yaml", content: readFileSync(join(FIXTURES, "cross-workspace", "input.yaml"), "utf8") },
      { path: "policy.yaml", content: "apiVersion: resilience.policy.gloo.solo.io/v2\nkind: RetryTimeoutPolicy\nmetadata: {name: t, namespace: bookinfo-backends}\nspec:\n  config: {requestTimeout: 2s}\n" },
    ]).state;
    const next = { desired: withPolicy, discovery: c.discovery };
    expect(affectedWorkspaces(same, next, { changedKeys: ["RetryTimeoutPolicy//bookinfo-backends/t"] })).toEqual(["bookinfo", "gateways"]);
    const prev = translateAll(c.desired, c.discovery);
    const { result } = retranslate(prev, withPolicy, c.discovery, ["bookinfo", "gateways"]);
    expect(renderOutput(result)).toBe(renderOutput(translateAll(withPolicy, c.discovery)));
    const ns = result.clusters.get("cluster1")!.resources.find((r) => r.metadata.name === "routetable-exported-bookinfo-frontends-cluster1-gateways")!;
    expect((ns.spec.http as { timeout?: string }[]).map((h) => h.timeout)).toEqual(["2s", "2s"]);
  });

  it("an admin-namespace object no workspace owns (RootTrustPolicy) re-runs the workspaces that render it, and the result equals a full run", () => {
    const dir = join(FIXTURES, "dest-root-trust", "input");
    const files = ["case.yaml", "workspaces.yaml"].map((f) => ({ path: `input/${f}`, content: readFileSync(join(dir, f), "utf8") }));
    const c = loadCase("dest-root-trust");
    const before = loadDesiredState(files).state;
    const prev = translateAll(before, c.discovery);
    const edited = files[0]!.content.replace("autoRestartPods: true", "autoRestartPods: true\n    intermediateCertOptions: {ttlDays: 30}");
    expect(edited).not.toBe(files[0]!.content);
    const update = updateDesiredState(before, [{ path: files[0]!.path, content: edited }], []);
    expect([...update.changedKeys]).toContain("RootTrustPolicy//gloo-mesh/root-trust");
    const affected = affectedWorkspaces({ desired: before, discovery: c.discovery }, { desired: update.state, discovery: c.discovery }, { changedKeys: update.changedKeys });
    expect(affected.length).toBeGreaterThan(0);
    const { result, reassembled } = retranslate(prev, update.state, c.discovery, affected);
    const full = translateAll(update.state, c.discovery);
    expect(renderOutput(result)).toBe(renderOutput(full));
    expect(renderOutput(full)).not.toBe(renderOutput(prev));
    // every cluster with an issued certificate changed, so every one of them was re-assembled
    for (const [cluster, out] of full.clusters) if (out.resources.some((r) => r.kind === "IssuedCertificate")) expect(reassembled).toContain(cluster);
  });

  it("an egress VirtualGateway change re-runs the owners of the ExternalServices routed through it (and who sees them), equal to a full run", () => {
    // bookinfo does not import from gateways here: it cannot see the VirtualGateway, yet its ExternalService is routed through it
    const original = readFileSync(join(FIXTURES, "egress-gateway", "input.yaml"), "utf8");
    const input = original.replace("  importFrom:\n  - workspaces: [{name: gateways}]\n", "");
    expect(input).not.toBe(original);
    const c = loadCase("egress-gateway");
    const before = loadDesiredState([{ path: "input.yaml", content: input }]).state;
    const prev = translateAll(before, c.discovery);
    // the listener moves from the gateway Service's port 443 to 80: the routes of bookinfo's ExternalService follow
    const edited = input.replace("    port: {number: 443}\n    tls: {mode: ISTIO_MUTUAL}", "    port: {number: 80}\n    tls: {mode: ISTIO_MUTUAL}");
    expect(edited).not.toBe(input);
    const update = updateDesiredState(before, [{ path: "input.yaml", content: edited }], []);
    expect([...update.changedKeys]).toEqual(["VirtualGateway//istio-gateways/egress-gw"]);
    const affected = affectedWorkspaces({ desired: before, discovery: c.discovery }, { desired: update.state, discovery: c.discovery }, { changedKeys: update.changedKeys });
    expect(affected).toEqual(["bookinfo", "gateways"]);
    const { result } = retranslate(prev, update.state, c.discovery, affected);
    expect(renderOutput(result)).toBe(renderOutput(translateAll(update.state, c.discovery)));
    expect(renderOutput(result)).not.toBe(renderOutput(prev));
  });

  it("an unowned object of another kind re-runs every workspace", () => {
    const c = loadCase("cross-workspace");
    const same = { desired: c.desired, discovery: c.discovery };
    const withGw = loadDesiredState([
      { path: "input.yaml", content: readFileSync(join(FIXTURES, "cross-workspace", "input.yaml"), "utf8") },
      { path: "admin.yaml", content: "apiVersion: networking.gloo.solo.io/v2\nkind: VirtualGateway\nmetadata: {name: admin-gw, namespace: gloo-mesh}\nspec:\n  workloads: [{selector: {labels: {app: x}}}]\n  listeners: [{port: {number: 80}, http: {}}]\n" },
    ]).state;
    expect(affectedWorkspaces(same, { desired: withGw, discovery: c.discovery }, { changedKeys: ["VirtualGateway//gloo-mesh/admin-gw"] })).toEqual(["bookinfo", "gateways"]);
  });
});
