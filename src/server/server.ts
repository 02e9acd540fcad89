/**
 * The management server, wired by hand from its parts (CONVENTIONS §6):
 *
 *   git-sync source ──accepted commit──▶ pipeline.setDesiredState ──▶ onOutput ──▶ warming gate ──▶ relay.publishOutput
 *                   └─rejected commit──▶ kept with diagnostics (status API + one log line)
 *   relay ──discovery──▶ pipeline.setDiscovery + warming gate;  ──ACK/NACK──▶ convergence tracking
 *   outputs of a source commit, once complete ──▶ audit writer (singleton) ──▶ audit branch
 *   HTTP :9091 ──▶ health, readiness (warmed), metrics, webhooks (hints to the sync trigger), JSON API
 *
 * Long-running parts start in order (pipeline, first sync, relay, trigger, HTTP) and stop in the
 * reverse order. Nothing here reads the environment: `gitmesh server` parses the configuration once
 * and passes it in.
 */
import { join } from "node:path";
import { mkdir } from "node:fs/promises";
import type { Registry } from "prom-client";
import { describeError, type Logger } from "../core/index.js";
import { createAuditWriter, createWebhookHandlers, type CommitVerifier } from "../git-sync/index.js";
import { createClusterIdentities, type ClusterIdentities } from "../relay/index.js";
import { createFileMeshRootStorage, type MeshRootStorage, type ReadCaSecret } from "../mesh-ca/index.js";
import type { SnapshotStore } from "../store/index.js";
import type { CommitStatusPoster } from "../git-host/index.js";
import { prepareHttpAccess, type ApiTokens } from "./api-auth.js";
import { createMemoryApiTokenStore, type ApiTokenStore } from "./api-token-store.js";
import type { ServerConfig } from "./config.js";
import { createConvergenceTracker, type ConvergenceTracker } from "./convergence.js";
import { createServerHttp, type ServerApi, type ServerHttp } from "./http.js";
import { createWebRoutes } from "./web.js";
import { createDiffService } from "./diff-service.js";
import { createServerMetrics } from "./metrics.js";
import type { PipelinePort } from "./pipeline-port.js";
import type { RelaySecretStore } from "./pki-storage.js";
import type { PresenceRegistry } from "./presence.js";
import { createCommitInForce } from "./commit-in-force.js";
import { createGitPolling } from "./git-polling.js";
import { createPublishing } from "./publishing.js";
import { createAuditScheduling } from "./audit-scheduling.js";
import { createApiViews } from "./api-views.js";
import { createAgentSessions } from "./agent-sessions.js";
import { createRelayEndpoint } from "./relay-endpoint.js";
import { serverGitLocations } from "./git-locations.js";

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
  /** Signed commits only (--verify-commits): others are rejected, the last verified commit stays in force. */
  readonly verifier?: CommitVerifier;
  /** Commit statuses on the Git host (opt-in, the leader posts them). */
  readonly commitStatus?: CommitStatusPoster;
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

