/**
 * glooAuth `opaAuth` on an OPA-Envoy server (github.com/open-policy-agent/opa-envoy-plugin), called
 * by Envoy's ext_authz filter over gRPC (issue #36 item 4).
 *
 * Gloo evaluates an opaAuth configuration's `query` over its `modules` (ConfigMaps of Rego) with
 * its own input document (docs.solo.io, "OPA input structure"):
 *   input.check_request  the Envoy CheckRequest of the request
 *   input.http_request   the CheckRequest's attributes.request.http, for convenience
 *   input.state.jwt      the token an OIDC step before it in the chain retrieved
 * OPA-Envoy evaluates one decision path with another one (input.attributes = the CheckRequest's
 * attributes, input.parsed_path, input.parsed_query, input.parsed_body). So gitmesh renders, per
 * policy, a **wrapper** module that builds Gloo's document from OPA-Envoy's and evaluates the
 * user's query `with input as` it; the user's modules are loaded unchanged. The state.jwt of a
 * chain with an OIDC login is the ID token Envoy's oauth2 filter keeps in its `IdToken` cookie —
 * the filter runs before ext_authz and has checked the cookies' HMAC (which covers the ID token),
 * so the value is the one the login produced.
 *
 * One ext_authz filter per OPA-Envoy service; each route names its policy in the context extension
 * `gitmesh_policy`, and the decision path `gitmesh/glooauth/allow` dispatches on it: the policy's
 * boolean decision (false → OPA-Envoy answers PERMISSION_DENIED, Envoy 403). A request naming no
 * loaded policy has an undefined decision, which OPA-Envoy returns as an error: Envoy denies it
 * (ext_authz fails closed unless failureModeAllow).
 *
 * Translate is pure: the Rego text is generated from the policy only; the user's module
 * ConfigMaps are not read (they live in the cluster, as for Gloo).
 */
import { Severity } from "../core/index.js";
import type { ReportIssue } from "./envoy-filters.js";
import type { InputObject } from "./input.js";
import { asArray, asRecord, asString } from "./selectors.js";
import { TranslateCode } from "./types.js";

/** ExtAuthServer annotation naming the OPA-Envoy Service: `<namespace>/<name>:<port>` (namespace and port optional). */
export const OPA_ENVOY_ANNOTATION = "gitmesh.io/opa-envoy";
/** Default OPA-Envoy Service: `opa-envoy`, gRPC port 9191 (OPA-Envoy's default), beside the ExtAuthServer's service. */
export const DEFAULT_OPA_ENVOY = { name: "opa-envoy", port: 9191 } as const;
/** OPA-Envoy's decision path (`plugins.envoy_ext_authz_grpc.path`) for gitmesh's wrappers. */
export const OPA_DECISION_PATH = "gitmesh/glooauth/allow";
/** The label kube-mgmt loads policy ConfigMaps by (its defaults `--policy-label`/`--policy-value`). */
export const OPA_POLICY_LABEL = { key: "openpolicyagent.org/policy", value: "rego" } as const;
/** The ext_authz context extension that names the policy whose wrapper decides. */
export const OPA_CONTEXT_KEY = "gitmesh_policy";

/** Where a policy's OPA-Envoy server is. */
export interface OpaEnvoyService {
  readonly name: string;
  readonly namespace: string;
  readonly port: number;
}

/** A policy's opaAuth configurations as one OPA-Envoy decision. */
export interface OpaPolicy {
  /** `<namespace>.<name>` of the ExtAuthPolicy (the context extension's value). */
  readonly id: string;
  readonly service: OpaEnvoyService;
  /** The user's module ConfigMaps (`<namespace>/<name>`), which OPA-Envoy must load as Gloo does. */
  readonly modules: readonly string[];
  /** The rendered ConfigMap's data: file name → Rego. */
  readonly files: Readonly<Record<string, string>>;
}

