/**
 * Envoy configuration embedded in rendered EnvoyFilters, checked against a documented subset of
 * Envoy's API: every `typed_config` / `typed_per_filter_config` entry must name an `@type` gitmesh
 * knows, and match that message's JSON form (field names, types, enums), as Envoy's proto JSON
 * parser would. Istio's EnvoyFilter schema itself does not look inside `patch.value` (it is a
 * free-form Struct), so a mistake there would only surface as an Envoy NACK in the cluster.
 *
 * Covered messages (envoyproxy/envoy api/, v3): `envoy.extensions.filters.http.csrf.v3.CsrfPolicy`
 * (filter_enabled, shadow_enabled: RuntimeFractionalPercent; additional_origins: StringMatcher);
 * `envoy.extensions.filters.http.ratelimit.v3.RateLimit` (domain, timeout, failure_mode_deny,
 * rate_limit_service with an envoy_grpc cluster and transport_api_version V3); and the `rate_limits`
 * of a route (`route.rate_limits`) or virtual host (`config.route.v3.RateLimit`: actions
 * source_cluster, destination_cluster, request_headers, remote_address, generic_key,
 * header_value_match with HeaderMatchers, metadata; `limit.dynamic_metadata`);
 * `envoy.extensions.filters.http.ext_authz.v3.ExtAuthz` (grpc_service with an envoy_grpc cluster, or
 * http_service with server_uri, path_prefix, authorization_request/response header lists;
 * failure_mode_allow, with_request_body, clear_route_cache, status_on_error, stat_prefix,
 * transport_api_version V3) and `ExtAuthzPerRoute` (check_settings.context_extensions, or disabled);
 * `envoy.extensions.filters.http.oauth2.v3.OAuth2` (token_endpoint, authorization_endpoint,
 * credentials with file-based SDS secrets only, redirect_uri, redirect_path_matcher, signout_path,
 * auth_scopes, forward_bearer_token) and `config.route.v3.FilterConfig` (empty: enables a filter).
 */
import { subsetValidator } from "./subset-schema.js";

const fractionalPercent = {
  type: "object",
  additionalProperties: false,
  required: ["numerator"],
  properties: { numerator: { type: "integer", minimum: 0 }, denominator: { enum: ["HUNDRED", "TEN_THOUSAND", "MILLION"] } },
};
const runtimeFractionalPercent = {
  type: "object",
  additionalProperties: false,
  required: ["default_value"],
  properties: { default_value: fractionalPercent, runtime_key: { type: "string" } },
};
const stringMatcher = {
  type: "object",
  additionalProperties: false,
  properties: {
    exact: { type: "string" },
    prefix: { type: "string", minLength: 1 },
    suffix: { type: "string", minLength: 1 },
    contains: { type: "string", minLength: 1 },
    safe_regex: { type: "object", additionalProperties: false, required: ["regex"], properties: { regex: { type: "string", minLength: 1 } } },
    ignore_case: { type: "boolean" },
  },
  oneOf: ["exact", "prefix", "suffix", "contains", "safe_regex"].map((k) => ({ required: [k] })),
};

const obj = (properties: Record<string, unknown>, required: readonly string[] = []) => ({ type: "object", additionalProperties: false, required, properties });
const nonEmpty = { type: "string", minLength: 1 };
const metadataKey = obj({ key: nonEmpty, path: { type: "array", minItems: 1, items: obj({ key: nonEmpty }, ["key"]) } }, ["key", "path"]);
const headerMatcher = obj({ name: nonEmpty, string_match: stringMatcher, range_match: obj({ start: { type: "integer" }, end: { type: "integer" } }), present_match: { type: "boolean" }, invert_match: { type: "boolean" } }, ["name"]);
const ACTIONS = {
  source_cluster: obj({}),
  destination_cluster: obj({}),
  remote_address: obj({}),
  request_headers: obj({ header_name: nonEmpty, descriptor_key: nonEmpty, skip_if_absent: { type: "boolean" } }, ["header_name", "descriptor_key"]),
  generic_key: obj({ descriptor_value: nonEmpty, descriptor_key: { type: "string" } }, ["descriptor_value"]),
  header_value_match: obj({ descriptor_value: nonEmpty, expect_match: { type: "boolean" }, headers: { type: "array", minItems: 1, items: headerMatcher } }, ["descriptor_value", "headers"]),
  metadata: obj({ descriptor_key: nonEmpty, metadata_key: metadataKey, default_value: { type: "string" }, source: { enum: ["DYNAMIC", "ROUTE_ENTRY"] } }, ["descriptor_key", "metadata_key"]),
};
const rateLimitAction = { ...obj(ACTIONS), oneOf: Object.keys(ACTIONS).map((k) => ({ required: [k] })) };
/** `config.route.v3.RateLimit` entries: one descriptor's actions each (route or virtual host `rate_limits`). */
const validateRateLimits = subsetValidator({
  type: "array",
  items: obj({ stage: { type: "integer", minimum: 0, maximum: 10 }, actions: { type: "array", minItems: 1, items: rateLimitAction }, limit: obj({ dynamic_metadata: obj({ metadata_key: metadataKey }, ["metadata_key"]) }) }, ["actions"]),
});

