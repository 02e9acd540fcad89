/**
 * The server's own metrics, in the registry shared with the relay and the pipeline (one registry per
 * process, created by the composition root; no global registry).
 *
 * - gitmesh_server_commits_total{result}              counter: accepted | rejected | unchanged source commits
 * - gitmesh_server_commit_rejected                    gauge: 1 while the newest commit of the branch is rejected
 * - gitmesh_server_webhook_requests_total{provider,status} counter: webhook answers by HTTP status
 * - gitmesh_server_clusters_registered                gauge: KubernetesClusters in the desired state
 * - gitmesh_server_clusters_connected                 gauge: clusters with an agent on this replica
 * - gitmesh_server_clusters_warmed                    gauge: registered clusters whose discovery is known
 * - gitmesh_server_warming                     gauge: 1 while output is held back (warming)
 * - gitmesh_server_outputs_delivered_total{complete}  counter: output snapshots handed to this replica's relay
 * - gitmesh_server_output_acks_total{result}          counter: ack | nack from agents on this replica
 * - gitmesh_server_convergence_seconds                histogram: commit accepted → cluster ACKed it
 * - gitmesh_server_desired_generation                 gauge: generation of the desired state in force
 * - gitmesh_server_cluster_sync{cluster,state}      gauge: 1 for the state cluster-sync.ts gives the cluster
 *                                                   (in-sync | not-applied | refused | held | cut-off), 0 for the others
 *
 * Label values known in advance are set to 0 at start, so a dashboard or alert sees a 0, not "no data".
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { SYNC_STATES, type SyncState } from "./cluster-sync.js";

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
  const metrics: ServerMetrics = {
    commits: new Counter({ name: "gitmesh_server_commits_total", help: "Source commits seen, by result (accepted, rejected, unchanged)", labelNames: ["result"], registers }),
    rejectedCommit: new Gauge({ name: "gitmesh_server_commit_rejected", help: "1 while the newest commit of the branch is rejected (the last good one stays in force)", registers }),
    webhooks: new Counter({ name: "gitmesh_server_webhook_requests_total", help: "Webhook requests by provider and HTTP status", labelNames: ["provider", "status"], registers }),
    clustersRegistered: new Gauge({ name: "gitmesh_server_clusters_registered", help: "KubernetesClusters in the desired state", registers }),
    clustersConnected: new Gauge({ name: "gitmesh_server_clusters_connected", help: "Clusters whose agent holds both relay streams on this replica", registers }),
    clustersWarmed: new Gauge({ name: "gitmesh_server_clusters_warmed", help: "Registered clusters whose discovery snapshot is known", registers }),
    warming: new Gauge({ name: "gitmesh_server_warming", help: "1 while output is held back until clusters resend discovery", registers }),
    outputsPublished: new Counter({ name: "gitmesh_server_outputs_delivered_total", help: "Output snapshots handed to this replica's relay, by completeness", labelNames: ["complete"], registers }),
    acks: new Counter({ name: "gitmesh_server_output_acks_total", help: "Output ACKs and NACKs from agents on this replica", labelNames: ["result"], registers }),
    convergence: new Histogram({
      name: "gitmesh_server_convergence_seconds",
      help: "Time from a source commit being accepted to a cluster ACKing the output rendered from it",
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120],
      registers,
    }),
    generation: new Gauge({ name: "gitmesh_server_desired_generation", help: "Generation of the desired state in force", registers }),
  };
  for (const result of ["accepted", "rejected", "unchanged"]) metrics.commits.inc({ result }, 0);
  for (const result of ["ack", "nack"]) metrics.acks.inc({ result }, 0);
  metrics.rejectedCommit.set(0);
  return metrics;
}

/** One cluster and the state cluster-sync.ts gives it (what /api/status shows as `sync.state`). */
export interface ClusterSyncSample {
  readonly cluster: string;
  readonly state: SyncState;
}

/** The clusters of a /api/status answer as samples (entries without a name or a known state are skipped). */
export function clusterSyncSamples(status: unknown): ClusterSyncSample[] {
  const clusters = (status as { clusters?: unknown } | null)?.clusters;
  if (!Array.isArray(clusters)) return [];
  const out: ClusterSyncSample[] = [];
  for (const c of clusters as unknown[]) {
    const v = c as { name?: unknown; sync?: { state?: unknown } } | null;
    const state = SYNC_STATES.find((s) => s === v?.sync?.state);
    if (typeof v?.name === "string" && state !== undefined) out.push({ cluster: v.name, state });
  }
  return out;
}

/**
 * gitmesh_server_cluster_sync{cluster,state}: read from `read` at every scrape (the server's own
 * status, so the metric and /api/status cannot disagree). A failed read keeps the last values.
 */
export function registerClusterSyncMetric(registry: Registry, read: () => Promise<readonly ClusterSyncSample[]>): Gauge<"cluster" | "state"> {
  return new Gauge({
    name: "gitmesh_server_cluster_sync",
    help: "1 for the state each registered cluster is in with the commit in force (in-sync, not-applied, refused, held, cut-off), 0 for the others",
    labelNames: ["cluster", "state"],
    registers: [registry],
    async collect() {
      let samples: readonly ClusterSyncSample[];
      try {
        samples = await read();
      } catch {
        return;
      }
      this.reset();
      for (const s of samples) for (const state of SYNC_STATES) this.set({ cluster: s.cluster, state }, s.state === state ? 1 : 0);
    },
  });
}
