// glooAuth credentials on Envoy's own filters (issue #36 item 4), case ext-auth-basic-auth.
// What Gloo verifies, from its docs (Gloo Edge "Basic Auth", Extended configuration): with
// `encryption: {sha1: {}}` a user's hashedPassword is hex(SHA-1(password + salt)), compared
// case-insensitively; the docs' example is user `user`, password `password`, salt `TYiryv0/`,
// hashedPassword 010eb058a59f4ac5ba05639b0263cf91b4345fd6. What Envoy verifies, from its basic_auth
// filter: htpasswd `user:{SHA}` + base64(SHA-1(password)). The tests check that the rendered filter
// admits exactly the passwords Gloo admits, on the routes the policy selects, and that what Envoy
// cannot verify (APR1, salted SHA-1) and API keys (no api_key_auth in Istio's proxy) stay with Gloo.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { Diagnostic } from "../../src/core/index.js";
import { basicAuthStep } from "../../src/translate/gloo-auth-credentials.js";
import { planGlooAuth, stepPriority } from "../../src/translate/gloo-auth.js";
import { validateIstioResource, type InputObject, type IstioResource } from "../../src/translate/index.js";
import { evaluate } from "./evaluator.js";
import { loadCase, runCase } from "./golden.js";

type Patch = { applyTo: string; match: { context: string; listener?: { portNumber?: number }; routeConfiguration?: { portNumber?: number; vhost?: { route: { name: string } } } }; patch: { value: Record<string, unknown> } };
const patches = (r: IstioResource) => r.spec.configPatches as Patch[];
const GATEWAY = "istio-gateways/virtualgateway-north-south-gw-istio-gateways-cluster1-gateways";
const SHA1_USERS = "envoy.filters.http.basic_auth.bookinfo-frontends.sha1-users";
const RATINGS = "envoy.filters.http.basic_auth.bookinfo-backends.ratings-basic";

/** Gloo's check (its docs): hex(SHA-1(password + salt)), case-insensitive. */
const glooAdmits = (stored: { salt?: string; hashedPassword: string }, password: string) =>
  createHash("sha1")
    .update(password + (stored.salt ?? ""))
    .digest("hex") === stored.hashedPassword.toLowerCase();

/** Envoy's basic_auth check: the user's htpasswd line is `{SHA}` + base64(SHA-1(password)). */
function envoyAdmits(htpasswd: string, user: string, password: string): boolean {
  const line = htpasswd.split("\n").find((l) => l.slice(0, l.indexOf(":")) === user);
  return line !== undefined && line.slice(user.length + 1) === `{SHA}${createHash("sha1").update(password).digest("base64")}`;
}

