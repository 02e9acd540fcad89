/**
 * RootTrustPolicy identity comes from Git (src/translate/root-trust.ts): the trust domain of an
 * IssuedCertificate is the one the KubernetesCluster assigns, never the one discovery reports.
 */
import { describe, expect, it } from "vitest";
import { translateAll } from "../../src/translate/index.js";
import { desiredFromYaml, discoveryFromYaml } from "./helpers.js";

const kc = (name: string, trustDomain?: string) => `
apiVersion: admin.gloo.solo.io/v2
kind: KubernetesCluster
metadata: {name: ${name}, namespace: gloo-mesh${trustDomain === undefined ? "" : `, annotations: {gitmesh.io/trust-domain: "${trustDomain}"}`}}
spec: {}
---`;
const base = `
apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata: {name: apps, namespace: gloo-mesh}
spec:
  workloadClusters: [{name: '*', namespaces: [{name: apps}]}]
---
apiVersion: admin.gloo.solo.io/v2
kind: RootTrustPolicy
metadata: {name: root, namespace: gloo-mesh}
spec:
  config: {mgmtServerCa: {generated: {}}}
`;
const snapshot = (cluster: string, trustDomain: string) => `
cluster: ${cluster}
namespaces: [{name: apps}, {name: istio-system}]
meshes: [{namespace: istio-system, trustDomain: "${trustDomain}", revision: "", istiodServiceAccount: istiod}]
`;

function issued(clusters: string, discovery: string) {
  const result = translateAll(desiredFromYaml(clusters + base), discoveryFromYaml(discovery));
  const hosts = new Map<string, string[]>();
  for (const [c, out] of result.clusters) for (const r of out.resources) if (r.kind === "IssuedCertificate") hosts.set(c, r.spec.hosts as string[]);
  return { hosts, diagnostics: result.diagnostics.map((d) => `${d.severity} ${d.code} ${d.object?.name ?? ""}`) };
}

describe("RootTrustPolicy: the trust domain is assigned in Git", () => {
  it("default: the cluster name; the annotation assigns another one", () => {
    const { hosts, diagnostics } = issued(kc("c1") + kc("c2", "corp.example"), [snapshot("c1", "c1"), snapshot("c2", "corp.example")].join("---\n"));
    expect(Object.fromEntries(hosts)).toEqual({ c1: ["spiffe://c1/ns/istio-system/sa/istiod"], c2: ["spiffe://corp.example/ns/istio-system/sa/istiod"] });
    expect(diagnostics.filter((d) => d.startsWith("error"))).toEqual([]);
  });

  it("a cluster reporting another cluster's trust domain gets nothing and an error; the others are unaffected", () => {
    const { hosts, diagnostics } = issued(kc("c1") + kc("c3"), [snapshot("c1", "c1"), snapshot("c3", "c1")].join("---\n"));
    expect([...hosts.keys()]).toEqual(["c1"]);
    expect(diagnostics).toContain("error TRUST_DOMAIN_MISMATCH root");
  });

  it("a cluster known only from discovery (no KubernetesCluster in Git) gets nothing", () => {
    const { hosts } = issued(kc("c1"), [snapshot("c1", "c1"), snapshot("rogue", "rogue")].join("---\n"));
    expect([...hosts.keys()]).toEqual(["c1"]);
  });

  it("an invalid annotation is an error on the KubernetesCluster and no request; a shared trust domain is a warning", () => {
    const bad = issued(kc("c1", "Not/A Domain"), snapshot("c1", "Not/A Domain"));
    expect(bad.hosts.size).toBe(0);
    expect(bad.diagnostics).toContain("error INVALID_TRUST_DOMAIN c1");
    const shared = issued(kc("c1", "mesh.local") + kc("c2", "mesh.local"), [snapshot("c1", "mesh.local"), snapshot("c2", "mesh.local")].join("---\n"));
    expect(shared.hosts.size).toBe(2);
    expect(shared.diagnostics).toContain("warning TRUST_DOMAIN_SHARED c2");
  });
});
