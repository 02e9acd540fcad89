/**
 * Discovery: supervised informers for the kinds translation needs, and a compact snapshot
 * maintained INCREMENTALLY from their events (createIncrementalSnapshot: the same per-object code
 * as the pure snapshotFromKubernetesObjects that `gitmesh render --discovery` runs, and tested to
 * give byte-identical entries). An event only marks what it affects; changes are debounced into
 * one flush, which recomputes those entries alone (milliseconds on a 30,000-object cluster) and
 * hands the listener the new relay state and the delta. After every (re)list of an informer its
 * kind is reconciled with the informer's cache, so nothing depends on the events of a relist.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { describeError, type Diagnostic, type Logger } from "../core/index.js";
import { createIncrementalSnapshot, isEmptyDelta, snapshotFromEntries, type DiscoverySnapshot, type LabelSelector, type SnapshotDelta } from "../discovery/index.js";
import { stateChecksum } from "../relay/index.js";
import { createSupervisedInformer, type SupervisedInformer } from "./informer.js";
import { ISTIO_KINDS, KINDS, type KubeReader } from "./kube.js";
import type { AgentMetrics } from "./metrics.js";
import type { BackoffOptions, Runnable } from "./runnable.js";

/** A discovery result: the snapshot, its relay state (entry key → canonical JSON bytes) and the relay checksum of that state. */
export interface DiscoveryResult {
  /** The snapshot (built from `state` on first access). */
  readonly snapshot: DiscoverySnapshot;
  readonly state: ReadonlyMap<string, Uint8Array>;
  /** Relay checksum of `state` (computed on first access). */
  readonly checksum: string;
  readonly bytes: number;
  /** What changed since the previous result (the first result: everything added). */
  readonly delta: SnapshotDelta;
  readonly diagnostics: readonly Diagnostic[];
}

export interface DiscoveryOptions {
  readonly kc: KubeConfig;
  readonly reader: KubeReader;
  readonly cluster: string;
  /** Namespace of the Istio control plane whose ConfigMaps (mesh config) are read (default `istio-system`). */
  readonly istioNamespace?: string;
  /** Discovery selectors on namespace labels; default: the mesh config's, else every namespace. */
  readonly discoverySelectors?: readonly LabelSelector[];
  /**
   * Quiet time before a flush after a change (default 100 ms). The wait also grows to twice the
   * duration of the last flush, so that a stream of changes never keeps the event loop busy more
   * than about a third of the time (a flush is synchronous CPU work, milliseconds after the first).
   */
  readonly debounceMs?: number;
  /** Called with each new snapshot (only when something changed). */
  readonly onSnapshot: (result: DiscoveryResult) => void;
  readonly backoff?: BackoffOptions;
  readonly metrics?: AgentMetrics;
  readonly logger: Logger;
}

