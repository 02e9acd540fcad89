import { describe, expect, it } from "vitest";
import {
  assembleCluster,
  mergeResources,
  outputMetadata,
  sanitizeName,
  stableName,
  subsetName,
  translateAll,
  translateWorkspace,
  validateIstioResource,
  indexOf,
  workspaceContext,
  type IstioResource,
  type KindTranslator,
} from "../../src/translate/index.js";
import { createRandom } from "../helpers/random.js";
import { desiredFromYaml, discoveryFromYaml } from "./helpers.js";

const WORKSPACES = `
apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata: {name: web, namespace: gloo-mesh, labels: {team: web}}
spec:
  workloadClusters:
  - name: '*'
    namespaces: [{name: web}, {name: gateways}]
---
apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata: {name: backend, namespace: gloo-mesh}
spec:
  workloadClusters:
  - name: cluster1
    namespaces: [{name: 'back*'}]
---
apiVersion: admin.gloo.solo.io/v2
kind: WorkspaceSettings
metadata: {name: backend, namespace: backend}
spec:
  exportTo:
  - workspaces: [{selector: {team: web}}]
    resources: [{kind: SERVICE}]
---
apiVersion: admin.gloo.solo.io/v2
kind: WorkspaceSettings
metadata: {name: web, namespace: web}
spec:
  importFrom:
  - workspaces: [{name: backend}]
`;

const DISCOVERY = `
cluster: cluster1
namespaces: [{name: web}, {name: backend}, {name: gateways}, {name: other}]
services:
- {name: api, namespace: backend, labels: {}, selector: {app: api}, ports: [{name: http, port: 8080, targetPort: 8080, protocol: TCP}], type: ClusterIP}
---
cluster: cluster2
namespaces: [{name: web}]
services: []
`;

function res(name: string, spec: Record<string, unknown>, parent = "a"): IstioResource {
  return {
    apiVersion: "networking.istio.io/v1",
    kind: "DestinationRule",
    metadata: outputMetadata(name, "ns", "c1", "ws", { kind: "Service", name: parent, namespace: "ns", cluster: "c1" }),
    spec,
  };
}

describe("names", () => {
  it("sanitises like SanitizeNameV2 and hashes long names to 63 characters", () => {
    expect(sanitizeName("My_Route.Table:x/y *z\"'[]")).toBe("my-route-table-x-y--z");
    const long = stableName("routetable", "a-very-long-route-table-name-indeed", "some-namespace", "cluster-number-one", "workspace");
    expect(long).toHaveLength(63);
    expect(long.slice(0, 32)).toBe("routetable-a-very-long-route-ta-");
    expect(long.slice(32)).toMatch(/^[0-9a-f]{31}$/);
    expect(stableName("routetable", "r", "ns", "c1", "ws")).toBe("routetable-r-ns-c1-ws");
    expect(subsetName({ version: "v2", tier: "gold" })).toBe("tier-gold-version-v2");
  });
});