const duration = { type: "string", pattern: "^[0-9]+(\\.[0-9]{1,9})?s$" };
const listMatcher = obj({ patterns: { type: "array", items: stringMatcher } }, ["patterns"]);

export const EXT_AUTHZ_TYPE = "type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz";
export const EXT_AUTHZ_PER_ROUTE_TYPE = "type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute";

export const RATELIMIT_TYPE = "type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit";

export const CSRF_TYPE = "type.googleapis.com/envoy.extensions.filters.http.csrf.v3.CsrfPolicy";

export const OAUTH2_TYPE = "type.googleapis.com/envoy.extensions.filters.http.oauth2.v3.OAuth2";
/** Envoy's basic_auth filter (htpasswd `{SHA}` entries inline: hashes, never passwords). */
export const BASIC_AUTH_TYPE = "type.googleapis.com/envoy.extensions.filters.http.basic_auth.v3.BasicAuth";
/** `config.route.v3.FilterConfig`: empty, it turns on a filter inserted `disabled` (route-based filter chain). */
export const FILTER_CONFIG_TYPE = "type.googleapis.com/envoy.config.route.v3.FilterConfig";

/** `transport_sockets.tls.v3.SdsSecretConfig` read from a file (`ConfigSource.path_config_source`): a reference, never a value. */
const sdsFromFile = obj({ name: nonEmpty, sds_config: obj({ path_config_source: obj({ path: { type: "string", pattern: "^/" } }, ["path"]), resource_api_version: { const: "V3" } }, ["path_config_source"]) }, ["name", "sds_config"]);
const pathMatcher = obj({ path: stringMatcher }, ["path"]);
const httpUrl = { type: "string", pattern: "^https?://" };

