/**
 * Publishing and completeness: the newest output of every cluster, held back by the warming gate,
 * handed to the relay.
 *
 *   pipeline output ──newest per cluster──▶ warming gate ──open──▶ relay.publishOutput (+ convergence)
 *   gate opens (every cluster resent discovery, or the window passed) ──▶ every newest output published
 *   every registered cluster's discovery known ──pipeline idle──▶ settled: outputs reflect all of it
 *
 * Pruning is decided per dependency by the pipeline (src/queue/holds.ts): an output is complete unless
 * it must hold deletions it cannot carry, and is published as the pipeline computed it. `settled()`
 * is what the audit branch waits for: outputs computed before the last discovery was translated are
 * partial, so only once the pipeline went idle after every cluster's discovery is known do they count.
 *
 * A suspended cluster (suspensions.ts) is handed nothing: its newest output is kept here and handed
 * to the relay when it is resumed (`resumed`), so its agent is brought to the commit in force. Its agent
 * is told it is held (`holdOf`, asked by the relay when an agent subscribes; `holdsChanged` after every
 * read of the suspensions, before `resumed`): while held it applies, prunes and repairs nothing, so a
 * hand edit made during an incident stays until the cluster is resumed.
 *
 * A NACK whose every error is transient (HTTP 429/5xx, a timeout, an agent replica that lost its Lease:
 * cluster-sync.ts isTransientNack) is not a refusal: the same output is handed to the relay again after
 * a backoff (the agent re-applies it whole, skipping what is unchanged), until an ACK, another NACK or
 * a newer version.
 */
import { backoffDelay, describeError, type BackoffOptions, type Logger } from "../core/index.js";
import type { OutputHold, OutputNackEvent, RelayServer } from "../relay/index.js";
import { isTransientNack, nackTransient } from "./cluster-sync.js";
import type { SnapshotStore } from "../store/index.js";
import { relayResources } from "./completeness.js";
import type { ConvergenceTracker } from "./convergence.js";
import type { ServerMetrics } from "./metrics.js";
import type { PipelineOutput, PipelinePort } from "./pipeline-port.js";
import { createWarmingGate, type RegisteredCluster, type WarmingGate, type WarmingStatus } from "./warming.js";

export interface PublishingOptions {
  /** Waited on (idle) before outputs count as complete once every cluster's discovery is known. */
  readonly pipeline: Pick<PipelinePort, "idle">;
  /** The store in use now: the discovery and outputs that survived a restart. */
  readonly store: () => Pick<SnapshotStore, "listDiscovery" | "listOutputs" | "discoveryChecksums">;
  /** The relay once it listens (undefined before: outputs wait in memory until `publishAll`). */
  readonly relay: () => Pick<RelayServer, "publishOutput" | "holdsChanged"> | undefined;
  readonly convergence: Pick<ConvergenceTracker, "published">;
  readonly metrics: Pick<ServerMetrics, "outputsPublished" | "clustersWarmed" | "warming">;
  /** How long warming waits for every cluster's discovery after a restart that lost state. */
  readonly warmingWindowMs: number;
  /** What holds a cluster (a suspension): nothing new is handed to the relay for it, and its agent is told (default: none is). */
  readonly holdOf?: (cluster: string) => OutputHold | undefined;
  /** Clusters never waited for (default none; spec.skipWarming counts as well). */
  readonly skipWarming?: readonly string[];
  /** How long to wait for the pipeline to be idle before outputs count as complete anyway (default 120 s). */
  readonly idleTimeoutMs?: number;
  /** Delays between redeliveries after transient NACKs (default 1 s doubling to 60 s). */
  readonly retryBackoff?: BackoffOptions;
  /** Something the audit branch waits for happened: a new output published, the gate opened, outputs settled. */
  readonly onProgress?: () => void;
  readonly logger: Logger;
  /** Aborted when the server stops: outputs do not settle after it. */
  readonly signal?: AbortSignal;
  /** Clock (default Date.now). */
  readonly now?: () => number;
}

