/**
 * JWTPolicy → per enforcement point (the workloads that receive the requests) a RequestAuthentication
 * (one `jwtRules` entry per provider: issuer, audiences, JWKS URL or inline keys, token locations,
 * claims to headers) and a DENY AuthorizationPolicy that turns Istio's "verify a token if there is
 * one" into Gloo's requirements: no valid token (validationPolicy REQUIRE_VALID, the default), a
 * required claim missing or with another value, a denied claim value, a missing scope.
 *
 * Enforcement points:
 * - routes (`applyToRoutes`; omitted with no `applyToDestinations` = every route of the workspace):
 *   on a VirtualGateway, the gateway's pods in the gateway namespace, the DENY rules limited to the
 *   route's hosts, paths and methods (route-table.ts calls `routeOperations` and `renderJwt`);
 *   east-west routes are reported (not translated: use applyToDestinations);
 * - destinations (`applyToDestinations`): the pods of each selected Service, in every cluster.
 *
 * Where a route matcher cannot be expressed as an authorization operation (a regex path, header or
 * query matchers), the requirement covers more than the route (the host, or the path without the
 * header condition): it fails closed, and says so.
 */
import { createPublicKey } from "node:crypto";
import { Severity, type Diagnostic } from "../core/index.js";
import type { WorkspaceContext } from "./context.js";
import { istioProtocol, objectSelector, selectServices } from "./destination-common.js";
import type { DiscoveredService, InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { serviceHost, stableName } from "./names.js";
import { asArray, asNumber, asRecord, asString, type Labels } from "./selectors.js";
import { TranslateCode, type Emitted, type TranslatorOutput } from "./types.js";

/** An AuthorizationPolicy operation (`to[].operation`). */
export interface Operation {
  readonly hosts?: readonly string[];
  readonly paths?: readonly string[];
  readonly methods?: readonly string[];
  /** Pod ports, as strings (set by renderJwt from the enforcement point). */
  readonly ports?: readonly string[];
}

interface Issue {
  readonly path: string;
  readonly message: string;
  readonly severity: Diagnostic["severity"];
  readonly code: string;
}

interface Compiled {
  /** undefined when the policy cannot be rendered (its errors say why). */
  readonly jwtRules?: readonly Record<string, unknown>[];
  /** The provider name of each `jwtRules` entry. */
  readonly ruleProviders: readonly string[];
  readonly denyRules: readonly Record<string, unknown>[];
  readonly issues: readonly Issue[];
}

const compiled = new WeakMap<InputObject, Compiled>();

/** Whether the policy applies to routes (Gloo: `applyToRoutes` given, or neither selector given). */
export function jwtSelectsRoutes(policy: InputObject): boolean {
  const spec = asRecord(policy.spec);
  return spec.applyToRoutes !== undefined || spec.applyToDestinations === undefined;
}

/** The policy's rules, computed once per object. */
function compile(policy: InputObject): Compiled {
  const hit = compiled.get(policy);
  if (hit !== undefined) return hit;
  const issues: Issue[] = [];
  const warn = (path: string, message: string) => issues.push({ path, message, severity: Severity.Warning, code: TranslateCode.UnsupportedField });
  const fail = (path: string, message: string) => issues.push({ path, message, severity: Severity.Error, code: TranslateCode.InvalidField });
  const config = asRecord(asRecord(policy.spec).config);
  const base = "/spec/config";
  const validation = config.allowMissingOrFailed === true ? "ALLOW_MISSING_OR_FAILED" : (asString(config.validationPolicy) ?? "REQUIRE_VALID");
  if (asRecord(config.phase).postAuthz !== undefined) {
    warn(
      `${base}/phase/postAuthz`,
      "phase postAuthz is rendered as preAuthz: Gloo verifies the token after external auth (ExtAuthPolicy); Istio's jwt_authn filter runs before the ext_authz filter gitmesh inserts, so where an ExtAuthPolicy also applies, a request without a valid token is refused before the ext auth server sees it, and the ext auth server receives the verified claim headers. Where no ExtAuthPolicy applies, the two orders behave the same.",
    );
  }
  if (asRecord(asRecord(config.phase).preAuthz).priority !== undefined) {
    warn(`${base}/phase/preAuthz/priority`, "the priority orders Gloo's filters within its phase; Istio verifies the tokens of every RequestAuthentication in one jwt_authn filter, so it is not translated");
  }
  if (config.clearRouteCache !== undefined && config.clearRouteCache !== "AUTO") warn(`${base}/clearRouteCache`, "clearRouteCache is a setting of Gloo's data plane; Istio re-matches routes after the JWT filter when it adds claim headers");
  let ok = true;
  if (validation === "ALLOW_MISSING_OR_FAILED") {
    fail(config.allowMissingOrFailed === true ? `${base}/allowMissingOrFailed` : `${base}/validationPolicy`, "Istio rejects every request that carries an invalid token, so letting failed tokens through cannot be expressed; nothing is rendered for this policy (use ALLOW_MISSING, or leave the token to another authentication)");
    ok = false;
  }
  const providers = Object.entries(asRecord(config.providers)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (providers.length === 0) {
    fail(`${base}/providers`, "a JWTPolicy needs at least one provider; nothing is rendered for it");
    ok = false;
  }
  const needScopes = asArray(config.requiredScopes).length > 0;
  const jwtRules: Record<string, unknown>[] = [];
  const ruleProviders: string[] = [];
  for (const [name, raw] of providers) {
    const p = asRecord(raw);
    const path = `${base}/providers/${name.replace(/~/g, "~0").replace(/\//g, "~1")}`;
    const issuer = asString(p.issuer);
    if (issuer === undefined || issuer === "") {
      fail(`${path}/issuer`, "Istio verifies a token against its issuer (`iss`): set issuer; nothing is rendered for this policy");
      ok = false;
      continue;
    }
    const rule: Record<string, unknown> = { issuer };
    const audiences = asArray(p.audiences).filter((a): a is string => typeof a === "string" && a !== "");
    if (audiences.length > 0) rule.audiences = audiences;
    const remote = asRecord(p.remote);
    const local = asRecord(p.local);
    if (p.remote !== undefined) {
      rule.jwksUri = asString(remote.url);
      if (asString(remote.timeout) !== undefined) rule.timeout = remote.timeout;
      if (remote.cacheDuration !== undefined) {
        warn(
          `${path}/remote/cacheDuration`,
          `cacheDuration ${JSON.stringify(remote.cacheDuration)} is not applied: istiod fetches the JWKS and refreshes every provider's keys on one interval (PILOT_JWT_PUB_KEY_REFRESH_INTERVAL, 20m by default), so a rotated key is seen within that interval, not within cacheDuration`,
        );
      }
      if (remote.enableAsyncFetch !== undefined && remote.enableAsyncFetch !== false) warn(`${path}/remote/enableAsyncFetch`, "enableAsyncFetch is not translated: istiod fetches the JWKS ahead of requests (and pushes the keys inline), which is what an asynchronous fetch gives");
    } else if (typeof local.inline === "string") {
      const jwks = toJwks(local.inline);
      if (typeof jwks === "string") rule.jwks = jwks;
      else {
        fail(`${path}/local/inline`, `${jwks.error}; nothing is rendered for this policy`);
        ok = false;
      }
    } else if (p.local !== undefined) {
      fail(`${path}/local/secretRef`, "Istio's RequestAuthentication takes keys inline or by URL, not from a Secret: put the public key in local.inline (or serve a JWKS); nothing is rendered for this policy");
      ok = false;
    } else {
      fail(path, "a provider needs keys: set remote.url or local.inline; nothing is rendered for this policy");
      ok = false;
    }
    const source = asRecord(p.tokenSource);
    const headers = asArray(source.headers).map(asRecord).filter((h) => typeof h.name === "string");
    if (headers.length > 0) rule.fromHeaders = headers.map((h) => ({ name: h.name, ...(typeof h.prefix === "string" && h.prefix !== "" ? { prefix: h.prefix } : {}) }));
    const params = asArray(source.queryParams).filter((q): q is string => typeof q === "string" && q !== "");
    if (params.length > 0) rule.fromParams = params;
    const claims = asArray(p.claimsToHeaders).map(asRecord);
    claims.forEach((c, i) => {
      if (c.append === true) {
        warn(
          `${path}/claimsToHeaders/${String(i)}/append`,
          `append: true is rendered as a replace: Istio removes any ${JSON.stringify(c.header)} header the client sent and sets it to the claim alone (the header is reserved for the claim), where Gloo keeps the client's value and appends the claim to it`,
        );
      }
    });
    if (claims.length > 0) rule.outputClaimToHeaders = claims.map((c) => ({ header: c.header, claim: c.claim }));
    if (p.keepToken === true) rule.forwardOriginalToken = true;
    if (typeof p.outputPayloadToHeader === "string" && p.outputPayloadToHeader !== "") rule.outputPayloadToHeader = p.outputPayloadToHeader;
    if (p.clockSkewSeconds !== undefined) warn(`${path}/clockSkewSeconds`, "Istio allows a fixed clock skew (60 s); clockSkewSeconds is not translated");
    if (needScopes) rule.spaceDelimitedClaims = ["scope"];
    jwtRules.push(rule);
    ruleProviders.push(name);
  }

  const denyRules: Record<string, unknown>[] = [];
  if (validation === "REQUIRE_VALID") denyRules.push({ from: [{ source: { notRequestPrincipals: ["*"] } }] });
  asArray(config.claims).forEach((raw) => {
    const c = asRecord(raw);
    const key = claimKey(asString(c.key) ?? "", asString(c.nestedClaimDelimiter));
    const values = asArray(c.values).filter((v): v is string => typeof v === "string");
    const notValues = asArray(c.notValues).filter((v): v is string => typeof v === "string");
    if (values.length > 0) denyRules.push({ when: [{ key, notValues: values }] });
    if (notValues.length > 0) denyRules.push({ when: [{ key, values: notValues }] });
  });
  for (const scope of asArray(config.requiredScopes)) if (typeof scope === "string") denyRules.push({ when: [{ key: "request.auth.claims[scope]", notValues: [scope] }] });

  const out: Compiled = ok ? { jwtRules, ruleProviders, denyRules, issues } : { denyRules, ruleProviders, issues };
  compiled.set(policy, out);
  return out;
}

/**
 * `remote.destinationRef`: Gloo fetches the JWKS through the referenced destination (the URL gives
 * the path and the Host). Istio fetches it from `jwksUri` (istiod, or the proxy with
 * PILOT_JWT_ENABLE_REMOTE_JWKS), so the URL is pointed at the destination: kept when its host and
 * port are the destination's (an ExternalService's host, a VirtualDestination's host, a Service's
 * cluster-local name), otherwise rewritten to the destination's host and port with the URL's scheme,
 * path and query. Either way the fetch goes to that address directly, not through the mesh's route to
 * the destination (an ExternalService's egress gateway or client TLS settings do not apply): said
 * in an info (address kept) or warning (address rewritten) diagnostic.
 */
function jwksThroughDestinations(ctx: WorkspaceContext, policy: InputObject): { uris: ReadonlyMap<string, string>; issues: readonly Issue[] } {
  const uris = new Map<string, string>();
  const issues: Issue[] = [];
  const providers = asRecord(asRecord(asRecord(policy.spec).config).providers);
  for (const name of Object.keys(providers).sort()) {
    const remote = asRecord(asRecord(providers[name]).remote);
    if (remote.destinationRef === undefined) continue;
    const path = `/spec/config/providers/${name.replace(/~/g, "~0").replace(/\//g, "~1")}/remote/destinationRef`;
    const ref = asRecord(remote.destinationRef);
    const kind = asString(ref.kind) ?? "SERVICE";
    const target = asRecord(ref.ref);
    const refName = asString(target.name) ?? "";
    const refNs = asString(target.namespace) ?? policy.metadata.namespace ?? "";
    const wantPort = asNumber(asRecord(ref.port).number);
    const wantPortName = asString(asRecord(ref.port).name);
    let url: URL;
    try {
      url = new URL(asString(remote.url) ?? "");
    } catch {
      continue; // the schema requires a URL; a malformed one is Istio's validation's to report
    }
    let hosts: string[] = [];
    let ports: number[] = [];
    if (kind === "SERVICE") {
      hosts = [serviceHost(refName, refNs)];
      ports = wantPort === undefined ? [] : [wantPort];
    } else {
      const found = ctx.visible(kind === "EXTERNAL_SERVICE" ? "ExternalService" : "VirtualDestination").find((o) => o.metadata.name === refName && (o.metadata.namespace ?? "") === refNs);
      if (found === undefined) {
        issues.push({ path: `${path}/ref`, severity: Severity.Warning, code: TranslateCode.DestinationNotFound, message: `${kind} ${refNs}/${refName} is not visible to this workspace; the JWKS is fetched from the URL ${url.href} as written` });
        continue;
      }
      const spec = asRecord(found.spec);
      hosts = asArray(spec.hosts).filter((h): h is string => typeof h === "string" && h !== "");
      const specPorts = asArray(spec.ports).map(asRecord);
      const byName = wantPortName === undefined ? undefined : asNumber(specPorts.find((p) => p.name === wantPortName)?.number);
      ports = wantPort !== undefined ? [wantPort] : byName !== undefined ? [byName] : specPorts.map((p) => asNumber(p.number)).filter((n): n is number => n !== undefined);
    }
    const urlPort = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
    const hostMatches = hosts.some((h) => h === url.hostname || (h.startsWith("*.") && url.hostname.endsWith(h.slice(1))));
    const what = `${kind} ${refNs}/${refName}`;
    if (hostMatches && (ports.length === 0 || ports.includes(urlPort))) {
      issues.push({ path, severity: Severity.Info, code: TranslateCode.UnsupportedField, message: `the JWKS URL ${url.href} is an address of ${what}: Istio fetches it there directly (DNS, from istiod), not through the mesh's route to the destination (its egress gateway or client TLS settings do not apply)` });
      continue;
    }
    const host = hosts.find((h) => !h.startsWith("*"));
    const port = ports[0];
    if (host === undefined || port === undefined) {
      issues.push({ path, severity: Severity.Warning, code: TranslateCode.UnsupportedField, message: `${what} has no host name and port to fetch the JWKS from; it is fetched from the URL ${url.href} as written` });
      continue;
    }
    const defaultPort = url.protocol === "https:" ? 443 : 80;
    const uri = `${url.protocol}//${host}${port === defaultPort ? "" : `:${String(port)}`}${url.pathname}${url.search}`;
    uris.set(name, uri);
    issues.push({ path, severity: Severity.Warning, code: TranslateCode.UnsupportedField, message: `the JWKS is fetched from ${uri} (the URL's path on ${what}'s host and port) with Host ${host}, where Gloo sends Host ${url.host}; Istio fetches it there directly (DNS, from istiod), not through the mesh's route to the destination` });
  }
  return { uris, issues };
}

/** `a.b` with delimiter `.` → `request.auth.claims[a][b]` (Istio's nested claim syntax). */
function claimKey(key: string, delimiter: string | undefined): string {
  const parts = delimiter ? key.split(delimiter) : [key];
  return `request.auth.claims${parts.map((p) => `[${p}]`).join("")}`;
}

/** A JWKS document from Gloo's inline key (a PEM public key, or already a JWKS). Pure: no I/O. */
function toJwks(inline: string): string | { error: string } {
  const text = inline.trim();
  if (text.startsWith("{")) {
    try {
      const doc = JSON.parse(text) as { keys?: unknown };
      return Array.isArray(doc.keys) ? JSON.stringify(doc) : { error: "local.inline is JSON but not a JWKS (no `keys` list)" };
    } catch {
      return { error: "local.inline is neither a PEM public key nor valid JSON" };
    }
  }
  try {
    const jwk = createPublicKey(text).export({ format: "jwk" });
    return JSON.stringify({ keys: [{ ...jwk, use: "sig" }] });
  } catch {
    return { error: "local.inline is not a PEM public key Node can read" };
  }
}

/**
 * The literal text every path a route regex matches starts with (Envoy matches the whole path with
 * RE2): the characters before the first metacharacter, `\.`-style escapes of punctuation read as
 * the character; a character a quantifier follows is optional, so it is not part of the prefix.
 * Undefined when the regex has an alternation (a `|` could start another branch) or no literal start.
 */
export function regexLiteralPrefix(regex: string): string | undefined {
  if (regex.includes("|")) return undefined;
  const re = regex.startsWith("^") ? regex.slice(1) : regex;
  let out = "";
  for (let i = 0; i < re.length; i++) {
    const ch = re[i]!;
    let lit: string | undefined;
    let width = 1;
    if (ch === "\\") {
      const next = re[i + 1];
      if (next !== undefined && /[^A-Za-z0-9]/.test(next)) {
        lit = next;
        width = 2;
      }
    } else if (!"[](){}.*+?$^".includes(ch)) lit = ch;
    if (lit === undefined) break;
    const after = re[i + width];
    if (after === "*" || after === "?" || after === "{") break;
    out += lit;
    i += width - 1;
  }
  return out === "" ? undefined : out;
}

/**
 * The authorization operations that cover an Istio HTTP route's matches on `hosts`. A match that an
 * operation cannot express is widened (never narrowed: the requirement fails closed) and named.
 */
export function routeOperations(hosts: readonly string[], istioRoute: Record<string, unknown>): { operations: Operation[]; widened: string[] } {
  const hostList = hosts.includes("*") ? undefined : hosts.flatMap((h) => (h.startsWith("*") ? [h] : [h, `${h}:*`]));
  const widened: string[] = [];
  const matches = asArray(istioRoute.match).map(asRecord);
  if (matches.length === 0) return { operations: [{ ...(hostList ? { hosts: hostList } : {}) }], widened };
  const operations = matches.map((m): Operation => {
    const uri = asRecord(m.uri);
    let paths: string[] | undefined;
    if (typeof uri.exact === "string") paths = [uri.exact];
    else if (typeof uri.prefix === "string") paths = uri.prefix === "/" || uri.prefix === "" ? undefined : [`${uri.prefix}*`];
    else if (typeof uri.regex === "string") {
      const prefix = regexLiteralPrefix(uri.regex);
      if (prefix === undefined || prefix === "/") widened.push("a regex path (the requirement covers every path of the host)");
      else {
        paths = [`${prefix}*`];
        widened.push(`a regex path (the requirement covers every path starting with ${prefix})`);
      }
    } else if (uri.regex !== undefined) widened.push("a regex path (the requirement covers every path of the host)");
    if (m.ignoreUriCase === true && paths !== undefined) {
      widened.push("a case-insensitive path (the requirement covers every path of the host)");
      paths = undefined;
    }
    const method = asRecord(m.method);
    let methods: string[] | undefined;
    if (typeof method.exact === "string") methods = [method.exact];
    else if (m.method !== undefined) widened.push("a method pattern (the requirement covers every method)");
    if (m.headers !== undefined || m.queryParams !== undefined || m.withoutHeaders !== undefined) widened.push("header or query matchers (the requirement covers the path without them)");
    return { ...(hostList ? { hosts: hostList } : {}), ...(paths ? { paths } : {}), ...(methods ? { methods } : {}) };
  });
  return { operations, widened };
}

/** Where a policy is enforced: the pods of `labels` in `namespace` of `cluster`, for `operations` (undefined: every request). */
export interface Enforcement {
  readonly cluster: string;
  readonly namespace: string;
  readonly labels: Labels;
  readonly operations?: readonly Operation[];
  /**
   * The pod ports the requests arrive on (undefined or empty: unknown). The DENY rules are limited to
   * them: Istio applies a DENY rule of HTTP attributes only to every connection of the pods' other
   * (TCP) ports, which would refuse them all.
   */
  readonly ports?: readonly number[];
  /** Name parts that tell this enforcement point apart (route table, or Service). */
  readonly scope: readonly string[];
}

/** RequestAuthentication + DENY AuthorizationPolicy of one policy at one enforcement point; nothing when the policy cannot be rendered. */
export function renderJwt(ctx: WorkspaceContext, policy: InputObject, e: Enforcement): Emitted[] {
  const c = compile(policy);
  if (c.jwtRules === undefined) return [];
  const ws = ctx.workspace.name;
  const name = stableName("jwt", policy.metadata.name, policy.metadata.namespace ?? "", ...e.scope, e.cluster, ws);
  const meta = outputMetadata(name, e.namespace, e.cluster, ws, ctx.parentOf(policy));
  const selector = { matchLabels: e.labels };
  const ports = e.ports !== undefined && e.ports.length > 0 ? e.ports.map(String) : undefined;
  const operations: readonly Operation[] | undefined = e.operations ?? (ports === undefined ? undefined : [{}]);
  const to = operations?.map((operation) => ({ operation: ports === undefined ? operation : { ...operation, ports } }));
  const uris = jwksThroughDestinations(ctx, policy).uris;
  const jwtRules = uris.size === 0 ? c.jwtRules : c.jwtRules.map((r, i) => { const uri = uris.get(c.ruleProviders[i] ?? ""); return uri === undefined ? r : { ...r, jwksUri: uri }; });
  const out: Emitted[] = [{ cluster: e.cluster, resource: { apiVersion: "security.istio.io/v1", kind: "RequestAuthentication", metadata: meta, spec: { selector, jwtRules } } }];
  if (c.denyRules.length > 0) {
    out.push({
      cluster: e.cluster,
      resource: { apiVersion: "security.istio.io/v1", kind: "AuthorizationPolicy", metadata: meta, spec: { selector, action: "DENY", rules: c.denyRules.map((r) => (to ? { ...r, to } : r)) } },
    });
  }
  return out;
}

/**
 * The pod ports of a Service's (selected) HTTP ports (Istio's protocol selection: appProtocol, else the port
 * name's prefix: http, http2, grpc, grpc-web…); empty when one of them targets a named container port.
 */
function httpTargetPorts(servicePorts: DiscoveredService["ports"]): number[] {
  const out = new Set<number>();
  for (const p of servicePorts) {
    if (!HTTP_PROTOCOLS.has(istioProtocol(p.appProtocol ?? p.name))) continue;
    if (typeof p.targetPort === "string") return [];
    out.add(p.targetPort ?? p.port);
  }
  return [...out].sort((x, y) => x - y);
}

const HTTP_PROTOCOLS: ReadonlySet<string> = new Set(["HTTP", "HTTP2", "GRPC", "GRPC-WEB"]);

/**
 * The JWTPolicy translator of a workspace: each policy's own diagnostics (once, here), SELECTS_NOTHING,
 * and the destination enforcement points (`applyToDestinations`). Route enforcement points are
 * rendered with the routes (route-table.ts).
 */
export function translateJwtPolicies(ctx: WorkspaceContext): TranslatorOutput {
  const resources: Emitted[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const policy of ctx.own("JWTPolicy")) {
    const c = compile(policy);
    for (const i of [...c.issues, ...jwksThroughDestinations(ctx, policy).issues]) diagnostics.push(ctx.diag(policy, i.code, i.severity, i.path, i.message));
    const spec = asRecord(policy.spec);
    if (spec.applyToDestinations === undefined) continue;
    let selected = 0;
    asArray(spec.applyToDestinations).forEach((raw, i) => {
      const d = asRecord(raw);
      const kind = asString(d.kind) ?? "SERVICE";
      if (kind !== "SERVICE") {
        diagnostics.push(ctx.diag(policy, TranslateCode.UnsupportedField, Severity.Error, `/spec/applyToDestinations/${String(i)}/kind`, `a JWTPolicy applies to Kubernetes Services (${kind} is not supported, as in Gloo); nothing is rendered for this selector`));
        return;
      }
      // The selector's port (number or name) limits the policy to that port of each Service.
      const portSel = asRecord(d.port);
      const wantNumber = asNumber(portSel.number);
      const wantName = asString(portSel.name);
      // Enforced where the requests arrive: the pods of the workspace's own Services.
      for (const ref of selectServices(ctx, objectSelector(d.selector))) {
        const svc = ref.service;
        const labels = svc.selector ?? {};
        if (ref.owner !== ctx.workspace.name || Object.keys(labels).length === 0) continue;
        const ports = wantNumber === undefined && wantName === undefined ? svc.ports : svc.ports.filter((p) => (wantNumber !== undefined ? p.port === wantNumber : p.name === wantName));
        if (ports.length === 0) continue;
        selected++;
        resources.push(...renderJwt(ctx, policy, { cluster: ref.cluster, namespace: svc.namespace, labels, ports: httpTargetPorts(ports), scope: [svc.name, svc.namespace] }));
      }
    });
    if (selected === 0) diagnostics.push(ctx.diag(policy, TranslateCode.SelectsNothing, Severity.Warning, "/spec/applyToDestinations", "applyToDestinations selects no Service of this workspace with a pod selector; nothing is enforced for it"));
  }
  return { resources, diagnostics };
}
