/**
 * ExtAuthPolicy `glooAuth` configurations (solo-apis `enterprise.gloo.solo.io` AuthConfigSpec) on
 * open-source Envoy filters, where Envoy has one (issue #36 item 4). This module decides, per
 * policy, whether every configuration of its chain has an upstream equivalent, and builds it:
 *
 * - `oauth2.oidcAuthorizationCode` → Envoy's oauth2 filter (`envoy.extensions.filters.http.oauth2.v3.OAuth2`):
 *   the authorization and token endpoints from `discoveryOverride` or, when it does not give them,
 *   from the documented endpoint layout of the issuer (Keycloak realms, Okta authorization
 *   servers, Google); `redirect_uri` = `appUrl` + `callbackPath`; `logoutPath` → `signout_path`;
 *   `scopes` after `openid` (Gloo always asks for it). The client secret and the filter's HMAC key
 *   are **SDS references to files** on the gateway (`/etc/gitmesh/oauth2/<ns>.<secret>/`), never
 *   values: rendered output is committed to the audit branch, readable by every repo reader.
 * - `opaAuth` and `opaServerAuth` (without `serverAddr`) → Envoy's ext_authz filter (gRPC) to an
 *   OPA-Envoy server, with a generated wrapper module that gives the query Gloo's input document
 *   (opa-auth.ts); all OPA configurations of a chain are one decision (ANDed).
 * - `basicAuth` → Envoy's basic_auth filter where it verifies what Gloo verifies (unsalted SHA-1;
 *   gloo-auth-credentials.ts), else the reason (APR1 or salted hashes).
 * - everything else stays with Gloo's ext-auth-service (NEEDS_GLOO_DATA_PLANE) with the reason
 *   (`GLOO_ONLY` below): Istio's proxy lacks the filter (API keys), or no open-source filter
 *   exists (LDAP, HMAC, pass-through, portal).
 *
 * A chain is an ordered list of steps (`GlooAuthStep`), one planner per configuration kind
 * (`STEP_PLANNERS`); it is translated only when each of its configurations is (Gloo ANDs them by
 * default); a chain with a `booleanExpr` or more than one oauth2 configuration stays with Gloo.
 */
import { Severity } from "../core/index.js";
import { FILTER_CONFIG_TYPE, OAUTH2_TYPE } from "./envoy-config.js";
import type { ReportIssue } from "./envoy-filters.js";
import { API_KEY_AUTH_REASON, basicAuthStep, type CredentialFilterStep } from "./gloo-auth-credentials.js";
import type { InputObject } from "./input.js";
import { planOpaPolicy, type OpaEnvoyService, type OpaPolicy } from "./opa-auth.js";
import { asArray, asRecord, asString } from "./selectors.js";
import { TranslateCode } from "./types.js";

/** Where the oauth2 filter's secrets are read from on the gateway: one directory per client Secret. */
export const OAUTH2_SECRET_ROOT = "/etc/gitmesh/oauth2";

/** The token endpoint as an Envoy cluster is made for it. */
export interface TokenEndpoint {
  readonly uri: string;
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
}

/** An ExtAuthPolicy whose glooAuth chain is one OIDC authorization-code configuration, on Envoy's oauth2 filter. */
export interface OidcUpstream {
  /** `envoy.filters.http.oauth2.<namespace>.<policy>`: one filter per policy (each has its own client). */
  readonly filterName: string;
  /** `<namespace>.<name>` of the policy. */
  readonly policy: string;
  readonly tokenEndpoint: TokenEndpoint;
  /** The filter's typed_config without the token endpoint's cluster (`oauth2Config` adds it). */
  readonly config: Readonly<Record<string, unknown>>;
}