const ANNOTATION = /^(?:([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/)?([a-z0-9]([-a-z0-9]*[a-z0-9])?)(?::(\d{1,5}))?$/;

/**
 * The OPA-Envoy Service of policies that name `server` (an ExtAuthServer, or none: Gloo's default
 * server in `defaultNamespace`): its `gitmesh.io/opa-envoy` annotation, else `opa-envoy:9191` in the
 * namespace of the ext auth service the ExtAuthServer names (where Gloo's ext-auth-service runs its OPA).
 */
export function opaEnvoyService(server: InputObject | undefined, serverNamespace: string, report: ReportIssue): OpaEnvoyService {
  const fallback = { name: DEFAULT_OPA_ENVOY.name, namespace: serverNamespace, port: DEFAULT_OPA_ENVOY.port };
  const raw = server?.metadata.annotations?.[OPA_ENVOY_ANNOTATION];
  if (server === undefined || raw === undefined) return fallback;
  const m = ANNOTATION.exec(raw.trim());
  const port = m?.[5] === undefined ? DEFAULT_OPA_ENVOY.port : Number(m[5]);
  if (m === null || port < 1 || port > 65535) {
    report(server, `/metadata/annotations/${OPA_ENVOY_ANNOTATION.replace("/", "~1")}`, `"${raw}" is not <namespace>/<service>:<port>; the OPA-Envoy service is ${fallback.namespace}/${fallback.name}:${String(fallback.port)}`, Severity.Error, TranslateCode.InvalidField);
    return fallback;
  }
  return { name: m[3]!, namespace: m[1] ?? serverNamespace, port };
}

/** A Rego package segment for a policy id (`[a-z0-9_]`, unique per id: `.`→`__`, `-`→`_d`). */
export function regoPackageOf(id: string): string {
  return `policy_${id.replace(/_/g, "_u").replace(/-/g, "_d").replace(/\./g, "__")}`;
}

/** Whether braces, brackets and parentheses of a query balance outside strings (a query is pasted into a rule body). */
function balanced(query: string): boolean {
  const closing: Record<string, string> = { ")": "(", "]": "[", "}": "{" };
  const stack: string[] = [];
  let quote: string | undefined;
  for (let i = 0; i < query.length; i++) {
    const ch = query[i]!;
    if (quote !== undefined) {
      if (ch === "\\" && quote === '"') i++;
      else if (ch === quote) quote = undefined;
      continue;
    }
    if (ch === '"' || ch === "`") quote = ch;
    else if (ch === "#") return false;
    else if ("([{".includes(ch)) stack.push(ch);
    else if (ch in closing && stack.pop() !== closing[ch]) return false;
  }
  return quote === undefined && stack.length === 0;
}

/**
 * A rule body that succeeds when Gloo would allow: a query of one expression is evaluated for its
 * value (true, or an array whose first element is true: solo-apis OpaAuth.query); a query of several
 * expressions (or a negation) allows when it succeeds.
 */
function queryBody(query: string): string {
  const single = !/[\n;]/.test(query) && !/^(not|some|every)\s/.test(query) && !/\swith\s/.test(query) && !/:=|(^|[^=!<>])=([^=]|$)/.test(query);
  return single ? `\tgloo_allows((${query}))` : `\t${query.split("\n").join("\n\t")}`;
}

/** What an OPA-Envoy-evaluated module sees differently from Gloo's input (one warning per configuration). */
const INPUT_DIFFERENCES =
  "input.check_request is OPA-Envoy's CheckRequest (attributes.request.http.method, path, host, headers, query, fragment, scheme, protocol, body as Envoy sends them to any ext_authz server; fields with multi-word names use OPA-Envoy's lowerCamelCase JSON names, e.g. contextExtensions, metadataContext, socketAddress, and contextExtensions carries gitmesh_policy, not Gloo's config_id)";

/**
 * The chain's opaAuth configurations as one OPA-Envoy decision (all of them must allow, as Gloo
 * ANDs a chain), with the wrapper module. `reason` when one cannot be evaluated the same way.
 */
export function planOpaPolicy(policy: InputObject, configs: readonly { index: number; kind: string; spec: Record<string, unknown> }[], service: OpaEnvoyService, report: ReportIssue): { opa: OpaPolicy } | { reason: string } {
  const id = `${policy.metadata.namespace ?? ""}.${policy.metadata.name}`;
  const oidcAt = configs.find((c) => c.kind === "oauth2")?.index;
  const rules: string[] = [];
  const names: { rule: string; input: string }[] = [];
  const modules = new Set<string>();
  for (const c of configs.filter((x) => x.kind === "opaAuth" || x.kind === "opaServerAuth")) {
    const base = `/spec/config/glooAuth/configs/${String(c.index)}/${c.kind}`;
    const at = `configs[${String(c.index)}] ${c.kind}`;
    let body: string;
    let loads: string;
    if (c.kind === "opaAuth") {
      const query = asString(c.spec.query)?.trim();
      if (query === undefined || query === "") return { reason: `${at} has no query, which Gloo requires` };
      if (!balanced(query)) return { reason: `${at} query ${JSON.stringify(query)} has unbalanced brackets or a comment; gitmesh evaluates it inside a generated rule` };
      const refs = asArray(c.spec.modules).map(asRecord);
      const mine: string[] = [];
      for (const m of refs) {
        const name = asString(m.name);
        if (name === undefined) return { reason: `${at} modules: a module without a name` };
        mine.push(`${asString(m.namespace) ?? policy.metadata.namespace ?? ""}/${name}`);
      }
      for (const m of mine) modules.add(m);
      body = queryBody(query);
      loads = `the modules ${[...new Set(mine)].join(", ") || "(none)"} (ConfigMaps, as Gloo reads them)`;
    } else {
      const pkgName = asString(c.spec.package);
      if (pkgName === undefined || pkgName === "") return { reason: `${at} has no package, which Gloo requires` };
      if (asString(c.spec.serverAddr) !== undefined && c.spec.serverAddr !== "")
        return { reason: `${at} serverAddr: Gloo queries the OPA data API of that server; Envoy's ext_authz speaks only the ext_authz protocol (run OPA-Envoy with the same bundle instead and omit serverAddr)` };
      // Gloo queries the data API at <package>/<ruleName> (ruleName may name a subfield with "/").
      const path = [...pkgName.split(/[./]/), ...(asString(c.spec.ruleName) ?? "").split("/")].filter((x) => x !== "");
      body = `\tgloo_allows(data${path.map((x) => `[${JSON.stringify(x)}]`).join("")})`;
      loads = `the Rego bundle that the OPA server beside Gloo's ext-auth-service loads (package ${pkgName})`;
    }
    const withJwt = oidcAt !== undefined && oidcAt < c.index;
    const rule = `config_${String(c.index)}`;
    // A configuration before the chain's login gets no state.jwt (Gloo has not run the login yet).
    names.push({ rule, input: oidcAt !== undefined && !withJwt ? "gloo_input_before_login" : "gloo_input" });
    rules.push(`# ${at}${withJwt ? ", after the OIDC login: input.state.jwt is its ID token" : ""}\n${rule} if {\n${body}\n}`);
    const options = asRecord(c.spec.options);
    if (options.returnDecisionReason === true)
      report(policy, `${base}/options/returnDecisionReason`, "returnDecisionReason is not translated: the wrapper's decision is a boolean, so OPA-Envoy returns no reason in Envoy's dynamic metadata", Severity.Warning, TranslateCode.UnsupportedField);
    if (options.fastInputConversion === true)
      report(policy, `${base}/options/fastInputConversion`, "fastInputConversion is not translated: Gloo then drops the fields of http_request and state that are not a scalar, a map or a string array; the wrapper passes every field", Severity.Info, TranslateCode.UnsupportedField);
    if (oidcAt !== undefined && oidcAt > c.index)
      report(
        policy,
        base,
        `Gloo runs this OPA configuration before the OIDC login of configs[${String(oidcAt)}] (without input.state.jwt) and answers an unauthenticated request with its denial; Envoy runs the login filter first, so such a request is redirected to the login instead, and this configuration is evaluated after it (still without input.state.jwt)`,
        Severity.Warning,
        TranslateCode.UnsupportedField,
      );
    report(
      policy,
      base,
      `evaluated by OPA-Envoy ${service.namespace}/${service.name}:${String(service.port)} through gitmesh's wrapper (decision path ${OPA_DECISION_PATH}), which gives the ${c.kind === "opaAuth" ? "query" : "rule"} Gloo's input document; differences: ${INPUT_DIFFERENCES}${withJwt ? "; input.state.jwt is the ID token from the IdToken cookie of Envoy's oauth2 filter (Gloo: the token of its session)" : ""}. OPA-Envoy must load ${loads} and the rendered ConfigMap (labelled ${OPA_POLICY_LABEL.key}=${OPA_POLICY_LABEL.value}; see src/translate/EXTAUTH-RATELIMIT.md), with Rego v0 syntax accepted (--v0-compatible) as Gloo's OPA does; modules of different policies must not share a package (Gloo evaluates each configuration's modules alone)`,
      Severity.Warning,
      TranslateCode.UnsupportedField,
    );
  }
  const pkg = regoPackageOf(id);
  const jwt = configs.some((c) => c.kind === "oauth2");
  const wrapper = [
    `# Generated by gitmesh from ExtAuthPolicy ${policy.metadata.namespace ?? ""}/${policy.metadata.name} (glooAuth opaAuth): Gloo's OPA input document`,
    `# built from OPA-Envoy's, and the configurations' queries evaluated with it.`,
    `package gitmesh.glooauth.${pkg}`,
    "",
    "import rego.v1",
    "",
    "# Gloo: input.check_request (Envoy's CheckRequest), input.http_request (its attributes.request.http), input.state.",
    "gloo_input := {",
    '\t"check_request": {"attributes": input.attributes},',
    '\t"http_request": object.get(input.attributes, ["request", "http"], {}),',
    '\t"state": state,',
    "}",
    "",
    ...(jwt
      ? [
          "# The ID token Envoy's oauth2 filter keeps in its IdToken cookie (checked by the filter's HMAC before ext_authz runs).",
          'default state := {}',
          "",
          "state := {\"jwt\": token} if {",
          "\tsome cookie in split(input.attributes.request.http.headers.cookie, \";\")",
          "\tparts := split(trim_space(cookie), \"=\")",
          "\tparts[0] == \"IdToken\"",
          "\ttoken := concat(\"=\", array.slice(parts, 1, count(parts)))",
          "\ttoken != \"\"",
          "}",
          ...(names.some((n) => n.input === "gloo_input_before_login") ? ["", "# Configurations before the login in the chain: Gloo gives them no state.", 'gloo_input_before_login := {"check_request": gloo_input.check_request, "http_request": gloo_input.http_request, "state": {}}'] : []),
        ]
      : ["state := {}"]),
    "",
    "# Gloo: the query's result must be true, or an array whose first element is true; anything else denies.",
    "gloo_allows(v) if v == true",
    "",
    "gloo_allows(v) if {",
    "\tis_array(v)",
    "\tv[0] == true",
    "}",
    "",
    ...rules.flatMap((r) => [r, ""]),
    "# Gloo ANDs the configurations of a chain.",
    "default allow := false",
    "",
    "allow if {",
    ...names.map((n) => `\t${n.rule} with input as ${n.input}`),
    "}",
    "",
  ].join("\n");
  const dispatch = [
    `# Generated by gitmesh: OPA-Envoy's decision (path ${OPA_DECISION_PATH}) for requests of ExtAuthPolicy ${policy.metadata.namespace ?? ""}/${policy.metadata.name}.`,
    "package gitmesh.glooauth",
    "",
    "import rego.v1",
    "",
    `allow := data.gitmesh.glooauth.${pkg}.allow if {`,
    `\tinput.attributes.contextExtensions.${OPA_CONTEXT_KEY} == ${JSON.stringify(id)}`,
    "}",
    "",
  ].join("\n");
  return { opa: { id, service, modules: [...modules].sort(), files: { [`${id}.rego`]: wrapper, [`${id}.dispatch.rego`]: dispatch } } };
}
