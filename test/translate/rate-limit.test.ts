// RateLimitPolicy (issue #15): what Envoy sends and what the rate-limit service decides. The rendered
// route actions build descriptors the way Envoy's ratelimit filter does; the rendered ConfigMap is
// matched the way envoyproxy/ratelimit matches its configuration tree (key + value, else key alone;
// the deepest entry with a limit wins). A request therefore hits the limit the user wrote only if
// the two halves gitmesh renders agree.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { loadDesiredState } from "../../src/config/index.js";
import { translateAll, validateIstioResource, type IstioResource } from "../../src/translate/index.js";
import { FIXTURES, loadCase, runCase } from "./golden.js";

type Action = Record<string, Record<string, unknown>>;
type Patch = { applyTo: string; match: { context: string; routeConfiguration?: { portNumber?: number; vhost?: { route: { name: string } } } }; patch: { value: Record<string, unknown> } };
type Descriptor = { key: string; value?: string; rate_limit?: { unit: string; requests_per_unit: number }; descriptors?: Descriptor[] };
interface Request {
  readonly headers: Readonly<Record<string, string>>;
  readonly remoteAddress: string;
  /** Dynamic metadata by descriptor key (what an earlier filter, e.g. ext_authz, set). */
  readonly metadata?: Readonly<Record<string, string>>;
}

/** Envoy: one descriptor per rate_limits entry; an action that cannot produce its entry drops the whole descriptor. */
function descriptorsOf(rateLimits: readonly { actions: readonly Action[] }[], req: Request): [string, string][][] {
  const out: [string, string][][] = [];
  for (const rl of rateLimits) {
    const entries: [string, string][] = [];
    let ok = true;
    for (const a of rl.actions) {
      if (a.generic_key) entries.push([typeof a.generic_key.descriptor_key === "string" ? a.generic_key.descriptor_key : "generic_key", String(a.generic_key.descriptor_value)]);
      else if (a.remote_address) entries.push(["remote_address", req.remoteAddress]);
      else if (a.request_headers) {
        const v = req.headers[String(a.request_headers.header_name)];
        if (v === undefined) ok = false;
        else entries.push([String(a.request_headers.descriptor_key), v]);
      } else if (a.header_value_match) {
        const headers = a.header_value_match.headers as { name: string; string_match: { exact: string } }[];
        const matches = headers.every((h) => req.headers[h.name] === h.string_match.exact);
        if (matches === (a.header_value_match.expect_match ?? true)) entries.push(["header_match", String(a.header_value_match.descriptor_value)]);
        else ok = false;
      } else if (a.metadata) {
        const v = req.metadata?.[String(a.metadata.descriptor_key)];
        if (v === undefined) ok = false;
        else entries.push([String(a.metadata.descriptor_key), v]);
      } else throw new Error(`action not modelled: ${Object.keys(a).join()}`);
    }
    if (ok) out.push(entries);
  }
  return out;
}

/** envoyproxy/ratelimit: walk the tree entry by entry; the limit of the deepest matched node that has one. */
function limitFor(config: { descriptors: Descriptor[] }, descriptor: readonly [string, string][]): string | undefined {
  let level: Descriptor[] | undefined = config.descriptors;
  let found: string | undefined;
  for (const [key, value] of descriptor) {
    const node: Descriptor | undefined = level?.find((d) => d.key === key && d.value === value) ?? level?.find((d) => d.key === key && d.value === undefined);
    if (node === undefined) return undefined;
    found = node.rate_limit ? `${node.rate_limit.requests_per_unit}/${node.rate_limit.unit}` : undefined;
    level = node.descriptors;
  }
  return found;
}

