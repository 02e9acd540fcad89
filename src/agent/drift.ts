/**
 * Drift repair: informers on every object of the kinds the agent writes; for an object the agent
 * OWNS (inventory member with the same uid — labels decide nothing), a change by someone else to a
 * field the agent applied (lists compared exactly, so a key added inside a list element counts), or a
 * deletion, re-applies the desired object (forced, uid precondition) and counts the repair. The
 * other field managers involved are read from `managedFields` and named in the log. Paths the
 * output leaves to other controllers (ignoreDifferences) are neither compared nor applied.
 *
 * A FIGHT — `fightRepairs` repairs of one object within `fightWindowMs` (default 3 in 60 s) — backs
 * off: the next repair of that object waits `fightBackoffMs` (default 5 s), doubling per further
 * repair up to `fightMaxBackoffMs` (default 5 min). It is reported at once (log with the other
 * manager's name, gitmesh_agent_drift_fights_total) and with the next output's result (NACK entry
 * `fight/<object>`). A quiet window ends the fight.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { describeError, type Logger } from "../core/index.js";
import type { Applier } from "./applier.js";
import { createSupervisedInformer, type SupervisedInformer } from "./informer.js";
import { FIELD_MANAGER, ISTIO_KINDS, objectKey, type KindRef, type KubeObject, type KubeReader } from "./kube.js";
import type { AgentMetrics } from "./metrics.js";
import type { BackoffOptions, Runnable } from "./runnable.js";
import { foreignManagers, inSync } from "./sync.js";

export { containsFields, inSync } from "./sync.js";

export interface DriftWatcherOptions {
  readonly kc: KubeConfig;
  readonly reader: KubeReader;
  readonly cluster: string;
  readonly applier: Applier;
  readonly kinds?: readonly KindRef[];
  /** The agent's field manager (default `gitmesh-agent`). */
  readonly fieldManager?: string;
  /** Repairs of one object within `fightWindowMs` that make a fight (default 3). */
  readonly fightRepairs?: number;
  /** Default 60 s. */
  readonly fightWindowMs?: number;
  /** First back-off delay of a fight (default 5 s), doubling per repair. */
  readonly fightBackoffMs?: number;
  /** Default 5 min. */
  readonly fightMaxBackoffMs?: number;
  readonly metrics?: AgentMetrics;
  readonly backoff?: BackoffOptions;
  /** Told of each repair (the agent reports them to the server, for its API and UI). */
  readonly onRepair?: (repair: { readonly key: string; readonly why: "changed" | "deleted"; readonly atMs: number; readonly managers: readonly string[] }) => void;
  readonly logger: Logger;
}

export interface DriftWatcher extends Runnable {
  /** Repairs made so far. */
  readonly repairs: number;
  /** Objects currently in a fight (object key → other managers). */
  readonly fights: ReadonlyMap<string, readonly string[]>;
  readonly informers: readonly SupervisedInformer[];
}

export function createDriftWatcher(options: DriftWatcherOptions): DriftWatcher {
  const log = options.logger;
  const { applier } = options;
  const fieldManager = options.fieldManager ?? FIELD_MANAGER;
  const fightRepairs = Math.max(1, options.fightRepairs ?? 3);
  const windowMs = options.fightWindowMs ?? 60_000;
  const backoffMs = options.fightBackoffMs ?? 5_000;
  const maxBackoffMs = options.fightMaxBackoffMs ?? 300_000;
  let repairs = 0;
  let running = false;
  const pending = new Set<string>();
  /** Object key → times of its recent repairs. */
  const history = new Map<string, number[]>();
  const fights = new Map<string, string[]>();
  const timers = new Set<NodeJS.Timeout>();

  /** Delay before repairing `key` now: 0 unless it is in a fight. */
  function delayFor(key: string, kind: string, managers: readonly string[]): number {
    const now = Date.now();
    const recent = (history.get(key) ?? []).filter((t) => now - t < windowMs);
    history.set(key, recent);
    if (recent.length < fightRepairs) {
      if (fights.delete(key)) applier.reportFight(key, undefined);
      return 0;
    }
    const delay = Math.min(maxBackoffMs, backoffMs * 2 ** (recent.length - fightRepairs));
    const who = managers.length > 0 ? managers.join(", ") : "an unknown manager";
    if (!fights.has(key)) {
      options.metrics?.driftFights.inc({ kind });
      log.error("fight: another field manager keeps changing an owned object; repairs back off", { object: key, managers: who, repairs: recent.length, windowMs, nextRepairInMs: delay });
    }
    fights.set(key, [...managers]);
    applier.reportFight(
      key,
      `fight over ${key} with ${who}: ${recent.length} repairs within ${Math.round(windowMs / 1000)} s; repairs back off (next in ${Math.round(delay / 1000)} s). ` +
        `Stop the other controller from writing these fields, or leave them to it with ignoreDifferences in the configuration repository.`,
    );
    return delay;
  }

  const repair = (key: string, why: string, kind: string, live: KubeObject | undefined, managers: readonly string[]) => {
    if (pending.has(key)) return;
    pending.add(key);
    const delay = delayFor(key, kind, managers);
    // At least the next tick: several events for one object collapse into one repair.
    const t = setTimeout(() => {
      timers.delete(t);
      void (async () => {
        try {
          if (!running || !applier.desired().has(key)) return;
          const result = await applier.reapply(key, live);
          if (result !== "repaired") return;
          repairs += 1;
          history.set(key, [...(history.get(key) ?? []), Date.now()]);
          options.metrics?.driftRepairs.inc({ kind });
          log.warn("drift repaired: an owned object was changed by someone else", { object: key, why, ...(managers.length > 0 ? { managers: managers.join(", ") } : {}) });
          options.onRepair?.({ key, why: why === "deleted" ? "deleted" : "changed", atMs: Date.now(), managers });
        } catch (err) {
          log.error("drift repair failed; will retry on the next change", { object: key, error: describeError(err) });
        } finally {
          pending.delete(key);
        }
      })();
    }, delay);
    timers.add(t);
  };

  // A kind the agent may touch in some namespaces only is watched there only (its RBAC allows no more).
  const watches = (options.kinds ?? ISTIO_KINDS).flatMap((ref) => (ref.namespaces ?? [undefined]).map((namespace) => ({ ref, namespace })));
  const informers = watches.map(({ ref, namespace }) =>
    createSupervisedInformer({
      kc: options.kc,
      reader: options.reader,
      ref,
      ...(namespace === undefined ? {} : { namespace }),
      onEvent: (event, live) => {
        if (!running) return;
        const key = objectKey(live);
        const want = applier.desired().get(key);
        if (want === undefined || !applier.owns(live)) return;
        if (event === "delete") return repair(key, "deleted", ref.kind, live, []);
        const ignored = applier.ignoredPaths(key);
        if (!inSync(live, want, ignored)) repair(key, "changed", ref.kind, live, foreignManagers(live, want, fieldManager, ignored));
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
    get fights() {
      return fights;
    },
    async start(signal) {
      running = true;
      signal.addEventListener("abort", () => void this.stop(), { once: true });
      await Promise.all(informers.map((i) => i.start(signal)));
    },
    async stop() {
      running = false;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      pending.clear();
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}
