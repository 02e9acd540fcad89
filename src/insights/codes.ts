/**
 * The stable codes of the fleet analysis. docs/insights.md documents each (why it matters, how to fix
 * it); test/insights/docs.test.ts keeps the two lists equal and checks that every code has a test
 * that triggers it and one that does not.
 */
import { Severity } from "../core/index.js";

export const InsightCode = {
  MtlsPermissive: "MTLS_PERMISSIVE",
  PolicySelectsNothing: "POLICY_SELECTS_NOTHING",
  MulticlusterNoOutlierDetection: "MULTICLUSTER_NO_OUTLIER_DETECTION",
  RouteWithoutTimeout: "ROUTE_WITHOUT_TIMEOUT",
  IstioVersionSkew: "ISTIO_VERSION_SKEW",
  IstioEndOfLife: "ISTIO_END_OF_LIFE",
  ExportNotImported: "EXPORT_NOT_IMPORTED",
  CertificateExpiring: "CERTIFICATE_EXPIRING",
  SidecarMissing: "SIDECAR_MISSING",
  TrafficWithoutRoute: "TRAFFIC_WITHOUT_ROUTE",
} as const;
export type InsightCode = (typeof InsightCode)[keyof typeof InsightCode];

export interface InsightCodeInfo {
  /** The usual severity (CERTIFICATE_EXPIRING is an error once the certificate has expired). */
  readonly severity: Severity;
  /** One line: what the code means. */
  readonly title: string;
}

export const INSIGHT_CODES: Readonly<Record<InsightCode, InsightCodeInfo>> = {
  MTLS_PERMISSIVE: { severity: Severity.Warning, title: "an AccessPolicy relaxes mTLS to PERMISSIVE or DISABLE in a workspace that isolates its services (STRICT)" },
  POLICY_SELECTS_NOTHING: { severity: Severity.Warning, title: "a policy selects no route, destination or workload: it has no effect" },
  MULTICLUSTER_NO_OUTLIER_DETECTION: { severity: Severity.Warning, title: "a VirtualDestination backed in several clusters has no OutlierDetectionPolicy: unhealthy endpoints are never ejected, so traffic does not fail over" },
  ROUTE_WITHOUT_TIMEOUT: { severity: Severity.Info, title: "a forwarding route has no request timeout (Istio's default is none)" },
  ISTIO_VERSION_SKEW: { severity: Severity.Warning, title: "clusters run different Istio minor versions" },
  ISTIO_END_OF_LIFE: { severity: Severity.Error, title: "a cluster runs an Istio minor version past its end of life" },
  EXPORT_NOT_IMPORTED: { severity: Severity.Info, title: "a workspace exports to workspaces that none import from it" },
  CERTIFICATE_EXPIRING: { severity: Severity.Warning, title: "a certificate expires soon (error: it has expired)" },
  SIDECAR_MISSING: { severity: Severity.Warning, title: "a workload opts out of the sidecar in a namespace that injects one" },
  TRAFFIC_WITHOUT_ROUTE: { severity: Severity.Info, title: "observed traffic reaches a Service that no RouteTable or VirtualDestination routes to" },
};