const MESSAGES: Readonly<Record<string, object>> = {
  [CSRF_TYPE]: {
    type: "object",
    additionalProperties: false,
    required: ["@type", "filter_enabled"],
    properties: {
      "@type": { const: CSRF_TYPE },
      filter_enabled: runtimeFractionalPercent,
      shadow_enabled: runtimeFractionalPercent,
      additional_origins: { type: "array", items: stringMatcher },
    },
  },
  [RATELIMIT_TYPE]: obj(
    {
      "@type": { const: RATELIMIT_TYPE },
      domain: nonEmpty,
      stage: { type: "integer", minimum: 0, maximum: 10 },
      timeout: duration,
      failure_mode_deny: { type: "boolean" },
      rate_limit_service: obj(
        {
          grpc_service: obj({ envoy_grpc: obj({ cluster_name: nonEmpty, authority: { type: "string" } }, ["cluster_name"]), timeout: { type: "string" } }, ["envoy_grpc"]),
          transport_api_version: { const: "V3" },
        },
        ["grpc_service", "transport_api_version"],
      ),
    },
    ["@type", "domain", "rate_limit_service"],
  ),
  [EXT_AUTHZ_TYPE]: {
    ...obj(
      {
        "@type": { const: EXT_AUTHZ_TYPE },
        grpc_service: obj({ envoy_grpc: obj({ cluster_name: nonEmpty, authority: { type: "string" } }, ["cluster_name"]), timeout: duration }, ["envoy_grpc"]),
        http_service: obj(
          {
            server_uri: obj({ uri: nonEmpty, cluster: nonEmpty, timeout: duration }, ["uri", "cluster", "timeout"]),
            path_prefix: { type: "string" },
            authorization_request: obj({ allowed_headers: listMatcher, headers_to_add: { type: "array", items: obj({ key: nonEmpty, value: { type: "string" } }, ["key"]) } }),
            authorization_response: obj({ allowed_upstream_headers: listMatcher, allowed_client_headers: listMatcher }),
          },
          ["server_uri"],
        ),
        transport_api_version: { const: "V3" },
        failure_mode_allow: { type: "boolean" },
        with_request_body: obj({ max_request_bytes: { type: "integer", minimum: 1 }, allow_partial_message: { type: "boolean" }, pack_as_bytes: { type: "boolean" } }, ["max_request_bytes"]),
        clear_route_cache: { type: "boolean" },
        status_on_error: obj({ code: { type: "integer", minimum: 100, maximum: 599 } }, ["code"]),
        stat_prefix: { type: "string" },
      },
      ["@type", "transport_api_version"],
    ),
    oneOf: [{ required: ["grpc_service"] }, { required: ["http_service"] }],
  },
  [EXT_AUTHZ_PER_ROUTE_TYPE]: {
    ...obj({ "@type": { const: EXT_AUTHZ_PER_ROUTE_TYPE }, disabled: { const: true }, check_settings: obj({ context_extensions: { type: "object", additionalProperties: { type: "string" } }, disable_request_body_buffering: { type: "boolean" } }) }, ["@type"]),
    oneOf: [{ required: ["disabled"] }, { required: ["check_settings"] }],
  },
  [OAUTH2_TYPE]: obj(
    {
      "@type": { const: OAUTH2_TYPE },
      config: obj(
        {
          token_endpoint: obj({ uri: httpUrl, cluster: nonEmpty, timeout: duration }, ["uri", "cluster", "timeout"]),
          authorization_endpoint: httpUrl,
          credentials: obj({ client_id: nonEmpty, token_secret: sdsFromFile, hmac_secret: sdsFromFile }, ["client_id", "token_secret", "hmac_secret"]),
          redirect_uri: nonEmpty,
          redirect_path_matcher: pathMatcher,
          signout_path: pathMatcher,
          forward_bearer_token: { type: "boolean" },
          auth_scopes: { type: "array", items: nonEmpty },
        },
        ["token_endpoint", "authorization_endpoint", "credentials", "redirect_uri", "redirect_path_matcher"],
      ),
    },
    ["@type", "config"],
  ),
  [BASIC_AUTH_TYPE]: obj({ "@type": { const: BASIC_AUTH_TYPE }, users: obj({ inline_string: { type: "string", pattern: "^[^:\\n]+:\\{SHA\\}[A-Za-z0-9+/]{27}=(\\n[^:\\n]+:\\{SHA\\}[A-Za-z0-9+/]{27}=)*$" } }, ["inline_string"]) }, ["@type", "users"]),
  [FILTER_CONFIG_TYPE]: obj({ "@type": { const: FILTER_CONFIG_TYPE }, disabled: { type: "boolean" }, is_optional: { type: "boolean" } }, ["@type"]),
};
const validators = new Map(Object.entries(MESSAGES).map(([k, s]) => [k, subsetValidator(s)]));

export interface EnvoyIssue {
  readonly path: string;
  readonly message: string;
}

function typed(v: unknown, path: string, out: EnvoyIssue[]): void {
  if (typeof v !== "object" || v === null) return void out.push({ path, message: "must be an object with @type" });
  const type = (v as Record<string, unknown>)["@type"];
  const validate = typeof type === "string" ? validators.get(type) : undefined;
  if (validate === undefined) return void out.push({ path: `${path}/@type`, message: `no schema for Envoy type ${JSON.stringify(type)}` });
  for (const issue of validate(v)) out.push({ path: `${path}${issue.path}`, message: issue.message });
}

/** Issues of the Envoy configuration inside an EnvoyFilter's patches (`[]` when every embedded message is valid). */
export function validateEnvoyPatches(spec: Record<string, unknown>): EnvoyIssue[] {
  const out: EnvoyIssue[] = [];
  const patches = Array.isArray(spec.configPatches) ? spec.configPatches : [];
  patches.forEach((p: unknown, i) => {
    const value = (p as { patch?: { value?: Record<string, unknown> } } | null)?.patch?.value;
    if (value === undefined) return;
    const base = `/spec/configPatches/${String(i)}/patch/value`;
    if (value.typed_config !== undefined) typed(value.typed_config, `${base}/typed_config`, out);
    const route = value.route as Record<string, unknown> | undefined;
    for (const [at, limits] of [["/route/rate_limits", route?.rate_limits], ["/rate_limits", value.rate_limits]] as const) {
      if (limits !== undefined) for (const issue of validateRateLimits(limits)) out.push({ path: `${base}${at}${issue.path}`, message: issue.message });
    }
    const perFilter = value.typed_per_filter_config;
    if (typeof perFilter === "object" && perFilter !== null) {
      for (const [name, v] of Object.entries(perFilter)) typed(v, `${base}/typed_per_filter_config/${name}`, out);
    }
  });
  return out;
}
