/** Pipeline metrics in a registry passed in by the composition root. */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

export const PIPELINE_METRICS = {
  translationSeconds: "gitmesh_pipeline_translation_seconds",
  queueDepth: "gitmesh_pipeline_queue_depth",
  jobs: "gitmesh_pipeline_jobs_total",
  failures: "gitmesh_pipeline_failures_total",
  outputs: "gitmesh_pipeline_outputs_published_total",
  mode: "gitmesh_pipeline_mode",
} as const;

export function createPipelineMetrics(registry: Registry | undefined, depth: () => Promise<Record<string, number>>) {
  const registers = registry === undefined ? [] : [registry];
  return {
    translation: new Histogram({
      name: PIPELINE_METRICS.translationSeconds,
      help: "Time of one translation stage (workspace: translateWorkspace, cluster: assembleCluster)",
      labelNames: ["stage"],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    depth: new Gauge({
      name: PIPELINE_METRICS.queueDepth,
      help: "Jobs waiting, delayed or running, per type",
      labelNames: ["type"],
      registers,
      async collect() {
        try {
          for (const [type, n] of Object.entries(await depth())) this.set({ type }, n);
        } catch {
          // Redis unreachable: keep the last value
        }
      },
    }),
    jobs: new Counter({ name: PIPELINE_METRICS.jobs, help: "Job runs by type and result (completed, retrying, delayed, failed)", labelNames: ["type", "result"], registers }),
    failures: new Counter({ name: PIPELINE_METRICS.failures, help: "Jobs that gave up, by type and reaction", labelNames: ["type", "reaction"], registers }),
    outputs: new Counter({ name: PIPELINE_METRICS.outputs, help: "Output snapshots published (new versions)", registers }),
    mode: new Gauge({ name: PIPELINE_METRICS.mode, help: "1 for the pipeline's current mode (redis, degraded, standalone)", labelNames: ["mode"], registers }),
  };
}
export type PipelineMetrics = ReturnType<typeof createPipelineMetrics>;
