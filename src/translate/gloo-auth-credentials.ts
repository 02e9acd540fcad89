/**
 * glooAuth credential configurations (solo-apis `enterprise.gloo.solo.io` AuthConfigSpec, branch
 * gloo-mesh-v2.6.x, api/gloo/enterprise.gloo/v1/auth_config.proto) on the Envoy filters Istio's proxy
 * ships (issue #36 item 4): one builder per configuration kind, from the configuration to an Envoy
 * filter step or to the reasons it needs Gloo's ext-auth-service. gloo-auth.ts decides about the
 * chain; this module knows one configuration at a time.
 *
 * Facts the builders rest on (sources):
 *
 * - **Which filters Istio's proxy has.** Istio 1.29 ships istio/proxy branch release-1.29
 *   (commit 184641e1e, Envoy 0ec8f933), whose WORKSPACE makes `bazel/extension_config` Envoy's
 *   `envoy_build_config`; its `extensions_build_config.bzl` compiles `envoy.filters.http.basic_auth`
 *   (ENVOY_EXTENSIONS) but not `envoy.filters.http.api_key_auth`:
 *   the name appears nowhere in that branch (nor in release-1.29.1, release-1.30 or master), and
 *   ISTIO_DISABLED_EXTENSIONS / ISTIO_ENABLED_CONTRIB_EXTENSIONS do not add it. Envoy has the filter
 *   (source/extensions/filters/http/api_key_auth), and istiod's validation accepts its type
 *   (istio.io/istio pkg/config/xds/filter_types.gen.go imports its proto, so an EnvoyFilter's
 *   typed_config decodes), so only a running gateway would refuse it: a
 *   listener whose filter has no registered implementation is rejected whole (marking the filter
 *   `is_optional` would make Envoy skip it: every request let through). API keys therefore stay
 *   with Gloo's ext-auth-service ({@link API_KEY_AUTH_REASON}).
 * - **Gloo's basic auth** (proto `BasicAuth`): either `apr.users` (APR1 / MD5-crypt salt and hash),
 *   or `encryption` {`apr` | `sha1`} with `userList.users`; "exactly one of 'apr' or ('encryption'
 *   and 'user_source')". Gloo's docs (Gloo Edge "Basic Auth", Extended configuration,
 *   solo-io/gloo docs/content/guides/security/auth/extauth/basic_auth/_index.md) give the SHA-1
 *   example user `user`, password `password`, salt `TYiryv0/`, hashedPassword
 *   `010eb058a59f4ac5ba05639b0263cf91b4345fd6` = hex(SHA-1(password + salt)); "the hashed password is
 *   case-insensitive as the alphabetic characters represent hexadecimal digits"; the extended form also
 *   reads `Proxy-Authorization`; the 401 carries `www-authenticate: Basic realm="<realm>"`.
 * - **Envoy's basic_auth** (envoy.extensions.filters.http.basic_auth.v3.BasicAuth; basic_auth_filter.cc):
 *   `users` in htpasswd format, "only SHA format is currently supported": `user:{SHA}<base64(SHA-1(password))>`
 *   — no salt. It reads one header (`Authorization`, or `authentication_header`), requires the scheme
 *   spelled `Basic ` exactly, and answers 401 with `WWW-Authenticate: Basic realm="<request URI>"`; the
 *   message has no realm setting (go-control-plane envoy v1.37.1-0.20260713214202, as istiod links it).
 *
 * So a Gloo user translates exactly when its hash is SHA-1 with an empty salt: hex(SHA-1(password))
 * becomes `{SHA}` + base64 of the same 20 bytes. APR1 hashes and salted SHA-1 hashes cannot be
 * verified by Envoy's filter (it would need the password), and the configuration stays with Gloo,
 * naming the users. The htpasswd lines are rendered inline: the hashes are already in Git (the
 * ExtAuthPolicy holds them), so the audit branch shows its readers nothing new.
 */
import { Severity } from "../core/index.js";
import { BASIC_AUTH_TYPE } from "./envoy-config.js";
import type { ReportIssue } from "./envoy-filters.js";
import type { InputObject } from "./input.js";
import { asRecord, asString } from "./selectors.js";
import { TranslateCode } from "./types.js";

/**
 * Why `apiKeyAuth` needs Gloo's ext-auth-service (NEEDS_GLOO_DATA_PLANE), stated exactly: see the
 * module comment for the sources.
 */
export const API_KEY_AUTH_REASON =
  "Envoy's api_key_auth filter (envoy.filters.http.api_key_auth) is not compiled into Istio's proxy: istio/proxy release-1.29 " +
  "(bazel/extension_config/extensions_build_config.bzl) does not list it, so a gateway would reject the listener that names it; " +
  "the keys stay with Gloo's ext-auth-service, which reads them from the referenced Secrets";

/** A glooAuth configuration on an Envoy filter that needs nothing else: inserted disabled, enabled per selected route. */
export interface CredentialFilterStep {
  /** `envoy.filters.http.basic_auth.<namespace>.<policy>`: one filter per policy (each has its own users). */
  readonly filterName: string;
  /** `<namespace>.<name>` of the policy. */
  readonly policy: string;
  /** The filter's typed_config. */
  readonly typedConfig: Readonly<Record<string, unknown>>;
}

export type StepOrReasons = { readonly step: CredentialFilterStep } | { readonly reasons: readonly string[] };

const SHA1_HEX = /^[0-9a-fA-F]{40}$/;

