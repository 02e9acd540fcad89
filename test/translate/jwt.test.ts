// JWTPolicy (issue #15): beyond the golden files, what the rendered RequestAuthentication and DENY
// AuthorizationPolicy do to requests at the ingress gateway, evaluated the way Istio does (an invalid
// token is rejected by RequestAuthentication; DENY rules then match on principals, operations and
// claims), and that a change to a policy re-renders the gateway's workspace.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { affectedWorkspaces, retranslate, translateAll, type IstioResource } from "../../src/translate/index.js";
import { regexLiteralPrefix } from "../../src/translate/jwt-policy.js";
import { FIXTURES } from "./golden.js";
import { desiredFromYaml, discoveryFromYaml } from "./helpers.js";

const caseText = readFileSync(join(FIXTURES, "jwt-policy/input.yaml"), "utf8");
const discovery = discoveryFromYaml(readFileSync(join(FIXTURES, "jwt-policy/discovery.yaml"), "utf8"));
/** The golden case without its regex route (which widens the requirement to /reports/*). */
const precise = caseText.replace(/  - name: reports\n(?:    .*\n)+?(?=  - name: public)/, "");

interface Request {
  readonly host: string;
  readonly path: string;
  readonly method: string;
  /** undefined: no token; otherwise whether it verifies, and its claims. */
  readonly token?: { readonly valid: boolean; readonly claims?: Record<string, unknown> };
}

const GATEWAY = { namespace: "istio-gateways", labels: { app: "istio-ingressgateway", istio: "ingressgateway" } };

/** Istio at one workload: 401 for an invalid token, 403 when a DENY rule matches, else 200. */
function verdict(resources: readonly IstioResource[], req: Request): 200 | 401 | 403 {
  const selects = (r: IstioResource) => r.metadata.namespace === GATEWAY.namespace && Object.entries((r.spec.selector as { matchLabels?: Record<string, string> }).matchLabels ?? {}).every(([k, v]) => (GATEWAY.labels as Record<string, string>)[k] === v);
  const ras = resources.filter((r) => r.kind === "RequestAuthentication" && selects(r));
  if (req.token !== undefined && ras.length > 0 && !req.token.valid) return 401;
  const principal = req.token?.valid === true && ras.length > 0 ? "issuer/subject" : undefined;
  const glob = (pattern: string, value: string) => (pattern === "*" ? true : pattern.endsWith("*") ? value.startsWith(pattern.slice(0, -1)) : pattern.startsWith("*") ? value.endsWith(pattern.slice(1)) : pattern === value);
  const claim = (key: string): string[] | undefined => {
    const path = [...key.matchAll(/\[([^\]]+)\]/g)].map((m) => m[1]!);
    let v: unknown = req.token?.valid === true ? req.token.claims : undefined;
    for (const p of path) v = typeof v === "object" && v !== null ? (v as Record<string, unknown>)[p] : undefined;
    if (v === undefined) return undefined;
    // `scope` is a space-delimited claim (spaceDelimitedClaims).
    const text = (x: unknown) => (typeof x === "string" ? x : JSON.stringify(x));
    return Array.isArray(v) ? v.map(text) : path[0] === "scope" ? text(v).split(" ") : [text(v)];
  };
  type Rule = { from?: { source: { notRequestPrincipals?: string[] } }[]; to?: { operation: { hosts?: string[]; paths?: string[]; methods?: string[] } }[]; when?: { key: string; values?: string[]; notValues?: string[] }[] };
  const matches = (r: Rule) =>
    (r.from ?? [{ source: {} }]).some((f) => f.source.notRequestPrincipals === undefined || principal === undefined) &&
    (r.to ?? [{ operation: {} }]).some(({ operation: o }) => (o.hosts === undefined || o.hosts.some((h) => glob(h, req.host))) && (o.paths === undefined || o.paths.some((p) => glob(p, req.path))) && (o.methods === undefined || o.methods.includes(req.method))) &&
    (r.when ?? []).every((c) => {
      const have = claim(c.key.replace("request.auth.claims", "")) ?? [];
      if (c.values !== undefined) return have.some((h) => c.values!.some((v) => glob(v, h)));
      return !have.some((h) => c.notValues!.some((v) => glob(v, h)));
    });
  const denies = resources.filter((r) => r.kind === "AuthorizationPolicy" && selects(r) && r.spec.action === "DENY");
  return denies.some((p) => (p.spec.rules as Rule[]).some(matches)) ? 403 : 200;
}

