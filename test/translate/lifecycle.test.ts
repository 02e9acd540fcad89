// Lifecycle managers (issue #15, src/translate/LIFECYCLE.md): beyond the golden files, what the
// rendered installation does: which pods each gateway Service sends traffic to, that every pod runs
// under an account allowed to read its TLS secrets, that the default tag names an installed revision,
// and that a change to a manager re-renders it incrementally.
import { describe, expect, it } from "vitest";
import { loadDesiredState, updateDesiredState } from "../../src/config/index.js";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCapturingIo } from "../../src/cli/io.js";
import { main } from "../../src/cli/main.js";
import { renderedPath } from "../../src/git-sync/index.js";
import { affectedWorkspaces, GATEWAY_SECRETS_CLUSTER_ROLE, retranslate, translateAll, type IstioResource } from "../../src/translate/index.js";
import { FIXTURES } from "./golden.js";
import { loadCase, runCase } from "./golden.js";
import { desiredFromYaml, discoveryFromYaml } from "./helpers.js";

type Obj = IstioResource & Record<string, unknown>;
const spec = (o: IstioResource) => o.spec as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function cluster1(): Obj[] {
  const { result } = runCase(loadCase("lifecycle"));
  return (result.clusters.get("cluster1")?.resources ?? []) as Obj[];
}

const selects = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);

