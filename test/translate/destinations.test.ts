/**
 * Behaviour of the destination translators beyond the golden cases (test/fixtures/translate/dest-*):
 * synthetic addresses (range, stability, collisions), IssuedCertificate schema, fail-closed access
 * rules, and the fleet generator's determinism.
 */
import { describe, expect, it } from "vitest";
import { generateFleet } from "../../bench/fleet/generate.js";
import { FLEET_PRESETS } from "../../bench/fleet/presets.js";
import { syntheticAddress } from "../../src/translate/destination-common.js";
import { validateIssuedCertificate } from "../../src/translate/root-trust.js";
import { translateAll, type IstioResource } from "../../src/translate/index.js";
import { caseNames, loadCase, runCase } from "./golden.js";
import { desiredFromYaml, discoveryFromYaml } from "./helpers.js";

const DEST_CASES = caseNames().filter((n) => n.startsWith("dest-"));

function allResources(name: string): { cluster: string; r: IstioResource }[] {
  const { result } = runCase(loadCase(name));
  const out: { cluster: string; r: IstioResource }[] = [];
  for (const [cluster, c] of result.clusters) for (const r of c.resources) out.push({ cluster, r });
  return out;
}

function inClassE(ip: string): boolean {
  const first = Number(ip.split(".")[0]);
  return /^\d+\.\d+\.\d+\.\d+$/.test(ip) && first >= 240 && first <= 255 && ip !== "255.255.255.255";
}

describe("synthetic ServiceEntry addresses", () => {
  it("are in 240.0.0.0/4 and identical in every cluster for one VirtualDestination or federated host", () => {
    expect(DEST_CASES.length).toBeGreaterThanOrEqual(15);
    let checked = 0;
    for (const name of DEST_CASES) {
      const byHost = new Map<string, Set<string>>();
      for (const { r } of allResources(name)) {
        if (r.kind !== "ServiceEntry" || r.spec.location !== "MESH_INTERNAL") continue;
        const addresses = r.spec.addresses as string[];
        expect(addresses, `${name}: ${r.metadata.name}`).toHaveLength(1);
        for (const a of addresses) expect(inClassE(a), `${name}: ${a}`).toBe(true);
        const host = (r.spec.hosts as string[]).join(",");
        byHost.set(host, new Set([...(byHost.get(host) ?? []), ...addresses]));
        checked++;
      }
      for (const [host, set] of byHost) expect(set.size, `${name}: ${host} has one address everywhere`).toBe(1);
      const all = [...byHost.values()].map((s) => [...s][0]);
      expect(new Set(all).size, `${name}: no two hosts share an address`).toBe(all.length);
    }
    expect(checked).toBeGreaterThan(10);
  });

  it("re-hashes the later identity on a collision and reports ADDRESS_COLLISION", () => {
    // find two VirtualDestination names whose first-choice addresses collide (birthday search in 2^28)
    const seen = new Map<string, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; pair === undefined && i < 200_000; i++) {
      const name = `vd${i}`;
      const a = syntheticAddress(`${name}/apps//virtual-destination`);
      const prev = seen.get(a);
      if (prev !== undefined) pair = [prev, name];
      else seen.set(a, name);
    }
    expect(pair).toBeDefined();
    const [first, second] = pair!;
    const vd = (name: string) => `
apiVersion: networking.gloo.solo.io/v2
kind: VirtualDestination
metadata: {name: ${name}, namespace: apps}
spec:
  hosts: [${name}.global]
  services: [{name: api}]
  ports: [{number: 80, protocol: HTTP}]
`;
    const desired = desiredFromYaml(`
apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata: {name: apps, namespace: gloo-mesh}
spec:
  workloadClusters: [{name: c1, namespaces: [{name: apps}]}]
---${vd(second)}---${vd(first)}`);
    const discovery = discoveryFromYaml(`
cluster: c1
namespaces: [{name: apps}]
services: [{name: api, namespace: apps, labels: {}, selector: {app: api}, ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]}]
workloads: [{kind: Deployment, name: api, namespace: apps, podLabels: {app: api}, serviceAccount: api}]
meshes: [{namespace: istio-system, trustDomain: c1.local, revision: "", istiodServiceAccount: istiod}]
`);
    const result = translateAll(desired, discovery);
    const ses = result.clusters.get("c1")!.resources.filter((r) => r.kind === "ServiceEntry");
    expect(ses).toHaveLength(2);
    const addresses = ses.map((r) => (r.spec.addresses as string[])[0]!);
    expect(new Set(addresses).size).toBe(2);
    for (const a of addresses) expect(inClassE(a)).toBe(true);
    const collisions = result.diagnostics.filter((d) => d.code === "ADDRESS_COLLISION");
    expect(collisions).toHaveLength(1);
    // identities are processed in sorted order: the one sorting first keeps its first-choice address
    const [keep, moved] = [first, second].sort();
    expect(collisions[0]!.object?.name).toBe(moved);
    const kept = ses.find((r) => (r.spec.hosts as string[])[0] === `${keep!}.global`)!;
    expect((kept.spec.addresses as string[])[0]).toBe(syntheticAddress(`${keep!}/apps//virtual-destination`));
  });
});