describe("merge and assemble", () => {
  it("merges subsets by name and reports a scalar conflict with its path", () => {
    const a = res("dr", { host: "h", subsets: [{ name: "version-v1", labels: { version: "v1" } }] });
    const b = res("dr", { host: "h", subsets: [{ name: "version-v2", labels: { version: "v2" } }], trafficPolicy: { tls: { mode: "ISTIO_MUTUAL" } } });
    const m = mergeResources(a, b);
    expect(m.ok).toBe(true);
    if (m.ok) expect((m.value as IstioResource).spec).toEqual({ host: "h", subsets: [a.spec.subsets as object[], b.spec.subsets as object[]].flat(), trafficPolicy: { tls: { mode: "ISTIO_MUTUAL" } } });
    const c = mergeResources(a, res("dr", { host: "other" }));
    expect(c).toEqual({ ok: false, path: "/spec/host" });
  });

  it("sorts by kind, namespace, name; dedupes identical objects; reports a cross-workspace conflict and keeps the first workspace's", () => {
    const x = res("b", { host: "x" });
    const y = res("a", { host: "y" });
    const out = assembleCluster("c1", [
      { workspace: "zeta", resources: [res("b", { host: "other" })] },
      { workspace: "alpha", resources: [x, y] },
      { workspace: "beta", resources: [y] },
    ]);
    expect(out.resources.map((r) => r.metadata.name)).toEqual(["a", "b"]);
    expect(out.resources[1]!.spec).toEqual({ host: "x" });
    expect(out.diagnostics.map((d) => d.code)).toEqual(["OUTPUT_CONFLICT"]);
    expect(out.diagnostics[0]!.message).toContain('"alpha" and "zeta"');
    expect(Object.keys(out.resources[0]!)).toEqual(["apiVersion", "kind", "metadata", "spec"]);
  });

  // The definition assembleCluster's k-way merge must keep: every workspace's objects in workspace order,
  // stably sorted by (kind, namespace, name); the first of a key is kept, a later one with other content
  // is a conflict. Random fragments with shared keys, identical and conflicting duplicates, and some
  // fragments out of order (which take the sorting path).
  it("equals a stable sort of all fragments in workspace order, on random fragments", () => {
    const reference = (fragments: { workspace: string; resources: IstioResource[] }[]) => {
      const all = [...fragments].sort((a, b) => (a.workspace < b.workspace ? -1 : 1)).flatMap((f) => f.resources.map((r) => ({ w: f.workspace, r })));
      const key = (r: IstioResource) => [r.kind, r.metadata.namespace, r.metadata.name];
      const cmpKey = (a: string[], b: string[]) => { for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1; return 0; };
      const sorted = all.map((x, i) => ({ ...x, i })).sort((a, b) => cmpKey(key(a.r), key(b.r)) || a.i - b.i);
      const kept: { w: string; r: IstioResource }[] = [];
      const conflicts: string[] = [];
      for (const x of sorted) {
        const prev = kept.at(-1);
        if (prev !== undefined && cmpKey(key(prev.r), key(x.r)) === 0) {
          if (JSON.stringify(prev.r) !== JSON.stringify(x.r)) conflicts.push(`${prev.w}/${x.w}/${x.r.metadata.name}`);
        } else kept.push(x);
      }
      return { resources: kept.map((x) => x.r), conflicts: conflicts.sort() };
    };
    const random = createRandom(20);
    const pick = <T,>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
    for (let round = 0; round < 300; round++) {
      const fragments = Array.from({ length: 1 + Math.floor(random() * 6) }, (_, i) => {
        const resources = Array.from({ length: Math.floor(random() * 8) }, () => {
          const r = res(pick(["a", "b", "c", "d"]), { host: pick(["x", "y"]) });
          return { ...r, kind: pick(["DestinationRule", "ServiceEntry", "Sidecar"]), metadata: { ...r.metadata, namespace: pick(["n1", "n2"]) } };
        });
        const order = (r: IstioResource) => `${r.kind}\u0000${r.metadata.namespace}\u0000${r.metadata.name}`;
        if (random() < 0.8) resources.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
        return { workspace: `ws-${pick(["p", "q", "r", "s", "t", "u"])}${i}`, resources };
      });
      const out = assembleCluster("c", fragments);
      const want = reference(fragments);
      expect(out.resources, `round ${round}`).toEqual(want.resources);
      for (let i = 0; i < want.resources.length; i++) expect(out.resources[i]).toBe(want.resources[i]); // the kept object itself
      expect(out.diagnostics.map((d) => d.message.match(/"([^"]+)" and "([^"]+)".*\/(\w+) for/)!.slice(1).join("/")).sort(), `round ${round}`).toEqual(
        want.conflicts.map((c) => c.split("/")).map(([a, b, n]) => `${a}/${b}/${n}`).sort(),
      );
    }
  });
});