describe("ExtAuthPolicy glooAuth basicAuth on Envoy's basic_auth filter", () => {
  const c = loadCase("ext-auth-basic-auth");
  const result = runCase(c).result;
  const out = result.clusters.get("cluster1")!.resources;
  const filters = out.filter((r) => r.kind === "EnvoyFilter");
  const allPatches = filters.flatMap(patches);
  const inserted = (name: string) => allPatches.find((p) => p.applyTo === "HTTP_FILTER" && p.patch.value.name === name)?.patch.value;
  const htpasswd = (name: string) => ((inserted(name)?.typed_config as { users?: { inline_string?: string } } | undefined)?.users?.inline_string ?? "");
  const policy = (name: string) => Object.values(c.desired.files).flatMap((f) => f.objects).find((o) => o.kind === "ExtAuthPolicy" && o.metadata.name === name);

  /** The filters that run for a request on `path` at the gateway: per-route configs that turn on a filter inserted disabled. */
  function filtersOn(path: string): string[] {
    const outcome = evaluate(out, { host: "bookinfo.example.com", path, gateway: GATEWAY });
    if (outcome.kind !== "route") throw new Error(`no route for ${path}`);
    const perRoute = allPatches.find((p) => p.match.routeConfiguration?.vhost?.route.name === outcome.route)?.patch.value.typed_per_filter_config as Record<string, { disabled?: boolean }> | undefined;
    return Object.entries(perRoute ?? {})
      .filter(([name, cfg]) => cfg.disabled !== true && inserted(name)?.disabled === true)
      .map(([name]) => name)
      .sort();
  }

  it("the selected route runs the policy's basic_auth filter; other routes do not", () => {
    expect(inserted(SHA1_USERS)).toMatchObject({ disabled: true });
    expect(filtersOn("/admin")).toEqual([SHA1_USERS]);
    expect(filtersOn("/admin/users")).toEqual([SHA1_USERS]);
    expect(filtersOn("/")).toEqual([]);
    for (const path of ["/reports", "/legacy", "/api"]) expect(filtersOn(path)).toEqual(["envoy.filters.http.ext_authz.gloo-ext-auth.bookinfo-frontends"]);
  });

  it("Envoy admits exactly the passwords Gloo admits (unsalted SHA-1, upper- or lower-case hex)", () => {
    const users = (policy("sha1-users")!.spec as { config: { glooAuth: { configs: { basicAuth: { userList: { users: Record<string, { salt?: string; hashedPassword: string }> } } }[] } } }).config.glooAuth.configs[0]!.basicAuth.userList.users;
    const lines = htpasswd(SHA1_USERS);
    const candidates = ["password", "Password", "opspass", "", "password ", "TYiryv0/"];
    for (const [user, stored] of Object.entries(users))
      for (const pw of candidates) expect(envoyAdmits(lines, user, pw), `${user} / ${JSON.stringify(pw)}`).toBe(/^[0-9a-f]{40}$/i.test(stored.hashedPassword) && glooAdmits(stored, pw));
    // The docs' user gets in with its password, as with Gloo; a user with a malformed hash is not listed (Gloo admits no password for it).
    expect(envoyAdmits(lines, "user", "password")).toBe(true);
    expect(envoyAdmits(lines, "ops", "opspass")).toBe(true);
    expect(lines.split("\n").map((l) => l.split(":")[0])).toEqual(["ops", "user"]);
    expect(result.diagnostics.find((d) => d.code === "INVALID_FIELD" && d.path?.endsWith("/users/broken/hashedPassword"))?.severity).toBe("error");
  });

  it("Gloo's salted example and APR1 hashes stay with Gloo's ext-auth-service, naming the user", () => {
    // The docs' salted example is what Gloo's check admits (so the salt really is appended to the password).
    expect(glooAdmits({ salt: "TYiryv0/", hashedPassword: "010eb058a59f4ac5ba05639b0263cf91b4345fd6" }, "password")).toBe(true);
    const needs = (name: string) => result.diagnostics.find((d) => d.code === "NEEDS_GLOO_DATA_PLANE" && d.message.includes(`config_id=bookinfo-frontends.${name}`))?.message;
    expect(needs("salted")).toMatch(/user "user" has a salt: Gloo checks SHA-1\(password \+ salt\)/);
    expect(needs("apr")).toMatch(/user "user" has an APR1 \(MD5-crypt\) password hash/);
    expect(inserted("envoy.filters.http.basic_auth.bookinfo-frontends.salted")).toBeUndefined();
    expect(inserted("envoy.filters.http.basic_auth.bookinfo-frontends.apr")).toBeUndefined();
  });

  it("a destination's policy guards the selected inbound port of its sidecars", () => {
    const insert = filters.find((f) => patches(f).some((p) => p.patch.value.name === RATINGS))!;
    expect(insert.spec.workloadSelector).toEqual({ labels: { app: "ratings" } });
    expect(patches(insert)[0]!.match).toMatchObject({ context: "SIDECAR_INBOUND", listener: { portNumber: 9080 } });
    const enable = allPatches.find((p) => p.applyTo === "VIRTUAL_HOST" && (p.patch.value.typed_per_filter_config as Record<string, unknown> | undefined)?.[RATINGS] !== undefined);
    expect(enable?.match).toEqual({ context: "SIDECAR_INBOUND", routeConfiguration: { portNumber: 9080 } });
    expect(envoyAdmits(htpasswd(RATINGS), "reviews", "password")).toBe(true);
  });

  it("every difference from Gloo is a warning at the field: realm, header, scheme spelling", () => {
    const w = result.diagnostics.filter((d) => d.code === "UNSUPPORTED_FIELD" && d.message.startsWith("basic auth runs on Envoy's basic_auth filter"));
    expect(w.map((d) => [d.path, d.severity])).toEqual(
      expect.arrayContaining([
        ["/spec/config/glooAuth/configs/0/basicAuth/realm", "warning"],
        ["/spec/config/glooAuth/configs/0/basicAuth", "warning"],
      ]),
    );
    expect(w.find((d) => d.path?.endsWith("/realm"))?.message).toMatch(/not "gloo".*Proxy-Authorization|Proxy-Authorization.*not "gloo"/s);
  });

  it("API keys stay with Gloo: Istio's proxy has no api_key_auth filter; nothing of it is rendered", () => {
    const m = result.diagnostics.find((d) => d.code === "NEEDS_GLOO_DATA_PLANE" && d.message.includes("config_id=bookinfo-frontends.apikeys"))?.message;
    expect(m).toMatch(/envoy.filters.http.api_key_auth\) is not compiled into Istio's proxy: istio\/proxy release-1.29/);
    expect(JSON.stringify(out)).not.toMatch(/api_key_auth|ApiKeyAuth/);
  });

  it("the rendered filters pass the Envoy check; a plain password in place of a hash does not", () => {
    for (const f of filters) expect(validateIstioResource(f)).toEqual([]);
    const filter = filters.find((f) => patches(f).some((p) => p.patch.value.name === SHA1_USERS))!;
    const broken = structuredClone(filter) as IstioResource & { spec: { configPatches: Patch[] } };
    (broken.spec.configPatches[0]!.patch.value.typed_config as { users: { inline_string: string } }).users.inline_string = "user:password";
    expect(validateIstioResource(broken).map((i) => i.path)).toContain("/spec/configPatches/0/patch/value/typed_config/users/inline_string");
  });
});