describe("IssuedCertificate (RootTrustPolicy)", () => {
  it("every rendered request satisfies its own schema; a bad key size is refused with INVALID_OUTPUT", () => {
    const ok = allResources("dest-root-trust").filter(({ r }) => r.kind === "IssuedCertificate");
    // cluster3 reports cluster1's trust domain: no request for it (TRUST_DOMAIN_MISMATCH, see the golden diagnostics)
    expect(ok.map(({ cluster }) => cluster)).toEqual(["cluster1", "cluster2"]);
    for (const { r } of ok) {
      expect(validateIssuedCertificate(r)).toEqual([]);
      expect(r.spec.certOptions).toEqual({ ttlDays: 365, rsaKeySizeBytes: 4096, orgName: "gloo-mesh" });
      expect(r.spec.secret).toEqual({ name: "cacerts", namespace: "istio-system" });
    }
    const { result } = runCase(loadCase("dest-root-trust-conflict"));
    expect(result.diagnostics.some((d) => d.code === "INVALID_OUTPUT" && d.object?.name === "everything")).toBe(true);
    const issued = [...result.clusters.values()].flatMap((c) => c.resources.filter((r) => r.kind === "IssuedCertificate"));
    expect(issued.map((r) => (r.spec.rootTrustPolicy as { name: string }).name)).toEqual(["prod", "prod"]);
    expect(validateIssuedCertificate({ ...issued[0]!, spec: { ...issued[0]!.spec, hosts: ["not-a-spiffe-id"] } })).not.toEqual([]);
  });
});

describe("AccessPolicy fails closed", () => {
  it("an entry whose clients resolve to nobody allows nothing (ALLOW policy without rules)", () => {
    const aps = allResources("dest-access-errors").filter(({ r }) => r.kind === "AuthorizationPolicy");
    expect(aps.length).toBeGreaterThan(0);
    for (const { r } of aps) {
      expect(r.spec.action).toBe("ALLOW");
      expect(r.spec.rules).toBeUndefined();
    }
  });

  it("an empty authz entry never becomes an allow-everything rule; dry-run entries live in an annotated twin", () => {
    const aps = allResources("dest-access-workloads-dryrun").filter(({ r }) => r.kind === "AuthorizationPolicy");
    for (const { r } of aps) for (const rule of (r.spec.rules as object[] | undefined) ?? []) expect(Object.keys(rule).length).toBeGreaterThan(0);
    const dry = aps.filter(({ r }) => r.metadata.annotations?.["istio.io/dry-run"] === "true");
    expect(dry.length).toBe(aps.length / 2);
  });
});

describe("fleet generator", () => {
  it("is deterministic for a seed and changes with it", () => {
    const a = generateFleet(FLEET_PRESETS.small);
    const b = generateFleet(FLEET_PRESETS.small);
    expect(JSON.stringify(a.files)).toBe(JSON.stringify(b.files));
    expect(JSON.stringify([...a.discovery])).toBe(JSON.stringify([...b.discovery]));
    const c = generateFleet({ ...FLEET_PRESETS.small, seed: 7 });
    expect(JSON.stringify([...c.discovery])).not.toBe(JSON.stringify([...a.discovery]));
    expect(a.counts).toMatchObject({ clusters: 3, services: 150 });
    expect(a.onePolicyChange.after.content).not.toBe(a.onePolicyChange.before.content);
  });
});
