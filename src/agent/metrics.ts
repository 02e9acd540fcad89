/**
 * The agent's Prometheus metrics, registered in a registry passed in by the composition root (no
 * global registry):
 * - gitmesh_agent_leader                              gauge 1 while this replica holds the Lease
 * - gitmesh_agent_relay_connected                     gauge 1 while a relay session is up
 * - gitmesh_agent_discovery_snapshot_entries          gauge entries in the last discovery snapshot
 * - gitmesh_agent_discovery_snapshot_bytes            gauge JSON bytes of the last discovery snapshot
 * - gitmesh_agent_discovery_pushes_total              counter snapshots/deltas handed to the relay
 * - gitmesh_agent_informer_restarts_total{kind}       counter informer restarts after errors
 * - gitmesh_agent_applies_total{result}               counter server-side applies, result = ok | error
 * - gitmesh_agent_prunes_total{result}                counter deletions of owned objects, result = ok | error
 * - gitmesh_agent_prune_refused_total{reason}         counter prunes refused (mass_deletion | incomplete | control_plane)
 * - gitmesh_agent_drift_repairs_total{kind}           counter owned objects changed by someone else and repaired
 * - gitmesh_agent_drift_unrepaired_total{kind}        counter such changes found and left as they are because the server holds the cluster
 *                                                     (counted at each check: the change itself, every relist while it stays)
 * - gitmesh_agent_server_suspended                    gauge 1 while the management server holds this cluster (suspended through its API
 *                                                     or gitmesh.yaml): nothing applied, pruned or repaired
 * - gitmesh_agent_output_results_total{result}        counter output versions ACKed / NACKed (ack | nack)
 * - gitmesh_agent_output_version                      gauge last output version handled
 * - gitmesh_agent_cacerts_written_total               counter Istio cacerts secrets written
 * - gitmesh_agent_ownership_refused_total{kind}       counter output objects not applied: they exist and gitmesh does not own them
 * - gitmesh_agent_ownership_conflicts                 gauge   such objects in the last output handled
 * - gitmesh_agent_adoptions_total{kind}               counter objects handed over with gitmesh.io/adopt=true and taken over
 * - gitmesh_agent_inventory_objects                   gauge   objects in the inventory
 * - gitmesh_agent_inventory_bytes                     gauge   compressed bytes of the inventory ConfigMap's entries
 * - gitmesh_agent_prune_skipped_total{reason}         counter inventory members not deleted (recreated: someone else's object now)
 * - gitmesh_agent_inventory_entries_rejected_total{reason} counter inventory entries dropped before anything acted on them: the live object
 *                                                     has another uid (recreated) or gitmesh's field manager never applied it (not_applied_by_gitmesh)
 * - gitmesh_agent_drift_fights_total{kind}            counter fights detected (repairs of one object above the limit); repairs back off
 * - gitmesh_agent_certificate_expiry_timestamp_seconds{certificate}  gauge notAfter (Unix seconds) of the relay client
 *                                                     certificate (relay-client) and of the Istio intermediate CA written last (istio-intermediate)
 *
 * Label values known in advance are set to 0 at start (results, refusal reasons, and the kinds the agent
 * writes: initAgentKindLabels), so a dashboard or alert sees a 0, not "no data".
 */
import { Counter, Gauge, type Registry } from "prom-client";