describe("basicAuthStep: what Gloo refuses or Envoy cannot hold stays with Gloo", () => {
  const policy = { apiVersion: "security.policy.gloo.solo.io/v2", kind: "ExtAuthPolicy", metadata: { name: "p", namespace: "ns" }, spec: {} } as unknown as InputObject;
  const hash = createHash("sha1").update("pw").digest("hex");
  const run = (spec: Record<string, unknown>) => {
    const issues: Partial<Diagnostic>[] = [];
    const r = basicAuthStep(policy, 0, spec, (_o, path, message, severity, code) => issues.push({ path, message, ...(severity ? { severity } : {}), ...(code ? { code } : {}) }));
    return { r, issues };
  };

  it("apr and encryption together, or neither: Gloo's validation refuses the configuration", () => {
    expect(run({ apr: { users: {} }, encryption: { sha1: {} }, userList: { users: {} } }).r).toEqual({ reasons: [expect.stringMatching(/exactly one of them/)] });
    expect(run({ encryption: { sha1: {} } }).r).toEqual({ reasons: [expect.stringMatching(/neither apr nor encryption with userList/)] });
    expect(run({ encryption: { apr: {} }, userList: { users: { a: { salt: "x", hashedPassword: "y" } } } }).r).toEqual({ reasons: [expect.stringMatching(/user "a" has an APR1/)] });
  });

  it("a user name htpasswd cannot hold, or no usable user, is a reason", () => {
    expect(run({ encryption: { sha1: {} }, userList: { users: { "a:b": { hashedPassword: hash } } } }).r).toEqual({ reasons: [expect.stringMatching(/"a:b" cannot be written as an htpasswd entry/)] });
    expect(run({ encryption: { sha1: {} }, userList: { users: {} } }).r).toEqual({ reasons: [expect.stringMatching(/no user has a usable SHA-1 hash/)] });
  });

  it("several salted users are all named", () => {
    const { r } = run({ encryption: { sha1: {} }, userList: { users: { b: { salt: "s", hashedPassword: hash }, a: { salt: "t", hashedPassword: hash }, c: { hashedPassword: hash } } } });
    expect(r).toEqual({ reasons: [expect.stringMatching(/users "a", "b" have salt/)] });
  });

  it("a user name with a slash is reported at its escaped JSON pointer", () => {
    const { r, issues } = run({ encryption: { sha1: {} }, userList: { users: { "team/x": { hashedPassword: "zz" }, ok: { hashedPassword: hash } } } });
    expect("step" in r).toBe(true);
    expect(issues.find((i) => i.code === "INVALID_FIELD")?.path).toBe("/spec/config/glooAuth/configs/0/basicAuth/userList/users/team~1x/hashedPassword");
  });
});

describe("basicAuth as one step of a longer glooAuth chain", () => {
  const opaService = { name: "opa-envoy", namespace: "gloo-mesh", port: 9191 };
  const chain = (configs: Record<string, unknown>[]): InputObject =>
    ({ apiVersion: "security.policy.gloo.solo.io/v2", kind: "ExtAuthPolicy", metadata: { name: "p", namespace: "ns" }, spec: { config: { glooAuth: { configs } } } }) as unknown as InputObject;
  const sha1 = { basicAuth: { encryption: { sha1: {} }, userList: { users: { user: { salt: "", hashedPassword: createHash("sha1").update("password").digest("hex") } } } } };
  const opa = { opaAuth: { modules: [{ name: "m", namespace: "ns" }], query: "data.test.allow == true" } };
  const plan = (configs: Record<string, unknown>[]) => planGlooAuth(chain(configs), () => undefined, opaService);

  it("an OPA decision placed first still runs after the credential check (authentication first), each its own filter", () => {
    const p = plan([opa, sha1]);
    if (!("steps" in p)) throw new Error(`not planned: ${p.reasons.join("; ")}`);
    expect(p.steps.map((s) => s.kind)).toEqual(["basic_auth", "opa"]);
    // Distinct EnvoyFilter priorities: Istio orders equal priorities by creation time, not by the chain.
    const priorities = p.steps.map((s) => stepPriority(s, 10));
    expect(new Set(priorities).size).toBe(priorities.length);
    expect(priorities[0]!).toBeLessThan(priorities[1]!);
  });

  it("a chain with a basicAuth Envoy cannot verify stays with Gloo as a whole, naming the configuration", () => {
    const p = plan([opa, { basicAuth: { apr: { users: { u: { salt: "x", hashedPassword: "y" } } } } }]);
    expect("reasons" in p ? p.reasons.join("; ") : "").toMatch(/basicAuth: user "u" has an APR1/);
  });
});