describe("workspace context", () => {
  const desired = desiredFromYaml(WORKSPACES);
  const discovery = discoveryFromYaml(DISCOVERY);

  it("resolves clusters and namespaces from workloadClusters globs against discovery", () => {
    const idx = indexOf(desired, discovery);
    const web = idx.workspaces.get("web")!;
    expect(web.clusters).toEqual(["cluster1", "cluster2"]);
    expect(web.namespaces.get("cluster1")).toEqual(["gateways", "web"]);
    expect(idx.workspaces.get("backend")!.namespaces.get("cluster1")).toEqual(["backend"]);
    expect(idx.owner.get("WorkspaceSettings//backend/backend")).toBe("backend");
  });

  it("shares a Service only with both an export and an import", () => {
    const idx = indexOf(desired, discovery);
    const svc = discovery.get("cluster1")!.services[0]!;
    expect(workspaceContext(idx, "web")!.serviceVisible("cluster1", svc)).toBe(true);
    expect(workspaceContext(idx, "backend")!.serviceVisible("cluster1", svc)).toBe(true);
    const noImport = desiredFromYaml(WORKSPACES.replace("importFrom:\n  - workspaces: [{name: backend}]", "importFrom: []"));
    expect(workspaceContext(indexOf(noImport, discovery), "web")!.serviceVisible("cluster1", svc)).toBe(false);
  });
});

describe("translateWorkspace dispatch", () => {
  it("runs every translator, merges their contributions per cluster and validates outputs", () => {
    const dr = (host: string, subset: string): KindTranslator => ({
      name: `t-${subset}`,
      translate: (ctx) => ({
        resources: ctx.workspace.clusters.map((cluster) => ({
          cluster,
          resource: {
            apiVersion: "networking.istio.io/v1",
            kind: "DestinationRule",
            metadata: outputMetadata("api", "web", cluster, ctx.workspace.name, { kind: "Service", name: "api", namespace: "backend", cluster }),
            spec: { host, subsets: [{ name: subset, labels: { version: subset } }] },
          },
        })),
        diagnostics: [],
      }),
    });
    const bad: KindTranslator = {
      name: "bad",
      translate: (ctx) => ({
        resources: [{ cluster: "cluster1", resource: { apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: outputMetadata("bad", "web", "cluster1", ctx.workspace.name, { kind: "RouteTable", name: "x", namespace: "web", cluster: "" }), spec: { hosts: "not-a-list" } } }],
        diagnostics: [],
      }),
    };
    const desired = desiredFromYaml(WORKSPACES);
    const discovery = discoveryFromYaml(DISCOVERY);
    const r = translateWorkspace("web", desired, discovery, { translators: [dr("api.backend.svc.cluster.local", "v1"), dr("api.backend.svc.cluster.local", "v2"), bad] });
    expect([...r.fragments.keys()]).toEqual(["cluster1", "cluster2"]);
    const c2 = r.fragments.get("cluster2")!;
    expect(c2).toHaveLength(1);
    expect((c2[0]!.spec.subsets as { name: string }[]).map((s) => s.name)).toEqual(["v1", "v2"]);
    expect(r.diagnostics.map((d) => d.code)).toEqual(["INVALID_OUTPUT"]);
    for (const res of c2) expect(validateIstioResource(res)).toEqual([]);

    const all = translateAll(desired, discovery, { translators: [dr("h", "v1")] });
    expect([...all.clusters.keys()]).toEqual(["cluster1", "cluster2"]);
    // Both workspaces render web/api on cluster1 with different labels: a conflict, the first workspace wins.
    expect(all.clusters.get("cluster1")!.resources.map((x) => x.metadata.labels["gitmesh.io/workspace"])).toEqual(["backend"]);
    expect(all.clusters.get("cluster1")!.diagnostics.map((d) => d.code)).toEqual(["OUTPUT_CONFLICT"]);
    expect(all.clusters.get("cluster2")!.resources.map((x) => x.metadata.labels["gitmesh.io/workspace"])).toEqual(["web"]);
  });
});