/** An htpasswd SHA entry (`{SHA}` + base64 of the digest) from Gloo's hex SHA-1 digest. */
export function htpasswdSha(hexDigest: string): string {
  return `{SHA}${Buffer.from(hexDigest, "hex").toString("base64")}`;
}

/**
 * `configs[index].basicAuth` → Envoy's basic_auth filter, or the reasons Envoy cannot verify what
 * Gloo verifies. Configuration mistakes Gloo's validation refuses are reasons too (Gloo would not
 * load the configuration either); a user whose stored hash is not a SHA-1 hex digest can never log in
 * with Gloo, so it is left out with an INVALID_FIELD error (the same users get in).
 */
export function basicAuthStep(policy: InputObject, index: number, spec: Record<string, unknown>, report: ReportIssue): StepOrReasons {
  const at = `configs[${String(index)}] basicAuth`;
  const base = `/spec/config/glooAuth/configs/${String(index)}/basicAuth`;
  const hasApr = spec.apr !== undefined && spec.apr !== null;
  const encryption = asRecord(spec.encryption);
  const hasEncryption = spec.encryption !== undefined && spec.encryption !== null;
  const hasUserList = spec.userList !== undefined && spec.userList !== null;
  if (hasApr && (hasEncryption || hasUserList)) return { reasons: [`${at}: apr and encryption/userList are both set; Gloo requires exactly one of them and refuses the configuration`] };
  if (!hasApr && !(hasEncryption && hasUserList)) return { reasons: [`${at}: neither apr nor encryption with userList is set; Gloo requires exactly one of them and refuses the configuration`] };
  const users = Object.entries(asRecord(asRecord(hasApr ? spec.apr : spec.userList).users)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const names = users.map(([u]) => JSON.stringify(u)).join(", ");
  if (hasApr || encryption.apr !== undefined)
    return {
      reasons: [
        `${at}: user${users.length === 1 ? "" : "s"} ${names || "(none)"} ha${users.length === 1 ? "s an" : "ve"} APR1 (MD5-crypt) password hash${users.length === 1 ? "" : "es"}; Envoy's basic_auth filter verifies unsalted SHA-1 htpasswd entries only, and an APR1 hash cannot be converted without the password. Store SHA-1 hashes with an empty salt (encryption: {sha1: {}}) to run it on Envoy`,
      ],
    };
  if (encryption.sha1 === undefined) return { reasons: [`${at}: encryption names no algorithm Gloo knows (apr or sha1)`] };
  const salted = users.filter(([, u]) => (asString(asRecord(u).salt) ?? "") !== "").map(([name]) => JSON.stringify(name));
  if (salted.length > 0)
    return {
      reasons: [
        `${at}: user${salted.length === 1 ? "" : "s"} ${salted.join(", ")} ha${salted.length === 1 ? "s a" : "ve"} salt: Gloo checks SHA-1(password + salt), Envoy's basic_auth filter SHA-1(password) with no salt, so the stored hash cannot be converted. Store the users with an empty salt (hashedPassword = hex SHA-1 of the password) to run it on Envoy`,
      ],
    };
  const unrepresentable = users.filter(([name]) => name === "" || /[:\r\n]/.test(name)).map(([name]) => JSON.stringify(name));
  if (unrepresentable.length > 0) return { reasons: [`${at}: user name${unrepresentable.length === 1 ? "" : "s"} ${unrepresentable.join(", ")} cannot be written as an htpasswd entry (empty, or a colon or line break)`] };
  const lines: string[] = [];
  for (const [name, u] of users) {
    const hash = asString(asRecord(u).hashedPassword) ?? "";
    if (!SHA1_HEX.test(hash)) {
      report(policy, `${base}/userList/users/${name.replace(/~/g, "~0").replace(/\//g, "~1")}/hashedPassword`, `user "${name}": the hashed password is not a SHA-1 digest in hex (40 hexadecimal digits), so no password matches it (with Gloo either); the user is left out`, Severity.Error, TranslateCode.InvalidField);
      continue;
    }
    lines.push(`${name}:${htpasswdSha(hash.toLowerCase())}`);
  }
  if (lines.length === 0) return { reasons: [`${at}: no user has a usable SHA-1 hash; Gloo refuses every request, and Envoy's basic_auth filter needs at least one user`] };
  const differences = [
    "Envoy reads the credentials from the Authorization header only (Gloo's extended configuration also reads Proxy-Authorization)",
    "Envoy accepts the scheme spelled \"Basic\" only (Gloo also accepts \"basic\", as its documentation sends it)",
    asString(spec.realm) !== undefined ? `the 401 challenge names the request's URI as realm, not "${String(spec.realm)}" (Envoy's filter has no realm setting)` : "the 401 challenge names the request's URI as realm (Envoy's filter has no realm setting)",
  ];
  report(policy, asString(spec.realm) !== undefined ? `${base}/realm` : base, `basic auth runs on Envoy's basic_auth filter, which differs from Gloo's ext-auth-service: ${differences.join("; ")}`, Severity.Warning, TranslateCode.UnsupportedField);
  const id = `${policy.metadata.namespace ?? ""}.${policy.metadata.name}`;
  return {
    step: {
      filterName: `envoy.filters.http.basic_auth.${id}`,
      policy: id,
      // Byte-stable: users sorted by name, one htpasswd line each (Envoy's format; the hashes are the Git input's).
      typedConfig: { "@type": BASIC_AUTH_TYPE, users: { inline_string: lines.join("\n") } },
    },
  };
}