export interface Publishing {
  /** Builds the warming gate from the discovery the store kept (none: state was lost) and takes the stored outputs as the newest. */
  start(): Promise<void>;
  stop(): void;
  /** A new output version (every replica gets every cluster's). */
  onOutput(rec: PipelineOutput): void;
  /** Hands every newest output to the relay (it just started), unless warming. */
  publishAll(reason: string): void;
  /** Suspensions were lifted: hands each cluster no longer held its newest output, if it was not handed it yet. */
  resumed(isHeld: (cluster: string) => boolean): void;
  /** What holds a cluster, as its agent is told (the relay asks when an agent subscribes). */
  holdOf(cluster: string): OutputHold | undefined;
  /** The suspensions were read again: the relay tells each agent whose hold changed (before `resumed` hands over output). */
  holdsChanged(): void;
  /** The clusters of the commit in force. */
  setRegistered(clusters: readonly RegisteredCluster[]): void;
  /** A cluster's discovery is known. */
  discovered(cluster: string): void;
  /** Learns the discovery that reached other replicas (the shared store holds it). */
  learnDiscovery(): Promise<void>;
  /** An agent's NACK: a transient one is redelivered after a backoff. */
  nacked(event: OutputNackEvent): void;
  /** An agent's ACK (ends the redeliveries of its cluster). */
  acked(cluster: string): void;
  /** This replica's newest output of a cluster. */
  latest(cluster: string): PipelineOutput | undefined;
  /** What was last handed to the relay for a cluster. */
  published(cluster: string): { readonly version: number; readonly complete: boolean } | undefined;
  /** The warming gate (undefined before start). */
  warming(): WarmingStatus | undefined;
  /** The gate is open and outputs reflect every registered cluster's discovery (true before start). */
  settled(): boolean;
}

