// glooAuth opaAuth on OPA-Envoy (issue #36 item 4), case ext-auth-glooauth: the rendered ConfigMaps'
// modules are evaluated by real OPA (tools/opa, github.com/open-policy-agent/opa) against inputs in
// OPA-Envoy's shape (its gRPC server: protojson of the CheckRequest, then parsed_path, parsed_query,
// parsed_body, truncated_body, version), next to the user's modules as Gloo documents them:
// - Gloo's OPA guide (docs.solo.io, "Open Policy Agent" for Gloo Edge): the petstore module that
//   allows GET under /api/pets and GET or DELETE of /api/pets/2, written for input.http_request;
// - the corpus's most used module, `allow-solo-email-users` (13 real policies, solo-io/workshops):
//   `io.jwt.decode(input.state.jwt)` and an email ending in @solo.io, after an OIDC login;
// - a module reading input.check_request.attributes.request.http.headers (Gloo: "all OPA policies
//   contain an Envoy Auth Service CheckRequest");
// - opaServerAuth (solo-apis OpaServerAuth: "The package from your Rego policy bundle used to query
//   the OPA data API", ruleName "Supports querying subfields with a `/`") as the corpus uses it
//   (package httpbin, ruleName allow/allowed), and an opaAuth query whose result is an array (OpaAuth.query:
//   "must be either a boolean or an array with boolean as the first element. A boolean `true` value
//   means that the request will be authorized. Any other value, or error, means that the request will be denied").
// Gloo's input document (docs.solo.io, "OPA input structure"): input.check_request, input.http_request,
// input.state.jwt ("If you use OAuth, the token retrieved during the OIDC flow"). Both are loaded the
// way OPA-Envoy runs them: Rego v0 accepted (--v0-compatible), as Gloo's OPA does.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { validateIstioResource, type IstioResource } from "../../src/translate/index.js";
import { toolBinary } from "../helpers/tools.js";
import { loadCase, runCase } from "./golden.js";

const PETSTORE = `package test

default allow = false
allow {
    startswith(input.http_request.path, "/api/pets")
    input.http_request.method == "GET"
}
allow {
    input.http_request.path == "/api/pets/2"
    any({input.http_request.method == "GET",
        input.http_request.method == "DELETE"
    })
}
`;
const DENY_ADMINS = `package admins

deny {
    input.check_request.attributes.request.http.headers["x-admin"] == "true"
}
`;
const SOLO_EMAIL = `package test

default allow = false
allow {
    [header, payload, signature] = io.jwt.decode(input.state.jwt)
    endswith(payload["email"], "@solo.io")
}
`;

const HTTPBIN_BUNDLE = `package httpbin

default allow = {"allowed": false}
allow = {"allowed": true, "body": "reads only"} {
    input.http_request.method == "GET"
}
decision = [true, "not blocked"] {
    not input.http_request.headers["x-block"]
}
decision = [false, "blocked"] {
    input.http_request.headers["x-block"]
}
`;