export interface Discovery extends Runnable {
  /** The last snapshot built (undefined before every informer listed once). */
  current(): DiscoveryResult | undefined;
  /** Resolves with the first complete snapshot. */
  firstSnapshot(): Promise<DiscoveryResult>;
  /** Whether every informer has listed at least once. */
  readonly synced: boolean;
  readonly informers: readonly SupervisedInformer[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function lazy<T>(fn: () => T): () => T {
  let done = false;
  let value: T;
  return () => {
    if (!done) {
      value = fn();
      done = true;
    }
    return value;
  };
}

export function createDiscovery(options: DiscoveryOptions): Discovery {
  const log = options.logger;
  const debounceMs = options.debounceMs ?? 100;
  const istioNamespace = options.istioNamespace ?? "istio-system";
  let timer: NodeJS.Timeout | undefined;
  let current: DiscoveryResult | undefined;
  let running = false;
  let lastRebuildMs = 0;
  const firstWaiters: ((r: DiscoveryResult) => void)[] = [];
  const builder = createIncrementalSnapshot(options.cluster, {
    ...(options.discoverySelectors === undefined ? {} : { discoverySelectors: options.discoverySelectors }),
  });
  const state = new Map<string, Uint8Array>();
  let bytes = 0;

  const schedule = () => {
    if (!running || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      rebuild();
    }, Math.max(debounceMs, 2 * lastRebuildMs));
  };

  const mk = (ref: (typeof ISTIO_KINDS)[number], namespace?: string): SupervisedInformer => {
    const inf: SupervisedInformer = createSupervisedInformer({
      kc: options.kc,
      reader: options.reader,
      ref,
      ...(namespace === undefined ? {} : { namespace }),
      onEvent: (event, obj) => {
        if (event === "delete") builder.remove(obj);
        else builder.upsert(obj);
        schedule();
      },
      onSynced: () => {
        // the cache after a (re)list is the truth for this kind; objects already held are skipped by identity
        builder.replaceKind(ref.apiVersion, ref.kind, inf.list(), namespace);
        schedule();
      },
      onRestart: () => options.metrics?.informerRestarts.inc({ kind: ref.kind }),
      ...(options.backoff ? { backoff: options.backoff } : {}),
      logger: log,
    });
    return inf;
  };

  const informers: SupervisedInformer[] = [
    mk(KINDS.Namespace),
    mk(KINDS.Node),
    mk(KINDS.Service),
    mk(KINDS.Deployment),
    mk(KINDS.StatefulSet),
    mk(KINDS.DaemonSet),
    mk(KINDS.Pod),
    mk(KINDS.ConfigMap, istioNamespace),
    ...ISTIO_KINDS.map((k) => mk(k)),
  ];

  function rebuild() {
    if (!running || !informers.every((i) => i.synced)) return;
    const started = performance.now();
    const first = current === undefined;
    try {
      if (!first && !builder.pending) return;
      const delta = builder.flush();
      if (current !== undefined && isEmptyDelta(delta)) return;
      for (const key of delta.removed) {
        bytes -= state.get(key)?.length ?? 0;
        state.delete(key);
      }
      for (const { key, value } of [...delta.added, ...delta.changed]) {
        const b = encoder.encode(JSON.stringify(value));
        bytes += b.length - (state.get(key)?.length ?? 0);
        state.set(key, b);
      }
      const snapshotState = new Map(state);
      const snapshot = lazy(() => snapshotFromEntries(new Map([...snapshotState].map(([k, v]) => [k, JSON.parse(decoder.decode(v)) as unknown]))));
      const checksum = lazy(() => stateChecksum(snapshotState));
      const diagnostics = builder.diagnostics();
      const result: DiscoveryResult = {
        get snapshot() {
          return snapshot();
        },
        state: snapshotState,
        get checksum() {
          return checksum();
        },
        bytes,
        delta,
        diagnostics,
      };
      current = result;
      options.metrics?.snapshotEntries.set(state.size);
      options.metrics?.snapshotBytes.set(bytes);
      log.debug("discovery snapshot updated", { entries: state.size, bytes, added: delta.added.length, changed: delta.changed.length, removed: delta.removed.length });
      for (const w of firstWaiters.splice(0)) w(result);
      options.onSnapshot(result);
    } catch (err) {
      log.error("discovery snapshot failed; will retry on the next change", { error: describeError(err) });
    } finally {
      // the first flush computes everything once; the debounce follows the incremental ones
      if (!first) lastRebuildMs = performance.now() - started;
    }
  }

  return {
    name: "discovery",
    informers,
    get synced() {
      return informers.every((i) => i.synced);
    },
    current: () => current,
    firstSnapshot: () => (current ? Promise.resolve(current) : new Promise((resolve) => firstWaiters.push(resolve))),
    async start(signal) {
      running = true;
      signal.addEventListener("abort", () => void this.stop(), { once: true });
      await Promise.all(informers.map((i) => i.start(signal)));
    },
    async stop() {
      running = false;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}
