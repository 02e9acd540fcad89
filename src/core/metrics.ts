/**
 * What every gitmesh process shares about its Prometheus metrics: the naming rule and
 * `gitmesh_build_info`. The registry is always the one the composition root created (no global one).
 *
 * The naming rule (docs/observability.md): `gitmesh_<component>_<what>[_<unit>]`, where component is
 * one of METRIC_COMPONENTS, units are base units (`_seconds`, `_bytes`, `_timestamp_seconds`), counters
 * end in `_total`. The one exception is `gitmesh_build_info`, named as every `<program>_build_info`
 * is (Prometheus, Go's client, node_exporter), so the usual `* on(instance) group_left(version)` joins work.
 */
import { Gauge, type Registry } from "prom-client";

/** The components a metric name may start with (after `gitmesh_`). */
export const METRIC_COMPONENTS = ["server", "relay", "pipeline", "agent"] as const;
export type MetricComponent = (typeof METRIC_COMPONENTS)[number];

/** The name of the build info metric (the one name outside the `gitmesh_<component>_` rule). */
export const BUILD_INFO_METRIC = "gitmesh_build_info";

const NAME = new RegExp(`^gitmesh_(?:${METRIC_COMPONENTS.join("|")})_[a-z][a-z0-9]*(?:_[a-z0-9]+)*$`);

/**
 * Why a metric name breaks the rule, or undefined when it follows it. `type` is the Prometheus type
 * (`counter` names end in `_total`; nothing else does).
 */
export function metricNameProblem(name: string, type: string): string | undefined {
  if (name === BUILD_INFO_METRIC) return type === "gauge" ? undefined : `${name} must be a gauge`;
  if (!NAME.test(name)) return `${name} does not read gitmesh_<${METRIC_COMPONENTS.join("|")}>_<what>[_<unit>] in lower snake case`;
  const total = name.endsWith("_total");
  if (type === "counter" && !total) return `${name} is a counter: its name must end in _total`;
  if (type !== "counter" && total) return `${name} is a ${type}: only counters end in _total`;
  if (/_(?:ms|milliseconds|minutes|hours|kb|mb|kilobytes|megabytes)$/.test(name.replace(/_total$/, ""))) return `${name} must use base units (_seconds, _bytes)`;
  return undefined;
}

export interface BuildInfo {
  /** The package version (package.json). */
  readonly version: string;
  /** The Git commit the image was built from (GITMESH_COMMIT at build time), or "unknown". */
  readonly commit: string;
  /** The Node.js version running the process (process.version). */
  readonly node: string;
}

/**
 * Registers `gitmesh_build_info{version,commit,node} 1` in `registry` (once per registry; a second
 * call with the same registry keeps the first). Dashboards join on it to show what runs where.
 */
export function registerBuildInfo(registry: Registry, info: BuildInfo): void {
  if (registry.getSingleMetric(BUILD_INFO_METRIC) !== undefined) return;
  const g = new Gauge({ name: BUILD_INFO_METRIC, help: "Always 1: the version, commit and Node.js version of this gitmesh process", labelNames: ["version", "commit", "node"], registers: [registry] });
  g.set({ version: info.version, commit: info.commit || "unknown", node: info.node }, 1);
}
