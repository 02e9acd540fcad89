/**
 * A simulated cluster agent for the fleet simulator (`gitmesh simulate`): the real relay client
 * (src/relay createRelayClient: bootstrap registration with a CSR, one mTLS session, discovery push,
 * output pull with ACKs, reconnect with backoff) fed with a generated discovery snapshot, and no
 * Kubernetes behind it. It ACKs every output version as soon as it is assembled and verified (what a
 * real agent does after applying; the cost of applying is the agent benchmark's subject), and records
 * when it ACKed each source commit and how many payload bytes the relay sent it.
 *
 * Cheap enough for a thousand in one process: one RSA key is shared by all of them (`keyPem`, the CSR
 * is still signed per cluster and the certificate is still the cluster's own), no informers, no
 * Kubernetes client, a logger that keeps only the last problem.
 */
import { createLogger } from "../core/index.js";
import { createRelayClient, relayStateFromSnapshot, type OutputEvent, type RelayClient } from "../relay/index.js";
import type { DiscoverySnapshot } from "../discovery/index.js";

export interface SimulatedAgentOptions {
  readonly cluster: string;
  /** `host:port` of the relay. */
  readonly relayAddress: string;
  /** The relay's root CA (what relay-root-tls-secret's ca.crt holds). */
  readonly rootCaPem: string;
  /** Bootstrap credential: the fleet token, or this cluster's own credential. */
  readonly token: string;
  /** RSA key put in the CSR (shared by the simulated fleet: generating 1,000 keys would take minutes). */
  readonly keyPem: string;
  /** What the cluster "runs": sent as the full discovery snapshot of every session. */
  readonly discovery: DiscoverySnapshot;
  /** Monotonic clock of the ACK times (default performance.now). */
  readonly now?: () => number;
  /** Called once per source commit, when the agent ACKs the first complete output rendered from it. */
  readonly onApplied?: (cluster: string, commit: string, at: number) => void;
}

/** One source commit as this agent saw it. */
export interface SimulatedApply {
  /**
   * When the first complete output rendered from the commit was ACKed (`now()` clock). An incomplete
   * output (some input of the cluster still missing, e.g. while the fleet connects) is ACKed too but
   * does not count as applied.
   */
  readonly ackedAt: number;
  /** Payload bytes of every update that carried this commit to the agent. */
  readonly payloadBytes: number;
}

export interface SimulatedAgentTotals {
  readonly updates: number;
  readonly fullUpdates: number;
  readonly payloadBytes: number;
  /** Resources in the output now. */
  readonly resources: number;
  readonly sessions: number;
}

export interface SimulatedAgent {
  readonly cluster: string;
  /** Registers with the bootstrap credential (CSR → client certificate). */
  register(): Promise<void>;
  /** Opens the mTLS session (and keeps it open, reconnecting, until close). */
  connect(): void;
  /** Resolves when the session is up and the server acknowledged the full discovery snapshot. */
  synced(): Promise<void>;
  /** How the agent received `commit`, once it ACKed a complete output rendered from it. */
  applied(commit: string): SimulatedApply | undefined;
  totals(): SimulatedAgentTotals;
  /** The last warning or error the relay client logged (why a session ended, why registration failed). */
  lastProblem(): string | undefined;
  close(): Promise<void>;
}

export function createSimulatedAgent(options: SimulatedAgentOptions): SimulatedAgent {
  const now = options.now ?? (() => performance.now());
  const applies = new Map<string, { ackedAt?: number; payloadBytes: number }>();
  let updates = 0;
  let fullUpdates = 0;
  let payloadBytes = 0;
  let resources = 0;
  let problem: string | undefined;

  const onOutput = (e: OutputEvent) => {
    updates++;
    if (e.full) fullUpdates++;
    payloadBytes += e.payloadBytes;
    resources = e.state.size;
    const seen = applies.get(e.sourceCommit) ?? { payloadBytes: 0 };
    applies.set(e.sourceCommit, seen);
    seen.payloadBytes += e.payloadBytes;
    // The ACK is written right after this returns: its time is the commit's apply time here.
    if (seen.ackedAt === undefined && e.complete) {
      seen.ackedAt = now();
      options.onApplied?.(options.cluster, e.sourceCommit, seen.ackedAt);
    }
    return { ack: true } as const;
  };

  const client: RelayClient = createRelayClient({
    address: options.relayAddress,
    cluster: options.cluster,
    rootCaPem: options.rootCaPem,
    token: options.token,
    keyPem: options.keyPem,
    // Only the last warning or error is kept, as one line (why a session ended, why registration failed).
    logger: createLogger({ name: `agent-${options.cluster}`, level: "warn", format: "human", write: (line) => (problem = line) }),
    onOutput,
    // Renewal is not what is simulated (certificates outlive any run); reconnects as fast as the demo's agents.
    renewAtFraction: 0,
    backoff: { initialMs: 200, maxMs: 5000 },
  });
  void client.pushDiscovery(relayStateFromSnapshot(options.discovery));

  return {
    cluster: options.cluster,
    register: async () => {
      await client.register();
    },
    connect: () => client.connect(),
    synced: () => client.synced(),
    applied(commit) {
      const a = applies.get(commit);
      return a?.ackedAt === undefined ? undefined : { ackedAt: a.ackedAt, payloadBytes: a.payloadBytes };
    },
    totals: () => ({ updates, fullUpdates, payloadBytes, resources, sessions: client.status().sessions }),
    lastProblem: () => problem,
    close: () => client.close(),
  };
}