/** Why a glooAuth configuration kind needs Gloo's ext-auth-service (solo-apis AuthConfigSpec.Config oneof). */
const GLOO_ONLY: Readonly<Record<string, string>> = {
  apiKeyAuth: API_KEY_AUTH_REASON,
  ldap: "Envoy has no LDAP filter",
  ldapInternal: "Envoy has no LDAP filter",
  hmacAuth: "Envoy has no HMAC request-signing filter",
  passThroughAuth: "pass-through auth calls a server with Gloo's own protocol and state; use customAuth with an ext_authz server instead",
  jwt: "the glooAuth jwt step reads the JWT filter state of Gloo's own Envoy; use a JWTPolicy instead",
  portalAuth: "Gloo Portal authorization is evaluated by Gloo's portal services",
  pluginAuth: "Go plugins run inside Gloo's ext-auth-service only",
};

/** OIDC authorization code fields gitmesh translates (solo-apis OidcAuthorizationCode). */
const OIDC_TRANSLATED = new Set(["appUrl", "callbackPath", "clientId", "clientSecretRef", "issuerUrl", "discoveryOverride", "logoutPath", "scopes"]);

/** What Envoy's oauth2 filter does differently for the OIDC fields it has no setting for (a warning each). */
const OIDC_DIFFERENCES: Readonly<Record<string, string>> = {
  session: "Envoy keeps the tokens in cookies (BearerToken, IdToken, RefreshToken; signed with the HMAC key), not in a server-side session: session settings (redis, cookieOptions) do not apply",
  headers: "Envoy forwards only the access token, as `Authorization: Bearer` when forward_bearer_token is set; the ID token is not put into a header",
  afterLogoutUrl: "Envoy redirects to / after signing out",
};

/**
 * The endpoints of an issuer's documented layout (OpenID discovery is read at run time by Gloo;
 * translate is pure and reads nothing): Keycloak `…/realms/<realm>` → `/protocol/openid-connect/auth|token`,
 * Okta `https://<org>.okta.com/oauth2/<server>` → `/v1/authorize|token`, Google's fixed endpoints.
 */
function wellKnownEndpoints(issuer: URL): { auth: string; token: string; provider: string } | undefined {
  const base = issuer.href.replace(/\/+$/, "");
  if (/\/realms\/[^/]+$/.test(issuer.pathname.replace(/\/+$/, "")))
    return {
      auth: `${base}/protocol/openid-connect/auth`,
      token: `${base}/protocol/openid-connect/token`,
      provider: "Keycloak",
    };
  if (/\.okta(preview)?\.com$/.test(issuer.hostname) && /^\/oauth2\/[^/]+$/.test(issuer.pathname.replace(/\/+$/, "")))
    return {
      auth: `${base}/v1/authorize`,
      token: `${base}/v1/token`,
      provider: "Okta",
    };
  if (issuer.hostname === "accounts.google.com")
    return {
      auth: "https://accounts.google.com/o/oauth2/v2/auth",
      token: "https://oauth2.googleapis.com/token",
      provider: "Google",
    };
  return undefined;
}

function parseUrl(raw: string | undefined): URL | undefined {
  if (raw === undefined) return undefined;
  try {
    const u = new URL(raw);
    return u.protocol === "http:" || u.protocol === "https:" ? u : undefined;
  } catch {
    return undefined;
  }
}

/** The token endpoint's host, port and scheme (the oauth2 filter calls it through a cluster of its own). */
export function tokenEndpoint(uri: URL): TokenEndpoint {
  const tls = uri.protocol === "https:";
  return {
    uri: uri.href,
    host: uri.hostname,
    port: uri.port === "" ? (tls ? 443 : 80) : Number(uri.port),
    tls,
  };
}

/** The files the oauth2 filter reads its secrets from (SDS `path_config_source`), for a client Secret. */
export function oauth2SecretFiles(secretNamespace: string, secretName: string): { dir: string; token: string; hmac: string } {
  const dir = `${OAUTH2_SECRET_ROOT}/${secretNamespace}.${secretName}`;
  return {
    dir,
    token: `${dir}/token-secret.yaml`,
    hmac: `${dir}/hmac-secret.yaml`,
  };
}

const sds = (name: string, path: string) => ({
  name,
  sds_config: { path_config_source: { path }, resource_api_version: "V3" },
});

