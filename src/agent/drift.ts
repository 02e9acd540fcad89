/**
 * Drift repair: informers on the owned objects of this cluster (by label); when someone else
 * changes a field the agent applied, or deletes the object, the desired object is re-applied
 * (forced) and the repair counted. Only fields the agent sets are compared (a live object may carry
 * more: defaults, status, other managers' fields), so defaulting is not drift.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { describeError, type Logger } from "../core/index.js";
import { LABEL_CLUSTER, LABEL_MANAGED, type Applier } from "./applier.js";
import { createSupervisedInformer, type SupervisedInformer } from "./informer.js";
import { ISTIO_KINDS, objectKey, type KindRef, type KubeReader } from "./kube.js";
import type { AgentMetrics } from "./metrics.js";
import type { BackoffOptions, Runnable } from "./runnable.js";
import { inSync } from "./sync.js";

export { containsFields, inSync } from "./sync.js";

export interface DriftWatcherOptions {
  readonly kc: KubeConfig;
  readonly reader: KubeReader;
  readonly cluster: string;
  readonly applier: Applier;
  readonly kinds?: readonly KindRef[];
  readonly metrics?: AgentMetrics;
  readonly backoff?: BackoffOptions;
  readonly logger: Logger;
}

export interface DriftWatcher extends Runnable {
  /** Repairs made so far. */
  readonly repairs: number;
  readonly informers: readonly SupervisedInformer[];
}

export function createDriftWatcher(options: DriftWatcherOptions): DriftWatcher {
  const log = options.logger;
  const { applier } = options;
  let repairs = 0;
  let running = false;
  const pending = new Set<string>();
  const labelSelector = `${LABEL_MANAGED}=true,${LABEL_CLUSTER}=${options.cluster}`;

  const repair = (key: string, why: string, kind: string) => {
    if (pending.has(key)) return;
    pending.add(key);
    // Next tick: several events for one object collapse into one repair.
    setImmediate(() => {
      void (async () => {
        try {
          if (!running || !applier.desired().has(key)) return;
          await applier.reapply(key);
          repairs += 1;
          options.metrics?.driftRepairs.inc({ kind });
          log.warn("drift repaired: an owned object was changed by someone else", { object: key, why });
        } catch (err) {
          log.error("drift repair failed; will retry on the next change", { object: key, error: describeError(err) });
        } finally {
          pending.delete(key);
        }
      })();
    });
  };

  const informers = (options.kinds ?? ISTIO_KINDS).map((ref) =>
    createSupervisedInformer({
      kc: options.kc,
      reader: options.reader,
      ref,
      labelSelector,
      onEvent: (event, live) => {
        if (!running) return;
        const key = objectKey(live);
        const want = applier.desired().get(key);
        if (want === undefined) return;
        if (event === "delete") repair(key, "deleted", ref.kind);
        else if (!inSync(live, want)) repair(key, "changed", ref.kind);
      },
      onRestart: () => options.metrics?.informerRestarts.inc({ kind: `drift/${ref.kind}` }),
      ...(options.backoff ? { backoff: options.backoff } : {}),
      logger: log,
    }),
  );

  return {
    name: "drift",
    informers,
    get repairs() {
      return repairs;
    },
    async start(signal) {
      running = true;
      signal.addEventListener("abort", () => void this.stop(), { once: true });
      await Promise.all(informers.map((i) => i.start(signal)));
    },
    async stop() {
      running = false;
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}
