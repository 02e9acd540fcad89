/**
 * Gloo Platform kinds that exist (solo-io/solo-apis, api/gloo.solo.io, the 2.x branches) but that
 * gitmesh does not translate. The loader uses this catalogue to tell a real Gloo kind it cannot
 * enforce (an error unless the repository leaves the kind to another tool) from a mistyped apiVersion
 * or kind (an error with "did you mean"). A policy that would silently not be enforced is never a
 * warning.
 */
import { SUPPORTED_KINDS } from "./kinds.js";

/** How the kind could reach a data plane, for the message. */
export type UntranslatedReason =
  /** Needs Solo's own Envoy build or add-on services (ext-auth, rate limiter, portal, GraphQL…). */
  | "gloo-data-plane"
  /** Installs or manages Istio itself (lifecycle managers): outside what gitmesh renders. */
  | "lifecycle"
  /** Upstream Istio could express it; gitmesh does not translate it yet. */
  | "not-yet";

export interface GlooKindEntry {
  readonly apiVersion: string;
  readonly kind: string;
  readonly reason: UntranslatedReason;
  /**
   * The fields of the kind's `spec` (lowerCamelCase, from its `<Kind>Spec` message in solo-apis
   * gloo-mesh-v2.6.x), when known: the loader checks a document's spec against them (a documented
   * subset of the schema: the top level; nested fields are Gloo's to judge).
   */
  readonly specFields?: readonly string[];
}

const entries = (apiVersion: string, reason: UntranslatedReason, kinds: readonly string[]): GlooKindEntry[] =>
  kinds.map((kind) => ({ apiVersion, kind, reason, ...(reason === "gloo-data-plane" && SPEC_FIELDS[kind] !== undefined ? { specFields: SPEC_FIELDS[kind] } : {}) }));

/** Top-level spec fields of the kinds that need Gloo's data plane (solo-apis gloo-mesh-v2.6.x `<Kind>Spec`). */
const SPEC_FIELDS: Readonly<Record<string, readonly string[]>> = {
  WAFPolicy: ["applyToRoutes", "config"],
  DLPPolicy: ["applyToRoutes", "config"],
  TransformationPolicy: ["applyToRoutes", "config"],
  GraphQLAllowedQueryPolicy: ["applyToRoutes", "config"],
  GraphQLPersistedQueryCachePolicy: ["applyToRoutes", "config"],
  AdaptiveRequestConcurrencyPolicy: ["applyToDestinations", "config"],
  WasmDeploymentPolicy: ["applyToWorkloads", "config"],
  LuaPolicy: ["applyToRoutes", "applyToDestinations", "config"],
  ApiDoc: ["servedBy", "openapi", "grpc", "graphql"],
  ApiSchemaDiscovery: ["servedBy", "openapi", "graphql"],
  GraphQLResolverMap: ["types", "extensions"],
  GraphQLStitchedSchema: ["subschemas", "options"],
  Portal: ["portalBackendSelectors", "apis", "apiProducts", "usagePlans", "domains", "visibility"],
  CloudProvider: ["aws"],
  Dashboard: ["authn", "authz"],
  InsightsConfig: ["disabledInsights"],
};

/** Every Gloo v2 kind gitmesh knows of but does not translate, by apiVersion. */
export const UNTRANSLATED_GLOO_KINDS: readonly GlooKindEntry[] = Object.freeze([
  ...entries("admin.gloo.solo.io/v2alpha1", "lifecycle", ["WaypointLifecycleManager"]),
  ...entries("admin.gloo.solo.io/v2", "gloo-data-plane", ["Dashboard"]),
  ...entries("admin.gloo.solo.io/v2alpha1", "gloo-data-plane", ["InsightsConfig"]),
  ...entries("apimanagement.gloo.solo.io/v2", "gloo-data-plane", [
    "ApiDoc",
    "ApiProduct",
    "ApiSchemaDiscovery",
    "GraphQLResolverMap",
    "GraphQLSchema",
    "GraphQLStitchedSchema",
    "Portal",
    "PortalGroup",
  ]),
  ...entries("infrastructure.gloo.solo.io/v2", "gloo-data-plane", ["CloudProvider", "CloudResources"]),
  ...entries("networking.gloo.solo.io/v2", "gloo-data-plane", ["CloudProvider", "CloudResources"]),
  ...entries("networking.gloo.solo.io/v2", "not-yet", ["ExternalWorkload"]),
  ...entries("networking.gloo.solo.io/v2alpha1", "not-yet", ["ExternalWorkload"]),
  ...entries("extensions.policy.gloo.solo.io/v2", "gloo-data-plane", ["WasmDeploymentPolicy", "LuaPolicy"]),
  ...entries("observability.policy.gloo.solo.io/v2", "not-yet", ["AccessLogPolicy"]),
  ...entries("resilience.policy.gloo.solo.io/v2", "not-yet", ["ActiveHealthCheckPolicy", "ListenerConnectionPolicy"]),
  ...entries("resilience.policy.gloo.solo.io/v2", "gloo-data-plane", ["AdaptiveRequestConcurrencyPolicy", "GraphQLPersistedQueryCachePolicy"]),
  ...entries("security.policy.gloo.solo.io/v2", "not-yet", ["ClientTLSPolicy"]),
  ...entries("security.policy.gloo.solo.io/v2", "gloo-data-plane", ["WAFPolicy", "DLPPolicy", "GraphQLAllowedQueryPolicy"]),
  ...entries("trafficcontrol.policy.gloo.solo.io/v2", "not-yet", ["ProxyProtocolPolicy", "HTTPBufferPolicy"]),
  ...entries("trafficcontrol.policy.gloo.solo.io/v2", "gloo-data-plane", ["TransformationPolicy"]),
]);

const byKey = new Map(UNTRANSLATED_GLOO_KINDS.map((e) => [`${e.apiVersion}|${e.kind}`, e]));
const glooGroups = new Set([...SUPPORTED_KINDS.map((k) => k.group), ...UNTRANSLATED_GLOO_KINDS.map((e) => e.apiVersion.split("/")[0]!)]);

/** A Gloo kind gitmesh knows but does not translate, or undefined. Exact match. */
export function untranslatedGlooKind(apiVersion: string, kind: string): GlooKindEntry | undefined {
  return byKey.get(`${apiVersion}|${kind}`);
}

/**
 * Whether an apiVersion belongs to Gloo's API (a `*.solo.io` group, any version): such an object is
 * meant as mesh policy, so gitmesh must understand it or refuse it — never skip it quietly.
 */
export function isGlooApiVersion(apiVersion: string): boolean {
  const group = apiVersion.includes("/") ? apiVersion.slice(0, apiVersion.indexOf("/")) : apiVersion;
  return glooGroups.has(group) || /(^|\.)solo\.io$/.test(group);
}

/**
 * apiVersions Gloo used before a kind settled in its group, read as the current one (the loader warns
 * with DEPRECATED_API_VERSION): `security.gloo.solo.io/v2` AccessPolicy (Gloo Mesh 2.0 previews).
 */
const API_VERSION_ALIASES: ReadonlyMap<string, string> = new Map([["security.gloo.solo.io/v2|AccessPolicy", "security.policy.gloo.solo.io/v2"]]);

/** The current apiVersion of a deprecated one for this kind, or undefined. */
export function currentApiVersion(apiVersion: string, kind: string): string | undefined {
  return API_VERSION_ALIASES.get(`${apiVersion}|${kind}`);
}
