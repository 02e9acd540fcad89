/**
 * What the API shows, read from the parts at the moment of asking (nothing here is kept but a
 * one-second memo of workspace errors):
 *
 *   commit in force · Git source ──▶ status, readiness, diagnostics, resources
 *   agent sessions · relay (applied, refusals) · identities · store (discovery, outputs) ──▶ cluster views
 *   convergence (this replica's, merged over the store's) · audit · commit log ──▶ commit views ──▶ commit statuses on the Git host
 *   every fact of a cluster and the commit in force ──clusterSync (cluster-sync.ts)──▶ `sync` and `inSync` of the
 *   cluster view, the state of each cluster in the commit in force's view (nothing else decides "in sync")
 *   POST /api/clusters/<name>/reissue (admin) ──▶ a fresh bootstrap credential
 *   POST /api/clusters/<name>/suspend|resume, /api/fleet/suspend|resume (admin) ──▶ suspensions (suspensions.ts)
 *   a digest of the status ──▶ /api/events
 *
 * The HTTP edge (http.ts) serves `api`; `routes` are handed to it beside its own table.
 */
import type { Logger } from "../core/index.js";
import { formatDiagnostic, Severity, type Diagnostic } from "../core/index.js";
import { allObjects, diagnosticsOf } from "../config/index.js";
import type { DiscoverySnapshot } from "../discovery/index.js";
import { analyze, type CertificateExpiry, type TrafficEdge } from "../insights/index.js";
import { isValidClusterName, type AppliedVersion, type ClusterIdentities, type RelayServer } from "../relay/index.js";
import type { ClusterConvergence, SnapshotStore } from "../store/index.js";
import type { CommitStatusPoster } from "../git-host/index.js";
import { frozenTables, pruneHeldView } from "./completeness.js";
import { clusterSync, nackTransient, pastCommitState, type ClusterSync, type CommitProgressFacts } from "./cluster-sync.js";
import type { AuditHold } from "./audit-scheduling.js";
import type { CommitInfo, CommitLog } from "./commit-log.js";
import { createCommitStatusReporter } from "./commit-status.js";
import type { ConvergenceTracker } from "./convergence.js";
import { HttpError, readBody, type Route, type ServerApi } from "./http.js";
import { describeSuspension, FLEET_SCOPE, type Suspension, type Suspensions } from "./suspensions.js";
import { createEventStream, type EventStream } from "./web.js";
import type { DiffService } from "./diff-service.js";
import type { PipelinePort } from "./pipeline-port.js";
import type { PresenceRegistry } from "./presence.js";
import type { CommitInForce } from "./commit-in-force.js";
import type { GitPolling } from "./git-polling.js";
import type { Publishing } from "./publishing.js";
import type { AgentSessions } from "./agent-sessions.js";
import { provenanceView } from "./provenance-view.js";