/** One configuration of a chain, as a step planner sees it. */
interface ChainConfig {
  readonly index: number;
  readonly kind: string;
  readonly spec: Record<string, unknown>;
}

/** A policy's glooAuth chain as Envoy steps, in the order Envoy runs them (each ANDed, as Gloo does by default). */
export type GlooAuthStep = OidcStep | BasicAuthStep | OpaStep;

export interface OidcStep {
  readonly kind: "oauth2";
  readonly upstream: OidcUpstream;
}

/** A basicAuth configuration on Envoy's basic_auth filter (gloo-auth-credentials.ts: only where it verifies what Gloo does). */
export interface BasicAuthStep {
  readonly kind: "basic_auth";
  readonly credentials: CredentialFilterStep;
}

/** The chain's opaAuth configurations, evaluated together by one OPA-Envoy call (all must allow). */
export interface OpaStep {
  readonly kind: "opa";
  readonly policy: OpaPolicy;
}

/** What a step planner returns for one configuration: a step to add, `covered` (an earlier step of the chain includes it), or why Envoy cannot run it. */
type StepResult = { readonly step: GlooAuthStep } | { readonly covered: true } | { readonly reason: string };

interface PlanContext {
  readonly policy: InputObject;
  readonly report: ReportIssue;
  /** The chain's configurations (a planner may look at the others, e.g. OPA at a preceding OIDC login). */
  readonly configs: readonly ChainConfig[];
  /** The OPA-Envoy service of the policy (opa-auth.ts: from its ExtAuthServer's annotation, or the default). */
  readonly opaService: OpaEnvoyService;
}

/**
 * One function per configuration kind that open-source Envoy can run; a kind without one stays
 * with Gloo (GLOO_ONLY). Adding a kind = adding its planner here (its step kind to GlooAuthStep and
 * its rendering to ext-auth.ts).
 */
const STEP_PLANNERS: Readonly<Record<string, (c: ChainConfig, p: PlanContext) => StepResult>> = {
  oauth2: planOidcStep,
  basicAuth: planBasicAuthStep,
  opaAuth: planOpaStep,
  opaServerAuth: planOpaStep,
};

/**
 * Whether a policy's glooAuth chain runs on open-source Envoy, and how: its steps, in Envoy's order
 * (authentication — the OIDC login — before the OPA decision, which Gloo also runs after it in
 * every corpus chain). `reasons` (reported as NEEDS_GLOO_DATA_PLANE by the caller) when a
 * configuration has no upstream equivalent; configuration mistakes of a translatable chain are
 * reported through `report`.
 */
export function planGlooAuth(policy: InputObject, report: ReportIssue, opaService: OpaEnvoyService): { steps: GlooAuthStep[] } | { reasons: string[] } {
  const g = asRecord(asRecord(asRecord(policy.spec).config).glooAuth);
  const configs: ChainConfig[] = asArray(g.configs).flatMap((raw, index) => {
    const c = asRecord(raw);
    return Object.keys(c)
      .filter((k) => k !== "name")
      .map((kind) => ({ index, kind, spec: asRecord(c[kind]) }));
  });
  const reasons: string[] = [];
  if (configs.length === 0) reasons.push("the chain has no configurations");
  if (configs.filter((c) => c.kind === "oauth2").length > 1) reasons.push("more than one oauth2 configuration in one chain");
  if (asString(g.booleanExpr) !== undefined && asArray(g.configs).length > 1) reasons.push(`booleanExpr "${String(g.booleanExpr)}" combines configurations; Envoy runs filters one after the other (AND)`);
  if (reasons.length > 0) return { reasons };
  const ctx: PlanContext = { policy, report, configs, opaService };
  const steps: GlooAuthStep[] = [];
  for (const c of configs) {
    const planner = STEP_PLANNERS[c.kind];
    const r: StepResult = planner === undefined ? { reason: `configs[${String(c.index)}] ${c.kind}: ${GLOO_ONLY[c.kind] ?? "no open-source Envoy filter does what it does"}` } : planner(c, ctx);
    if ("reason" in r) reasons.push(r.reason);
    else if ("step" in r) steps.push(r.step);
  }
  if (reasons.length > 0) return { reasons };
  // Envoy's order: the login first (it answers unauthenticated requests with the redirect), then OPA.
  return { steps: [...steps].sort((a, b) => STEP_ORDER[a.kind] - STEP_ORDER[b.kind]) };
}