describe("RateLimitPolicy", () => {
  const out = runCase(loadCase("rate-limit")).result.clusters.get("cluster1")!.resources;
  const filters = out.filter((r) => r.kind === "EnvoyFilter");
  const patches = (r: IstioResource) => r.spec.configPatches as Patch[];
  const configMap = out.find((r) => r.kind === "ConfigMap") as unknown as { metadata: { namespace: string; labels: Record<string, string> }; data: Record<string, string> };
  const serviceConfig = parse(configMap.data["limits.gloo-mesh-addons.yaml"]!) as { domain: string; descriptors: Descriptor[] };
  const routeLimits = (route: string) => filters.flatMap(patches).find((p) => p.match.routeConfiguration?.vhost?.route.name === route)?.patch.value.route as { rate_limits: { actions: Action[] }[] } | undefined;

  it("the limits rendered for the rate limiter and the descriptors the gateway sends agree", () => {
    expect(configMap.metadata.namespace).toBe("gloo-mesh-addons");
    expect(configMap.metadata.labels["gitmesh.io/ratelimit-server"]).toBe("rate-limiter");
    const api = routeLimits("api-productpage")!;
    const anon: Request = { headers: {}, remoteAddress: "198.51.100.7" };
    // Without x-user only the counter descriptor is limited: 5 per second per client address (the
    // client's set-style descriptor is sent too; this domain has no set-style rule, so it is allowed).
    expect(descriptorsOf(api.rate_limits, anon).map((d) => limitFor(serviceConfig, d))).toEqual(["5/second", undefined]);
    const user: Request = { headers: { "x-user": "alice" }, remoteAddress: "198.51.100.7" };
    expect(descriptorsOf(api.rate_limits, user).map((d) => limitFor(serviceConfig, d))).toEqual(["5/second", "1000/hour", undefined]);
    // The public route and the route whose server is missing are not limited at all.
    expect(routeLimits("public-productpage")).toBeUndefined();
    expect(routeLimits("defaults-productpage")).toBeUndefined();
  });

  it("the filter of the route's domain is on the same gateway, and names the rate limiter's cluster", () => {
    const route = filters.find((f) => patches(f).some((p) => p.match.routeConfiguration?.vhost?.route.name === "api-productpage"))!;
    const inserted = filters.filter((f) => f.metadata.namespace === route.metadata.namespace && patches(f).some((p) => p.applyTo === "HTTP_FILTER"));
    expect(inserted).toHaveLength(1);
    expect(inserted[0]!.spec.workloadSelector).toEqual(route.spec.workloadSelector);
    expect(patches(inserted[0]!)[0]!.patch.value).toMatchObject({
      name: "envoy.filters.http.ratelimit.limits.gloo-mesh-addons",
      typed_config: { domain: serviceConfig.domain, failure_mode_deny: true, timeout: "0.2s", rate_limit_service: { grpc_service: { envoy_grpc: { cluster_name: "outbound|8083||rate-limiter.gloo-mesh-addons.svc.cluster.local" } } } },
    });
  });

  it("a destination is limited on its inbound port: POST to details counts, GET does not", () => {
    const vhost = filters.flatMap(patches).find((p) => p.applyTo === "VIRTUAL_HOST")!;
    expect(vhost.match).toEqual({ context: "SIDECAR_INBOUND", routeConfiguration: { portNumber: 9080 } });
    const limits = vhost.patch.value.rate_limits as { actions: Action[] }[];
    const post = descriptorsOf(limits, { headers: { ":method": "POST" }, remoteAddress: "x" });
    expect(post.map((d) => limitFor(serviceConfig, d))).toEqual(["10/minute"]);
    expect(descriptorsOf(limits, { headers: { ":method": "GET" }, remoteAddress: "x" })).toEqual([]);
    const inbound = filters.filter((f) => patches(f).some((p) => p.applyTo === "HTTP_FILTER" && p.match.context === "SIDECAR_INBOUND"));
    expect(inbound.map((f) => f.spec.workloadSelector)).toEqual([{ labels: { app: "details" } }]);
  });

  it("rate_limits and the filter are checked against Envoy's API: a wrong action or a missing cluster is an issue", () => {
    for (const f of filters) expect(validateIstioResource(f)).toEqual([]);
    const route = structuredClone(filters.find((f) => patches(f).some((p) => p.applyTo === "HTTP_ROUTE"))!) as IstioResource & { spec: { configPatches: Patch[] } };
    const limits = (route.spec.configPatches[0]!.patch.value.route as { rate_limits: { actions: Record<string, unknown>[] }[] }).rate_limits;
    limits[0]!.actions[0] = { generic_key: { descriptorValue: "camelCase" } };
    expect(validateIstioResource(route).map((i) => i.path)).toContain("/spec/configPatches/0/patch/value/route/rate_limits/0/actions/0/generic_key");
    const filter = structuredClone(filters.find((f) => patches(f).some((p) => p.applyTo === "HTTP_FILTER"))!) as IstioResource & { spec: { configPatches: Patch[] } };
    delete ((filter.spec.configPatches[0]!.patch.value.typed_config as Record<string, Record<string, unknown>>).rate_limit_service as Record<string, unknown>).grpc_service;
    expect(validateIstioResource(filter).map((i) => i.path)).toContain("/spec/configPatches/0/patch/value/typed_config/rate_limit_service");
  });

  it("a limit without a unit renders no configuration at all (envoyproxy/ratelimit would refuse the whole file), with an error at its path", () => {
    const input = readFileSync(join(FIXTURES, "rate-limit", "input.yaml"), "utf8").replace("rateLimit: {requestsPerUnit: 1000, unit: HOUR}", "rateLimit: {requestsPerUnit: 1000}");
    const result = translateAll(loadDesiredState([{ path: "input.yaml", content: input }]).state, loadCase("rate-limit").discovery);
    expect(result.clusters.get("cluster1")!.resources.filter((r) => r.kind === "ConfigMap")).toEqual([]);
    expect(result.diagnostics.filter((d) => d.code === "INVALID_FIELD").map((d) => d.path)).toContain("/spec/raw/descriptors/1/rateLimit/unit");
  });
});

