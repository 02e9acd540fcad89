// CSRFPolicy (issue #15) and the Envoy configuration inside EnvoyFilters: every per-route patch must
// find its route (Istio names the Envoy route after the VirtualService route), the filter must exist
// on the same gateway, and embedded Envoy messages are checked against their schema.
import { describe, expect, it } from "vitest";
import { validateIstioResource, type IstioResource } from "../../src/translate/index.js";
import { loadCase, runCase } from "./golden.js";

type Patch = { applyTo: string; match: { routeConfiguration?: { vhost: { route: { name: string } } } }; patch: { value: Record<string, unknown> } };
const patches = (r: IstioResource) => r.spec.configPatches as Patch[];
const sameGateway = (a: IstioResource, b: { metadata: { namespace: string } }) => a.metadata.namespace === b.metadata.namespace;

describe("CSRFPolicy", () => {
  const out = runCase(loadCase("csrf-policy")).result.clusters.get("cluster1")!.resources;
  const filters = out.filter((r) => r.kind === "EnvoyFilter");

  it("each per-route patch names a route of a VirtualService bound to that gateway, and the filter is inserted there", () => {
    const routeNames = out
      .filter((r) => r.kind === "VirtualService" && (r.spec.gateways as string[]).some((g) => g.startsWith("istio-gateways/")))
      .flatMap((vs) => (vs.spec.http as { name: string }[]).map((h) => h.name));
    const routePatches = filters.flatMap((f) => patches(f).filter((p) => p.applyTo === "HTTP_ROUTE").map((p) => ({ f, name: p.match.routeConfiguration!.vhost.route.name })));
    expect(routePatches.map((p) => p.name).sort()).toEqual(["forms-productpage", "preview-productpage"]);
    for (const p of routePatches) {
      expect(routeNames).toContain(p.name);
      expect(filters.some((f) => sameGateway(f, p.f) && patches(f).some((x) => x.applyTo === "HTTP_FILTER"))).toBe(true);
    }
    // The public route gets no per-route config: the inserted filter is disabled (0 %) by default.
    const inserted = filters.flatMap(patches).find((p) => p.applyTo === "HTTP_FILTER")!;
    expect(inserted.patch.value).toMatchObject({ name: "envoy.filters.http.csrf", typed_config: { filter_enabled: { default_value: { numerator: 0 } } } });
    // Provenance names an object that exists: the VirtualGateway whose gateway carries the filter.
    const insertion = filters.find((f) => patches(f).some((p) => p.applyTo === "HTTP_FILTER"))!;
    expect([insertion.metadata.labels["gitmesh.io/parent-kind"], insertion.metadata.labels["gitmesh.io/parent-name"]]).toEqual(["VirtualGateway", "north-south-gw"]);
  });

  it("embedded Envoy configuration is validated: unknown types, unknown fields and bad enums are INVALID_OUTPUT issues", () => {
    const good = filters.find((f) => patches(f).some((p) => p.applyTo === "HTTP_ROUTE"))!;
    expect(validateIstioResource(good)).toEqual([]);
    const broken = structuredClone(good) as IstioResource & { spec: { configPatches: Patch[] } };
    const cfg = (broken.spec.configPatches[0]!.patch.value.typed_per_filter_config as Record<string, Record<string, unknown>>)["envoy.filters.http.csrf"]!;
    cfg.filterEnabled = { default_value: { numerator: 1 } };
    (cfg.filter_enabled as { default_value: { denominator: string } }).default_value.denominator = "PERCENT";
    broken.spec.configPatches[1]!.patch.value = { typed_per_filter_config: { x: { "@type": "type.googleapis.com/envoy.Unknown" } } };
    const issues = validateIstioResource(broken).map((i) => i.path);
    expect(issues).toEqual(
      expect.arrayContaining([
        "/spec/configPatches/0/patch/value/typed_per_filter_config/envoy.filters.http.csrf",
        "/spec/configPatches/0/patch/value/typed_per_filter_config/envoy.filters.http.csrf/filter_enabled/default_value/denominator",
        "/spec/configPatches/1/patch/value/typed_per_filter_config/x/@type",
      ]),
    );
  });
});
