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
import { describeError, formatDiagnostic, Severity, type Diagnostic, type Logger } from "../core/index.js";
import { allObjects, diagnosticsOf } from "../config/index.js";
import { createAuditWriter, createWebhookHandlers, type CommitVerifier } from "../git-sync/index.js";
import { createClusterIdentities, isValidClusterName, type AppliedVersion, type ClusterIdentities } from "../relay/index.js";
import { createFileMeshRootStorage, type MeshRootStorage, type ReadCaSecret } from "../mesh-ca/index.js";
import type { ClusterConvergence, SnapshotStore } from "../store/index.js";
import type { CommitStatusPoster } from "../git-host/index.js";
import { prepareHttpAccess, type ApiTokens } from "./api-auth.js";
import { createMemoryApiTokenStore, type ApiTokenStore } from "./api-token-store.js";
import { frozenTables, pruneHeldView } from "./completeness.js";
import type { ServerConfig } from "./config.js";
import { createCommitStatusReporter } from "./commit-status.js";
import { createConvergenceTracker, type ConvergenceTracker } from "./convergence.js";
import { createServerHttp, HttpError, type Route, type ServerApi, type ServerHttp } from "./http.js";
import { createEventStream, createWebRoutes, type EventStream } from "./web.js";
import { createDiffService } from "./diff-service.js";
import { createServerMetrics } from "./metrics.js";
import type { PipelinePort } from "./pipeline-port.js";
import type { RelaySecretStore } from "./pki-storage.js";
import type { PresenceRegistry } from "./presence.js";
import { createCommitInForce } from "./commit-in-force.js";
import { createGitPolling } from "./git-polling.js";
import { createPublishing } from "./publishing.js";
import { createAuditScheduling } from "./audit-scheduling.js";
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

  // ---- API -------------------------------------------------------------------------------------
  const clusterView = async (name: string) => {
    const reg = inForce.registered().find((r) => r.name === name);
    const conn = sessions.streams(name);
    const applied = relay()?.appliedVersions().get(name);
    const [disc, out, holders] = await Promise.all([
      store().getDiscovery(name),
      store().getOutput(name),
      options.presence ? options.presence.holders([name]).catch(() => new Map<string, string>()) : Promise.resolve(new Map<string, string>()),
    ]);
    if (!reg && !conn && !disc && !out) return undefined;
    const here = conn !== undefined && conn.size > 0;
    const holder = here ? config.identity : (holders.get(name) ?? null);
    const st = publishing.warming();
    const pub = publishing.published(name);
    const held = pruneHeldView(out, out?.atMs ?? now());
    const cutOff = await cutOffReason(name, reg !== undefined, here);
    // An agent that never registered is not "stale": nobody has installed it yet.
    const waiting = reg !== undefined && holder === null && applied === undefined && disc === undefined && cutOff === null && (await identities.read(name).catch(() => undefined))?.issued === undefined;
    const errors = [...(out?.diagnostics ?? []), ...((await workspaceErrorsByCluster()).get(name) ?? [])].filter((d) => d.severity === Severity.Error);
    return {
      name,
      registered: reg !== undefined,
      skipWarming: reg?.skipWarming ?? false,
      connected: conn !== undefined && conn.size > 0,
      streams: { push: conn?.has("push") ?? false, pull: conn?.has("pull") ?? false },
      /** The replica holding the agent (this one, another one, or none: stale, or waiting for an agent that never connected). */
      replica: holder,
      stale: holder === null && !waiting,
      waitingForAgent: waiting,
      lastSeen: sessions.lastSeen(name) !== undefined ? new Date(sessions.lastSeen(name)!).toISOString() : null,
      warmed: st?.discovered.includes(name) ?? disc !== undefined,
      discovery: disc ? { checksum: disc.checksum, at: new Date(disc.atMs).toISOString(), services: disc.snapshot.services.length, workloads: disc.snapshot.workloads.length } : null,
      output: out ? { version: out.version, sourceCommit: out.sourceCommit, complete: out.complete, resources: out.resources.length, published: pub ?? null, diagnostics: out.diagnostics.length } : null,
      applied: applied ? { version: applied.version, sourceCommit: applied.sourceCommit, at: new Date(applied.atMs).toISOString() } : null,
      /** The newest commit the cluster runs: the one in force once it runs its output (also when that output did not change). */
      commit: await runningCommit(name, applied),
      /** Translation errors in the cluster's output (e.g. a route to a Service that does not exist: Gloo's HTTP 500 replacement route). */
      errors: { count: errors.length, first: errors.slice(0, 10).map(formatDiagnostic) },
      // Deletions held back (a failing workspace, a cluster without discovery, a frozen route table).
      pruneHeld: held,
      frozen: frozenTables(out),
      /** Why the relay refuses this cluster's agent (removed from Git, certificate revoked), or null. */
      cutOff,
      /** Owned objects someone else changed or deleted and the agent put back, newest first (reported to the replica holding the agent). */
      driftRepairs: sessions.driftRepairs(name),
      inSync: cutOff === null && applied !== undefined && out !== undefined && applied.version >= out.version && held === null,
    };
  };
  /**
   * When a cluster ran a commit: its ACK; for a commit that left its output unchanged, the moment it
   * ran that same output version (at once when it already had, or when its ACK of that version arrives).
   */
  /**
   * Error diagnostics of each workspace's last translation, by the clusters its fragments go to (a
   * route to a Service that does not exist renders as an HTTP 500 route there). Memoised for a second:
   * one status answer asks it for every cluster.
   */
  let workspaceErrors: { atMs: number; value: Promise<Map<string, Diagnostic[]>> } | undefined;
  const workspaceErrorsByCluster = (): Promise<Map<string, Diagnostic[]>> => {
    if (workspaceErrors && now() - workspaceErrors.atMs < 1000) return workspaceErrors.value;
    const value = (async () => {
      const byCluster = new Map<string, Diagnostic[]>();
      for (const w of await store().listWorkspaceStatus()) {
        const errors = w.diagnostics.filter((d) => d.severity === Severity.Error);
        if (errors.length === 0) continue;
        for (const c of (await store().fragmentHashes(w.workspace)).keys()) byCluster.set(c, [...(byCluster.get(c) ?? []), ...errors]);
      }
      return byCluster;
    })().catch(() => new Map<string, Diagnostic[]>());
    workspaceErrors = { atMs: now(), value };
    return value;
  };
  type Progress = Omit<ClusterConvergence, "nack"> & { readonly nack?: unknown; readonly latencyMs?: number };
  const appliedAtOf = async (cluster: string, p: Progress): Promise<number | undefined> => {
    if (p.appliedAtMs !== undefined || p.unchangedFrom === undefined || p.nack !== undefined) return p.appliedAtMs;
    const acked = relay()?.appliedVersions().get(cluster);
    if (acked !== undefined && acked.version === p.version) return Math.max(p.publishedAtMs ?? acked.atMs, acked.atMs);
    const origin = (await store().getConvergence(p.unchangedFrom).catch(() => undefined))?.clusters[cluster];
    if (origin?.appliedAtMs !== undefined && origin.version === p.version) return Math.max(p.publishedAtMs ?? origin.appliedAtMs, origin.appliedAtMs);
    return undefined;
  };
  // ---- commit statuses on the Git host (opt-in; the leader reports) -------------------------------
  const statusReporter = options.commitStatus
    ? createCommitStatusReporter({ poster: options.commitStatus, logger: log.child("commit-status"), now })
    : undefined;
  const reportCommitStatuses = async (): Promise<void> => {
    if (!statusReporter) return;
    const rejection = source.status().rejection;
    if (rejection) {
      const first = rejection.diagnostics.find((d) => d.severity === Severity.Error);
      await statusReporter.rejected(rejection.commit, first ? formatDiagnostic(first) : "the commit was rejected");
    }
    const desired = inForce.current();
    if (!desired) return;
    const view = await commitView(desired.commit);
    if (!view) return;
    const applied = new Map<string, number>();
    const nacks: { cluster: string; message: string }[] = [];
    for (const [cluster, p] of Object.entries(view.clusters as Record<string, { appliedAtMs?: number; nack?: { message?: string; errors?: { key: string; message: string }[] } }>)) {
      if (p.appliedAtMs !== undefined) applied.set(cluster, p.appliedAtMs);
      if (p.nack) nacks.push({ cluster, message: p.nack.message ?? p.nack.errors?.map((e) => `${e.key}: ${e.message}`).join("; ") ?? "NACK" });
    }
    await statusReporter.inForce({ commit: desired.commit, acceptedAtMs: view.acceptedAt === null ? undefined : Date.parse(view.acceptedAt), expected: inForce.registered().map((r) => r.name), applied, nacks });
  };
  const runningCommit = async (name: string, applied: AppliedVersion | undefined): Promise<string | null> => {
    if (!applied) return null;
    const commit = inForce.current()?.commit;
    if (commit === undefined || applied.sourceCommit === commit) return applied.sourceCommit;
    const p = (await store().getConvergence(commit).catch(() => undefined))?.clusters[name];
    return p !== undefined && (await appliedAtOf(name, p)) !== undefined ? commit : applied.sourceCommit;
  };
  /**
   * A cluster whose agent the relay refuses is not in sync, whatever it applied last: removed from Git
   * (refused until restored), or its certificate revoked (until the agent registers with a new credential).
   */
  const cutOffReason = async (name: string, isRegistered: boolean, connectedHere: boolean): Promise<string | null> => {
    if (!isRegistered) return `no KubernetesCluster "${name}" in the desired state: the relay refuses its agent until the KubernetesCluster is restored in Git (the agent then reconnects on its own)`;
    if (connectedHere) return null;
    const record = await identities.read(name).catch(() => undefined);
    if (record?.revocation && record.revokedBeforeMs !== undefined && !(record.issued && record.issued.issuedAtMs > record.revokedBeforeMs)) {
      return `certificate revoked at ${new Date(record.revocation.atMs).toISOString()} (${record.revocation.reason}); waiting for the agent to register with its new bootstrap credential`;
    }
    const refusal = relay()?.refusals().get(name);
    return refusal ? `relay refused the agent at ${new Date(refusal.atMs).toISOString()}: ${refusal.reason}: ${refusal.message}` : null;
  };
  /**
   * POST /api/clusters/<name>/reissue (admin role): revokes the cluster's certificates (its streams close
   * here at once, on other replicas within 15 s) and mints a fresh single-use bootstrap credential. The
   * answer carries that credential — the one API answer with a secret in it, on purpose: the operator
   * writes it into the workload cluster (relay-identity-token-secret, key token), where the agent picks
   * it up without a restart. It is bound to this one cluster and is useless once used.
   */
  const reissueRoute: Route = {
    method: "POST",
    pattern: /^\/api\/clusters\/([^/]+)\/reissue$/,
    access: "admin",
    handler: async (_req, res, [name]) => {
      if (name === undefined || !isValidClusterName(name)) throw new HttpError(400, `"${name ?? ""}" is not a valid cluster name`);
      if (!inForce.isRegistered(name)) throw new HttpError(404, `no KubernetesCluster "${name}" in the desired state; add it to the configuration repository first`);
      const minted = await relayEndpoint.mintCredential(name, { reissue: true });
      log.warn("cluster identity re-issued through the API", { cluster: name, credentialExpires: new Date(minted.expiresAtMs).toISOString() });
      res.writeHead(200, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
      res.end(
        JSON.stringify(
          {
            cluster: name,
            revoked: true,
            credential: minted.credential,
            expiresAt: new Date(minted.expiresAtMs).toISOString(),
            next: `write the credential into the workload cluster: kubectl -n <agent namespace> create secret generic relay-identity-token-secret --from-literal=token=<credential> (or use gitmesh cluster reissue ${name}); the agent registers with it without a restart`,
          },
          null,
          2,
        ) + "\n",
      );
    },
  };
  const clusterNames = async () => {
    const names = new Set<string>([...inForce.registered().map((r) => r.name), ...sessions.known()]);
    for (const o of await store().listOutputs()) names.add(o.cluster);
    return [...names].sort();
  };
  const commitView = async (sha: string) => {
    const mine = convergence.get(sha);
    const shared = await store().getConvergence(sha).catch(() => undefined);
    if (!mine && !shared) return undefined;
    const merged: Record<string, Progress> = {};
    for (const [c, p] of Object.entries(shared?.clusters ?? {})) merged[c] = { ...p };
    for (const [c, p] of Object.entries(mine?.clusters ?? {})) merged[c] = { ...merged[c], ...p };
    const isRegistered = new Set(inForce.registered().map((r) => r.name));
    const clusters: Record<string, unknown> = {};
    let appliedCount = 0;
    let nacked = 0;
    for (const [c, p] of Object.entries(merged)) {
      const appliedAtMs = await appliedAtOf(c, p);
      // A cluster removed from Git does not count towards the commit's convergence (listed, flagged).
      if (isRegistered.has(c) && appliedAtMs !== undefined) appliedCount++;
      if (isRegistered.has(c) && p.nack !== undefined) nacked++;
      clusters[c] = { ...p, ...(appliedAtMs === undefined ? {} : { appliedAtMs }), ...(p.unchangedFrom === undefined ? {} : { unchanged: true }), registered: isRegistered.has(c) };
    }
    return {
      commit: sha,
      acceptedAt: mine?.acceptedAtMs !== undefined ? new Date(mine.acceptedAtMs).toISOString() : null,
      inForce: inForce.current()?.commit === sha,
      audit: audit.audited(sha) ?? null,
      applied: appliedCount,
      nacked,
      clusters,
    };
  };
  const api: ServerApi = {
    healthy: () => !stopped,
    readiness: () => {
      if (stopped) return { ready: false, reason: "stopping" };
      const desired = inForce.current();
      if (!desired) return { ready: false, reason: source.status().lastError ? `no desired state yet: ${source.status().lastError!.message}` : "no desired state yet (first Git sync pending)" };
      const st = publishing.warming();
      if (st?.warming) return { ready: false, reason: `warming: waiting for discovery from ${st.waitingFor.join(", ") || "-"} (window ${Math.round(st.windowMs / 1000)} s)` };
      return { ready: true, reason: `commit ${desired.commit.slice(0, 12)} in force` };
    },
    async status() {
      const desired = inForce.current();
      const src = source.status();
      const names = await clusterNames();
      const clusters = (await Promise.all(names.map(clusterView))).filter((c) => c !== undefined);
      const ready = api.readiness();
      return {
        replica: config.identity,
        ready: ready.ready,
        readiness: ready.reason,
        pipeline: await pipeline.status(),
        store: store().kind,
        warming: publishing.warming() ?? null,
        source: { repository: sourceName, ref: src.ref, path: src.subPath, lastError: src.lastError ?? null },
        // The desired state in force (a follower adopts it from the leader; its own source may lag).
        commit: desired
          ? src.lastGood?.commit === desired.commit
            ? { sha: desired.commit, committedAt: src.lastGood.committedAt, syncedAt: src.lastGood.syncedAt, from: "git" }
            : { sha: desired.commit, committedAt: new Date(desired.committedAt * 1000).toISOString(), syncedAt: null, from: "leader" }
          : null,
        leader: singleton.isLeader(),
        rejected: src.rejection
          ? { commit: src.rejection.commit, rejectedAt: src.rejection.rejectedAt, errors: src.rejection.diagnostics.filter((d) => d.severity === Severity.Error).length, diagnostics: src.rejection.diagnostics.slice(0, 10).map(formatDiagnostic) }
          : null,
        audit: { branch: config.auditBranch || null, lastCommit: desired ? (audit.audited(desired.commit) ?? null) : null },
        clusters,
      };
    },
    clusters: async () => ({ clusters: (await Promise.all((await clusterNames()).map(clusterView))).filter((c) => c !== undefined) }),
    cluster: clusterView,
    async clusterInput(name) {
      const d = await store().getDiscovery(name);
      return d ? { cluster: name, checksum: d.checksum, at: new Date(d.atMs).toISOString(), snapshot: d.snapshot } : undefined;
    },
    async clusterOutput(name) {
      const o = await store().getOutput(name);
      if (!o) return undefined;
      const extra = { ...(o.options === undefined ? {} : { options: o.options }), pruneHeld: pruneHeldView(o, o.atMs) };
      return { cluster: name, version: o.version, sourceCommit: o.sourceCommit, complete: o.complete, hash: o.hash, at: new Date(o.atMs).toISOString(), ...extra, diagnostics: o.diagnostics, resources: o.resources };
    },
    async commits() {
      const desired = inForce.current();
      const shas = convergence.commits().map((c) => c.commit);
      if (desired && !shas.includes(desired.commit)) shas.unshift(desired.commit);
      return { inForce: desired?.commit ?? null, commits: (await Promise.all(shas.map(commitView))).filter((c) => c !== undefined) };
    },
    async commit(sha) {
      const full = convergence.commits().find((c) => c.commit.startsWith(sha))?.commit ?? sha;
      return commitView(full);
    },
    async diagnostics() {
      const byFile: Record<string, string[]> = {};
      const entries = new Map<string, Record<string, unknown>>();
      let errorCount = 0;
      const add = (d: Diagnostic, origin: string) => {
        const file = d.file ?? "(no file)";
        if (d.severity === Severity.Error) errorCount++;
        (byFile[file] ??= []).push(`${origin}: ${formatDiagnostic(d)}`);
        const entry = { origin, severity: d.severity, code: d.code, ...(d.file === undefined ? {} : { file: d.file }), ...(d.line === undefined ? {} : { line: d.line }), ...(d.column === undefined ? {} : { column: d.column }), ...(d.path === undefined ? {} : { path: d.path }), message: d.message };
        entries.set(JSON.stringify(entry), entry);
      };
      const desired = inForce.current();
      const src = source.status();
      for (const d of src.rejection?.diagnostics ?? []) add(d, `rejected ${src.rejection!.commit.slice(0, 12)}`);
      if (desired) for (const d of diagnosticsOf(desired.state)) add(d, "in force");
      for (const o of await store().listOutputs()) for (const d of o.diagnostics) add(d, `cluster ${o.cluster}`);
      for (const w of await store().listWorkspaceStatus()) for (const d of w.diagnostics) add(d, `workspace ${w.workspace}`);
      const files = Object.keys(byFile).sort();
      return {
        commit: desired?.commit ?? null,
        rejected: src.rejection?.commit ?? null,
        // Any error listed: a rejected commit, or translation errors of the commit in force (applied with errors).
        errors: errorCount > 0,
        errorCount,
        files: files.map((f) => ({ file: f, diagnostics: [...new Set(byFile[f])] })),
        /** The same diagnostics as data (file, line, column, path, code, severity, where from), for the UI. */
        entries: [...entries.values()],
      };
    },
    diff: (base, head) => diffs.diff(base, head),
    resources() {
      const desired = inForce.current();
      const state = desired?.state;
      return Promise.resolve({
        commit: desired?.commit ?? null,
        resources: state
          ? allObjects(state).map((o) => ({
              apiVersion: o.apiVersion,
              kind: o.kind,
              name: o.metadata.name,
              namespace: o.metadata.namespace,
              ...(o.cluster === undefined ? {} : { cluster: o.cluster }),
              workspace: o.workspace ?? null,
              file: o.source.file,
              line: o.source.line,
            }))
          : [],
      });
    },
  };
  // What the UI shows, summarised for the event stream: a change here is a change event (lastSeen
  // moves with every agent heartbeat and is left out, or every open page would re-read all the time).
  const events: EventStream = createEventStream({
    fingerprint: async () => {
      const st = (await api.status()) as { clusters: Record<string, unknown>[] };
      return { ...st, clusters: st.clusters.map(({ lastSeen: _seen, ...c }) => c) };
    },
    logger: log.child("events"),
  });

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
        routes: [reissueRoute, events.route, ...createWebRoutes()],
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
      events.close();
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
