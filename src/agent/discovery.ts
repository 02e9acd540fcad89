/**
 * Discovery: supervised informers for the kinds translation needs, and a compact snapshot built
 * with the discovery module's PURE conversion (snapshotFromKubernetesObjects) — the same code that
 * `gitmesh render --discovery` runs on manifests. Changes are debounced into one rebuild; the
 * listener receives the snapshot and its keyed entries (the relay state) each time it changed.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { describeError, type Diagnostic, type Logger } from "../core/index.js";
import { snapshotEntries, snapshotFromKubernetesObjects, type DiscoverySnapshot, type LabelSelector } from "../discovery/index.js";
import { stateChecksum } from "../relay/index.js";
import { createSupervisedInformer, type SupervisedInformer } from "./informer.js";
import { ISTIO_KINDS, KINDS, type KubeObject, type KubeReader } from "./kube.js";
import type { AgentMetrics } from "./metrics.js";
import type { BackoffOptions, Runnable } from "./runnable.js";

/** A discovery result: the snapshot, its relay state (entry key → canonical JSON bytes) and the relay checksum of that state. */
export interface DiscoveryResult {
  readonly snapshot: DiscoverySnapshot;
  readonly state: ReadonlyMap<string, Uint8Array>;
  readonly checksum: string;
  readonly bytes: number;
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
   * Quiet time before a rebuild after a change (default 250 ms). The wait also grows to twice the
   * duration of the last rebuild, so that a big cluster under a stream of changes never spends more
   * than about a third of its time rebuilding (a rebuild is synchronous CPU work).
   */
  readonly debounceMs?: number;
  /** Called with each new snapshot (only when its checksum changed). */
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

export function createDiscovery(options: DiscoveryOptions): Discovery {
  const log = options.logger;
  const debounceMs = options.debounceMs ?? 250;
  const istioNamespace = options.istioNamespace ?? "istio-system";
  let timer: NodeJS.Timeout | undefined;
  let current: DiscoveryResult | undefined;
  let running = false;
  let lastRebuildMs = 0;
  const firstWaiters: ((r: DiscoveryResult) => void)[] = [];

  const schedule = () => {
    if (!running || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      rebuild();
    }, Math.max(debounceMs, 2 * lastRebuildMs));
  };

  const mk = (ref: (typeof ISTIO_KINDS)[number], namespace?: string) =>
    createSupervisedInformer({
      kc: options.kc,
      reader: options.reader,
      ref,
      ...(namespace === undefined ? {} : { namespace }),
      onEvent: schedule,
      onSynced: schedule,
      onRestart: () => options.metrics?.informerRestarts.inc({ kind: ref.kind }),
      ...(options.backoff ? { backoff: options.backoff } : {}),
      logger: log,
    });

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
    try {
      const objects: KubeObject[] = [];
      for (const inf of informers) for (const o of inf.list()) objects.push(o);
      const { snapshot, diagnostics } = snapshotFromKubernetesObjects(options.cluster, objects, {
        ...(options.discoverySelectors === undefined ? {} : { discoverySelectors: options.discoverySelectors }),
      });
      const state = new Map<string, Uint8Array>();
      let bytes = 0;
      for (const [k, v] of snapshotEntries(snapshot)) {
        const b = encoder.encode(JSON.stringify(v));
        bytes += b.length;
        state.set(k, b);
      }
      const checksum = stateChecksum(state);
      if (current?.checksum === checksum) return;
      current = { snapshot, state, checksum, bytes, diagnostics };
      options.metrics?.snapshotEntries.set(state.size);
      options.metrics?.snapshotBytes.set(bytes);
      log.debug("discovery snapshot rebuilt", { entries: state.size, bytes, checksum });
      for (const w of firstWaiters.splice(0)) w(current);
      options.onSnapshot(current);
    } catch (err) {
      log.error("discovery snapshot failed; will retry on the next change", { error: describeError(err) });
    } finally {
      lastRebuildMs = performance.now() - started;
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
