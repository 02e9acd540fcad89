/**
 * Output, fragment and diagnostic types of the translation engine. Everything here is plain,
 * JSON-serialisable data: fragments travel between the workspace stage and the cluster stage as
 * queue jobs.
 */
import type { Diagnostic } from "../core/index.js";

/** One rendered Istio object (networking.istio.io/v1 or security.istio.io/v1, plus gitmesh internal kinds). */
export interface IstioResource {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: IstioMetadata;
  readonly spec: Record<string, unknown>;
}

export interface IstioMetadata {
  readonly name: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

/** A resource a translator wants in one cluster's output. */
export interface Emitted {
  readonly cluster: string;
  readonly resource: IstioResource;
}

/** What one per-kind translator returns. Pure value; never throws for user mistakes. */
export interface TranslatorOutput {
  readonly resources: readonly Emitted[];
  readonly diagnostics: readonly Diagnostic[];
  /** Route tables frozen by failureMode FREEZE_CONFIG (nothing rendered for them in this run). */
  readonly frozen?: readonly FrozenTable[];
}

/**
 * A route table with `failureMode: FREEZE_CONFIG` and an error: nothing new is rendered for it in
 * `cluster`, and the delivery layer keeps what it last published for it there. Its objects are
 * those of the previous output whose labels include every entry of `selector` (the workspace and
 * parent labels the table's objects carry in that cluster).
 */
export interface FrozenTable {
  readonly cluster: string;
  readonly workspace: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace: string;
  readonly selector: Readonly<Record<string, string>>;
}

/** Result of the workspace stage: per-cluster fragments (sorted) and the workspace's diagnostics (sorted). */
export interface WorkspaceResult {
  readonly workspace: string;
  readonly fragments: ReadonlyMap<string, readonly IstioResource[]>;
  readonly diagnostics: readonly Diagnostic[];
  /** Route tables frozen in this run, per cluster (sorted; absent when none). */
  readonly frozen?: readonly FrozenTable[];
}

/** What one workspace contributes to one cluster; the input of the cluster stage. */
export interface WorkspaceFragment {
  readonly workspace: string;
  readonly resources: readonly IstioResource[];
}

/** Result of the cluster stage: the cluster's sorted, canonical output snapshot. */
export interface ClusterOutput {
  readonly cluster: string;
  readonly resources: readonly IstioResource[];
  readonly diagnostics: readonly Diagnostic[];
}

/** Result of `translateAll`. */
export interface TranslationResult {
  readonly clusters: ReadonlyMap<string, ClusterOutput>;
  readonly workspaces: ReadonlyMap<string, WorkspaceResult>;
  /** Every diagnostic of every stage, sorted. */
  readonly diagnostics: readonly Diagnostic[];
}

/**
 * Stable diagnostic codes of the translation engine. Each message says what to do.
 * (translate-destinations adds its own codes in its files; keep them UPPER_SNAKE and unique.)
 */
export const TranslateCode = {
  /** A route could not be translated; it was replaced by a 500 direct response (failureMode ROUTE_REPLACEMENT). */
  RouteReplacement: "ROUTE_REPLACEMENT",
  RouteUnreachable: "ROUTE_UNREACHABLE",
  /** A route table with failureMode FREEZE_CONFIG had an error: none of its output is produced in this run. */
  RouteTableFrozen: "ROUTE_TABLE_FROZEN",
  /** A Gloo field gitmesh does not translate. */
  UnsupportedField: "UNSUPPORTED_FIELD",
  /** A route, delegate or policy selects nothing. */
  SelectsNothing: "SELECTS_NOTHING",
  /** A destination (Service, VirtualDestination, ExternalService) cannot be found or is not visible to the workspace. */
  DestinationNotFound: "DESTINATION_NOT_FOUND",
  /** A destination port cannot be resolved. */
  PortNotFound: "PORT_NOT_FOUND",
  /** Destination weights are invalid (sum over 100, or no remainder for unweighted destinations). */
  InvalidWeights: "INVALID_WEIGHTS",
  /** A referenced VirtualGateway does not exist or is not visible. */
  VirtualGatewayNotFound: "VIRTUAL_GATEWAY_NOT_FOUND",
  /** A VirtualGateway selects no gateway workload in any cluster. */
  GatewayNotFound: "GATEWAY_NOT_FOUND",
  /** A VirtualGateway listener port is not a port of the selected gateway Service. */
  ListenerPortNotFound: "LISTENER_PORT_NOT_FOUND",
  /** A route table is not allowed on a VirtualGateway listener (allowedRouteTables). */
  RouteTableNotAllowed: "ROUTE_TABLE_NOT_ALLOWED",
  /** Delegation loops back to a route table already on the delegation path. */
  DelegationCycle: "DELEGATION_CYCLE",
  /** Two routes of one table share a name; the later one was renamed `duplicate-<name>-<n>`. */
  DuplicateRouteName: "DUPLICATE_ROUTE_NAME",
  /** Two policies of one kind select the same route; the oldest wins. */
  PolicyConflict: "POLICY_CONFLICT",
  /** Two fragments produce the same object with different content. */
  OutputConflict: "OUTPUT_CONFLICT",
  /** A route table has no cluster to render to (its namespace is in no discovered cluster of the workspace). */
  NoTargetCluster: "NO_TARGET_CLUSTER",
  /** A rendered object failed Istio's schema (a gitmesh bug or an input value Istio rejects). */
  InvalidOutput: "INVALID_OUTPUT",
  /** A field value is invalid for translation (e.g. a bad regex, a missing required field). */
  InvalidField: "INVALID_FIELD",
  /** A referenced configuration object (RateLimitServerConfig, RateLimitServerSettings, RateLimitClientConfig, ExtAuthServer) does not exist. */
  ReferenceNotFound: "REFERENCE_NOT_FOUND",
  /** A Gloo feature only Solo's own data plane implements (AWS Lambda destinations); upstream Istio cannot. */
  NeedsGlooDataPlane: "NEEDS_GLOO_DATA_PLANE",
  /** A rendered filter reads a secret from a file the proxy must have mounted (the value is never rendered). */
  SecretMountRequired: "SECRET_MOUNT_REQUIRED",
} as const;
export type TranslateCode = (typeof TranslateCode)[keyof typeof TranslateCode];
