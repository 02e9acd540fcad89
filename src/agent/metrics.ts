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
 * - gitmesh_agent_prune_refused_total{reason}         counter prunes refused (mass_deletion | incomplete)
 * - gitmesh_agent_drift_repairs_total{kind}           counter owned objects changed by someone else and repaired
 * - gitmesh_agent_output_results_total{result}        counter output versions ACKed / NACKed (ack | nack)
 * - gitmesh_agent_output_version                      gauge last output version handled
 * - gitmesh_agent_cacerts_written_total               counter Istio cacerts secrets written
 */
import { Counter, Gauge, type Registry } from "prom-client";

export interface AgentMetrics {
  readonly leader: Gauge;
  readonly relayConnected: Gauge;
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
}

export function createAgentMetrics(registry: Registry): AgentMetrics {
  const registers = [registry];
  return {
    leader: new Gauge({ name: "gitmesh_agent_leader", help: "1 while this replica holds the leader Lease", registers }),
    relayConnected: new Gauge({ name: "gitmesh_agent_relay_connected", help: "1 while a relay session is up", registers }),
    snapshotEntries: new Gauge({ name: "gitmesh_agent_discovery_snapshot_entries", help: "Entries in the last discovery snapshot", registers }),
    snapshotBytes: new Gauge({ name: "gitmesh_agent_discovery_snapshot_bytes", help: "JSON bytes of the last discovery snapshot", registers }),
    discoveryPushes: new Counter({ name: "gitmesh_agent_discovery_pushes_total", help: "Discovery states handed to the relay", registers }),
    informerRestarts: new Counter({ name: "gitmesh_agent_informer_restarts_total", help: "Informer restarts after errors", labelNames: ["kind"], registers }),
    applies: new Counter({ name: "gitmesh_agent_applies_total", help: "Server-side applies of output objects", labelNames: ["result"], registers }),
    prunes: new Counter({ name: "gitmesh_agent_prunes_total", help: "Deletions of owned objects no longer in the output", labelNames: ["result"], registers }),
    pruneRefused: new Counter({ name: "gitmesh_agent_prune_refused_total", help: "Prunes refused by a safety guard", labelNames: ["reason"], registers }),
    driftRepairs: new Counter({ name: "gitmesh_agent_drift_repairs_total", help: "Owned objects changed or deleted by someone else and repaired", labelNames: ["kind"], registers }),
    outputResults: new Counter({ name: "gitmesh_agent_output_results_total", help: "Output versions acknowledged (ack) or rejected (nack)", labelNames: ["result"], registers }),
    outputVersion: new Gauge({ name: "gitmesh_agent_output_version", help: "Last output version handled", registers }),
    cacertsWritten: new Counter({ name: "gitmesh_agent_cacerts_written_total", help: "Istio cacerts secrets written", registers }),
  };
}
