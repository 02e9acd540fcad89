/**
 * The relay as this server runs it: its PKI and the opt-in fleet token (stored ones win, generated
 * once otherwise), the mesh CA that signs Istio intermediates, and the relay server whose callbacks
 * feed the rest of the server.
 *
 *   agent ──connect/disconnect · drift repairs──▶ agent sessions
 *         ──discovery (decoded; a bad snapshot is logged, never thrown)──▶ onDiscovery
 *         ──ACK/NACK──▶ convergence (+ metrics)
 *         ──SignIntermediate──▶ mesh CA (only for a cluster whose output holds the matching IssuedCertificate)
 *
 * RootTrustPolicy: the mesh CA signs each cluster's Istio intermediate with the root its
 * IssuedCertificate names — the one generated root of the management plane (created once in shared
 * storage on the first request, so servers without a RootTrustPolicy never pay for it), or the
 * policy's secretRef Secret. Only a cluster whose output holds the matching IssuedCertificate may ask
 * (mTLS identity, never the message).
 */
import type { Registry } from "prom-client";
import type { Logger } from "../core/index.js";
import type { DiscoverySnapshot } from "../discovery/index.js";
import { createMeshCa, createMeshRootResolver, findIssuedCertificate, type MeshRootStorage, type ReadCaSecret } from "../mesh-ca/index.js";
import { createRelayServer, loadOrCreateRelayPki, snapshotFromRelayState, type ClusterIdentities, type DiscoveryEvent, type OutputHold, type RelayPki, type RelayServer } from "../relay/index.js";
import type { AgentSessions } from "./agent-sessions.js";
import type { ServerConfig } from "./config.js";
import type { ConvergenceTracker } from "./convergence.js";
import type { ServerMetrics } from "./metrics.js";
import type { PipelineOutput } from "./pipeline-port.js";
import { generateToken, type RelaySecretStore } from "./pki-storage.js";

export interface RelayEndpointOptions {
  readonly config: Pick<ServerConfig, "relayAdditionalSans" | "generateCa" | "relayAuthority" | "bootstrap" | "relayToken" | "relayHost" | "relayPort"> & Partial<Pick<ServerConfig, "relayAdmission">>;
  /** Where the PKI, the fleet token and the identity records are kept. */
  readonly secrets: RelaySecretStore;
  readonly identities: ClusterIdentities;
  readonly registry: Registry;
  readonly sessions: AgentSessions;
  readonly convergence: Pick<ConvergenceTracker, "ack" | "nack">;
  readonly metrics: Pick<ServerMetrics, "acks" | "convergence">;
  /** Whether a KubernetesCluster of that name is in the commit in force (others are refused). */
  readonly isRegistered: (cluster: string) => boolean;
  /** The newest output of a cluster (its IssuedCertificates allow intermediate signing). */
  readonly latestOutput: (cluster: string) => PipelineOutput | undefined;
  /** What holds a cluster (a suspension): its agent is told on subscribe and applies, prunes and repairs nothing. */
  readonly holdOf?: (cluster: string) => OutputHold | undefined;
  /** A cluster's discovery snapshot, decoded. */
  readonly onDiscovery: (cluster: string, snapshot: DiscoverySnapshot) => Promise<void>;
  /** The mesh CA's generated root (shared by every replica). */
  readonly meshRoot: MeshRootStorage;
  /** Reads `mgmtServerCa.secretRef` Secrets (default: none supported). */
  readonly readCaSecret?: ReadCaSecret;
  /** Where secretRef Secrets are read from, for messages. */
  readonly describeCaSecrets?: string;
  /** The server's logger (the relay logs as `relay`, the mesh CA as `mesh-ca`). */
  readonly logger: Logger;
  /** Clock (default Date.now). */
  readonly now?: () => number;
}

export interface RelayEndpoint {
  /** Loads the PKI and the fleet token, generating them once when allowed: fails before anything listens. */
  prepare(): Promise<void>;
  /** Listens (after prepare). */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** The relay server once started. */
  readonly server: RelayServer | undefined;
  readonly port: number | undefined;
  /** The fleet bootstrap token (`bootstrap: fleet-token` only). */
  readonly token: string | undefined;
  readonly rootCaPem: string | undefined;
  /** Mints a single-use credential; `reissue` revokes the cluster's certificates first (and closes its streams here once started). */
  mintCredential(cluster: string, options?: { readonly reissue?: boolean; readonly ttlMs?: number }): Promise<{ credential: string; expiresAtMs: number }>;
  /** Closes the streams of clusters held here that are not registered in `commit` (cut off, not revoked). */
  cutOffRemoved(commit: string): void;
}