/** Authentication (the OIDC login, then basic auth) before the OPA decision; distinct numbers, so EnvoyFilter priorities never tie. */
const STEP_ORDER: Readonly<Record<GlooAuthStep["kind"], number>> = { oauth2: 0, basic_auth: 1, opa: 2 };

/** EnvoyFilter priority of a step's filter: within ext auth's phase, a lower step runs first. */
export function stepPriority(step: GlooAuthStep, extAuthPriority: number): number {
  return extAuthPriority + STEP_ORDER[step.kind];
}

/** The chain's OPA configurations (opaAuth, opaServerAuth) as one step, planned at the first of them. */
function planOpaStep(c: ChainConfig, p: PlanContext): StepResult {
  if (p.configs.find((x) => STEP_PLANNERS[x.kind] === planOpaStep) !== c) return { covered: true };
  const r = planOpaPolicy(p.policy, p.configs, p.opaService, p.report);
  return "reason" in r ? r : { step: { kind: "opa", policy: r.opa } };
}

/** `basicAuth` → Envoy's basic_auth filter, or why Envoy cannot verify what Gloo verifies. */
function planBasicAuthStep(c: ChainConfig, p: PlanContext): StepResult {
  const r = basicAuthStep(p.policy, c.index, c.spec, p.report);
  return "step" in r ? { step: { kind: "basic_auth", credentials: r.step } } : { reason: r.reasons.join("; ") };
}

