/**
 * The server's own metrics, in the registry shared with the relay and the pipeline (one registry per
 * process, created by the composition root; no global registry).
 *
 * - gitmesh_commits_total{result}              counter: accepted | rejected | unchanged source commits
 * - gitmesh_rejected_commit                    gauge: 1 while the newest commit of the branch is rejected
 * - gitmesh_webhook_requests_total{provider,status} counter: webhook answers by HTTP status
 * - gitmesh_clusters_registered                gauge: KubernetesClusters in the desired state
 * - gitmesh_clusters_connected                 gauge: clusters with an agent on this replica
 * - gitmesh_clusters_warmed                    gauge: registered clusters whose discovery is known
 * - gitmesh_server_warming                     gauge: 1 while output is held back (warming)
 * - gitmesh_outputs_delivered_total{complete}  counter: output snapshots handed to this replica's relay
 * - gitmesh_output_acks_total{result}          counter: ack | nack from agents on this replica
 * - gitmesh_convergence_seconds                histogram: commit accepted → cluster ACKed it
 * - gitmesh_desired_generation                 gauge: generation of the desired state in force
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

export interface ServerMetrics {
  readonly commits: Counter<"result">;
  readonly rejectedCommit: Gauge;
  readonly webhooks: Counter<"provider" | "status">;
  readonly clustersRegistered: Gauge;
  readonly clustersConnected: Gauge;
  readonly clustersWarmed: Gauge;
  readonly warming: Gauge;
  readonly outputsPublished: Counter<"complete">;
  readonly acks: Counter<"result">;
  readonly convergence: Histogram;
  readonly generation: Gauge;
}

export function createServerMetrics(registry: Registry): ServerMetrics {
  const registers = [registry];
  return {
    commits: new Counter({ name: "gitmesh_commits_total", help: "Source commits seen, by result (accepted, rejected, unchanged)", labelNames: ["result"], registers }),
    rejectedCommit: new Gauge({ name: "gitmesh_rejected_commit", help: "1 while the newest commit of the branch is rejected (the last good one stays in force)", registers }),
    webhooks: new Counter({ name: "gitmesh_webhook_requests_total", help: "Webhook requests by provider and HTTP status", labelNames: ["provider", "status"], registers }),
    clustersRegistered: new Gauge({ name: "gitmesh_clusters_registered", help: "KubernetesClusters in the desired state", registers }),
    clustersConnected: new Gauge({ name: "gitmesh_clusters_connected", help: "Clusters whose agent holds both relay streams on this replica", registers }),
    clustersWarmed: new Gauge({ name: "gitmesh_clusters_warmed", help: "Registered clusters whose discovery snapshot is known", registers }),
    warming: new Gauge({ name: "gitmesh_server_warming", help: "1 while output is held back until clusters resend discovery", registers }),
    outputsPublished: new Counter({ name: "gitmesh_outputs_delivered_total", help: "Output snapshots handed to this replica's relay, by completeness", labelNames: ["complete"], registers }),
    acks: new Counter({ name: "gitmesh_output_acks_total", help: "Output ACKs and NACKs from agents on this replica", labelNames: ["result"], registers }),
    convergence: new Histogram({
      name: "gitmesh_convergence_seconds",
      help: "Time from a source commit being accepted to a cluster ACKing the output rendered from it",
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120],
      registers,
    }),
    generation: new Gauge({ name: "gitmesh_desired_generation", help: "Generation of the desired state in force", registers }),
  };
}
