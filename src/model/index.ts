/**
 * The configuration model: the Gloo Mesh v2 kinds gitmesh accepts, their TypeScript types (generated from
 * schemas/*.schema.json by `npm run gen`; never edit src/model/generated/), and the schema validators.
 */
import type { AccessPolicy } from "./generated/access-policy.gen.js";
import type { ConnectionPolicy } from "./generated/connection-policy.gen.js";
import type { CORSPolicy } from "./generated/cors-policy.gen.js";
import type { ExternalEndpoint } from "./generated/external-endpoint.gen.js";
import type { ExternalService } from "./generated/external-service.gen.js";
import type { GatewayLifecycleManager } from "./generated/gateway-lifecycle-manager.gen.js";
import type { IstioLifecycleManager } from "./generated/istio-lifecycle-manager.gen.js";
import type { FailoverPolicy } from "./generated/failover-policy.gen.js";
import type { FaultInjectionPolicy } from "./generated/fault-injection-policy.gen.js";
import type { CSRFPolicy } from "./generated/csrf-policy.gen.js";
import type { JWTPolicy } from "./generated/jwt-policy.gen.js";
import type { ExtAuthPolicy } from "./generated/ext-auth-policy.gen.js";
import type { ExtAuthServer } from "./generated/ext-auth-server.gen.js";
import type { RateLimitClientConfig } from "./generated/rate-limit-client-config.gen.js";
import type { RateLimitPolicy } from "./generated/rate-limit-policy.gen.js";
import type { RateLimitServerConfig } from "./generated/rate-limit-server-config.gen.js";
import type { RateLimitServerSettings } from "./generated/rate-limit-server-settings.gen.js";
import type { HeaderManipulationPolicy } from "./generated/header-manipulation-policy.gen.js";
import type { KubernetesCluster } from "./generated/kubernetes-cluster.gen.js";
import type { LoadBalancerPolicy } from "./generated/load-balancer-policy.gen.js";
import type { MirrorPolicy } from "./generated/mirror-policy.gen.js";
import type { OutlierDetectionPolicy } from "./generated/outlier-detection-policy.gen.js";
import type { TrimProxyConfigPolicy } from "./generated/trim-proxy-config-policy.gen.js";
import type { RetryTimeoutPolicy } from "./generated/retry-timeout-policy.gen.js";
import type { RootTrustPolicy } from "./generated/root-trust-policy.gen.js";
import type { RouteTable } from "./generated/route-table.gen.js";
import type { VirtualDestination } from "./generated/virtual-destination.gen.js";
import type { VirtualGateway } from "./generated/virtual-gateway.gen.js";
import type { Workspace } from "./generated/workspace.gen.js";
import type { WorkspaceSettings } from "./generated/workspace-settings.gen.js";

export { SUPPORTED_KINDS, kindInfo, describeSupportedKinds, type KindInfo } from "./kinds.js";
export { UNTRANSLATED_GLOO_KINDS, untranslatedGlooKind, isGlooApiVersion, currentApiVersion, type GlooKindEntry, type UntranslatedReason } from "./gloo-kinds.js";
export { validateResource, validateDiscoverySnapshot, precompileValidators, editDistance, closest, type SchemaIssue } from "./validate.js";

export type * from "./generated/common.gen.js";
export type * from "./generated/discovery-snapshot.gen.js";
export type * from "./generated/workspace.gen.js";
export type * from "./generated/workspace-settings.gen.js";
export type * from "./generated/kubernetes-cluster.gen.js";
export type * from "./generated/root-trust-policy.gen.js";
export type * from "./generated/istio-lifecycle-manager.gen.js";
export type * from "./generated/gateway-lifecycle-manager.gen.js";
export type * from "./generated/virtual-destination.gen.js";
export type * from "./generated/route-table.gen.js";
export type * from "./generated/virtual-gateway.gen.js";
export type * from "./generated/external-service.gen.js";
export type * from "./generated/external-endpoint.gen.js";
export type * from "./generated/retry-timeout-policy.gen.js";
export type * from "./generated/fault-injection-policy.gen.js";
export type * from "./generated/failover-policy.gen.js";
export type * from "./generated/outlier-detection-policy.gen.js";
export type * from "./generated/connection-policy.gen.js";
export type * from "./generated/trim-proxy-config-policy.gen.js";
export type * from "./generated/access-policy.gen.js";
export type * from "./generated/cors-policy.gen.js";
export type * from "./generated/jwt-policy.gen.js";
export type * from "./generated/csrf-policy.gen.js";
export type * from "./generated/ext-auth-policy.gen.js";
export type * from "./generated/ext-auth-server.gen.js";
export type * from "./generated/rate-limit-policy.gen.js";
export type * from "./generated/rate-limit-client-config.gen.js";
export type * from "./generated/rate-limit-server-config.gen.js";
export type * from "./generated/rate-limit-server-settings.gen.js";
export type * from "./generated/header-manipulation-policy.gen.js";
export type * from "./generated/mirror-policy.gen.js";
export type * from "./generated/load-balancer-policy.gen.js";

/** Every supported document type, keyed by kind. */
export interface ResourcesByKind {
  Workspace: Workspace;
  WorkspaceSettings: WorkspaceSettings;
  KubernetesCluster: KubernetesCluster;
  RootTrustPolicy: RootTrustPolicy;
  IstioLifecycleManager: IstioLifecycleManager;
  GatewayLifecycleManager: GatewayLifecycleManager;
  VirtualDestination: VirtualDestination;
  RouteTable: RouteTable;
  VirtualGateway: VirtualGateway;
  ExternalService: ExternalService;
  ExternalEndpoint: ExternalEndpoint;
  RetryTimeoutPolicy: RetryTimeoutPolicy;
  FaultInjectionPolicy: FaultInjectionPolicy;
  FailoverPolicy: FailoverPolicy;
  OutlierDetectionPolicy: OutlierDetectionPolicy;
  ConnectionPolicy: ConnectionPolicy;
  TrimProxyConfigPolicy: TrimProxyConfigPolicy;
  AccessPolicy: AccessPolicy;
  CORSPolicy: CORSPolicy;
  JWTPolicy: JWTPolicy;
  CSRFPolicy: CSRFPolicy;
  ExtAuthPolicy: ExtAuthPolicy;
  ExtAuthServer: ExtAuthServer;
  RateLimitPolicy: RateLimitPolicy;
  RateLimitClientConfig: RateLimitClientConfig;
  RateLimitServerConfig: RateLimitServerConfig;
  RateLimitServerSettings: RateLimitServerSettings;
  HeaderManipulationPolicy: HeaderManipulationPolicy;
  MirrorPolicy: MirrorPolicy;
  LoadBalancerPolicy: LoadBalancerPolicy;
}
/** The name of a supported kind. */
export type GlooKind = keyof ResourcesByKind;
/** Any supported document (a discriminated union on `kind`). A document that passed validateResource is one of these. */
export type GlooResource = ResourcesByKind[GlooKind];
/** The `spec` type of a kind, e.g. `SpecOf<"RouteTable">` = RouteTableSpec. */
export type SpecOf<K extends GlooKind> = NonNullable<ResourcesByKind[K]["spec"]>;