describe("lifecycle managers", () => {
  it("runs every istiod it installs with Kubernetes Services not selecting WorkloadEntries, as Gloo's installations do (#36)", () => {
    // VirtualDestination WorkloadEntries carry the backing pods' labels; with istiod's default the
    // plain Service would take the remote east-west gateways as endpoints (tools/istio-sim/README.md).
    const istios = cluster1().filter((o) => o.kind === "Istio");
    expect(istios.length).toBeGreaterThanOrEqual(2);
    for (const i of istios) expect(spec(i).values.pilot.env.PILOT_ENABLE_K8S_SELECT_WORKLOAD_ENTRIES, i.metadata.name).toBe("false");
  });

  it("creates a gateway only where its control plane revision runs, as Gloo documents (#36)", () => {
    // Gloo, GatewayLifecycleManager controlPlaneRevision: "If a control plane installation of this
    // revision is not found, no gateway is created." No IstioLifecycleManager here: discovery decides.
    const desired = desiredFromYaml(`
apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata: {name: gateways, namespace: gloo-mesh}
spec:
  workloadClusters: [{name: '*', namespaces: [{name: istio-gateways}]}]
---
apiVersion: admin.gloo.solo.io/v2
kind: GatewayLifecycleManager
metadata: {name: ingress, namespace: gloo-mesh}
spec:
  installations:
  - gatewayRevision: 1-29
    controlPlaneRevision: 1-29
    clusters: [{name: old, activeGateway: true}, {name: new, activeGateway: true}]
    istioOperatorSpec:
      components:
        ingressGateways: [{name: istio-ingressgateway, namespace: istio-gateways}]
`);
    const mesh = (revision: string) => `meshes: [{revision: ${revision}, namespace: istio-system, trustDomain: cluster.local, istiodServiceAccount: istiod-${revision}}]`;
    const discovery = discoveryFromYaml(`cluster: old
namespaces: [{name: istio-gateways, labels: {}}]
${mesh("1-28")}
---
cluster: new
namespaces: [{name: istio-gateways, labels: {}}]
${mesh("1-29")}
`);
    const result = translateAll(desired, discovery);
    const kinds = (c: string) => (result.clusters.get(c)?.resources ?? []).map((r) => r.kind).sort();
    expect(kinds("new")).toContain("Deployment");
    expect(kinds("new")).toContain("Service");
    expect(kinds("old")).toEqual([]);
    const warned = result.diagnostics.filter((d) => d.code === "REFERENCE_NOT_FOUND");
    expect(warned).toHaveLength(1);
    expect(warned[0]?.message).toContain('"1-29" is not installed in cluster "old"');
    expect(warned[0]?.path).toBe("/spec/installations/0/clusters/0/name");
  });

  it("gives each cluster's istiod Gloo's trust domain: clusters[].trustDomain, else the cluster's name, never the spec's alone; other domains accepted by default (#36)", () => {
    // solo-apis istio_lifecycle_manager.proto, trust_domain: "By default, the trustDomain value in the
    // meshConfig section of the operator spec is automatically set by the Gloo to the name of each
    // workload cluster" … "PILOT_SKIP_VALIDATE_TRUST_DOMAIN field is set to "true" by default".
    const desired = desiredFromYaml(`
apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata: {name: mesh, namespace: gloo-mesh}
spec:
  workloadClusters: [{name: '*', namespaces: [{name: istio-system}]}]
---
apiVersion: admin.gloo.solo.io/v2
kind: IstioLifecycleManager
metadata: {name: istiod, namespace: gloo-mesh}
spec:
  installations:
  - revision: 1-29
    clusters: [{name: east}, {name: west, trustDomain: west.example}]
    istioOperatorSpec:
      tag: 1.29.0
      meshConfig: {trustDomain: everyone.example}
      components:
        pilot:
          k8s:
            env: [{name: PILOT_SKIP_VALIDATE_TRUST_DOMAIN, value: "false"}]
  - revision: 1-28
    clusters: [{name: east}]
    istioOperatorSpec: {tag: 1.28.0}
`);
    const discovery = discoveryFromYaml(["east", "west"].map((c) => `cluster: ${c}\nnamespaces: [{name: istio-system, labels: {}}]\n`).join("---\n"));
    const result = translateAll(desired, discovery);
    const istio = (c: string, revision: string) => spec(result.clusters.get(c)!.resources.find((r) => r.kind === "Istio" && r.metadata.name === revision)!).values;
    expect(istio("east", "1-29").meshConfig.trustDomain).toBe("east");
    expect(istio("west", "1-29").meshConfig.trustDomain).toBe("west.example");
    expect(istio("east", "1-28").meshConfig.trustDomain).toBe("east");
    // A value the user set is kept; unset, Gloo's default.
    expect(istio("east", "1-29").pilot.env.PILOT_SKIP_VALIDATE_TRUST_DOMAIN).toBe("false");
    expect(istio("east", "1-28").pilot.env.PILOT_SKIP_VALIDATE_TRUST_DOMAIN).toBe("true");
    const warned = result.diagnostics.filter((d) => d.path === "/spec/installations/0/istioOperatorSpec/meshConfig/trustDomain");
    expect(warned.map((d) => d.message).sort()).toEqual([
      expect.stringContaining('cluster east gets the trust domain "east" (its name, Gloo\'s default), not "everyone.example"'),
      expect.stringContaining('cluster west gets the trust domain "west.example" (its clusters[].trustDomain), not "everyone.example"'),
    ]);
  });

  it("each gateway Service sends traffic to the pods of the active revision only", () => {
    const objects = cluster1();
    const deployments = objects.filter((o) => o.kind === "Deployment");
    const services = objects.filter((o) => o.kind === "Service");
    expect(services.map((s) => s.metadata.name).sort()).toEqual(["istio-egressgateway", "istio-ingressgateway"]);
    for (const svc of services) {
      const selected = deployments.filter((d) => selects(spec(svc).selector, spec(d).template.metadata.labels)).map((d) => d.metadata.name);
      // 1-29 is installed beside 1-28 (canary) but its cluster entry is not the active gateway.
      expect(selected).toEqual([`${svc.metadata.name}-1-28`]);
    }
    // Every Deployment's pods are selected by its own selector, and injected by its control plane revision.
    for (const d of deployments) {
      expect(selects(spec(d).selector.matchLabels, spec(d).template.metadata.labels)).toBe(true);
      expect(spec(d).template.metadata.labels["istio.io/rev"]).toBe(d.metadata.name.endsWith("1-29") ? "1-29" : "1-28");
      expect(spec(d).template.metadata.annotations["inject.istio.io/templates"]).toBe("gateway");
    }
  });

  it("every gateway runs under its own account, bound in its namespace to the agent chart's ClusterRole that reads Secrets (no Role: the agent holds no Secret reads to grant)", () => {
    const objects = cluster1();
    expect(objects.filter((o) => o.kind === "Role")).toEqual([]);
    for (const d of objects.filter((o) => o.kind === "Deployment")) {
      const sa = spec(d).template.spec.serviceAccountName as string;
      const ns = d.metadata.namespace;
      expect(objects.some((o) => o.kind === "ServiceAccount" && o.metadata.name === sa && o.metadata.namespace === ns)).toBe(true);
      const binding = objects.find((o) => o.kind === "RoleBinding" && o.metadata.namespace === ns && (o.subjects as { name: string }[]).some((s) => s.name === sa));
      expect(binding?.roleRef).toEqual({ apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: GATEWAY_SECRETS_CLUSTER_ROLE });
      // A RoleBinding scopes the ClusterRole to the gateway's namespace; Kubernetes kinds without a spec are rendered without one.
      expect(binding!.subjects).toEqual([{ kind: "ServiceAccount", name: sa, namespace: ns }]);
      expect("spec" in binding!).toBe(false);
    }
  });

  it("renders one Sail Istio per installed revision, cluster-scoped, and a default tag that names one of them", () => {
    const objects = cluster1();
    const istios = objects.filter((o) => o.apiVersion === "sailoperator.io/v1" && o.kind === "Istio");
    expect(istios.map((o) => [o.metadata.name, o.metadata.namespace, spec(o).version])).toEqual([
      ["1-28", "", "v1.28.2"],
      ["1-29", "", "v1.29.0"],
    ]);
    const tag = objects.find((o) => o.kind === "IstioRevisionTag");
    expect(spec(tag!).targetRef).toEqual({ kind: "Istio", name: "1-28" });
    // Cluster-scoped objects go to clusters/<c>/_cluster/ (the audit layout, also of `gitmesh render --out`).
    expect(renderedPath("cluster1", istios[0]!)).toBe("clusters/cluster1/_cluster/istio/1-28.yaml");
    // The broken installation (tag `latest`) renders nothing and is an error on its tag.
    expect(istios.some((o) => o.metadata.name === "broken")).toBe(false);
  });

  it("a change to a lifecycle manager re-renders the workspace that carries it, equal to a full translation", () => {
    const c = loadCase("lifecycle");
    const source = loadDesiredState([{ path: "lm.yaml", content: LM("1.29.0") }]);
    const next = updateDesiredState(source.state, [{ path: "lm.yaml", content: LM("1.29.1") }], []);
    const ws = affectedWorkspaces({ desired: source.state, discovery: c.discovery }, { desired: next.state, discovery: c.discovery }, { changedKeys: next.changedKeys });
    expect(ws).toEqual(["gateways"]);
    const full = translateAll(next.state, c.discovery);
    const { result } = retranslate(translateAll(source.state, c.discovery), next.state, c.discovery, ws);
    expect([...result.clusters.get("cluster1")!.resources]).toEqual([...full.clusters.get("cluster1")!.resources]);
    const istio = full.clusters.get("cluster1")!.resources.find((r) => r.kind === "Istio");
    expect(spec(istio!).version).toBe("v1.29.1");
  });

  it("reports a key its translation does not read, wherever it is set: a field a schema gains later is never dropped silently (#36)", () => {
    // As if the schema had gained fields: the translator's read-key tree (read-keys.ts) does not list them.
    const c = loadCase("lifecycle-gateway-fields");
    const objects = Object.values(c.desired.files)
      .flatMap((f) => f.objects)
      .map((o) => {
        if (o.kind !== "GatewayLifecycleManager") return o;
        const s = structuredClone(o.spec) as { installations: { istioOperatorSpec: { components: { ingressGateways: Record<string, any>[] } } }[] }; // eslint-disable-line @typescript-eslint/no-explicit-any
        const k8s = s.installations[0]!.istioOperatorSpec.components.ingressGateways[0]!.k8s;
        k8s.topologySpreadConstraints = [{ maxSkew: 1, topologyKey: "kubernetes.io/hostname" }];
        k8s.service.ipFamilyPolicy = "PreferDualStack";
        return { ...o, digest: undefined, spec: s };
      });
    const diags = translateAll({ objects }, c.discovery).diagnostics;
    const at = (path: string) => diags.filter((d) => d.code === "UNSUPPORTED_FIELD" && d.path === path);
    const k8sPath = "/spec/installations/0/istioOperatorSpec/components/ingressGateways/0/k8s";
    expect(at(`${k8sPath}/topologySpreadConstraints`)).toHaveLength(1);
    expect(at(`${k8sPath}/service/ipFamilyPolicy`)).toHaveLength(1);
    expect(at(`${k8sPath}/service/ipFamilyPolicy`)[0]!.message).toContain("k8s.service.ipFamilyPolicy is not translated");
  });
});