export function createRelayEndpoint(options: RelayEndpointOptions): RelayEndpoint {
  const { config, secrets, sessions, logger: log } = options;
  let pki: RelayPki | undefined;
  let token: string | undefined;
  let relay: RelayServer | undefined;

  const loadPki = async (): Promise<RelayPki> => {
    const stored = await secrets.load();
    if (stored) return stored;
    if (!config.generateCa) throw new Error(`no relay PKI found in ${secrets.describe} and CA generation is off (relay.tls.existingSecrets): create the secrets or allow generation`);
    await loadOrCreateRelayPki(secrets, { authority: config.relayAuthority, additionalSans: [...config.relayAdditionalSans] });
    const generated = await secrets.load();
    if (!generated) throw new Error(`the relay PKI could not be stored in ${secrets.describe}`);
    log.info("relay PKI generated", { storage: secrets.describe });
    return generated;
  };

  // One decoder for the relay state (src/relay): bad JSON or a snapshot naming another cluster than
  // the certificate's is reported, never thrown (which made the relay ask for resyncs forever).
  const onDiscovery = async (event: DiscoveryEvent): Promise<void> => {
    // A new leader opens its session while its informers still list: the session's first state is
    // empty, and its snapshot follows. Nothing to read yet and nothing wrong (it was a warning on
    // every reconnect of every agent, sending operators after a problem that was not there).
    if (event.state.size === 0) {
      sessions.seen(event.cluster);
      log.debug("agent connected before its first discovery snapshot; waiting for it", { cluster: event.cluster });
      return;
    }
    const read = snapshotFromRelayState(event.state, event.cluster);
    if (!read.ok) {
      log.warn("discovery snapshot could not be read; ignored", { cluster: event.cluster, error: read.message });
      return;
    }
    sessions.seen(event.cluster);
    await options.onDiscovery(event.cluster, read.snapshot);
  };

  const createRelay = (pkiInUse: RelayPki): RelayServer => {
    const meshCa = createMeshCa({
      resolveRoot: createMeshRootResolver({
        generated: options.meshRoot,
        ...(options.readCaSecret ? { readSecret: options.readCaSecret } : {}),
        ...(options.describeCaSecrets ? { describeSecrets: options.describeCaSecrets } : {}),
        logger: log.child("mesh-ca"),
      }),
      isIssuanceAllowed: (cluster, request) => findIssuedCertificate(options.latestOutput(cluster)?.resources ?? [], request),
      logger: log.child("mesh-ca"),
    });
    return createRelayServer({
      pki: pkiInUse,
      signIntermediate: meshCa.signIntermediate,
      ...(config.bootstrap === "fleet-token" ? { token: () => token ?? "" } : {}),
      identities: options.identities,
      isClusterRegistered: (c) => options.isRegistered(c),
      logger: log.child("relay"),
      registry: options.registry,
      host: config.relayHost,
      port: config.relayPort,
      ...(config.relayAdmission ? { admission: config.relayAdmission } : {}),
      onDiscovery,
      onAck: (e) => {
        options.metrics.acks.inc({ result: "ack" });
        const latency = options.convergence.ack(e);
        if (latency !== undefined) options.metrics.convergence.observe(latency / 1000);
        log.info("cluster applied output", { cluster: e.cluster, version: e.version, sourceCommit: e.sourceCommit, latencyMs: latency });
      },
      onNack: (e) => {
        options.metrics.acks.inc({ result: "nack" });
        options.convergence.nack(e);
        log.warn("cluster rejected output", { cluster: e.cluster, version: e.version, sourceCommit: e.sourceCommit, errors: e.errors.length, first: e.errors[0] ? `${e.errors[0].key}: ${e.errors[0].message}` : undefined });
      },
      onDriftRepairs: (e) => sessions.driftRepaired(e),
      ...(options.holdOf ? { holdOf: options.holdOf } : {}),
      onConnect: (c, s) => sessions.streamChanged(c, s, true),
      onDisconnect: (c, s) => sessions.streamChanged(c, s, false),
      ...(options.now ? { now: options.now } : {}),
    });
  };

  return {
    async prepare() {
      pki = await loadPki();
      // The fleet-wide token is an explicit opt-in; by default only per-cluster credentials register.
      if (config.bootstrap === "fleet-token") token = config.relayToken ?? (await secrets.loadToken()) ?? (await secrets.saveTokenIfAbsent(generateToken()));
    },
    async start() {
      if (!pki) throw new Error("the relay endpoint is not prepared");
      relay = createRelay(pki);
      await relay.start();
    },
    async stop() {
      await relay?.stop();
    },
    get server() {
      return relay;
    },
    get port() {
      return relay?.port;
    },
    get token() {
      return token;
    },
    get rootCaPem() {
      return pki?.rootCaCertPem;
    },
    async mintCredential(cluster, opts = {}) {
      if (opts.reissue && relay) return relay.reissue(cluster, opts.ttlMs === undefined ? {} : { ttlMs: opts.ttlMs });
      const m = await options.identities.mintCredential(cluster, { ...(opts.reissue ? { reissue: true } : {}), ...(opts.ttlMs === undefined ? {} : { ttlMs: opts.ttlMs }) });
      return { credential: m.credential, expiresAtMs: m.expiresAtMs };
    },
    cutOffRemoved(commit) {
      // A cluster removed from Git is cut off, not revoked: its reconnects are refused while it is absent,
      // and once it is restored its agent reconnects with the certificate it holds (README "Trust model").
      for (const c of sessions.held()) {
        if (!options.isRegistered(c)) relay?.disconnect(c, `cluster "${c}" was removed from the configuration repository (no KubernetesCluster "${c}" in commit ${commit.slice(0, 12)}); its agent keeps its configuration and reconnects on its own once the KubernetesCluster is restored`);
      }
    },
  };
}