export interface AgentMetrics {
  readonly leader: Gauge;
  readonly relayConnected: Gauge;
  /** 1 while the agent is suspended by its chart value (applies, prunes and repairs nothing). */
  readonly suspended: Gauge;
  /** Outputs answered "suspended" instead of applied. */
  readonly suspendedOutputs: Counter;
  /** 1 while the management server holds this cluster (API or gitmesh.yaml suspension): applies, prunes and repairs nothing. */
  readonly serverSuspended: Gauge;
  /** Drift on owned objects found and left alone because the server holds the cluster. */
  readonly driftUnrepaired: Counter<"kind">;
  readonly snapshotEntries: Gauge;
  readonly snapshotBytes: Gauge;
  readonly discoveryPushes: Counter;
  readonly informerRestarts: Counter<"kind">;
  readonly applies: Counter<"result">;
  readonly prunes: Counter<"result">;
  readonly pruneRefused: Counter<"reason">;
  readonly driftRepairs: Counter<"kind">;
  readonly outputResults: Counter<"result">;
  readonly outputVersion: Gauge;
  readonly cacertsWritten: Counter;
  readonly ownershipRefused: Counter<"kind">;
  readonly ownershipConflicts: Gauge;
  readonly adoptions: Counter<"kind">;
  readonly inventoryObjects: Gauge;
  readonly inventoryBytes: Gauge;
  readonly pruneSkipped: Counter<"reason">;
  readonly driftFights: Counter<"kind">;
  readonly certificateExpiry: Gauge<"certificate">;
  readonly inventoryRejected: Counter<"reason">;
}

/** Values of the `certificate` label of gitmesh_agent_certificate_expiry_timestamp_seconds. */
export const AGENT_CERTIFICATES = { relayClient: "relay-client", istioIntermediate: "istio-intermediate" } as const;

export interface AgentMetricsOptions {
  /**
   * notAfter (ms) of the stored relay client certificate (default: none, the gauge shows only the
   * intermediate). Read in the background — at start, then when a scrape finds the last read older than
   * `certificateReadIntervalMs` — never while a scrape waits: a stalled API server must not stall /metrics.
   */
  readonly clientCertificateNotAfterMs?: () => Promise<number | undefined>;
  /** How old the last read of the client certificate may be before a scrape starts another (default 60 s). */
  readonly certificateReadIntervalMs?: number;
}

