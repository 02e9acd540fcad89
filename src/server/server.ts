/**
 * The management server, wired by hand from its parts (CONVENTIONS §6; src/server/README.md "Parts"):
 *
 *   git-polling ──accepted commit──▶ commit-in-force ──▶ pipeline.setDesiredState ──▶ onOutput ──▶ publishing (warming gate) ──▶ relay-endpoint
 *               └─rejected commit──▶ kept with diagnostics (api-views + one log line)
 *   relay-endpoint ──discovery──▶ pipeline.setDiscovery + publishing;  ──ACK/NACK──▶ convergence (+ publishing: a transient NACK is redelivered);  ──streams, drift──▶ agent-sessions
 *   git-polling ──every outcome──▶ commit-log (message, author, rejections) ──▶ api-views
 *   publishing (outputs of the commit in force, settled) ──▶ audit-scheduling (leader) ──▶ audit branch
 *   HTTP :9091 ──▶ health, readiness, metrics, webhooks (hints to git-polling), api-views (JSON API, reissue, events)
 *   follow ticker, every second ──▶ trigger role, presence, discovery from other replicas, commit statuses (leader) / adopt the leader's commit (follower)
 *
 * Long-running parts start in the order of `steps` (relay PKI and HTTP access, pipeline, first sync,
 * relay, trigger, HTTP, follow loop) and stop in the reverse order. Nothing here reads the
 * environment: `gitmesh server` parses the configuration once and passes it in.
 */
import { join } from "node:path";
import { mkdir } from "node:fs/promises";
import { existsSync, statSync } from "node:fs";
import type { Registry } from "prom-client";
import { describeError, type Logger } from "../core/index.js";
import { createAuditWriter, createWebhookHandlers, withIdleTimeout, type CommitVerifier } from "../git-sync/index.js";
import { createClusterIdentities, type ClusterIdentities } from "../relay/index.js";
import { createFileMeshRootStorage, type MeshRootStorage, type ReadCaSecret } from "../mesh-ca/index.js";
import type { ClusterConvergence, SnapshotStore } from "../store/index.js";
import type { CommitStatusPoster } from "../git-host/index.js";
import { prepareHttpAccess, type ApiTokens } from "./api-auth.js";
import { createMemoryApiTokenStore, type ApiTokenStore } from "./api-token-store.js";
import type { ServerConfig } from "./config.js";
import { nackTransient } from "./cluster-sync.js";
import { createConvergenceTracker, type ClusterProgress } from "./convergence.js";
import { createServerHttp, type Route, type ServerApi, type ServerHttp } from "./http.js";
import { createWebRoutes } from "./web.js";
import { createDiffService } from "./diff-service.js";
import { clusterSyncSamples, createServerMetrics, registerClusterSyncMetric, type ServerMetrics } from "./metrics.js";
import type { PipelinePort } from "./pipeline-port.js";
import type { RelaySecretStore } from "./pki-storage.js";
import type { PresenceRegistry } from "./presence.js";
import { createCommitInForce } from "./commit-in-force.js";
import { createGitPolling, type GitPolling } from "./git-polling.js";
import { createPublishing } from "./publishing.js";
import { createAuditScheduling } from "./audit-scheduling.js";
import { createCommitLog } from "./commit-log.js";
import { createApiViews } from "./api-views.js";
import { createAgentSessions } from "./agent-sessions.js";
import { createRelayEndpoint } from "./relay-endpoint.js";
import { serverGitLocations } from "./git-locations.js";
import { createTicker } from "./ticker.js";
import { createMemorySuspensionStore, createSuspensions, outputHold, type SuspensionStore } from "./suspensions.js";
import { createTrafficView } from "./traffic-view.js";
import { trafficEdges, type PrometheusClient } from "../traffic/index.js";

/** Guards singleton work (Git polling, audit commits) across replicas; default: this replica always leads. */
export interface SingletonGuard {
  isLeader(): boolean;
  /** Leadership changes (the server starts or stops polling, and writes a pending audit commit). */
  onChange?(listener: (leader: boolean) => void): void;
}