/** `oauth2.oidcAuthorizationCode` → Envoy's oauth2 filter. */
function planOidcStep(c: ChainConfig, p: PlanContext): StepResult {
  const { policy, report } = p;
  const index = c.index;
  const o = c.spec;
  if (o.oidcAuthorizationCode === undefined)
    return {
      reason: `configs[${String(index)}] oauth2 ${Object.keys(o).join(", ") || "(empty)"}: only oidcAuthorizationCode has an Envoy filter (oauth2); access-token validation and introspection need Gloo's ext-auth-service (for JWT access tokens use a JWTPolicy)`,
    };
  const spec = asRecord(o.oidcAuthorizationCode);
  const base = `/spec/config/glooAuth/configs/${String(index)}/oauth2/oidcAuthorizationCode`;
  const missing = ["appUrl", "callbackPath", "clientId", "clientSecretRef", "issuerUrl"].filter((k) => spec[k] === undefined);
  if (missing.length > 0) return { reason: `configs[${String(index)}] oauth2 oidcAuthorizationCode lacks ${missing.join(", ")}, which Gloo requires` };
  const issuer = parseUrl(asString(spec.issuerUrl));
  const appUrl = parseUrl(asString(spec.appUrl));
  if (issuer === undefined || appUrl === undefined) return { reason: `configs[${String(index)}] oauth2 oidcAuthorizationCode: ${issuer === undefined ? "issuerUrl" : "appUrl"} is not an http(s) URL` };
  const override = asRecord(spec.discoveryOverride);
  const known = wellKnownEndpoints(issuer);
  const authEndpoint = asString(override.authEndpoint) ?? known?.auth;
  const token = parseUrl(asString(override.tokenEndpoint) ?? known?.token);
  if (authEndpoint === undefined || token === undefined) {
    return {
      reason: `configs[${String(index)}] oauth2 oidcAuthorizationCode: Gloo reads the endpoints of ${issuer.href} from its OpenID discovery document at run time; translation reads nothing at run time and the issuer has no layout gitmesh knows (Keycloak, Okta, Google). Set discoveryOverride.authEndpoint and discoveryOverride.tokenEndpoint`,
    };
  }
  if (known !== undefined && (override.authEndpoint === undefined || override.tokenEndpoint === undefined)) {
    report(
      policy,
      `${base}/issuerUrl`,
      `the authorization and token endpoints are ${known.provider}'s documented layout for this issuer (${authEndpoint}, ${token.href}), not read from its discovery document; set discoveryOverride.authEndpoint/tokenEndpoint if your provider differs`,
      Severity.Info,
      TranslateCode.InvalidField,
    );
  }
  for (const [field, why] of Object.entries(OIDC_DIFFERENCES)) if (spec[field] !== undefined) report(policy, `${base}/${field}`, `${field} is not translated: ${why}`, Severity.Warning, TranslateCode.UnsupportedField);
  const other = Object.keys(spec).filter((k) => !OIDC_TRANSLATED.has(k) && OIDC_DIFFERENCES[k] === undefined);
  if (other.length > 0) report(policy, base, `not translated (Envoy's oauth2 filter has no such setting): ${other.sort().join(", ")}`, Severity.Warning, TranslateCode.UnsupportedField);
  const secretRef = asRecord(spec.clientSecretRef);
  const files = oauth2SecretFiles(asString(secretRef.namespace) ?? policy.metadata.namespace ?? "", asString(secretRef.name) ?? "");
  report(
    policy,
    `${base}/clientSecretRef`,
    `Envoy's oauth2 filter reads the client secret and its cookie HMAC key through SDS; gitmesh renders references to ${files.token} and ${files.hmac} (never the values: rendered output goes to the audit branch). Mount a Secret holding both SDS files (generic_secret "token" = the client secret, "hmac" = 32 random bytes) at ${files.dir} on the gateway pods; see src/translate/EXTAUTH-RATELIMIT.md`,
    Severity.Warning,
    TranslateCode.SecretMountRequired,
  );
  const callbackPath = asString(spec.callbackPath)!;
  const scopes = ["openid", ...asArray(spec.scopes).filter((s): s is string => typeof s === "string" && s !== "openid")];
  const logoutPath = asString(spec.logoutPath);
  const config: Record<string, unknown> = {
    "@type": OAUTH2_TYPE,
    config: {
      authorization_endpoint: authEndpoint,
      credentials: {
        client_id: asString(spec.clientId),
        token_secret: sds("token", files.token),
        hmac_secret: sds("hmac", files.hmac),
      },
      redirect_uri: `${appUrl.origin}${appUrl.pathname.replace(/\/+$/, "")}${callbackPath}`,
      redirect_path_matcher: { path: { exact: callbackPath } },
      // Envoy requires a sign-out path; Gloo's logoutPath is optional (no logout endpoint). Without one, the
      // path under the callback path that only the filter answers: it clears the filter's own cookies.
      signout_path: { path: { exact: logoutPath ?? `${callbackPath.replace(/\/+$/, "")}/signout` } },
      auth_scopes: scopes,
    },
  };
  const id = `${policy.metadata.namespace ?? ""}.${policy.metadata.name}`;
  return {
    step: {
      kind: "oauth2",
      upstream: {
        filterName: `envoy.filters.http.oauth2.${id}`,
        policy: id,
        tokenEndpoint: tokenEndpoint(token),
        config,
      },
    },
  };
}


/** The oauth2 filter's typed_config, calling the token endpoint through `cluster` (timeout 5s). */
export function oauth2Config(u: OidcUpstream, cluster: string): Record<string, unknown> {
  const c = asRecord(u.config.config);
  return {
    ...u.config,
    config: {
      ...c,
      token_endpoint: { uri: u.tokenEndpoint.uri, cluster, timeout: "5s" },
    },
  };
}

/** The per-route config that turns a filter inserted disabled on (route-based filter chain). */
export const ENABLE_FILTER = { "@type": FILTER_CONFIG_TYPE } as const;
