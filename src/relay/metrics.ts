/**
 * Relay metrics in a registry passed in by the composition root (names documented in constants.ts).
 * Label values known in advance (refusal reasons, results, kinds, directions) start at 0, so a
 * dashboard or alert sees a 0, not "no data".
 */
import { Counter, Gauge, type Registry } from "prom-client";
import { REJECTION_REASONS, RELAY_METRICS } from "./constants.js";

export function createRelayMetrics(registry: Registry) {
  const registers = [registry];
  const metrics = {
    pushConnected: new Gauge({ name: RELAY_METRICS.pushClientsConnected, help: "Open discovery push streams per cluster", labelNames: ["cluster"], registers }),
    pullConnected: new Gauge({ name: RELAY_METRICS.pullClientsConnected, help: "Open output pull streams per cluster", labelNames: ["cluster"], registers }),
    warmed: new Gauge({ name: RELAY_METRICS.pushClientsWarmed, help: "1 once the cluster's current push stream delivered a full discovery snapshot", labelNames: ["cluster"], registers }),
    rejections: new Counter({ name: RELAY_METRICS.rejections, help: "Rejected registrations, streams and messages by reason", labelNames: ["reason"], registers }),
    certificatesIssued: new Counter({ name: RELAY_METRICS.certificatesIssued, help: "Certificates issued: client certificates (register, renew) and Istio intermediate CAs (intermediate)", labelNames: ["kind"], registers }),
    discoveryUpdates: new Counter({ name: RELAY_METRICS.discoveryUpdates, help: "Accepted discovery updates (full or delta)", labelNames: ["kind"], registers }),
    resyncs: new Counter({ name: RELAY_METRICS.resyncs, help: "Full resyncs (push: server asked the agent; pull: agent asked the server)", labelNames: ["direction"], registers }),
    outputAcks: new Counter({ name: RELAY_METRICS.outputAcks, help: "Output versions acknowledged by agents (ack or nack)", labelNames: ["result"], registers }),
    outputBuffered: new Gauge({ name: RELAY_METRICS.outputBufferedBytes, help: "Compressed output bytes handed to gRPC but not yet flushed, per cluster (bounded by sendBufferBytes + one chunk)", labelNames: ["cluster"], registers }),
    outputCoalesced: new Counter({ name: RELAY_METRICS.outputCoalesced, help: "Output versions replaced by a newer one before they were sent (slow agent)", registers }),
    streamBytes: new Counter({ name: RELAY_METRICS.streamBytes, help: "Compressed chunk payload bytes on the relay streams", labelNames: ["direction"], registers }),
  };
  for (const reason of Object.values(REJECTION_REASONS)) metrics.rejections.inc({ reason }, 0);
  for (const kind of ["register", "renew", "intermediate"]) metrics.certificatesIssued.inc({ kind }, 0);
  for (const kind of ["full", "delta"]) metrics.discoveryUpdates.inc({ kind }, 0);
  for (const direction of ["push", "pull"]) metrics.resyncs.inc({ direction }, 0);
  for (const result of ["ack", "nack"]) metrics.outputAcks.inc({ result }, 0);
  for (const direction of ["received", "sent"]) metrics.streamBytes.inc({ direction }, 0);
  return metrics;
}
export type RelayMetrics = ReturnType<typeof createRelayMetrics>;