export interface ManagementServerOptions {
  readonly config: ServerConfig;
  readonly pipeline: PipelinePort;
  readonly secrets: RelaySecretStore;
  /** Where the API tokens are kept (default: memory; the composition root picks the relay token's storage). */
  readonly apiTokens?: ApiTokenStore;
  readonly registry: Registry;
  readonly logger: Logger;
  /** Directory for Git caches (remote source object cache, audit clone). */
  readonly dataDir: string;
  readonly singleton?: SingletonGuard;
  /**
   * The mesh CA's storage (src/server/mesh-root-storage.ts): the generated root shared by every
   * replica, and the reader of `mgmtServerCa.secretRef` Secrets. Default: a directory under `dataDir`
   * and no secretRef support (standalone trials).
   */
  readonly meshCa?: { readonly storage?: MeshRootStorage; readonly readSecret?: ReadCaSecret; readonly describeSecrets?: string };
  /** Who holds which agent across replicas (absent: only this replica's connections are known). */
  readonly presence?: PresenceRegistry;
  /** Where API suspensions are kept (default: memory; `gitmesh server` uses Redis when it has one). */
  readonly suspensions?: SuspensionStore;
  /** Signed commits only (--verify-commits): others are rejected, the last verified commit stays in force. */
  readonly verifier?: CommitVerifier;
  /** Commit statuses on the Git host (opt-in, the leader posts them). */
  readonly commitStatus?: CommitStatusPoster;
  /** The Prometheus of the traffic graph (config.prometheus, its token and CA read by the root). */
  readonly prometheus?: PrometheusClient;
  /** How often a follower reads the desired state the leader stored (default 1000 ms). */
  readonly followIntervalMs?: number;
  /** Quiet time after the last output of a commit before the audit commit (default 300 ms). */
  readonly auditDebounceMs?: number;
  readonly now?: () => number;
}

export interface ManagementServer {
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly relayPort: number | undefined;
  readonly httpPort: number | undefined;
  /** The fleet bootstrap token (only with `bootstrap: fleet-token`; undefined otherwise). */
  readonly token: string | undefined;
  /** Per-cluster credentials, live identities and revocations in the shared store (available before start). */
  readonly identities: ClusterIdentities;
  /**
   * Mints a single-use bootstrap credential for a cluster (what `gitmesh cluster register` writes into
   * the workload cluster). Refused while the cluster holds a live certificate unless `reissue`, which
   * revokes it first (and closes its streams).
   */
  mintCredential(cluster: string, options?: { readonly reissue?: boolean; readonly ttlMs?: number }): Promise<{ credential: string; expiresAtMs: number }>;
  /** The relay root CA certificate (public; agents verify the server against it). */
  readonly rootCaPem: string | undefined;
  /** The API tokens in force (undefined before start or with --no-api-auth); for the demo, never logged. */
  readonly apiTokens: ApiTokens | undefined;
  readonly api: ServerApi;
  /** Resolves when the trigger is idle (tests, demo). */
  syncIdle(): Promise<void>;
}

/** destination_service is a host (`details.bookinfo-backends.svc.cluster.local`); the insights name Services. */
const serviceName = (host: string) => (host.endsWith(".svc.cluster.local") ? host.split(".")[0]! : host);

/**
 * The insights' view of observed traffic: the last hour of Istio's standard metrics, as the traffic graph
 * reads them. When Prometheus cannot be read the traffic insights are left out (and the reason logged),
 * rather than failing the whole analysis.
 */
function insightTraffic(client: PrometheusClient, log: Logger) {
  return async () => {
    try {
      const edges = await trafficEdges(client, { window: "1h" });
      return edges.map((e) => ({ source: { cluster: e.source.cluster, namespace: e.source.namespace, workload: e.source.workload }, destination: { cluster: e.destination.cluster, namespace: e.destination.namespace, workload: e.destination.workload, service: serviceName(e.destination.service) }, rps: e.requestsPerSecond, errorRate: e.errorRate ?? 0 }));
    } catch (err) {
      log.warn("insights: Prometheus could not be read; the traffic insights are left out", { error: describeError(err) });
      return undefined;
    }
  };
}

