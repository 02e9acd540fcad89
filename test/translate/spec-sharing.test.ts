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
// pods; c4 sends the port to another target port, runs pods with one more label and has one more
// namespace of the workspace (so every exportTo there is longer).
const SELECTOR: Record<Cluster, Record<string, string>> = { c1: { app: "api" }, c2: { app: "api", track: "blue" }, c3: { app: "api" }, c4: { app: "api" } };
const POD_LABELS: Record<Cluster, Record<string, string>> = { c1: { app: "api" }, c2: { app: "api", track: "blue" }, c3: { app: "api" }, c4: { app: "api", v: "4" } };
const TARGET_PORT: Record<Cluster, number> = { c1: 8080, c2: 8080, c3: 8080, c4: 8081 };
// The AccessPolicy overrides isolation on api (#36): web, which no AccessPolicy selects, carries it.
const WEB_SELECTOR: Record<Cluster, Record<string, string>> = { c1: { app: "web" }, c2: { app: "web", track: "blue" }, c3: { app: "web" }, c4: { app: "web" } };
const NAMESPACES: Record<Cluster, string[]> = { c1: ["app"], c2: ["app"], c3: ["app"], c4: ["app", "app-extra"] };

const config = `${CLUSTERS.map((c) => `apiVersion: admin.gloo.solo.io/v2
kind: KubernetesCluster
metadata: {name: ${c}, namespace: gloo-mesh}
spec: {clusterDomain: cluster.local}
---
`).join("")}apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata: {name: app, namespace: gloo-mesh}
spec:
  workloadClusters: [{name: '*', namespaces: [{name: 'app*'}]}]
---
apiVersion: admin.gloo.solo.io/v2
kind: WorkspaceSettings
metadata: {name: app, namespace: app}
spec:
  options:
    serviceIsolation: {enabled: true, trimProxyConfig: true}
    federation: {enabled: true}
---
apiVersion: security.policy.gloo.solo.io/v2
kind: AccessPolicy
metadata: {name: api-access, namespace: app}
spec:
  applyToDestinations: [{selector: {name: api}}]
  config:
    authn: {tlsMode: STRICT}
    authzList: [{allowedMethods: [GET]}]
---
apiVersion: trafficcontrol.policy.gloo.solo.io/v2
kind: LoadBalancerPolicy
metadata: {name: api-lb, namespace: app}
spec:
  applyToDestinations: [{selector: {name: api}}]
  config: {simple: LEAST_REQUEST}
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
namespaces: [${NAMESPACES[c].map((n) => `{name: ${n}, labels: {}}, `).join("")}{name: istio-system, labels: {}}, {name: istio-gateways, labels: {}}]
services:
- {name: api, namespace: app, labels: {app: api}, selector: ${JSON.stringify(SELECTOR[c])}, ports: [{name: http, port: 80, targetPort: ${TARGET_PORT[c]}, protocol: TCP}], type: ClusterIP}
- {name: web, namespace: app, labels: {app: web}, selector: ${JSON.stringify(WEB_SELECTOR[c])}, ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}], type: ClusterIP}
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

/** The one object of `kind` named `name` (the name without the workspace suffix, as the translators make it). */
function named(list: readonly IstioResource[], kind: string, name: string): IstioResource {
  const found = list.filter((r) => r.kind === kind && r.metadata.name === name);
  expect(found, `${kind} ${name}`).toHaveLength(1);
  return found[0]!;
}

/** The object of `kind` whose parent is an object of `parentKind`, when there is one. */
function byParent(list: readonly IstioResource[], kind: string, parentKind: string): IstioResource {
  const found = list.filter((r) => r.kind === kind && r.metadata.labels["gitmesh.io/parent-kind"] === parentKind);
  expect(found, `${kind} of a ${parentKind}`).toHaveLength(1);
  return found[0]!;
}

describe("specs shared between clusters", () => {
  const out = rendered();
  const gatewaysToo = (c: Cluster) => [...NAMESPACES[c], "istio-gateways"];

  it("give every cluster the spec of its own inputs", () => {
    for (const c of CLUSTERS) {
      const list = out.get(c)!;
      const selector = { matchLabels: SELECTOR[c] };
      // service isolation (workspace-settings.ts), on web; api's AccessPolicy replaces it there
      const webSelector = { matchLabels: WEB_SELECTOR[c] };
      expect(list.filter((r) => r.metadata.name === `settings-api-app-${c}-app`)).toEqual([]);
      expect(named(list, "PeerAuthentication", `settings-web-app-${c}-app`).spec).toEqual({ mtls: { mode: "STRICT" }, selector: webSelector });
      const allow = (named(list, "AuthorizationPolicy", `settings-web-app-${c}-app`).spec as { selector: unknown; rules: { from: { source: { principals: string[] } }[] }[] });
      expect(allow.selector).toEqual(webSelector);
      expect(allow.rules[0]!.from[0]!.source.principals).toEqual(CLUSTERS.flatMap((x) => NAMESPACES[x].map((n) => `${x}.local/ns/${n}/sa/*`)).sort());
      expect(byParent(list, "Sidecar", "Deployment").spec.workloadSelector).toEqual({ labels: POD_LABELS[c] });
      // the AccessPolicy (access-policy.ts)
      expect(named(list, "PeerAuthentication", "accesspolicy-api-access-app-api-app").spec).toEqual({ mtls: { mode: "STRICT" }, selector });
      expect(named(list, "AuthorizationPolicy", "accesspolicy-api-access-app-api-app").spec).toEqual({ action: "ALLOW", rules: [{ to: [{ operation: { methods: ["GET"] } }] }], selector });
      // the LoadBalancerPolicy (destination-policies.ts)
      expect(byParent(list, "DestinationRule", "LoadBalancerPolicy").spec).toEqual({ exportTo: NAMESPACES[c], host: "api.app.svc.cluster.local", trafficPolicy: { loadBalancer: { simple: "LEAST_REQUEST" } } });
      // federation (federation.ts): every cluster's api, local here or remote
      for (const s of CLUSTERS) {
        const exportTo = s === c ? gatewaysToo(c) : NAMESPACES[c];
        const entry = (named(list, "ServiceEntry", `federation-api-app-${s}-app`).spec as { exportTo: string[]; endpoints?: unknown[]; workloadSelector?: unknown; ports: { targetPort?: number }[] });
        expect(entry.exportTo, `${c}: entry of ${s}`).toEqual(exportTo);
        expect(entry.workloadSelector).toEqual(s === c ? { labels: SELECTOR[c] } : undefined);
        expect(entry.endpoints === undefined).toBe(s === c);
        expect(entry.ports.map((p) => p.targetPort)).toEqual([TARGET_PORT[s]]);
        expect((named(list, "DestinationRule", `federation-api-app-${s}-app`).spec as { exportTo: string[] }).exportTo).toEqual(exportTo);
      }
      // the VirtualDestination (virtual-destination.ts)
      const entry = (named(list, "ServiceEntry", "vd-api-app-app").spec as { ports: { targetPort?: number }[]; workloadSelector: unknown; exportTo: string[] });
      expect(entry.ports.map((p) => p.targetPort)).toEqual([TARGET_PORT[c]]);
      expect(entry.workloadSelector).toEqual({ labels: SELECTOR[c] });
      expect(entry.exportTo).toEqual(gatewaysToo(c));
      expect((named(list, "DestinationRule", "vd-api-app-app").spec as { exportTo: string[] }).exportTo).toEqual(gatewaysToo(c));
      // one WorkloadEntry per other cluster's gateway, labelled with this cluster's selector
      const entries = list.filter((r) => r.kind === "WorkloadEntry");
      expect(entries.map((r) => r.spec.address).sort()).toEqual(CLUSTERS.map((x, i) => (x === c ? undefined : `172.18.${i}.10`)).filter((a) => a !== undefined));
      for (const e of entries) expect(e.spec.labels).toEqual({ ...SELECTOR[c], "security.istio.io/tlsMode": "istio" });
    }
  });

  it("are one object where the inputs are equal, and canonical", () => {
    const objects = (c: Cluster) => {
      const list = out.get(c)!;
      return {
        isolationPeer: named(list, "PeerAuthentication", `settings-web-app-${c}-app`).spec,
        isolationAllow: named(list, "AuthorizationPolicy", `settings-web-app-${c}-app`).spec,
        sidecar: byParent(list, "Sidecar", "Deployment").spec,
        accessPeer: named(list, "PeerAuthentication", "accesspolicy-api-access-app-api-app").spec,
        accessAllow: named(list, "AuthorizationPolicy", "accesspolicy-api-access-app-api-app").spec,
        loadBalancer: byParent(list, "DestinationRule", "LoadBalancerPolicy").spec,
        federatedEntry: named(list, "ServiceEntry", "federation-api-app-c2-app").spec,
        federatedRule: named(list, "DestinationRule", "federation-api-app-c2-app").spec,
        vdEntry: named(list, "ServiceEntry", "vd-api-app-app").spec,
        vdRule: named(list, "DestinationRule", "vd-api-app-app").spec,
        workloadEntry: named(list, "WorkloadEntry", "vd-api-app-app-c2-172-18-1-10").spec,
      };
    };
    const [c1, c3, c4] = [objects("c1"), objects("c3"), objects("c4")];
    for (const [what, s] of Object.entries(c1)) expect(c3[what as keyof typeof c1], what).toBe(s);
    // c4 differs in the pods' labels, the target port and the exportTo lists; its selector is c1's
    for (const what of ["sidecar", "loadBalancer", "federatedEntry", "federatedRule", "vdEntry", "vdRule"] as const) expect(c4[what], what).not.toBe(c1[what]);
    for (const what of ["isolationPeer", "accessPeer", "accessAllow", "workloadEntry"] as const) expect(c4[what], what).toBe(c1[what]);
    expect(named(out.get("c2")!, "PeerAuthentication", "settings-web-app-c2-app").spec).not.toBe(c1.isolationPeer);
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