// Set-style limits (issue #36 item 5), case rate-limit-set. Gloo: a setDescriptors rule applies when
// the request's setActions descriptor holds each of its simple descriptors, in any order; a simple
// descriptor without a value matches any value (and is counted per value).
describe("RateLimitPolicy setActions / setDescriptors", () => {
  const { result } = runCase(loadCase("rate-limit-set"));
  const out = result.clusters.get("cluster1")!.resources;
  const filters = out.filter((r) => r.kind === "EnvoyFilter");
  const patches = (r: IstioResource) => r.spec.configPatches as Patch[];
  const configMap = out.find((r) => r.kind === "ConfigMap") as unknown as { data: Record<string, string> };
  const serviceConfig = parse(configMap.data["sets.gloo-mesh-addons.yaml"]!) as { domain: string; descriptors: Descriptor[] };
  const routeLimits = (route: string) => (filters.flatMap(patches).find((p) => p.match.routeConfiguration?.vhost?.route.name === route)?.patch.value.route as { rate_limits: { actions: Action[] }[] }).rate_limits;
  const limits = (rateLimits: { actions: Action[] }[], req: Request) => descriptorsOf(rateLimits, req).map((d) => limitFor(serviceConfig, d));

  it("a rule applies to the clients that send its keys, whatever order the rule lists them in", () => {
    const orgs = routeLimits("api-productpage");
    expect(limits(orgs, { headers: { "X-Organization": "solo.io" }, remoteAddress: "x" })).toEqual(["3/minute"]);
    expect(limits(orgs, { headers: { "X-Organization": "example.com" }, remoteAddress: "x" })).toEqual([undefined]);
    const plans = routeLimits("defaults-productpage");
    expect(limits(plans, { headers: { "X-Solo-Plan": "bronze" }, remoteAddress: "x", metadata: { userId: "alice" } })).toEqual(["1/minute"]);
    expect(limits(plans, { headers: { "X-Solo-Plan": "gold" }, remoteAddress: "x", metadata: { userId: "bob" } })).toEqual(["5/minute"]);
    expect(limits(plans, { headers: { "X-Solo-Plan": "silver" }, remoteAddress: "x", metadata: { userId: "bob" } })).toEqual([undefined]);
  });

  it("set-style descriptors never meet the tree-style rules of the domain: they start with the set marker", () => {
    for (const rl of routeLimits("api-productpage")) expect(rl.actions[0]).toEqual({ generic_key: { descriptor_key: "gitmesh-set", descriptor_value: "setActions" } });
    expect(serviceConfig.descriptors.map((d) => [d.key, d.value])).toEqual([["gitmesh-set", "setActions"]]);
  });

  it("what envoyproxy/ratelimit cannot count as Gloo does is refused with the field and the reason", () => {
    const at = (path: string) => result.diagnostics.filter((d) => d.path === path).map((d) => `${d.severity} ${d.code}`);
    expect(at("/spec/raw/setDescriptors/0/simpleDescriptors")).toEqual(["error NEEDS_GLOO_DATA_PLANE"]);
    expect(result.diagnostics.find((d) => d.path === "/spec/raw/setDescriptors/0/simpleDescriptors")!.message).toContain("[organization, region]");
    expect(at("/spec/raw/setDescriptors/3/simpleDescriptors")).toEqual(["warning SELECTS_NOTHING"]);
    expect(at("/spec/raw/setDescriptors/4/simpleDescriptors")).toContain("error INVALID_FIELD");
    for (const f of filters) expect(validateIstioResource(f)).toEqual([]);
  });
});