export function createManagementServer(options: ManagementServerOptions): ManagementServer {
  const { config, pipeline, logger: log } = options;
  /** The store in use now (it changes with the pipeline's mode: Redis, or the memory mirror). */
  const store = (): SnapshotStore => pipeline.store;
  const now = options.now ?? Date.now;
  const metrics = createServerMetrics(options.registry);
  const singleton = options.singleton ?? { isLeader: () => true };

  let http: ServerHttp | undefined;
  let apiTokens: ApiTokens | undefined;
  const identities = createClusterIdentities(options.secrets.records, { now });
  let stopped = false;
  const stopping = new AbortController();
  const convergence: ConvergenceTracker = createConvergenceTracker({
    keepCommits: config.retention.convergenceCommits,
    sink: { record: (commit, p) => store().recordConvergence(commit, { cluster: p.cluster, version: p.version, ...(p.publishedAtMs === undefined ? {} : { publishedAtMs: p.publishedAtMs }), ...(p.appliedAtMs === undefined ? {} : { appliedAtMs: p.appliedAtMs }), ...(p.nack ? { nack: { message: p.nack.errors.map((e) => `${e.key}: ${e.message}`).join("; "), atMs: p.nack.atMs } } : {}) }) },
    onSinkError: (err) => log.debug("convergence not mirrored to the store", { error: describeError(err) }),
  });
  const sessions = createAgentSessions({ replica: config.identity, metrics, logger: log, now });

  const git = serverGitLocations(config.git, options.dataDir);
  const sourceName = git.name;
  const diffs = createDiffService({
    location: git.diff,
    ...(config.gitPath ? { subPath: config.gitPath } : {}),
    discovery: () => store().listDiscovery(),
    logger: log.child("diff"),
  });

  const inForce = createCommitInForce({ pipeline, store, ref: config.gitBranch, metrics, logger: log, signal: stopping.signal, now });
  const polling = createGitPolling({
    location: git.source,
    name: git.name,
    ref: config.gitBranch,
    ...(config.gitPath ? { subPath: config.gitPath } : {}),
    ...(options.verifier ? { verifier: options.verifier } : {}),
    pollIntervalMs: config.pollIntervalMs,
    debounceMs: config.webhookDebounceMs,
    onOutcome: (outcome) => inForce.onOutcome(outcome),
    isLeader: () => singleton.isLeader(),
    logger: log,
    signal: stopping.signal,
  });
  const source = { status: () => polling.status() };
  const publishing = createPublishing({
    pipeline,
    store,
    relay: () => relayEndpoint.server,
    convergence,
    metrics,
    warmingWindowMs: config.warmingWindowMs,
    skipWarming: config.skipWarming,
    onProgress: () => scheduleAudit(),
    logger: log,
    signal: stopping.signal,
    now,
  });
  inForce.onAdopted(({ commit, registered, atMs }) => {
    convergence.accepted(commit, atMs);
    publishing.setRegistered(registered);
    // The outputs of this commit may all have arrived before it was adopted here.
    scheduleAudit();
    relayEndpoint.cutOffRemoved(commit);
  });

  /**
   * Every second: the trigger's role (polling on the leader, and on every replica while the pipeline
   * runs without Redis: there is no shared state then, so each replica must read Git itself); warming
   * learns of discovery that reached other replicas (the shared store holds it); followers adopt the
   * desired state the leader stored.
   */
  let followTimer: NodeJS.Timeout | undefined;
  let following: Promise<void> = Promise.resolve();
  const follow = async (): Promise<void> => {
    if (stopped) return;
    polling.reconcile((await pipeline.status()).mode);
    await options.presence?.refresh(sessions.held()).catch(() => undefined);
    await publishing.learnDiscovery();
    if (singleton.isLeader()) {
      await reportCommitStatuses().catch((err: unknown) => log.warn("could not evaluate commit statuses", { error: describeError(err) }));
      return;
    }
    await inForce.follow();
  };

  const audit = createAuditScheduling({
    writer: config.auditBranch === "" ? undefined : createAuditWriter({ target: git.audit, branch: config.auditBranch, logger: log.child("audit") }),
    branch: config.auditBranch,
    ref: config.gitBranch,
    store,
    inForce: () => inForce.current(),
    isRegistered: (c) => inForce.isRegistered(c),
    isLeader: () => singleton.isLeader(),
    settled: () => publishing.settled(),
    latest: (c) => publishing.latest(c),
    ...(options.auditDebounceMs === undefined ? {} : { debounceMs: options.auditDebounceMs }),
    logger: log,
    signal: stopping.signal,
  });
  const scheduleAudit = () => audit.schedule();

  const meshRoot = options.meshCa?.storage ?? createFileMeshRootStorage(join(options.dataDir, "mesh-ca"));
  const relayEndpoint = createRelayEndpoint({
    config,
    secrets: options.secrets,
    identities,
    registry: options.registry,
    sessions,
    convergence,
    metrics,
    isRegistered: (c) => inForce.isRegistered(c),
    latestOutput: (c) => publishing.latest(c),
    onDiscovery: async (cluster, snapshot) => {
      await pipeline.setDiscovery(cluster, snapshot);
      publishing.discovered(cluster);
    },
    meshRoot,
    ...(options.meshCa?.readSecret ? { readCaSecret: options.meshCa.readSecret } : {}),
    ...(options.meshCa?.describeSecrets ? { describeCaSecrets: options.meshCa.describeSecrets } : {}),
    logger: log,
    now,
  });
  const relay = () => relayEndpoint.server;

  const views = createApiViews({
    replica: config.identity,
    auditBranch: config.auditBranch,
    repository: sourceName,
    store,
    pipeline,
    inForce,
    source,
    publishing,
    sessions,
    relay,
    identities,
    convergence,
    audited: (sha) => audit.audited(sha),
    diffs,
    mintCredential: (cluster, opts) => relayEndpoint.mintCredential(cluster, opts),
    isLeader: () => singleton.isLeader(),
    stopped: () => stopped,
    ...(options.presence ? { presence: options.presence } : {}),
    ...(options.commitStatus ? { commitStatus: options.commitStatus } : {}),
    logger: log,
    now,
  });
  const api = views.api;
  const reportCommitStatuses = () => views.reportCommitStatuses();

  return {
    api,
    get relayPort() {
      return relayEndpoint.port;
    },
    get httpPort() {
      return http?.port;
    },
    get token() {
      return relayEndpoint.token;
    },
    identities,
    mintCredential: (cluster, opts) => relayEndpoint.mintCredential(cluster, opts),
    get rootCaPem() {
      return relayEndpoint.rootCaPem;
    },
    get apiTokens() {
      return apiTokens;
    },
    syncIdle: () => polling.idle(),
    async start() {
      if (config.git.kind === "remote") await mkdir(options.dataDir, { recursive: true });
      await relayEndpoint.prepare();
      // API tokens and HTTPS material: a bad file stops the start here, before anything listens.
      const access = await prepareHttpAccess(config, options.apiTokens ?? createMemoryApiTokenStore(), log.child("http"));
      apiTokens = access.tokens;

      pipeline.onOutput((rec) => publishing.onOutput(rec));
      await pipeline.start();
      await publishing.start();

      // First sync before the relay opens: registration needs the KubernetesClusters.
      // A repository, branch or credential that does not work will not fix itself: stop with what to
      // fix (fail fast, before anything listens). A Git server that cannot be reached is retried.
      await polling.firstSync();

      await relayEndpoint.start();
      publishing.publishAll("start");

      // The first sync already ran; start() syncs again (a no-op "unchanged") and then polls.
      polling.start((await pipeline.status()).mode);
      singleton.onChange?.((leader) => {
        polling.reconcile();
        if (leader) scheduleAudit();
      });
      const followMs = options.followIntervalMs ?? 1000;
      followTimer = setInterval(() => {
        following = following.then(follow).catch((err: unknown) => log.debug("could not read the leader's desired state", { error: describeError(err) }));
      }, followMs);
      followTimer.unref();

      const secret = config.webhookSecret;
      const webhooks = createWebhookHandlers({
        ...(secret !== undefined ? { githubSecret: secret, gitlabToken: secret, genericSecret: secret } : {}),
        onPush: (e) => polling.hint({ repo: e.repo, ref: e.ref, sha: e.sha }),
        logger: log.child("webhooks"),
      });
      http = createServerHttp({
        api,
        auth: access.auth,
        ...(access.tls ? { tls: access.tls } : {}),
        registry: options.registry,
        webhooks,
        onWebhook: (provider, status) => metrics.webhooks.inc({ provider, status: String(status) }),
        logger: log.child("http"),
        host: config.httpHost,
        port: config.httpPort,
        routes: [...views.routes, ...createWebRoutes()],
      });
      await http.start();
      log.info("gitmesh server started", {
        replica: config.identity,
        relayPort: relayEndpoint.port,
        httpPort: http.port,
        http: access.tls ? "https" : "http",
        apiAuth: access.auth !== null,
        source: sourceName,
        ref: config.gitBranch,
        store: store().kind,
        pipeline: (await pipeline.status()).mode,
        warming: publishing.warming()?.warming ?? false,
        pki: options.secrets.describe,
        meshRoot: meshRoot.describe,
      });
    },
    async stop() {
      stopped = true;
      stopping.abort();
      clearInterval(followTimer);
      await following;
      views.close();
      await http?.stop();
      await polling.stop();
      await relayEndpoint.stop();
      await audit.stop();
      await pipeline.stop();
      publishing.stop();
      log.info("gitmesh server stopped", { replica: config.identity });
    },
  };
}