export function createPublishing(options: PublishingOptions): Publishing {
  const { metrics, logger: log } = options;
  const now = options.now ?? Date.now;
  const latest = new Map<string, PipelineOutput>();
  const published = new Map<string, { version: number; complete: boolean }>();
  let registered: readonly RegisteredCluster[] = [];
  let gate: WarmingGate | undefined;
  /** Each time every discovery becomes known a new generation starts; it settles once the pipeline is idle. */
  let settling = 0;
  let settledAt: number | undefined;

  const updateGauges = () => {
    const st = gate?.status();
    metrics.clustersWarmed.set(st ? st.discovered.filter((c) => registered.some((r) => r.name === c)).length : 0);
    metrics.warming.set(st?.warming ? 1 : 0);
  };

  const holdOf = (cluster: string) => options.holdOf?.(cluster);
  const suspended = (cluster: string) => holdOf(cluster) !== undefined;
  const publish = (rec: PipelineOutput, reason: string): void => {
    const relay = options.relay();
    if (!relay) return;
    if (suspended(rec.cluster)) {
      log.info("output held back: cluster suspended", { cluster: rec.cluster, version: rec.version, sourceCommit: rec.sourceCommit, reason });
      return;
    }
    const complete = rec.complete;
    relay.publishOutput(rec.cluster, { version: rec.version, sourceCommit: rec.sourceCommit, complete, resources: relayResources(rec) });
    published.set(rec.cluster, { version: rec.version, complete });
    metrics.outputsPublished.inc({ complete: String(complete) });
    options.convergence.published(rec.cluster, rec.version, rec.sourceCommit, now());
    const held = rec.held?.reduce((n, h) => n + h.objects.length, 0) ?? 0;
    log.info("output published", { cluster: rec.cluster, version: rec.version, sourceCommit: rec.sourceCommit, resources: rec.resources.length, complete, reason, ...(held > 0 ? { held } : {}), ...(rec.options?.allowMassDeletion === true ? { allowMassDeletion: true } : {}) });
  };

  const onOutput = (rec: PipelineOutput): void => {
    const prev = latest.get(rec.cluster);
    if (prev && prev.version > rec.version) return;
    latest.set(rec.cluster, rec);
    if (gate?.warming) {
      log.debug("output held back while warming", { cluster: rec.cluster, version: rec.version });
      return;
    }
    publish(rec, "new output");
    options.onProgress?.();
  };

  const warmed = (g: WarmingGate) => () => {
    const st = g.status();
    log.info("warmed: publishing output", { reason: st.reason, waitedMs: now() - st.sinceMs, missing: st.waitingFor });
    updateGauges();
    for (const rec of latest.values()) publish(rec, `warmed (${st.reason})`);
    options.onProgress?.();
  };

  // Every cluster's discovery is known now, but outputs computed before the last of it was translated
  // are partial: only once the pipeline is idle (every replica's queue) do the latest outputs reflect
  // all of it. Until then nothing is marked complete (the agents prune nothing).
  const inputsComplete = (g: WarmingGate) => () => {
    const generation = ++settling;
    settledAt = undefined;
    void options.pipeline
      .idle(options.idleTimeoutMs ?? 120_000)
      .catch((err: unknown) => log.warn("pipeline not idle; marking outputs complete anyway", { error: describeError(err) }))
      .then(() => {
        if (generation !== settling || options.signal?.aborted === true || !g.inputsComplete()) return;
        settledAt = generation;
        // Outputs published as incomplete while some discovery was missing: mark them complete now.
        for (const rec of latest.values()) {
          const p = published.get(rec.cluster);
          if (p && !p.complete && rec.complete && !g.warming) publish(rec, "inputs complete");
        }
        options.onProgress?.();
      });
  };

  /** Redeliveries after transient NACKs, per cluster: the version and how many were made. */
  const retries = new Map<string, { version: number; attempt: number; timer: NodeJS.Timeout }>();
  const stopRetry = (cluster: string) => {
    clearTimeout(retries.get(cluster)?.timer);
    retries.delete(cluster);
  };
  const nacked = (event: OutputNackEvent): void => {
    const prev = retries.get(event.cluster);
    stopRetry(event.cluster);
    // The agent's own word when it gave one (the `transient` flag), else its messages (older agents).
    if (!(nackTransient(event.errors) ?? isTransientNack(event.errors.map((e) => `${e.key}: ${e.message}`)))) return;
    const attempt = prev?.version === event.version ? prev.attempt + 1 : 0;
    const delayMs = backoffDelay(options.retryBackoff ?? { initialMs: 1000, maxMs: 60_000 }, attempt);
    log.info("transient failure applying output; redelivering it", { cluster: event.cluster, version: event.version, attempt: attempt + 1, delayMs: Math.round(delayMs), first: event.errors[0]?.message });
    const timer = setTimeout(() => {
      const rec = latest.get(event.cluster);
      if (rec?.version !== event.version || gate?.warming === true || options.signal?.aborted === true) return;
      publish(rec, `redelivery after a transient failure (attempt ${String(attempt + 1)})`);
    }, delayMs);
    timer.unref();
    retries.set(event.cluster, { version: event.version, attempt, timer });
  };

  return {
    nacked,
    acked: stopRetry,
    async start() {
      // Warming: state is lost when the store remembers no discovery at all.
      const known = (await options.store().listDiscovery()).map((d) => d.cluster);
      const g = createWarmingGate({ lostState: known.length === 0, windowMs: options.warmingWindowMs, ...(options.skipWarming ? { skip: options.skipWarming } : {}), known, now });
      gate = g;
      g.onWarmed(warmed(g));
      g.onInputsComplete(inputsComplete(g));
      for (const rec of await options.store().listOutputs()) onOutput(rec);
    },
    stop: () => {
      gate?.stop();
      for (const c of [...retries.keys()]) stopRetry(c);
    },
    onOutput,
    publishAll(reason) {
      for (const rec of latest.values()) if (!gate?.warming) publish(rec, reason);
    },
    resumed(isHeld) {
      if (gate?.warming === true) return; // the gate hands every newest output over when it opens
      for (const rec of latest.values()) {
        if (isHeld(rec.cluster) || (published.get(rec.cluster)?.version ?? 0) >= rec.version) continue;
        publish(rec, "resumed");
      }
      options.onProgress?.();
    },
    holdOf,
    holdsChanged: () => options.relay()?.holdsChanged(),
    setRegistered(clusters) {
      registered = clusters;
      gate?.setRegistered(clusters);
      updateGauges();
    },
    discovered(cluster) {
      gate?.discovered(cluster);
      updateGauges();
    },
    async learnDiscovery() {
      if (!gate) return;
      for (const cluster of (await options.store().discoveryChecksums()).keys()) gate.discovered(cluster);
      updateGauges();
    },
    latest: (cluster) => latest.get(cluster),
    published: (cluster) => published.get(cluster),
    warming: () => gate?.status(),
    settled: () => gate === undefined || (!gate.warming && gate.inputsComplete() && settledAt === settling),
  };
}