export interface ApiViewsOptions {
  /** This replica's name (status, and the holder of the agents it holds). */
  readonly replica: string;
  /** The audit branch ("" when off). */
  readonly auditBranch: string;
  /** The source repository as shown (credentials stripped). */
  readonly repository: string;
  /** The store in use now (it changes with the pipeline's mode). */
  readonly store: () => SnapshotStore;
  readonly pipeline: Pick<PipelinePort, "status">;
  readonly inForce: Pick<CommitInForce, "current" | "registered" | "isRegistered">;
  readonly source: Pick<GitPolling, "status">;
  readonly publishing: Pick<Publishing, "warming" | "published">;
  readonly sessions: Pick<AgentSessions, "streams" | "lastSeen" | "driftRepairs" | "known">;
  /** The relay once started (undefined before). */
  readonly relay: () => Pick<RelayServer, "appliedVersions" | "refusals"> | undefined;
  readonly identities: Pick<ClusterIdentities, "read">;
  readonly convergence: Pick<ConvergenceTracker, "get" | "commits">;
  /** The audit commit written for a source commit, if any. */
  readonly audited: (sha: string) => string | undefined;
  /** Why the audit branch waits (the clusters that hold it back), if it does. */
  readonly auditHeld?: () => AuditHold | undefined;
  /** Message and author of the commits read from Git, and the rejected ones. */
  readonly commitLog?: Pick<CommitLog, "info" | "rejected">;
  readonly diffs: Pick<DiffService, "diff">;
  /** Revokes a cluster's certificates and mints a fresh bootstrap credential (the reissue route). */
  readonly mintCredential: (cluster: string, options: { readonly reissue: true }) => Promise<{ credential: string; expiresAtMs: number }>;
  /** What holds clusters or the fleet (suspend / resume; absent: nothing can be suspended). */
  readonly suspensions?: Pick<Suspensions, "of" | "list" | "suspend" | "resume">;
  /** Whether this replica leads (shown in the status). */
  readonly isLeader: () => boolean;
  /** True once the server stops (liveness, readiness). */
  readonly stopped: () => boolean;
  /** Who holds which agent across replicas (absent: only this replica's agents are known). */
  readonly presence?: Pick<PresenceRegistry, "holders">;
  /** Commit statuses on the Git host (opt-in; the leader reports). */
  readonly commitStatus?: CommitStatusPoster;
  /** Observed traffic for the insights (absent: traffic insights are skipped). */
  readonly traffic?: () => Promise<readonly TrafficEdge[] | undefined>;
  readonly logger: Logger;
  readonly now: () => number;
}

export interface ApiViews {
  readonly api: ServerApi;
  /** Routes beside the edge's own table: the reissue action and /api/events. */
  readonly routes: readonly Route[];
  /** Posts the commit statuses of the rejected commit and of the commit in force (leader; no-op without a poster). */
  reportCommitStatuses(): Promise<void>;
  /** Ends the event stream's listeners. */
  close(): void;
}