const opa = toolBinary("opa", "opa");
const work = mkdtempSync(join(tmpdir(), "gitmesh-opa-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const result = runCase(loadCase("ext-auth-glooauth")).result;
const out = result.clusters.get("cluster1")!.resources;
const configMaps = out.filter((r) => r.kind === "ConfigMap" && r.metadata.labels["openpolicyagent.org/policy"] === "rego") as unknown as (IstioResource & { data: Record<string, string> })[];

/** A directory of what one OPA-Envoy server loads: the rendered ConfigMaps in its namespace and the user's modules. */
function server(namespace: string, modules: Record<string, string>): string {
  const dir = join(work, namespace);
  mkdirSync(dir, { recursive: true });
  for (const cm of configMaps.filter((c) => c.metadata.namespace === namespace)) for (const [file, rego] of Object.entries(cm.data)) writeFileSync(join(dir, `${cm.metadata.name}.${file}`), rego);
  for (const [file, rego] of Object.entries(modules)) writeFileSync(join(dir, file), rego);
  return dir;
}

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
const idToken = (claims: Record<string, unknown>) => `${b64({ alg: "RS256", typ: "JWT" })}.${b64(claims)}.c2ln`;

/** OPA-Envoy's input for a request reaching the gateway route with `policy`'s context extension. */
function envoyInput(policy: string | undefined, method: string, path: string, headers: Record<string, string> = {}): Record<string, unknown> {
  const [p, q = ""] = path.split("?");
  return {
    attributes: {
      source: { address: { socketAddress: { address: "10.0.0.7", portValue: 51000 } } },
      destination: { address: { socketAddress: { address: "10.0.0.9", portValue: 8080 } } },
      request: { time: "2026-11-29T12:00:00Z", http: { id: "1", method, headers: { ":authority": "bookinfo.example.com", ":method": method, ":path": path, ...headers }, path, host: "bookinfo.example.com", scheme: "http", protocol: "HTTP/1.1" } },
      ...(policy === undefined ? {} : { contextExtensions: { gitmesh_policy: policy } }),
      metadataContext: {},
    },
    parsed_path: p!.replace(/^\//, "").split("/"),
    parsed_query: Object.fromEntries(new URLSearchParams(q).entries()),
    parsed_body: null,
    truncated_body: false,
    version: { encoding: "protojson", ext_authz: "v3" },
  };
}

/** OPA-Envoy's decision at its path gitmesh/glooauth/allow: true (allow), false (denied), or undefined (an error: denied). */
function decide(dir: string, input: Record<string, unknown>): boolean | undefined {
  const file = join(work, "input.json");
  writeFileSync(file, JSON.stringify(input));
  const r = spawnSync(opa, ["eval", "--v0-compatible", "--format", "json", "--data", dir, "--input", file, "data.gitmesh.glooauth.allow"], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`opa eval failed: ${r.stderr}${r.stdout}`);
  const res = (JSON.parse(r.stdout) as { result?: { expressions: { value: boolean }[] }[] }).result;
  return res?.[0]?.expressions[0]?.value;
}

describe("glooAuth opaAuth evaluated by OPA-Envoy through the wrapper", () => {
  it("renders one ConfigMap per policy beside its OPA-Envoy server, labelled for kube-mgmt, and valid", () => {
    expect(configMaps.map((c) => [c.metadata.namespace, c.metadata.labels["gitmesh.io/parent-name"], Object.keys(c.data).sort()])).toEqual([
      ["gloo-mesh-addons", "oidc-opa", ["bookinfo-frontends.oidc-opa.dispatch.rego", "bookinfo-frontends.oidc-opa.rego"]],
      ["gloo-mesh-addons", "opa-server", ["bookinfo-frontends.opa-server.dispatch.rego", "bookinfo-frontends.opa-server.rego"]],
      ["opa", "opa-only", ["bookinfo-frontends.opa-only.dispatch.rego", "bookinfo-frontends.opa-only.rego"]],
    ]);
    for (const c of configMaps) expect(validateIstioResource(c)).toEqual([]);
  });

  it("the generated modules compile as Rego v1 on their own (OPA-Envoy's default) and with v0 modules beside them", () => {
    for (const c of configMaps) {
      const dir = join(work, `check-${c.metadata.name}`);
      mkdirSync(dir, { recursive: true });
      for (const [file, rego] of Object.entries(c.data)) writeFileSync(join(dir, file), rego);
      expect(spawnSync(opa, ["check", dir], { encoding: "utf8" }).stderr).toBe("");
    }
    execFileSync(opa, ["check", "--v0-compatible", server("opa", { "allow-get-pets.rego": PETSTORE, "deny-admins.rego": DENY_ADMINS })]);
  });

  it("Gloo's petstore policy decides on input.http_request as Gloo documents it; a second configuration is ANDed", () => {
    const dir = server("opa", { "allow-get-pets.rego": PETSTORE, "deny-admins.rego": DENY_ADMINS });
    const policy = "bookinfo-frontends.opa-only";
    expect(decide(dir, envoyInput(policy, "GET", "/api/pets/1"))).toBe(true);
    expect(decide(dir, envoyInput(policy, "GET", "/api/pets?limit=5"))).toBe(true);
    expect(decide(dir, envoyInput(policy, "DELETE", "/api/pets/2"))).toBe(true);
    expect(decide(dir, envoyInput(policy, "DELETE", "/api/pets/1"))).toBe(false);
    expect(decide(dir, envoyInput(policy, "POST", "/api/pets"))).toBe(false);
    // configs[1] reads input.check_request: an admin request is denied although configs[0] allows it.
    expect(decide(dir, envoyInput(policy, "GET", "/api/pets/1", { "x-admin": "true" }))).toBe(false);
  });

  it("after the OIDC login, input.state.jwt is the ID token of the oauth2 filter's IdToken cookie", () => {
    const dir = server("gloo-mesh-addons", { "allow-solo-email-users.rego": SOLO_EMAIL });
    const policy = "bookinfo-frontends.oidc-opa";
    const cookie = (email: string) => ({ cookie: `OauthHMAC=aG1hYw; OauthExpires=1893456000; BearerToken=YWNjZXNz; IdToken=${idToken({ iss: "http://keycloak.example.com:8080/realms/master", email })}; RefreshToken=cmVm` });
    expect(decide(dir, envoyInput(policy, "GET", "/reports", cookie("jane@solo.io")))).toBe(true);
    expect(decide(dir, envoyInput(policy, "GET", "/reports", cookie("jane@example.com")))).toBe(false);
    // No ID token (Gloo: no state.jwt): io.jwt.decode is undefined, the module's default denies.
    expect(decide(dir, envoyInput(policy, "GET", "/reports"))).toBe(false);
    // A token elsewhere (an Authorization header, another cookie name) is not the login's: not state.jwt.
    expect(decide(dir, envoyInput(policy, "GET", "/reports", { authorization: `Bearer ${idToken({ email: "x@solo.io" })}`, cookie: `MyIdToken=${idToken({ email: "x@solo.io" })}` }))).toBe(false);
  });

  it("opaServerAuth queries <package>/<ruleName> of the bundle; a query's array result allows only when its first element is true", () => {
    const dir = server("gloo-mesh-addons", { "allow-solo-email-users.rego": SOLO_EMAIL, "httpbin.rego": HTTPBIN_BUNDLE });
    const policy = "bookinfo-frontends.opa-server";
    expect(decide(dir, envoyInput(policy, "GET", "/status/200"))).toBe(true);
    expect(decide(dir, envoyInput(policy, "POST", "/status/200"))).toBe(false);
    expect(decide(dir, envoyInput(policy, "GET", "/status/200", { "x-block": "1" }))).toBe(false);
  });

  it("a request names its policy: another policy's context extension, or none, never gets this decision", () => {
    const dir = server("opa", { "allow-get-pets.rego": PETSTORE, "deny-admins.rego": DENY_ADMINS });
    expect(decide(dir, envoyInput("bookinfo-frontends.oidc-opa", "GET", "/api/pets/1"))).toBeUndefined();
    expect(decide(dir, envoyInput(undefined, "GET", "/api/pets/1"))).toBeUndefined();
  });
});

// User mistakes in an OPA chain are diagnostics at the field; a route whose OPA decision cannot be
// rendered is denied, never left open. Variants of the same case's input.
describe("glooAuth opaAuth: mistakes and what cannot be expressed", () => {
  const variant = (edit: (input: string) => string) => {
    const c = loadCase("ext-auth-glooauth", (files) => files.map((f) => ({ ...f, content: typeof f.content === "string" ? edit(f.content) : f.content })));
    const r = runCase(c).result;
    return { diagnostics: [...c.inputDiagnostics, ...r.diagnostics], out: r.clusters.get("cluster1")!.resources };
  };
  const replace = (from: string, to: string) => (s: string) => {
    if (!s.includes(from)) throw new Error(`the case's input has no ${from}`);
    return s.replace(from, to);
  };
  const needsGloo = (d: { code: string; message: string }[], policy: string) => d.filter((x) => x.code === "NEEDS_GLOO_DATA_PLANE" && x.message.includes(`config_id=bookinfo-frontends.${policy}`)).map((x) => x.message);

  it("a malformed gitmesh.io/opa-envoy annotation is an error on the ExtAuthServer; the default service is used", () => {
    const { diagnostics, out } = variant(replace("gitmesh.io/opa-envoy: opa/opa-envoy-pets:9292", "gitmesh.io/opa-envoy: 'opa/Opa Envoy:x'"));
    const d = diagnostics.find((x) => x.path === "/metadata/annotations/gitmesh.io~1opa-envoy")!;
    expect([d.severity, d.code, d.object?.kind]).toEqual(["error", "INVALID_FIELD", "ExtAuthServer"]);
    expect(d.message).toContain("gloo-mesh-addons/opa-envoy:9191");
    expect(out.some((r) => r.kind === "ConfigMap" && r.metadata.namespace === "gloo-mesh-addons" && r.metadata.labels["gitmesh.io/parent-name"] === "opa-only")).toBe(true);
  });

  it("on a destination (applyToDestinations), the sidecar's inbound port calls OPA-Envoy with the policy's context extension", () => {
    const { out } = variant(replace("  - route: {labels: {auth: opa-only}}\n", "  - route: {labels: {auth: opa-only}}\n  applyToDestinations:\n  - selector: {name: productpage, namespace: bookinfo-frontends}\n"));
    type P = { applyTo: string; match: { context: string; listener?: { portNumber?: number } }; patch: { value: { name?: string; typed_config?: { grpc_service?: { envoy_grpc: { cluster_name: string } } }; typed_per_filter_config?: Record<string, { check_settings: unknown }> } } };
    const inbound = out.filter((r) => r.kind === "EnvoyFilter" && r.metadata.namespace === "bookinfo-frontends").flatMap((r) => r.spec.configPatches as P[]);
    const filter = inbound.find((p) => p.applyTo === "HTTP_FILTER")!;
    expect([filter.match.context, filter.match.listener?.portNumber, filter.patch.value.name, filter.patch.value.typed_config?.grpc_service?.envoy_grpc.cluster_name]).toEqual(["SIDECAR_INBOUND", 9080, "envoy.filters.http.ext_authz.opa-envoy.opa-envoy-pets.opa", "outbound|9292||opa-envoy-pets.opa.svc.cluster.local"]);
    const host = inbound.find((p) => p.applyTo === "VIRTUAL_HOST")!;
    expect(host.patch.value.typed_per_filter_config).toEqual({ "envoy.filters.http.ext_authz.opa-envoy.opa-envoy-pets.opa": { "@type": "type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute", check_settings: { context_extensions: { gitmesh_policy: "bookinfo-frontends.opa-only" } } } });
  });

  it("an OPA-Envoy service that is not discovered: no ConfigMap, no filter, the route answers 403", () => {
    const { out } = variant(replace("gitmesh.io/opa-envoy: opa/opa-envoy-pets:9292", "gitmesh.io/opa-envoy: opa/missing:9191"));
    expect(out.some((r) => r.kind === "ConfigMap" && r.metadata.labels["gitmesh.io/parent-name"] === "opa-only")).toBe(false);
    expect(JSON.stringify(out)).not.toContain("opa-envoy.missing.opa");
    const pets = out.filter((r) => r.kind === "VirtualService").flatMap((v) => v.spec.http as { name?: string; directResponse?: { status: number } }[]).find((h) => h.name?.includes("pets"));
    expect(pets?.directResponse?.status).toBe(403);
  });

  it("opaServerAuth with serverAddr, a query that would break out of its rule, a missing query: the chain stays with Gloo, with the reason", () => {
    const withAddr = variant(replace("          ruleName: allow/allowed\n", "          ruleName: allow/allowed\n          serverAddr: opa.example.svc.cluster.local:8181\n"));
    expect(needsGloo(withAddr.diagnostics, "opa-server")).toEqual([expect.stringMatching(/configs\[0\] opaServerAuth serverAddr: Gloo queries the OPA data API of that server/)]);
    const breakout = variant(replace('query: "data.test.allow == true"\n      - opaAuth:', 'query: "data.test.allow == true }\\nallow := true\\nx if {"\n      - opaAuth:'));
    expect(needsGloo(breakout.diagnostics, "opa-only")).toEqual([expect.stringMatching(/configs\[0\] opaAuth query .* has unbalanced brackets/)]);
    const noQuery = variant(replace("          query: data.httpbin.decision\n", ""));
    expect(needsGloo(noQuery.diagnostics, "opa-server")).toEqual([expect.stringMatching(/configs\[1\] opaAuth has no query, which Gloo requires/)]);
  });

  it("what the wrapper cannot give as Gloo does is a warning at the field: decision reasons, an OPA step before the login", () => {
    const { diagnostics, out } = variant(
      replace(
        `      - oauth2:
          oidcAuthorizationCode:
            appUrl: https://bookinfo.example.com
            callbackPath: /reports/callback`,
        `      - opaAuth:
          modules: [{name: early}]
          query: data.early.allow
          options: {returnDecisionReason: true}
      - oauth2:
          oidcAuthorizationCode:
            appUrl: https://bookinfo.example.com
            callbackPath: /reports/callback`,
      ),
    );
    const mine = diagnostics.filter((d) => d.object?.name === "oidc-opa" && d.code === "UNSUPPORTED_FIELD");
    expect(mine.map((d) => d.path)).toEqual(expect.arrayContaining(["/spec/config/glooAuth/configs/0/opaAuth/options/returnDecisionReason", "/spec/config/glooAuth/configs/0/opaAuth"]));
    expect(mine.find((d) => d.path === "/spec/config/glooAuth/configs/0/opaAuth" && d.message.startsWith("Gloo runs this OPA configuration before the OIDC login"))).toBeDefined();
    // As in Gloo, the configuration before the login sees no state.jwt, the one after it does.
    const cm = out.find((r) => r.kind === "ConfigMap" && r.metadata.labels["gitmesh.io/parent-name"] === "oidc-opa") as unknown as { data: Record<string, string> };
    const dir = join(work, "before-login");
    mkdirSync(dir, { recursive: true });
    for (const [file, rego] of Object.entries(cm.data)) writeFileSync(join(dir, file), rego);
    writeFileSync(join(dir, "early.rego"), "package early\n\nallow {\n    not input.state.jwt\n}\n");
    writeFileSync(join(dir, "solo.rego"), SOLO_EMAIL);
    const cookie = { cookie: `IdToken=${idToken({ email: "jane@solo.io" })}` };
    expect(decide(dir, envoyInput("bookinfo-frontends.oidc-opa", "GET", "/reports", cookie))).toBe(true);
    writeFileSync(join(dir, "early.rego"), "package early\n\nallow {\n    input.state.jwt\n}\n");
    expect(decide(dir, envoyInput("bookinfo-frontends.oidc-opa", "GET", "/reports", cookie))).toBe(false);
  });
});