export function createManagementServer(options: ManagementServerOptions): ManagementServer {
  const { config, pipeline, logger: log } = options;
  const store = (): SnapshotStore => pipeline.store; // the store in use now (Redis, or the memory mirror while degraded)
  const now = options.now ?? Date.now;
  const metrics = createServerMetrics(options.registry);
  const singleton = options.singleton ?? { isLeader: () => true };
  const isLeader = () => singleton.isLeader();
  const stopping = new AbortController();
  const signal = stopping.signal;
  const git = serverGitLocations(config.git, options.dataDir, config.gitIdleTimeoutMs);
  const identities = createClusterIdentities(options.secrets.records, { now });
  const meshRoot = options.meshCa?.storage ?? createFileMeshRootStorage(join(options.dataDir, "mesh-ca"));
  let http: ServerHttp | undefined;
  let apiTokens: ApiTokens | undefined;

  // The parts, in the order of the diagram at the top of this file.
  const convergence = createConvergenceTracker({ keepCommits: config.retention.convergenceCommits, sink: { record: (commit, p) => store().recordConvergence(commit, toStoredProgress(p)) }, onSinkError: (err) => log.debug("convergence not mirrored to the store", { error: describeError(err) }) });
  const sessions = createAgentSessions({ replica: config.identity, metrics, logger: log, now });
  const commitLog = createCommitLog({ keep: config.retention.convergenceCommits });
  const inForce = createCommitInForce({ pipeline, store, ref: config.gitBranch, metrics, logger: log, signal, now });
  // Each part its own client: a client counts the idle timeouts of its own requests (the source reports them).
  const gitHttp = () => withIdleTimeout(config.gitIdleTimeoutMs);
  const polling = createGitPolling({ location: git.source, http: gitHttp(), name: git.name, ref: config.gitBranch, ...(config.gitPath ? { subPath: config.gitPath } : {}), ...(options.verifier ? { verifier: options.verifier } : {}), pollIntervalMs: config.pollIntervalMs, debounceMs: config.webhookDebounceMs, onOutcome: (o) => { commitLog.record(o); return inForce.onOutcome(o); }, isLeader, logger: log, signal });
  // Suspensions: the API's (shared store) and gitmesh.yaml's of the commit in force; lifting one hands the output over.
  const suspensions = createSuspensions({
    store: options.suspensions ?? createMemorySuspensionStore(),
    gitFreeze: () => {
      const c = inForce.current();
      const f = c?.state.settings.suspend;
      return c && f ? { clusters: f.clusters, ...(f.reason === undefined ? {} : { reason: f.reason }), commit: c.commit, sinceMs: c.committedAt * 1000 } : undefined;
    },
    onRead: () => publishing.holdsChanged(),
    onResumed: (isHeld) => publishing.resumed(isHeld),
    onError: (err) => log.debug("could not read the suspensions; the last ones read stay in force", { error: describeError(err) }),
    now,
  });
  const publishing = createPublishing({ pipeline, store, relay: () => relay.server, convergence, metrics, holdOf: (c) => {
    const s = suspensions.of(c);
    return s && outputHold(s);
  }, warmingWindowMs: config.warmingWindowMs, skipWarming: config.skipWarming, onProgress: () => audit.schedule(), logger: log, signal, now });
  const audit = createAuditScheduling({ writer: config.auditBranch === "" ? undefined : createAuditWriter({ target: git.audit, branch: config.auditBranch, http: gitHttp(), retry: { signal }, logger: log.child("audit") }), branch: config.auditBranch, ref: config.gitBranch, store, inForce: () => inForce.current(), isRegistered: (c) => inForce.isRegistered(c), isLeader, settled: () => publishing.settled(), waitingFor: () => publishing.warming()?.waitingFor ?? [], now, latest: (c) => publishing.latest(c), ...(options.auditDebounceMs === undefined ? {} : { debounceMs: options.auditDebounceMs }), logger: log, signal });
  const relay = createRelayEndpoint({ config, secrets: options.secrets, identities, registry: options.registry, sessions, convergence: { ack: (e) => { publishing.acked(e.cluster); return convergence.ack(e); }, nack: (e) => { convergence.nack(e); publishing.nacked(e); } }, metrics, isRegistered: (c) => inForce.isRegistered(c), latestOutput: (c) => publishing.latest(c), holdOf: (c) => publishing.holdOf(c), onDiscovery: async (cluster, snapshot) => { await pipeline.setDiscovery(cluster, snapshot); publishing.discovered(cluster); }, meshRoot, ...(options.meshCa?.readSecret ? { readCaSecret: options.meshCa.readSecret } : {}), ...(options.meshCa?.describeSecrets ? { describeCaSecrets: options.meshCa.describeSecrets } : {}), logger: log, now });
  const diffs = createDiffService({ location: git.diff, http: gitHttp(), ...(config.gitPath ? { subPath: config.gitPath } : {}), discovery: () => store().listDiscovery(), ...(config.auditBranch === "" ? {} : { storedRenders: { gitdir: git.audit.kind === "local" ? gitDirOf(git.audit.path) : git.audit.cacheDir, branch: config.auditBranch } }), knownCommits: () => [...(inForce.current() ? [inForce.current()!.commit] : []), ...convergence.commits().map((c) => c.commit), ...commitLog.rejected().map((r) => r.commit)], maxMemoryMb: config.diffMaxMemoryMb, timeoutMs: config.diffTimeoutMs, logger: log.child("diff") });
  const views = createApiViews({ replica: config.identity, auditBranch: config.auditBranch, repository: git.name, store, pipeline, inForce, source: polling, publishing, sessions, relay: () => relay.server, identities, convergence, suspensions, ...(options.prometheus ? { traffic: insightTraffic(options.prometheus, log) } : {}), audited: (sha) => audit.audited(sha), auditHeld: () => audit.held(), commitLog, diffs, mintCredential: (c, o) => relay.mintCredential(c, o), isLeader, stopped: () => signal.aborted, ...(options.presence ? { presence: options.presence } : {}), ...(options.commitStatus ? { commitStatus: options.commitStatus } : {}), logger: log, now });
  const api: ServerApi = {
    ...views.api,
    traffic: createTrafficView({ client: options.prometheus, desired: () => inForce.current()?.state, outputs: () => store().listOutputs(), now }),
  };
  registerClusterSyncMetric(options.registry, async () => clusterSyncSamples(await views.api.status()));
  inForce.onAdopted(({ commit, registered, atMs }) => {
    convergence.accepted(commit, atMs);
    publishing.setRegistered(registered);
    audit.schedule(); // the outputs of this commit may all have arrived before it was adopted here
    relay.cutOffRemoved(commit);
  });
  // Every second: the trigger's role (the leader polls; every replica does while there is no Redis), presence, discovery
  // other replicas received, then commit statuses (leader) or the desired state the leader stored (follower).
  const follow = createTicker({
    intervalMs: options.followIntervalMs ?? 1000,
    tick: async () => {
      polling.reconcile((await pipeline.status()).mode);
      await suspensions.refresh();
      await options.presence?.refresh(sessions.held()).catch(() => undefined);
      await publishing.learnDiscovery();
      if (isLeader()) await views.reportCommitStatuses().catch((err: unknown) => log.warn("could not evaluate commit statuses", { error: describeError(err) }));
      else await inForce.follow();
    },
    onError: (err) => log.debug("could not read the leader's desired state", { error: describeError(err) }),
  });

  // Started in this order, stopped in the reverse order.
  let access: HttpAccess | undefined;
  const steps: readonly Step[] = [
    // A bad PKI, token or certificate file stops the start here, before anything listens.
    { name: "relay PKI, API tokens, HTTPS", start: async () => {
      if (config.git.kind === "remote") await mkdir(options.dataDir, { recursive: true });
      await relay.prepare();
      access = await prepareHttpAccess(config, options.apiTokens ?? createMemoryApiTokenStore(), log.child("http"));
      apiTokens = access.tokens;
    } },
    { name: "pipeline and publishing", start: async () => {
      pipeline.onOutput((rec) => publishing.onOutput(rec));
      await pipeline.start();
      await suspensions.refresh(); // before anything is handed to the relay
      await publishing.start();
    }, stop: async () => {
      await pipeline.stop();
      publishing.stop();
    } },
    { name: "audit", start: () => undefined, stop: () => audit.stop() },
    // Before the relay opens (registration needs the KubernetesClusters); a repository, branch or
    // credential that does not work stops the start with what to fix; an unreachable Git server is retried.
    { name: "first Git sync", start: () => polling.firstSync() },
    { name: "relay", start: async () => {
      await relay.start();
      publishing.publishAll("start");
    }, stop: () => relay.stop() },
    // The first sync already ran; start() syncs again (a no-op "unchanged") and then polls.
    { name: "Git trigger", start: async () => {
      polling.start((await pipeline.status()).mode);
      singleton.onChange?.((leader) => {
        polling.reconcile();
        if (leader) audit.schedule();
      });
    }, stop: () => polling.stop() },
    { name: "HTTP", start: async () => {
      http = createHttpEdge({ options, access: access!, api, polling, metrics, routes: views.routes });
      await http.start();
    }, stop: async () => {
      views.close();
      await http?.stop();
      await diffs.close();
    } },
    { name: "follow loop", start: () => follow.start(), stop: () => follow.stop() },
  ];

  return {
    api,
    identities,
    get relayPort() { return relay.port; },
    get httpPort() { return http?.port; },
    get token() { return relay.token; },
    get rootCaPem() { return relay.rootCaPem; },
    get apiTokens() { return apiTokens; },
    mintCredential: (cluster, opts) => relay.mintCredential(cluster, opts),
    syncIdle: () => polling.idle(),
    async start() {
      for (const step of steps) await step.start();
      log.info("gitmesh server started", { replica: config.identity, relayPort: relay.port, httpPort: http?.port, http: access?.tls ? "https" : "http", apiAuth: access?.auth !== null, source: git.name, ref: config.gitBranch, store: store().kind, pipeline: (await pipeline.status()).mode, warming: publishing.warming()?.warming ?? false, pki: options.secrets.describe, meshRoot: meshRoot.describe });
    },
    async stop() {
      stopping.abort();
      for (const step of [...steps].reverse()) await step.stop?.();
      log.info("gitmesh server stopped", { replica: config.identity });
    },
  };
}

