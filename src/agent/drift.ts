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
 *
 * No repair is lost to a watch gap: at every watch reconnect (a cut connection, a server-side close)
 * the watched kind is RELISTED from the API server and each desired object of that kind is checked
 * against it — missing (deleted during the gap) or drifted (edited during the gap) is repaired. A
 * periodic full resync (`resyncPeriodMs`, default 5 min as controller-runtime's SyncPeriod, ± 10 %
 * jitter) relists every watched kind the same way, so repairs go on even when a watch died
 * silently. A repair that failed (API unreachable, a conflict) is retried with backoff, and an event
 * that arrives while a repair of the same object is in flight is re-checked after it.
 *
 * HELD (`held()` true: the management server suspended the cluster, issue #38): the watcher keeps
 * watching and relisting but repairs nothing — a hand edit made during an incident stays. Each drift it
 * finds is logged at debug and counted (gitmesh_agent_drift_unrepaired_total). When the hold ends the
 * agent calls `resync()`, which repairs what drifted meanwhile.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { describeError, type Logger } from "../core/index.js";
import type { Applier } from "./applier.js";
import { createSupervisedInformer, type SupervisedInformer } from "./informer.js";
import { FIELD_MANAGER, ISTIO_KINDS, messageOf, objectKey, type KindRef, type KubeObject, type KubeReader } from "./kube.js";
import type { AgentMetrics } from "./metrics.js";
import { backoffDelay, type BackoffOptions, type Runnable } from "./runnable.js";
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
  /**
   * Full resync: every watched kind relisted from the API server and each desired object re-checked
   * (default 5 min, as controller-runtime's SyncPeriod; ± 10 % jitter; 0 turns it off).
   */
  readonly resyncPeriodMs?: number;
  readonly metrics?: AgentMetrics;
  /** Informer restarts and failed repairs retry with this backoff (default 200 ms doubling to 30 s). */
  readonly backoff?: BackoffOptions;
  /** Whether the cluster is held (the server suspended it): drift is found and counted but not repaired (default: never). */
  readonly held?: () => boolean;
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
  /** Relists completed (at watch reconnects and periodic resyncs). */
  readonly relists: number;
  /** Relists every watched kind now and repairs what differs from the desired state (what the periodic resync runs). */
  resync(): Promise<void>;
}