const gatewayOutput = (text: string) => [...(translateAll(desiredFromYaml(text), discovery).clusters.get("cluster1")?.resources ?? [])];

describe("JWTPolicy at the ingress gateway", () => {
  const r = gatewayOutput(precise);
  const good = { valid: true, claims: { group: "admins", scope: "openid email", realm: { role: "reader" } } };
  const host = "bookinfo.example.com";

  it("the selected routes need a valid token; other routes of the same host do not", () => {
    expect(verdict(r, { host, path: "/api/v1/books", method: "POST" })).toBe(403);
    expect(verdict(r, { host, path: "/login", method: "GET" })).toBe(403);
    expect(verdict(r, { host, path: "/api/v1/books", method: "POST", token: good })).toBe(200);
    expect(verdict(r, { host: `${host}:8080`, path: "/login", method: "GET" })).toBe(403);
    // The public route, and the api prefix with another method (the route matches POST only).
    expect(verdict(r, { host, path: "/index.html", method: "GET" })).toBe(200);
    expect(verdict(r, { host, path: "/api/v1/books", method: "GET" })).toBe(200);
    // An invalid token is rejected anywhere on the gateway (Istio's RequestAuthentication is per workload).
    expect(verdict(r, { host, path: "/index.html", method: "GET", token: { valid: false } })).toBe(401);
  });

  it("claims, nested claims and scopes are required as the policy says", () => {
    const req = (claims: Record<string, unknown>) => verdict(r, { host, path: "/login", method: "GET", token: { valid: true, claims } });
    expect(req({ group: "db-ops", scope: "openid" })).toBe(200); // wildcard value
    expect(req({ group: "guests", scope: "openid" })).toBe(403);
    expect(req({ group: "admins", scope: "email" })).toBe(403); // required scope missing
    expect(req({ group: "admins", scope: "openid", realm: { role: "banned" } })).toBe(403); // denied nested value
    expect(req({ scope: "openid" })).toBe(403); // required claim missing
  });

  it("a route matcher a rule cannot express widens the requirement (a regex to its literal prefix), never narrows it", () => {
    const wide = gatewayOutput(caseText);
    expect(verdict(wide, { host, path: "/reports/42", method: "GET" })).toBe(403);
    expect(verdict(wide, { host, path: "/reports/latest", method: "GET" })).toBe(403);
    expect(verdict(wide, { host, path: "/index.html", method: "GET" })).toBe(200);
    expect(verdict(wide, { host: "other.example.com", path: "/index.html", method: "GET" })).toBe(200);
    const noPrefix = gatewayOutput(caseText.replace("regex: '/reports/[0-9]+'", "regex: '.*/reports/[0-9]+'"));
    expect(verdict(noPrefix, { host, path: "/index.html", method: "GET" })).toBe(403);
  });

  it("a policy that cannot be expressed renders nothing rather than something weaker", () => {
    const all = translateAll(desiredFromYaml(caseText), discovery);
    const parents = [...all.clusters.values()].flatMap((c) => c.resources).map((o) => o.metadata.labels["gitmesh.io/parent-name"]);
    expect(parents).not.toContain("lenient");
    expect(parents).not.toContain("no-issuer");
    expect(all.diagnostics.filter((d) => d.severity === "error").map((d) => d.code)).toEqual(["INVALID_FIELD", "INVALID_FIELD"]);
  });

  it("a change to a JWTPolicy re-renders the workspace of the gateway that enforces it", () => {
    const before = desiredFromYaml(precise);
    const after = desiredFromYaml(precise.replace("values: [admins,", "values: [root,"));
    const key = "JWTPolicy//bookinfo-frontends/require-jwt";
    const ws = affectedWorkspaces({ desired: before, discovery }, { desired: after, discovery }, { changedKeys: [key] });
    expect(ws).toEqual(["bookinfo", "gateways"]);
    const { result } = retranslate(translateAll(before, discovery), after, discovery, ws);
    expect(result.clusters.get("cluster1")!.resources).toEqual(translateAll(after, discovery).clusters.get("cluster1")!.resources);
  });

  // Istio applies a DENY rule of HTTP attributes only (principals, hosts, paths) to every connection
  // of a TCP port of the selected pods, which refuses them all (its webhook warns: "will deny all
  // traffic to TCP ports under its scope"). JWT is an HTTP requirement: the rules name the HTTP ports.
  it("limits the DENY rules to the pod ports HTTP requests arrive on, at a gateway and at a Service's pods", () => {
    const denyPorts = (resources: readonly IstioResource[], parent: string) =>
      resources
        .filter((r) => r.kind === "AuthorizationPolicy" && r.metadata.labels["gitmesh.io/parent-name"] === parent)
        .flatMap((r) => (r.spec.rules as { to?: { operation: { ports?: string[] } }[] }[]).map((rule) => (rule.to ?? []).map((t) => t.operation.ports ?? "all ports")));
    // The gateway listener on Service port 80 reaches the pods on targetPort 8080.
    const gw = denyPorts(gatewayOutput(precise), "require-jwt");
    expect(gw.length).toBeGreaterThan(0);
    for (const rule of gw) for (const ports of rule) expect(ports).toEqual(["8080"]);
    // ratings serves http (9080), grpc (9090) and a TCP port (5432): the rules name 9080 and 9090.
    const tcpDiscovery = discoveryFromYaml(
      readFileSync(join(FIXTURES, "jwt-policy/discovery.yaml"), "utf8").replaceAll("{name: grpc, port: 9090, targetPort: 9090, protocol: TCP}]", "{name: grpc, port: 9090, targetPort: 9090, protocol: TCP}, {name: tcp-db, port: 5432, targetPort: 15432, protocol: TCP}]"),
    );
    const policy = `---
apiVersion: security.policy.gloo.solo.io/v2
kind: JWTPolicy
metadata: {name: ratings-jwt, namespace: bookinfo-backends}
spec:
  applyToDestinations:
  - selector: {name: ratings, namespace: bookinfo-backends}
  config:
    providers:
      p: {issuer: https://issuer.example.com, remote: {url: https://issuer.example.com/jwks}}
`;
    const out = translateAll(desiredFromYaml(`${precise}${policy}`), tcpDiscovery).clusters.get("cluster1")?.resources ?? [];
    expect(denyPorts(out, "ratings-jwt")).toEqual([[["9080", "9090"]]]);
  });
});

describe("a regex route's JWT requirement (#36)", () => {
  // Envoy matches a route regex against the whole path (RE2), so every matching path starts with
  // the regex's literal prefix: the requirement covers that prefix instead of the whole host.
  it.each([
    ["/reports/[0-9]+", "/reports/"],
    ["^/api/v1/users/.*", "/api/v1/users/"],
    ["/files\\.d/[a-z]+", "/files.d/"],
    ["/items?", "/item"],
    ["/a{2}", "/"],
    ["/x\\d+", "/x"],
  ])("%s is covered by the prefix %s", (regex, prefix) => {
    expect(regexLiteralPrefix(regex)).toBe(prefix);
  });
  it.each(["/a|/b", "(?i)/admin", ".*/secret", "[/]x"])("%s has no literal prefix: the whole host", (regex) => {
    expect(regexLiteralPrefix(regex)).toBeUndefined();
  });
});