export function createApiViews(options: ApiViewsOptions): ApiViews {
  const { store, pipeline, inForce, source, publishing, sessions, relay, identities, convergence, diffs, logger: log, now } = options;
  const config = { identity: options.replica, auditBranch: options.auditBranch };
  const sourceName = options.repository;
  /**
   * One answer's reads of a commit's progress: a status lists every cluster, and each reads the same
   * record (read once per answer, not once per cluster — at a thousand clusters that is a million entries).
   */
  type ProgressReads = Map<string, ReturnType<typeof mergedProgress>>;
  const readsOf = (reads: ProgressReads, sha: string) => {
    let r = reads.get(sha);
    if (r === undefined) reads.set(sha, (r = mergedProgress(sha)));
    return r;
  };
  const clusterView = async (name: string, reads: ProgressReads = new Map()) => {
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
    const commitInForce = inForce.current()?.commit;
    const lastSeen = sessions.lastSeen(name);
    const suspension = options.suspensions?.of(name);
    const sync = clusterSync({
      commit: commitInForce,
      cutOff,
      agent: holder !== null ? "connected" : waiting ? "waiting" : "disconnected",
      lastSeen: lastSeen !== undefined ? new Date(lastSeen).toISOString() : null,
      output: out,
      publishedVersion: pub?.version,
      applied,
      progress: commitInForce === undefined ? undefined : await progressAt(reads, commitInForce, name),
      held: held === null ? null : { reason: held.reason, since: held.since, objects: held.objects.length },
      suspended: suspension ? describeSuspension(suspension) : null,
    });
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
      /** What holds the cluster (nothing is handed to it until resumed), or null. */
      suspended: suspension ? suspensionView(suspension) : null,
      /** Where the cluster stands with the commit in force (cluster-sync.ts): the one answer every view shows. */
      sync,
      inSync: sync.state === "in-sync",
    };
  };
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
  /**
   * When a cluster ran a commit: its ACK; for a commit that left its output unchanged, the moment it
   * ran that same output version (at once when it already had, or when its ACK of that version arrives).
   */
  const appliedAtOf = async (cluster: string, p: Progress): Promise<number | undefined> => {
    if (p.appliedAtMs !== undefined || p.unchangedFrom === undefined || p.nack !== undefined) return p.appliedAtMs;
    const acked = relay()?.appliedVersions().get(cluster);
    if (acked !== undefined && acked.version === p.version) return Math.max(p.publishedAtMs ?? acked.atMs, acked.atMs);
    const origin = (await store().getConvergence(p.unchangedFrom).catch(() => undefined))?.clusters[cluster];
    if (origin?.appliedAtMs !== undefined && origin.version === p.version) return Math.max(p.publishedAtMs ?? origin.appliedAtMs, origin.appliedAtMs);
    return undefined;
  };
  // Commit statuses on the Git host (opt-in; the leader reports).
  const statusReporter = options.commitStatus ? createCommitStatusReporter({ poster: options.commitStatus, logger: log.child("commit-status"), now }) : undefined;
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
    for (const [cluster, p] of Object.entries(view.clusters as Record<string, { appliedAtMs?: number; state: string; nack?: { message?: string; errors?: { key: string; message: string }[] } }>)) {
      if (p.appliedAtMs !== undefined) applied.set(cluster, p.appliedAtMs);
      // A transient failure (retrying) is not a failure of the commit.
      if (p.nack && p.state === "refused") nacks.push({ cluster, message: p.nack.message ?? p.nack.errors?.map((e) => `${e.key}: ${e.message}`).join("; ") ?? "NACK" });
    }
    await statusReporter.inForce({ commit: desired.commit, acceptedAtMs: view.acceptedAt === null ? undefined : Date.parse(view.acceptedAt), expected: inForce.registered().map((r) => r.name), applied, nacks });
  };
  /** A commit's progress per cluster (this replica's over the store's), with when each ran it. */
  const mergedProgress = async (sha: string) => {
    const mine = convergence.get(sha);
    const shared = await store().getConvergence(sha).catch(() => undefined);
    const merged: Record<string, Progress> = {};
    for (const [c, p] of Object.entries(shared?.clusters ?? {})) merged[c] = { ...p };
    for (const [c, p] of Object.entries(mine?.clusters ?? {})) merged[c] = { ...merged[c], ...p };
    return { mine, shared, merged };
  };
  /** The facts clusterSync reads about a commit at one cluster. */
  const progressAt = async (reads: ProgressReads, sha: string, cluster: string): Promise<CommitProgressFacts | undefined> => {
    const p = (await readsOf(reads, sha)).merged[cluster];
    if (p === undefined) return undefined;
    const appliedAtMs = await appliedAtOf(cluster, p);
    const nack = nackText(p.nack);
    const nackTransient = nackFlag(p.nack);
    return { version: p.version, ...(appliedAtMs === undefined ? {} : { appliedAtMs }), ...(nack === undefined ? {} : { nack }), ...(nackTransient === undefined ? {} : { nackTransient }) };
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
      const minted = await options.mintCredential(name, { reissue: true });
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
  /**
   * Suspend and resume (admin role): a cluster, or the whole fleet. The actor is the authenticated
   * caller (the edge's `caller.actor`), never a field of the body; the body may carry `{"reason": "…"}`
   * (at most 500 characters). Answers what now holds the scope.
   */
  const suspensionRoute = (action: "suspend" | "resume", pattern: RegExp): Route => ({
    method: "POST",
    pattern,
    access: "admin",
    handler: async (req, res, [name], caller) => {
      const s = options.suspensions;
      if (!s) throw new HttpError(404, "suspensions are not available on this server");
      const scope = name ?? FLEET_SCOPE;
      if (name !== undefined) {
        if (!isValidClusterName(name)) throw new HttpError(400, `"${name}" is not a valid cluster name`);
        if (!inForce.isRegistered(name)) throw new HttpError(404, `no KubernetesCluster "${name}" in the desired state; see GET /api/clusters for the clusters`);
      }
      const reason = parseReason(await readBody(req, 16 * 1024));
      const where = name === undefined ? "the whole fleet" : `cluster ${name}`;
      let changed: boolean;
      if (action === "suspend") {
        const before = s.list().find((x) => x.scope === scope && x.source === "api");
        await s.suspend(scope, caller.actor, reason);
        changed = before === undefined;
        log.warn(`${where} suspended through the API: nothing new is applied, pruned or repaired there until resumed`, { scope, by: caller.actor, ...(reason === undefined ? {} : { reason }) });
      } else {
        changed = await s.resume(scope);
        if (changed) log.warn(`${where} resumed through the API: the newest output is delivered`, { scope, by: caller.actor });
      }
      const still = name === undefined ? s.list().find((x) => x.scope === FLEET_SCOPE) : s.of(name);
      const next =
        action === "resume" && still !== undefined
          ? still.source === "git"
            ? `still held by gitmesh.yaml (suspend) of the commit in force; remove it there in a commit to resume`
            : `still held: ${describeSuspension(still)}; resume ${still.scope === FLEET_SCOPE ? "the fleet (gitmesh resume --all)" : `the cluster (gitmesh resume ${still.scope})`}`
          : action === "resume"
            ? "delivering the output of the commit in force"
            : "nothing new is applied, pruned or repaired there until resumed (its agent leaves drift such as a hand edit alone); connection, discovery and status stay live";
      res.writeHead(200, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
      res.end(JSON.stringify({ scope: name === undefined ? "fleet" : name, action, changed, suspended: still ? suspensionView(still) : null, next }, null, 2) + "\n");
    },
  });
  const suspensionRoutes: Route[] = [
    suspensionRoute("suspend", /^\/api\/clusters\/([^/]+)\/suspend$/),
    suspensionRoute("resume", /^\/api\/clusters\/([^/]+)\/resume$/),
    suspensionRoute("suspend", /^\/api\/fleet\/suspend$/),
    suspensionRoute("resume", /^\/api\/fleet\/resume$/),
    {
      // The caller's role (the UI shows the admin actions only to an admin session).
      method: "GET",
      pattern: /^\/api\/session$/,
      access: "read",
      handler: (_req, res, _params, caller) => {
        res.writeHead(200, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
        res.end(JSON.stringify({ role: caller.role ?? null }) + "\n");
        return Promise.resolve();
      },
    },
    {
      method: "GET",
      pattern: /^\/api\/suspensions$/,
      access: "read",
      handler: (_req, res) => {
        res.writeHead(200, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
        res.end(JSON.stringify({ suspensions: (options.suspensions?.list() ?? []).map(suspensionView) }, null, 2) + "\n");
        return Promise.resolve();
      },
    },
  ];
  const clusterNames = async () => {
    const names = new Set<string>([...inForce.registered().map((r) => r.name), ...sessions.known()]);
    for (const o of await store().listOutputs()) names.add(o.cluster);
    return [...names].sort();
  };
  /**
   * A commit and each cluster's part in it. For the commit in force every registered cluster is listed
   * with the state of its cluster view (clusterSync); for an older one, how it fared (applied, refused,
   * superseded before it ran).
   */
  const commitView = async (sha: string) => {
    const reads: ProgressReads = new Map();
    const { mine, shared, merged } = await readsOf(reads, sha);
    const isInForce = inForce.current()?.commit === sha;
    if (!mine && !shared && !isInForce) return undefined;
    const isRegistered = new Set(inForce.registered().map((r) => r.name));
    const names = [...new Set([...Object.keys(merged), ...(isInForce ? isRegistered : [])])].sort();
    const clusters: Record<string, unknown> = {};
    let appliedCount = 0;
    let nacked = 0;
    for (const c of names) {
      const p = merged[c];
      const appliedAtMs = p === undefined ? undefined : await appliedAtOf(c, p);
      const nack = p === undefined ? undefined : nackText(p.nack);
      const sync: Pick<ClusterSync, "state" | "summary"> | undefined = isInForce && isRegistered.has(c) ? (await clusterView(c, reads))?.sync : undefined;
      const flag = p === undefined ? undefined : nackFlag(p.nack);
      const state = sync?.state ?? (p === undefined ? "superseded" : pastCommitState({ version: p.version, ...(appliedAtMs === undefined ? {} : { appliedAtMs }), ...(nack === undefined ? {} : { nack }), ...(flag === undefined ? {} : { nackTransient: flag }) }));
      // A cluster removed from Git does not count towards the commit's convergence (listed, flagged).
      if (isRegistered.has(c) && appliedAtMs !== undefined) appliedCount++;
      if (isRegistered.has(c) && state === "refused") nacked++;
      clusters[c] = {
        ...p,
        ...(appliedAtMs === undefined ? {} : { appliedAtMs }),
        ...(p?.unchangedFrom === undefined ? {} : { unchanged: true }),
        registered: isRegistered.has(c),
        state,
        ...(sync === undefined ? {} : { summary: sync.summary }),
      };
    }
    const info = options.commitLog?.info(sha);
    return {
      commit: sha,
      ...commitInfo(info),
      acceptedAt: mine?.acceptedAtMs !== undefined ? new Date(mine.acceptedAtMs).toISOString() : null,
      inForce: isInForce,
      rejected: null,
      audit: options.audited(sha) ?? null,
      applied: appliedCount,
      nacked,
      clusters,
    };
  };
  /** Why the audit branch waits, naming the clusters (null: it does not, or it is off). */
  const auditHeldView = () => {
    const h = config.auditBranch ? options.auditHeld?.() : undefined;
    return h ? { reason: h.reason, clusters: h.clusters, since: new Date(h.sinceMs).toISOString() } : null;
  };
  /** The provenance answer, kept while the commit in force, discovery and outputs are the same (a full index of the fleet to build). */
  let provenanceMemo: { key: string; value: ReturnType<typeof provenanceView> } | undefined;
  const provenance = async () => {
    const desired = inForce.current();
    if (!desired) return { commit: null, parents: [], policies: [] };
    const [discovery, outputs] = await Promise.all([store().listDiscovery(), store().listOutputs()]);
    const key = [desired.commit, ...discovery.map((d) => `${d.cluster}:${d.checksum}`).sort(), ...outputs.map((o) => `${o.cluster}@${o.hash}`).sort()].join("\n");
    if (provenanceMemo?.key !== key) provenanceMemo = { key, value: provenanceView({ commit: desired.commit, desired: desired.state, discovery, outputs }) };
    return provenanceMemo.value;
  };
  const api: ServerApi = {
    provenance,
    healthy: () => !options.stopped(),
    readiness: () => {
      if (options.stopped()) return { ready: false, reason: "stopping" };
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
      const reads: ProgressReads = new Map();
      const clusters = (await Promise.all(names.map((n) => clusterView(n, reads)))).filter((c) => c !== undefined);
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
        leader: options.isLeader(),
        rejected: src.rejection
          ? { commit: src.rejection.commit, rejectedAt: src.rejection.rejectedAt, errors: src.rejection.diagnostics.filter((d) => d.severity === Severity.Error).length, diagnostics: src.rejection.diagnostics.slice(0, 10).map(formatDiagnostic) }
          : null,
        audit: { branch: config.auditBranch || null, lastCommit: desired ? (options.audited(desired.commit) ?? null) : null, heldBack: auditHeldView() },
        clusters,
      };
    },
    clusters: async () => {
      const reads: ProgressReads = new Map();
      return { clusters: (await Promise.all((await clusterNames()).map((n) => clusterView(n, reads)))).filter((c) => c !== undefined) };
    },
    cluster: (name) => clusterView(name),
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
      const accepted = (await Promise.all(shas.map(commitView))).filter((c) => c !== undefined);
      // Rejected commits beside the accepted ones, newest first (a rejection is newer than the commit in force it left in force).
      const rejected = (options.commitLog?.rejected() ?? []).map((r) => ({
        commit: r.commit,
        ...commitInfo(r),
        acceptedAt: null,
        inForce: false,
        rejected: { at: r.rejectedAt, errorCount: r.errorCount, errors: r.errors },
        audit: null,
        applied: 0,
        nacked: 0,
        clusters: {},
      }));
      const at = (c: { acceptedAt: string | null; rejected: { at: string } | null }) => Date.parse(c.rejected?.at ?? c.acceptedAt ?? "") || 0;
      const commits = [...accepted, ...rejected.filter((r) => !accepted.some((a) => a.commit === r.commit))].sort((a, b) => at(b) - at(a));
      return { inForce: desired?.commit ?? null, commits };
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
    async insights() {
      const desired = inForce.current();
      const at = now();
      const [records, workspaces, traffic] = await Promise.all([store().listDiscovery(), store().listWorkspaceStatus(), options.traffic?.() ?? Promise.resolve(undefined)]);
      const discovery = new Map<string, DiscoverySnapshot>(records.map((r) => [r.cluster, r.snapshot]));
      // The relay client certificate of every registered cluster, as the server issued it.
      const certificates: CertificateExpiry[] = [];
      for (const { name } of inForce.registered()) {
        const issued = (await identities.read(name)).issued;
        if (issued !== undefined) certificates.push({ cluster: name, subject: "relay client certificate", notAfter: new Date(issued.notAfterMs).toISOString() });
      }
      const today = new Date(at).toISOString();
      const insights = analyze({
        ...(desired === undefined ? {} : { desired: desired.state }),
        discovery,
        // The diagnostics of each workspace's last translation (what selected nothing, …), not a new translation.
        translation: { diagnostics: workspaces.flatMap((w) => w.diagnostics) },
        certificates,
        ...(traffic === undefined ? {} : { traffic }),
        today,
      });
      const counts = { error: 0, warning: 0, info: 0 };
      for (const i of insights) counts[i.severity]++;
      return { commit: desired?.commit ?? null, today, counts, insights };
    },
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

  return { api, routes: [reissueRoute, ...suspensionRoutes, events.route], reportCommitStatuses, close: () => events.close() };
}

/** A suspension as the API shows it. */
function suspensionView(s: Suspension) {
  return { scope: s.scope === FLEET_SCOPE ? "fleet" : s.scope, since: new Date(s.sinceMs).toISOString(), by: s.by, reason: s.reason ?? null, source: s.source, summary: describeSuspension(s) };
}

/** The optional `{"reason": "…"}` body of a suspend or resume (empty body: no reason). */
function parseReason(body: Buffer): string | undefined {
  const text = body.toString("utf8").trim();
  if (text === "") return undefined;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new HttpError(400, 'the body must be JSON: {"reason": "<why>"} (or empty)');
  }
  const reason = (v as { reason?: unknown } | null)?.reason;
  if (reason === undefined || reason === null) return undefined;
  if (typeof reason !== "string" || reason.length > 500 || /[\u0000-\u001f]/.test(reason)) throw new HttpError(400, "`reason` must be a string of at most 500 characters on one line");
  return reason.trim() || undefined;
}

/** A NACK as one text (the tracker keeps its errors, the store one message). */
function nackText(nack: unknown): string | undefined {
  if (nack === undefined || nack === null) return undefined;
  const n = nack as { message?: unknown; errors?: unknown };
  if (typeof n.message === "string") return n.message;
  if (Array.isArray(n.errors)) return (n.errors as readonly { key: string; message: string }[]).map((e) => `${e.key}: ${e.message}`).join("; ") || "NACK";
  return "NACK";
}

/** The agent's classification of a NACK: the store's `transient`, or from the tracker's errors (nackTransient). */
function nackFlag(nack: unknown): boolean | undefined {
  if (nack === undefined || nack === null) return undefined;
  const n = nack as { transient?: unknown; errors?: unknown };
  if (typeof n.transient === "boolean") return n.transient;
  return Array.isArray(n.errors) ? nackTransient(n.errors as readonly { transient?: boolean }[]) : undefined;
}

/** Message and author of a commit (null when this replica did not read it from Git: adopted from the leader). */
function commitInfo(info: CommitInfo | undefined) {
  return { subject: info?.subject ?? null, message: info?.message ?? null, author: info ? `${info.author.name} <${info.author.email}>` : null, committedAt: info?.committedAt ?? null };
}
