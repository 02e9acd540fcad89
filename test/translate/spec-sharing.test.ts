/**
 * Specs shared between clusters (src/translate/spec-table.ts) and what the workspace stage does with
 * them (one canonical form, one validation per spec object: createIstioValidator). Sharing must never
 * give one cluster another cluster's spec: each case below gives the clusters different inputs for
 * exactly what a spec is made from, and checks every cluster's objects against its own inputs.
 */
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/core/index.js";
import { createIstioValidator } from "../../src/translate/istio-validate.js";
import { translateAll, validateIstioResource, type IstioResource } from "../../src/translate/index.js";
import { desiredFromYaml, discoveryFromYaml } from "./helpers.js";

const CLUSTERS = ["c1", "c2", "c3", "c4"] as const;
type Cluster = (typeof CLUSTERS)[number];

// What differs between clusters: c3 is c1 again (so its specs can be c1's objects); c2 selects other
// pods; c4 sends the port to another target port and runs pods with one more label.
const SELECTOR: Record<Cluster, Record<string, string>> = { c1: { app: "api" }, c2: { app: "api", track: "blue" }, c3: { app: "api" }, c4: { app: "api" } };
const POD_LABELS: Record<Cluster, Record<string, string>> = { c1: { app: "api" }, c2: { app: "api", track: "blue" }, c3: { app: "api" }, c4: { app: "api", v: "4" } };
const TARGET_PORT: Record<Cluster, number> = { c1: 8080, c2: 8080, c3: 8080, c4: 8081 };

const config = `${CLUSTERS.map((c) => `apiVersion: admin.gloo.solo.io/v2
kind: KubernetesCluster
metadata: {name: ${c}, namespace: gloo-mesh}
spec: {clusterDomain: cluster.local}
---
`).join("")}apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata: {name: app, namespace: gloo-mesh}
spec:
  workloadClusters: [{name: '*', namespaces: [{name: app}]}]
---
apiVersion: admin.gloo.solo.io/v2
kind: WorkspaceSettings
metadata: {name: app, namespace: app}
spec:
  options:
    serviceIsolation: {enabled: true, trimProxyConfig: true}
---
apiVersion: networking.gloo.solo.io/v2
kind: VirtualDestination
metadata: {name: api, namespace: app}
spec:
  hosts: [api.global]
  services: [{labels: {app: api}, namespace: app}]
  ports: [{number: 80, protocol: HTTP, targetPort: {name: http}}]
`;

const discoveryYaml = CLUSTERS.map(
  (c, i) => `cluster: ${c}
namespaces: [{name: app, labels: {}}, {name: istio-system, labels: {}}, {name: istio-gateways, labels: {}}]
services:
- {name: api, namespace: app, labels: {app: api}, selector: ${JSON.stringify(SELECTOR[c])}, ports: [{name: http, port: 80, targetPort: ${TARGET_PORT[c]}, protocol: TCP}], type: ClusterIP}
workloads:
- {kind: Deployment, name: api, namespace: app, podLabels: ${JSON.stringify(POD_LABELS[c])}, serviceAccount: api, localities: [{region: r${i}, zone: r${i}a}]}
localities: [{region: r${i}, zone: r${i}a}]
meshes: [{revision: 1-29, namespace: istio-system, trustDomain: ${c}.local, istiodServiceAccount: istiod-1-29}]
gateways:
- {kind: east-west, name: istio-eastwestgateway, namespace: istio-gateways, podLabels: {istio: eastwestgateway}, ports: [{name: tls, port: 15443, targetPort: 15443, protocol: TCP}], addresses: [172.18.${i}.10], locality: {region: r${i}, zone: r${i}a}}
`,
).join("---\n");

function rendered(): Map<string, IstioResource[]> {
  const result = translateAll(desiredFromYaml(config), discoveryFromYaml(discoveryYaml));
  return new Map([...result.clusters].map(([c, out]) => [c, [...out.resources]]));
}

function one(list: readonly IstioResource[], kind: string): IstioResource {
  const found = list.filter((r) => r.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0]!;
}