/** One long-running part as the root starts and stops it. */
interface Step {
  readonly name: string;
  start(): Promise<void> | void;
  stop?(): Promise<void> | void;
}

type HttpAccess = Awaited<ReturnType<typeof prepareHttpAccess>>;

/** Convergence progress as the store keeps it (a NACK as one message). */
function toStoredProgress(p: ClusterProgress): ClusterConvergence {
  return { cluster: p.cluster, version: p.version, ...(p.publishedAtMs === undefined ? {} : { publishedAtMs: p.publishedAtMs }), ...(p.appliedAtMs === undefined ? {} : { appliedAtMs: p.appliedAtMs }), ...(p.nack ? { nack: storedNack(p.nack) } : {}) };
}

/** A NACK as the store keeps it: one message, and the agent's classification when it gave one for every error. */
function storedNack(nack: NonNullable<ClusterProgress["nack"]>): NonNullable<ClusterConvergence["nack"]> {
  const transient = nackTransient(nack.errors);
  return { message: nack.errors.map((e) => `${e.key}: ${e.message}`).join("; "), atMs: nack.atMs, ...(transient === undefined ? {} : { transient }) };
}

/** The HTTP edge: the API, the webhooks (hints to the Git trigger), the web UI and the root's extra routes. */
function createHttpEdge(parts: { options: ManagementServerOptions; access: HttpAccess; api: ServerApi; polling: Pick<GitPolling, "hint">; metrics: ServerMetrics; routes: readonly Route[] }): ServerHttp {
  const { options, access, metrics } = parts;
  const secret = options.config.webhookSecret;
  const webhooks = createWebhookHandlers({
    ...(secret !== undefined ? { githubSecret: secret, gitlabToken: secret, genericSecret: secret } : {}),
    onPush: (e) => parts.polling.hint({ repo: e.repo, ref: e.ref, sha: e.sha }),
    logger: options.logger.child("webhooks"),
  });
  return createServerHttp({
    api: parts.api,
    auth: access.auth,
    ...(access.tls ? { tls: access.tls } : {}),
    registry: options.registry,
    webhooks,
    onWebhook: (provider, status) => metrics.webhooks.inc({ provider, status: String(status) }),
    logger: options.logger.child("http"),
    host: options.config.httpHost,
    port: options.config.httpPort,
    routes: [...parts.routes, ...createWebRoutes()],
  });
}

/** The git directory of a local repository: `<path>/.git` for a work tree, else the path (bare). */
function gitDirOf(path: string): string {
  const dotGit = join(path, ".git");
  return existsSync(dotGit) && statSync(dotGit).isDirectory() ? dotGit : path;
}
