/**
 * Fleet insights: a pure analysis of the desired state, discovery, translation results, certificate
 * expiry and (optionally) observed traffic → findings with stable codes, each documented in
 * docs/insights.md (why it matters, how to fix it). Served by `gitmesh insights`, GET /api/insights
 * and the UI's Insights page.
 */
export { analyze, sortInsights } from "./analyze.js";
export { INSIGHT_CODES, InsightCode, type InsightCodeInfo } from "./codes.js";
export { ISTIO_RELEASES, ISTIO_RELEASES_SOURCE, istioMinor, istioRelease, type IstioRelease } from "./istio-releases.js";
export type { AnalyzeOptions, CertificateExpiry, Insight, InsightInput, InsightObject, TrafficEdge } from "./types.js";