describe("specs shared between clusters", () => {
  const out = rendered();

  it("give every cluster the spec of its own inputs", () => {
    for (const c of CLUSTERS) {
      const list = out.get(c)!;
      expect(one(list, "PeerAuthentication").spec).toEqual({ mtls: { mode: "STRICT" }, selector: { matchLabels: SELECTOR[c] } });
      const allow = one(list, "AuthorizationPolicy").spec as { selector: unknown; rules: { from: { source: { principals: string[] } }[] }[] };
      expect(allow.selector).toEqual({ matchLabels: SELECTOR[c] });
      expect(allow.rules[0]!.from[0]!.source.principals).toEqual(CLUSTERS.map((x) => `${x}.local/ns/app/sa/*`));
      expect(one(list, "Sidecar").spec.workloadSelector).toEqual({ labels: POD_LABELS[c] });
      const entry = one(list, "ServiceEntry").spec as { ports: { targetPort?: number }[]; workloadSelector: unknown; exportTo: string[] };
      expect(entry.ports.map((p) => p.targetPort)).toEqual([TARGET_PORT[c]]);
      expect(entry.workloadSelector).toEqual({ labels: SELECTOR[c] });
      // one WorkloadEntry per other cluster's gateway, labelled with this cluster's selector
      const entries = list.filter((r) => r.kind === "WorkloadEntry");
      expect(entries.map((r) => r.spec.address).sort()).toEqual(CLUSTERS.map((x, i) => (x === c ? undefined : `172.18.${i}.10`)).filter((a) => a !== undefined));
      for (const e of entries) expect(e.spec.labels).toEqual({ ...SELECTOR[c], "security.istio.io/tlsMode": "istio" });
    }
  });

  it("are one object where the inputs are equal, and canonical", () => {
    const spec = (c: Cluster, kind: string) => one(out.get(c)!, kind).spec;
    for (const kind of ["PeerAuthentication", "AuthorizationPolicy", "Sidecar", "ServiceEntry", "DestinationRule"]) {
      expect(spec("c3", kind), kind).toBe(spec("c1", kind));
    }
    expect(spec("c2", "PeerAuthentication")).not.toBe(spec("c1", "PeerAuthentication"));
    expect(spec("c4", "Sidecar")).not.toBe(spec("c1", "Sidecar"));
    expect(spec("c4", "ServiceEntry")).not.toBe(spec("c1", "ServiceEntry"));
    expect(spec("c4", "PeerAuthentication")).toBe(spec("c1", "PeerAuthentication"));
    for (const list of out.values()) for (const r of list) expect(JSON.stringify(r)).toBe(canonicalJson(r));
  });
});

describe("createIstioValidator", () => {
  const meta = (name: string) => ({ name, namespace: "ns", labels: { a: "b" } });
  const badSpec = { mtls: { mode: 7 } };
  const goodSpec = { mtls: { mode: "STRICT" } };
  const objects: IstioResource[] = [
    { apiVersion: "security.istio.io/v1", kind: "PeerAuthentication", metadata: meta("a"), spec: badSpec },
    { apiVersion: "security.istio.io/v1", kind: "PeerAuthentication", metadata: meta("b"), spec: badSpec },
    // the same spec object under another kind has that kind's own result
    { apiVersion: "networking.istio.io/v1", kind: "Sidecar", metadata: meta("c"), spec: badSpec },
    { apiVersion: "security.istio.io/v1", kind: "PeerAuthentication", metadata: meta("d"), spec: goodSpec },
    // metadata is checked on every object, not remembered with the spec
    { apiVersion: "security.istio.io/v1", kind: "PeerAuthentication", metadata: { ...meta("e"), labels: { a: 1 } } as unknown as IstioResource["metadata"], spec: goodSpec },
    { apiVersion: "security.istio.io/v1", kind: "PeerAuthentication", metadata: { ...meta("f"), name: 5 } as unknown as IstioResource["metadata"], spec: badSpec },
    // a top-level member beside spec is validated too
    { apiVersion: "security.istio.io/v1", kind: "PeerAuthentication", metadata: meta("g"), spec: goodSpec, status: 5 } as unknown as IstioResource,
    { apiVersion: "networking.istio.io/v1", kind: "Nonesuch", metadata: meta("h"), spec: goodSpec },
  ];

  it("reports for every object exactly what validateIstioResource reports", () => {
    const validate = createIstioValidator();
    for (const r of objects) expect(validate(r), r.metadata.name).toEqual(validateIstioResource(r));
    expect(validate(objects[0]!).length).toBeGreaterThan(0);
    expect(validate(objects[4]!).map((i) => i.path)).toEqual(["/metadata/labels/a"]);
    expect(validate(objects[5]!).map((i) => i.path)).toContain("/metadata/name");
  });

  it("validates a spec object once per kind", () => {
    const validate = createIstioValidator();
    const first = validate(objects[0]!);
    expect(validate(objects[1]!)).toBe(first);
    expect(validate(objects[2]!)).not.toBe(first);
  });
});
