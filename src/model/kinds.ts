/**
 * The Gloo Mesh v2 kinds gitmesh accepts: one JSON Schema each under schemas/ (file name = kebab-case kind).
 * Everything else (other apiVersions or kinds) is reported by the loader as unsupported, never dropped silently.
 */

export interface KindInfo {
  /** API group, e.g. `networking.gloo.solo.io`. */
  readonly group: string;
  /** API version within the group (`v2` for every supported kind). */
  readonly version: string;
  /** `<group>/<version>`, as written in `apiVersion`. */
  readonly apiVersion: string;
  readonly kind: string;
  /** True for the admin.gloo.solo.io kinds (they normally live in the admin namespace, default `gloo-mesh`). */
  readonly adminScoped: boolean;
  /** The schema file under schemas/ that describes the kind. */
  readonly schemaFile: string;
}

const ADMIN = "admin.gloo.solo.io";
const NETWORKING = "networking.gloo.solo.io";
const RESILIENCE = "resilience.policy.gloo.solo.io";
const SECURITY = "security.policy.gloo.solo.io";
const TRAFFIC = "trafficcontrol.policy.gloo.solo.io";

const define = (group: string, kind: string): KindInfo =>
  Object.freeze({
    group,
    version: "v2",
    apiVersion: `${group}/v2`,
    kind,
    adminScoped: group === ADMIN,
    schemaFile: `${kind.replace(/([a-z0-9])([A-Z])/g, "$1-$2").replace(/([A-Z]+)([A-Z][a-z])/g, "$1-$2").toLowerCase()}.schema.json`,
  });

/** Every supported kind, in a stable order (admin, networking, resilience, security, traffic control). */
export const SUPPORTED_KINDS: readonly KindInfo[] = Object.freeze([
  define(ADMIN, "Workspace"),
  define(ADMIN, "WorkspaceSettings"),
  define(ADMIN, "KubernetesCluster"),
  define(ADMIN, "RootTrustPolicy"),
  define(ADMIN, "IstioLifecycleManager"),
  define(ADMIN, "GatewayLifecycleManager"),
  define(ADMIN, "RateLimitServerConfig"),
  define(ADMIN, "RateLimitServerSettings"),
  define(ADMIN, "ExtAuthServer"),
  define(NETWORKING, "VirtualDestination"),
  define(NETWORKING, "RouteTable"),
  define(NETWORKING, "VirtualGateway"),
  define(NETWORKING, "ExternalService"),
  define(NETWORKING, "ExternalEndpoint"),
  define(RESILIENCE, "RetryTimeoutPolicy"),
  define(RESILIENCE, "FaultInjectionPolicy"),
  define(RESILIENCE, "FailoverPolicy"),
  define(RESILIENCE, "OutlierDetectionPolicy"),
  define(RESILIENCE, "ConnectionPolicy"),
  define(RESILIENCE, "TrimProxyConfigPolicy"),
  define(SECURITY, "AccessPolicy"),
  define(SECURITY, "CORSPolicy"),
  define(SECURITY, "JWTPolicy"),
  define(SECURITY, "CSRFPolicy"),
  define(SECURITY, "ExtAuthPolicy"),
  define(TRAFFIC, "HeaderManipulationPolicy"),
  define(TRAFFIC, "MirrorPolicy"),
  define(TRAFFIC, "LoadBalancerPolicy"),
  define(TRAFFIC, "RateLimitPolicy"),
  define(TRAFFIC, "RateLimitClientConfig"),
]);

const byKey = new Map(SUPPORTED_KINDS.map((k) => [`${k.apiVersion}|${k.kind}`, k]));

/** The supported kind with this apiVersion and kind, or undefined. Exact, case-sensitive match. */
export function kindInfo(apiVersion: string, kind: string): KindInfo | undefined {
  return byKey.get(`${apiVersion}|${kind}`);
}

/** `Workspace (admin.gloo.solo.io/v2), …` — for messages that list what is supported. */
export function describeSupportedKinds(): string {
  return SUPPORTED_KINDS.map((k) => `${k.kind} (${k.apiVersion})`).join(", ");
}
