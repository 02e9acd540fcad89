/**
 * The data of the fleet analysis: what it reads (InsightInput) and what it finds (Insight). Plain,
 * JSON-serialisable values; the analysis itself is pure (analyze.ts).
 */
import type { Severity } from "../core/index.js";
import type { DesiredState } from "../config/index.js";
import type { DiscoverySnapshot } from "../discovery/index.js";
import type { TranslationResult } from "../translate/index.js";
import type { InsightCode } from "./codes.js";

/** The object an insight is about: a Gloo object from Git, or a discovered Kubernetes object. */
export interface InsightObject {
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
  readonly cluster?: string;
}

/** One finding of the fleet analysis. */
export interface Insight {
  /** Stable code (docs/insights.md documents each: why it matters, how to fix it). */
  readonly code: InsightCode;
  readonly severity: Severity;
  readonly cluster?: string;
  readonly workspace?: string;
  readonly object?: InsightObject;
  /** Repository-relative file and 1-based line, when the finding comes from configuration in Git. */
  readonly file?: string;
  readonly line?: number;
  /** What was found, naming the objects. */
  readonly message: string;
  /** What to do about it. */
  readonly fix: string;
}

/**
 * One observed traffic edge between workloads (from the traffic graph, src/traffic, wired by the
 * composition root; this module does not import it).
 */
export interface TrafficEdge {
  readonly source: { readonly cluster: string; readonly namespace: string; readonly workload: string };
  readonly destination: { readonly cluster: string; readonly namespace: string; readonly workload: string; readonly service: string };
  /** Requests per second. */
  readonly rps: number;
  /** Share of failed requests, 0…1. */
  readonly errorRate: number;
}

/** A certificate whose expiry the caller knows (the relay client certificate of a cluster, …). */
export interface CertificateExpiry {
  readonly cluster: string;
  /** What the certificate is, for the message (e.g. `relay client certificate`). */
  readonly subject: string;
  /** Expiry, ISO 8601 (e.g. `2026-12-01T00:00:00Z`). */
  readonly notAfter: string;
}

export interface InsightInput {
  /** The desired state in force (absent: no configuration findings). */
  readonly desired?: DesiredState;
  /** Discovery snapshot per cluster. */
  readonly discovery: ReadonlyMap<string, DiscoverySnapshot>;
  /** The translation of `desired` against `discovery` (what selected nothing, …); absent: those findings are skipped. */
  readonly translation?: Pick<TranslationResult, "diagnostics">;
  readonly certificates?: readonly CertificateExpiry[];
  /** Observed traffic (absent: traffic findings are skipped). */
  readonly traffic?: readonly TrafficEdge[];
  /** The day of the analysis, ISO 8601 (`2026-11-29` or a timestamp): end of life and expiry are measured against it. */
  readonly today: string;
}

export interface AnalyzeOptions {
  /** A certificate that expires within this many days is reported (warning; error once expired). Default 7. */
  readonly certificateWarningDays?: number;
}