describe("gitmesh render --out with lifecycle managers", () => {
  it("writes cluster-scoped Sail objects under clusters/<c>/_cluster/ and gateway objects under their namespace", async () => {
    const dir = await mkdtemp(join(tmpdir(), "gitmesh-lifecycle-render-"));
    try {
      const repo = join(dir, "repo");
      const discovery = join(dir, "discovery", "cluster1");
      await mkdir(repo, { recursive: true });
      await mkdir(discovery, { recursive: true });
      // The golden case without its deliberately broken installation (render refuses to write on errors).
      const input = await readFile(join(FIXTURES, "lifecycle/input.yaml"), "utf8");
      await writeFile(join(repo, "input.yaml"), input.replace(/  - revision: broken\n(?:    .*\n)+/, ""));
      const first = (await readFile(join(FIXTURES, "lifecycle/discovery.yaml"), "utf8")).split("\n---\n")[0]!;
      await writeFile(join(discovery, "snapshot.yaml"), `apiVersion: gitmesh.io/v1alpha1\nkind: DiscoverySnapshot\n${first.trimEnd()}\nlocalities: []\nistioObjects: []\n`);
      const io = createCapturingIo();
      const out = join(dir, "out");
      const code = await main(["render", repo, "--discovery", join(dir, "discovery"), "--out", out], io);
      expect(code, io.stderr()).toBe(0);
      expect((await readdir(join(out, "clusters/cluster1/_cluster/istio"))).sort()).toEqual(["1-28.yaml", "1-29.yaml"]);
      expect(await readdir(join(out, "clusters/cluster1/istio-gateways/deployment"))).toContain("istio-ingressgateway-1-28.yaml");
      // No directory named after a kind at the namespace level (what an empty namespace used to produce).
      expect(await readdir(join(out, "clusters/cluster1"))).not.toContain("istio");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

function LM(tag: string): string {
  return [
    "apiVersion: admin.gloo.solo.io/v2",
    "kind: Workspace",
    "metadata: {name: gateways, namespace: gloo-mesh}",
    "spec:",
    "  workloadClusters: [{name: '*', namespaces: [{name: istio-system}]}]",
    "---",
    "apiVersion: admin.gloo.solo.io/v2",
    "kind: IstioLifecycleManager",
    "metadata: {name: istiod, namespace: gloo-mesh}",
    "spec:",
    "  installations:",
    "  - revision: 1-29",
    "    clusters: [{name: cluster1, defaultRevision: true}]",
    `    istioOperatorSpec: {profile: minimal, tag: ${tag}}`,
    "",
  ].join("\n");
}