export function createAgentMetrics(registry: Registry, options: AgentMetricsOptions = {}): AgentMetrics {
  const readClient = options.clientCertificateNotAfterMs;
  const readInterval = options.certificateReadIntervalMs ?? 60_000;
  let clientNotAfterMs: number | undefined;
  let readAt = Number.NEGATIVE_INFINITY;
  let reading = false;
  const refreshClient = () => {
    // Until a certificate is stored (the agent registers after it starts), every scrape asks again.
    if (readClient === undefined || reading || (clientNotAfterMs !== undefined && Date.now() - readAt < readInterval)) return;
    reading = true;
    readAt = Date.now();
    readClient()
      .then((v) => {
        if (v !== undefined) clientNotAfterMs = v;
      })
      .catch(() => undefined)
      .finally(() => {
        reading = false;
      });
  };
  refreshClient();
  const registers = [registry];
  const metrics: AgentMetrics = {
    leader: new Gauge({ name: "gitmesh_agent_leader", help: "1 while this replica holds the leader Lease", registers }),
    relayConnected: new Gauge({ name: "gitmesh_agent_relay_connected", help: "1 while a relay session is up", registers }),
    snapshotEntries: new Gauge({ name: "gitmesh_agent_discovery_snapshot_entries", help: "Entries in the last discovery snapshot", registers }),
    snapshotBytes: new Gauge({ name: "gitmesh_agent_discovery_snapshot_bytes", help: "JSON bytes of the last discovery snapshot", registers }),
    suspended: new Gauge({ name: "gitmesh_agent_suspended", help: "1 while the agent is suspended by its chart value suspend: nothing applied, pruned or repaired", registers }),
    suspendedOutputs: new Counter({ name: "gitmesh_agent_suspended_outputs_total", help: "Output versions not applied because the agent is suspended (chart suspend)", registers }),
    serverSuspended: new Gauge({ name: "gitmesh_agent_server_suspended", help: "1 while the management server holds this cluster (suspended through its API or gitmesh.yaml): nothing applied, pruned or repaired", registers }),
    driftUnrepaired: new Counter({ name: "gitmesh_agent_drift_unrepaired_total", help: "Owned objects found changed or deleted by someone else and left as they are because the server holds the cluster (counted at each check)", labelNames: ["kind"], registers }),
    discoveryPushes: new Counter({ name: "gitmesh_agent_discovery_pushes_total", help: "Discovery states handed to the relay", registers }),
    informerRestarts: new Counter({ name: "gitmesh_agent_informer_restarts_total", help: "Informer restarts after errors", labelNames: ["kind"], registers }),
    applies: new Counter({ name: "gitmesh_agent_applies_total", help: "Server-side applies of output objects", labelNames: ["result"], registers }),
    prunes: new Counter({ name: "gitmesh_agent_prunes_total", help: "Deletions of owned objects no longer in the output", labelNames: ["result"], registers }),
    pruneRefused: new Counter({ name: "gitmesh_agent_prune_refused_total", help: "Prunes refused by a safety guard", labelNames: ["reason"], registers }),
    driftRepairs: new Counter({ name: "gitmesh_agent_drift_repairs_total", help: "Owned objects changed or deleted by someone else and repaired", labelNames: ["kind"], registers }),
    outputResults: new Counter({ name: "gitmesh_agent_output_results_total", help: "Output versions acknowledged (ack) or rejected (nack)", labelNames: ["result"], registers }),
    outputVersion: new Gauge({ name: "gitmesh_agent_output_version", help: "Last output version handled", registers }),
    cacertsWritten: new Counter({ name: "gitmesh_agent_cacerts_written_total", help: "Istio cacerts secrets written", registers }),
    ownershipRefused: new Counter({ name: "gitmesh_agent_ownership_refused_total", help: "Output objects not applied because they exist and gitmesh does not own them", labelNames: ["kind"], registers }),
    ownershipConflicts: new Gauge({ name: "gitmesh_agent_ownership_conflicts", help: "Objects of the last output not applied because gitmesh does not own them", registers }),
    adoptions: new Counter({ name: "gitmesh_agent_adoptions_total", help: "Objects handed over with gitmesh.io/adopt=true and taken over", labelNames: ["kind"], registers }),
    inventoryObjects: new Gauge({ name: "gitmesh_agent_inventory_objects", help: "Objects in the agent's inventory", registers }),
    inventoryBytes: new Gauge({ name: "gitmesh_agent_inventory_bytes", help: "Compressed bytes of the inventory entries", registers }),
    pruneSkipped: new Counter({ name: "gitmesh_agent_prune_skipped_total", help: "Inventory members not deleted", labelNames: ["reason"], registers }),
    driftFights: new Counter({ name: "gitmesh_agent_drift_fights_total", help: "Fights with another field manager detected (repairs back off)", labelNames: ["kind"], registers }),
    certificateExpiry: new Gauge({
      name: "gitmesh_agent_certificate_expiry_timestamp_seconds", help: "notAfter of the agent's certificates as Unix seconds: relay-client (relay mTLS identity), istio-intermediate (the cacerts written last)", labelNames: ["certificate"], registers,
      collect() {
        refreshClient();
        if (clientNotAfterMs !== undefined) this.set({ certificate: AGENT_CERTIFICATES.relayClient }, Math.floor(clientNotAfterMs / 1000));
      },
    }),
    inventoryRejected: new Counter({ name: "gitmesh_agent_inventory_entries_rejected_total", help: "Inventory entries dropped because the live object does not prove them (another uid, or never applied by gitmesh)", labelNames: ["reason"], registers }),
  };
  for (const result of ["ok", "error"]) {
    metrics.applies.inc({ result }, 0);
    metrics.prunes.inc({ result }, 0);
  }
  for (const result of ["ack", "nack"]) metrics.outputResults.inc({ result }, 0);
  for (const reason of ["mass_deletion", "incomplete", "control_plane"]) metrics.pruneRefused.inc({ reason }, 0);
  return metrics;
}

/** Sets the per-kind counters to 0 for every kind the agent writes (drift repairs and fights). */
export function initAgentKindLabels(metrics: AgentMetrics, kinds: readonly { readonly kind: string }[]): void {
  for (const { kind } of kinds) {
    metrics.driftRepairs.inc({ kind }, 0);
    metrics.driftUnrepaired.inc({ kind }, 0);
    metrics.driftFights.inc({ kind }, 0);
  }
}