/** Why an object is repaired. */
type Why = "changed" | "deleted";

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
  /** Objects that got another event while their repair was in flight: re-checked after it. */
  const again = new Set<string>();
  /** Object key → failed repairs in a row (retry backoff). */
  const failures = new Map<string, number>();
  const resyncPeriodMs = options.resyncPeriodMs ?? 300_000;
  let relists = 0;

  /** Delay before repairing `key` now: 0 unless it is in a fight. */
  function delayFor(key: string, kind: string, managers: readonly string[]): number {
    const now = Date.now();
    const recent = (history.get(key) ?? []).filter((t) => now - t < windowMs);
    history.set(key, recent);
    if (recent.length < fightRepairs) {
      if (fights.delete(key)) applier.reportFight(key, undefined);
      return 0;
    }
    const delay = backoffDelay({ initialMs: backoffMs, maxMs: maxBackoffMs, jitter: 0 }, recent.length - fightRepairs);
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

  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };

  /** Whether `live` (undefined: absent) differs from the desired `want` in what the agent owns. */
  function differs(key: string, want: KubeObject, live: KubeObject | undefined): boolean {
    if (live === undefined) return true;
    return applier.owns(live) && !inSync(live, want, applier.ignoredPaths(key));
  }

  /** Repairs `key` when `live` (undefined: absent) differs from the desired `want`. */
  function check(key: string, kind: string, want: KubeObject, live: KubeObject | undefined): void {
    if (!differs(key, want, live)) return;
    if (live === undefined) return repair(key, "deleted", kind, undefined, []);
    repair(key, "changed", kind, live, foreignManagers(live, want, fieldManager, applier.ignoredPaths(key)));
  }

  /** Reads `key` afresh and repairs it if it still differs (after a failed repair, or an event during one). */
  async function recheck(key: string): Promise<void> {
    const want = applier.desired().get(key);
    if (!running || want === undefined) return;
    const ref: KindRef = { apiVersion: want.apiVersion, kind: want.kind, plural: "", namespaced: want.metadata.namespace !== undefined };
    try {
      check(key, want.kind, want, await options.reader.get(ref, want.metadata.namespace, want.metadata.name));
    } catch (err) {
      retryLater(key, err);
    }
  }

  function retryLater(key: string, err: unknown) {
    const n = failures.get(key) ?? 0;
    failures.set(key, n + 1);
    const inMs = Math.round(backoffDelay(options.backoff ?? {}, n));
    log.error("drift repair failed; retrying", { object: key, error: describeError(err), inMs });
    later(inMs, () => void recheck(key));
  }

  function repair(key: string, why: Why, kind: string, live: KubeObject | undefined, managers: readonly string[]): void {
    if (options.held?.() === true) {
      options.metrics?.driftUnrepaired.inc({ kind });
      log.debug("drift left as it is: the cluster is held by the server", { object: key, why, ...(managers.length > 0 ? { managers: managers.join(", ") } : {}) });
      return;
    }
    if (pending.has(key)) {
      again.add(key);
      return;
    }
    pending.add(key);
    // At least the next tick: several events for one object collapse into one repair.
    later(delayFor(key, kind, managers), () => void runRepair(key, why, kind, live, managers));
  }

  async function runRepair(key: string, why: Why, kind: string, live: KubeObject | undefined, managers: readonly string[]): Promise<void> {
    let failed = false;
    try {
      // A hold that started after the repair was scheduled wins: the object is left as it is.
      if (!running || !applier.desired().has(key) || options.held?.() === true) return;
      const result = await applier.reapply(key, live);
      failures.delete(key);
      if (result !== "repaired") return;
      repairs += 1;
      history.set(key, [...(history.get(key) ?? []), Date.now()]);
      options.metrics?.driftRepairs.inc({ kind });
      log.warn("drift repaired: an owned object was changed by someone else", { object: key, why, ...(managers.length > 0 ? { managers: managers.join(", ") } : {}) });
      options.onRepair?.({ key, why, atMs: Date.now(), managers });
    } catch (err) {
      failed = true;
      if (running) retryLater(key, err);
    } finally {
      pending.delete(key);
      // An event during the repair (or a failure) may describe a state the repair did not see.
      if (again.delete(key) && running && !failed) void recheck(key);
    }
  }

  // A kind the agent may touch in some namespaces only is watched there only (its RBAC allows no more).
  const watches = (options.kinds ?? ISTIO_KINDS).flatMap((ref) => (ref.namespaces ?? [undefined]).map((namespace) => ({ ref, namespace })));
  const informers = watches.map(({ ref, namespace }, i) =>
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
        check(key, ref.kind, want, live);
      },
      onRestart: () => options.metrics?.informerRestarts.inc({ kind: `drift/${ref.kind}` }),
      onReconnect: () => void relist(watches[i]!, "watch reconnected"),
      ...(options.backoff ? { backoff: options.backoff } : {}),
      logger: log,
    }),
  );

  /** Relists in flight per watch; a reconnect during one relists once more after it. */
  const relisting = new Map<number, Promise<void>>();
  const relistAgain = new Set<number>();

  /** Lists one watched kind from the API server and checks every desired object of it against the list. */
  function relist(w: { ref: KindRef; namespace: string | undefined }, why: string): Promise<void> {
    const i = watches.indexOf(w);
    const inFlight = relisting.get(i);
    if (inFlight) {
      relistAgain.add(i);
      return inFlight;
    }
    const run = (async () => {
      do {
        relistAgain.delete(i);
        await relistOnce(w, why);
      } while (relistAgain.has(i) && running);
    })().finally(() => relisting.delete(i));
    relisting.set(i, run);
    return run;
  }

  async function relistOnce({ ref, namespace }: { ref: KindRef; namespace: string | undefined }, why: string): Promise<void> {
    if (!running) return;
    const wanted = [...applier.desired()].filter(([, o]) => o.apiVersion === ref.apiVersion && o.kind === ref.kind && (namespace === undefined || o.metadata.namespace === namespace));
    if (wanted.length === 0) return;
    let items: KubeObject[];
    try {
      items = (await options.reader.list(ref, namespace === undefined ? {} : { namespace })).items;
    } catch (err) {
      log.warn("relist failed; the next reconnect or resync tries again", { kind: ref.kind, why, error: messageOf(err) });
      return;
    }
    relists += 1;
    const live = new Map(items.map((o) => [objectKey({ ...o, apiVersion: ref.apiVersion, kind: ref.kind }), o]));
    for (const [key, want] of wanted) {
      // The list may be older than a repair or an apply made meanwhile: a difference is read again before it is repaired.
      if (applier.desired().get(key) === want && differs(key, want, live.get(key))) void recheck(key);
    }
  }

  async function resync(): Promise<void> {
    await Promise.all(watches.map((w) => relist(w, "periodic resync")));
  }

  const scheduleResync = () => {
    if (resyncPeriodMs <= 0 || !running) return;
    later(resyncPeriodMs * (1 + 0.1 * Math.random()), () => {
      void resync().finally(scheduleResync);
    });
  };

  return {
    name: "drift",
    informers,
    get relists() {
      return relists;
    },
    resync,
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
      scheduleResync();
    },
    async stop() {
      running = false;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      pending.clear();
      again.clear();
      failures.clear();
      await Promise.all([...relisting.values()]);
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}
