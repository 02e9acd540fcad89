/**
 * src/traffic — the mesh's live traffic from Istio's standard metrics in a Prometheus the operator
 * names: a small Prometheus HTTP API client, the traffic edges (per source and destination workload,
 * namespace and cluster), the graph the UI shows, and the traffic-aware review of a rendered diff.
 */
export {
  createPrometheusClient,
  DEFAULT_PROMETHEUS_TIMEOUT_MS,
  prometheusUrlProblem,
  PrometheusRefusedError,
  PrometheusUnavailableError,
  type PromSample,
  type PrometheusClient,
  type PrometheusClientOptions,
} from "./prometheus-client.js";
export { trafficEdges, trafficQueries, workloadKey, type DestinationRef, type TrafficEdge, type TrafficQueryOptions, type WorkloadRef } from "./edges.js";
export {
  routeDestinations,
  routeHosts,
  routesByHost,
  trafficGraph,
  type GlooRouteRef,
  type RenderedObject,
  type TrafficFilter,
  type TrafficGraph,
  type TrafficGraphEdge,
  type TrafficNode,
  type WorkspaceOwner,
} from "./graph.js";
export { reviewTraffic, type TrafficReviewInput } from "./review.js";
