/**
 * The two example trees must agree with each other and with the loader: examples/repo-layout
 * validates clean, and every Service, service account and gateway it names exists in the
 * clusters described by examples/discovery (so that `render` of the examples is meaningful).
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { loadDesiredState, objectsOfKind, readConfigDirectory, workspaceOf } from "../../src/config/index.js";
import { readDiscoveryDirectory } from "../../src/discovery/index.js";

const ROOT = new URL("../..", import.meta.url).pathname;
const REPO = `${ROOT}examples/repo-layout`;
const DISCOVERY = `${ROOT}examples/discovery`;

async function load() {
  const files = await readConfigDirectory(REPO);
  return loadDesiredState(files);
}

function get(obj: unknown, ...path: (string | number)[]): unknown {
  let cur = obj;
  for (const p of path) cur = (cur as Record<string | number, unknown> | undefined)?.[p];
  return cur;
}

describe("examples", () => {
  it("repo-layout loads without any diagnostic and every object has its workspace", async () => {
    const { state, diagnostics } = await load();
    expect(diagnostics).toEqual([]);
    const owners = Object.fromEntries(
      ["VirtualGateway", "VirtualDestination", "RouteTable", "FailoverPolicy", "AccessPolicy", "ExternalService"].flatMap((kind) =>
        objectsOfKind(state, kind).map((o) => [`${kind}/${o.metadata.name}`, workspaceOf(state, o)]),
      ),
    );
    expect(owners).toMatchObject({
      "VirtualGateway/north-south-gw": "gateways",
      "RouteTable/main-bookinfo": "gateways",
      "ExternalService/httpbin": "gateways",
      "RouteTable/productpage": "bookinfo-frontends",
      "AccessPolicy/productpage-from-gateway": "bookinfo-frontends",
      "VirtualDestination/reviews": "bookinfo-backends",
      "FailoverPolicy/reviews-failover": "bookinfo-backends",
    });
    expect(objectsOfKind(state, "KubernetesCluster").map((o) => o.metadata.name).sort()).toEqual(["cluster1", "cluster2"]);
  });

  it("everything the configuration names exists in the discovered clusters", async () => {
    const { state } = await load();
    const { snapshots, diagnostics } = await readDiscoveryDirectory(DISCOVERY);
    expect(diagnostics).toEqual([]);
    // clusters of the configuration = clusters described by discovery
    expect([...snapshots.keys()]).toEqual(objectsOfKind(state, "KubernetesCluster").map((o) => o.metadata.name).sort());

    const services = new Set<string>();
    const accounts = new Set<string>();
    for (const s of snapshots.values()) {
      for (const svc of s.services) services.add(`${svc.namespace}/${svc.name}`);
      for (const w of s.workloads) accounts.add(`${w.namespace}/${w.serviceAccount}`);
    }
    // Service destinations of routes (kind omitted = SERVICE)
    for (const rt of objectsOfKind(state, "RouteTable")) {
      for (const route of (get(rt.spec, "http") as unknown[] | undefined) ?? []) {
        for (const d of (get(route, "forwardTo", "destinations") as unknown[] | undefined) ?? []) {
          if (get(d, "kind") !== undefined && get(d, "kind") !== "SERVICE") continue;
          const ns = (get(d, "ref", "namespace") as string | undefined) ?? rt.metadata.namespace;
          expect(services, `${rt.metadata.name} → ${String(get(d, "ref", "name"))}`).toContain(`${ns}/${String(get(d, "ref", "name"))}`);
        }
      }
    }
    // backing Services of virtual destinations: present in BOTH clusters
    for (const vd of objectsOfKind(state, "VirtualDestination")) {
      for (const sel of (get(vd.spec, "services") as unknown[] | undefined) ?? []) {
        for (const s of snapshots.values()) {
          expect(s.services.some((x) => x.name === get(sel, "name") && x.namespace === get(sel, "namespace")), `${s.cluster} has ${String(get(sel, "name"))}`).toBe(true);
        }
      }
    }
    // identities admitted by access policies are service accounts of real workloads
    for (const ap of objectsOfKind(state, "AccessPolicy")) {
      for (const entry of (get(ap.spec, "config", "authzList") as unknown[] | undefined) ?? []) {
        for (const client of (get(entry, "allowedClients") as unknown[] | undefined) ?? []) {
          const sa = get(client, "serviceAccountSelector");
          expect(accounts, ap.metadata.name).toContain(`${String(get(sa, "namespace"))}/${String(get(sa, "name"))}`);
        }
      }
    }
    // the VirtualGateway's listener ports exist on the ingress gateway of every cluster
    const vg = objectsOfKind(state, "VirtualGateway")[0]!;
    for (const s of snapshots.values()) {
      const ingress = s.gateways.find((g) => g.kind === "ingress")!;
      for (const l of get(vg.spec, "listeners") as unknown[]) {
        expect(ingress.ports.map((p) => p.port)).toContain(get(l, "port", "number"));
      }
      // and every cluster has an east-west gateway with an address for reviews.global to fail over through
      const ew = s.gateways.find((g) => g.kind === "east-west")!;
      expect(ew.addresses.length).toBeGreaterThan(0);
      expect(ew.ports.find((p) => p.name === "tls")?.port).toBe(15443);
    }
    // failover goes between the regions the clusters are in
    const regions = new Set([...snapshots.values()].flatMap((s) => s.localities.map((l) => l.region)));
    for (const fp of objectsOfKind(state, "FailoverPolicy")) {
      for (const m of get(fp.spec, "config", "localityMappings") as unknown[]) {
        expect(regions).toContain(get(m, "from", "region"));
        for (const to of get(m, "to") as unknown[]) expect(regions).toContain(get(to, "region"));
      }
    }
  });

  it("`gitmesh validate examples/repo-layout` exits 0 with no errors", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [`${ROOT}bin/gitmesh.js`, "validate", REPO, "--output", "json"], { cwd: ROOT });
    const report = JSON.parse(stdout) as { diagnostics: { severity: string }[] };
    expect(report.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  });
});
