/**
 * Leader election on a coordination.k8s.io/v1 Lease (client-go's algorithm): the holder renews
 * every `retryPeriodMs`; another replica takes over once it has seen the same record unchanged for
 * `leaseDurationMs` (measured on its own clock, so clock skew between nodes does not matter); a
 * leader that cannot renew for `renewDeadlineMs` steps down; stopping releases the Lease so a
 * standby takes over at once. Optimistic concurrency (resourceVersion) settles races.
 *
 * Renewal never waits for anything else: `onStartedLeading` runs beside the renew loop (a start-up
 * stalled on a slow API cannot hold renewals back), every Lease request is bounded by the time left
 * before the deadline, and a watchdog steps down AT the deadline even while a request hangs:
 * `isLeader` turns false (the agent stops applying, /readyz and the leader metric say so) before any
 * standby can take over (renewDeadline < leaseDuration). Stopping the leader-only parts runs in the
 * background; a new term starts only after they stopped.
 */
import { describeError, type Logger } from "../core/index.js";
import { messageOf, statusOf, type FieldOwnerWriter, type KindRef, type KubeObject, type KubeReader } from "./kube.js";
import { sleep, type Runnable } from "./runnable.js";

export const LEASE_KIND: KindRef = { apiVersion: "coordination.k8s.io/v1", kind: "Lease", plural: "leases", namespaced: true };

export interface LeaderElectorOptions {
  readonly reader: KubeReader;
  readonly writer: FieldOwnerWriter;
  readonly namespace: string;
  /** Lease name (default `gitmesh-agent`). */
  readonly name?: string;
  /** This replica's identity (pod name). */
  readonly identity: string;
  /** Default 15 s. */
  readonly leaseDurationMs?: number;
  /** Default 10 s. */
  readonly renewDeadlineMs?: number;
  /** Default 2 s. */
  readonly retryPeriodMs?: number;
  /** Runs when this replica becomes leader; `signal` aborts when it stops being leader. */
  readonly onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  /** Runs (and is awaited) when this replica stops being leader. */
  readonly onStoppedLeading: () => void | Promise<void>;
  /** Called synchronously the moment leadership starts (true) or ends (false), e.g. for a metric. */
  readonly onLeadershipChange?: (leading: boolean) => void;
  readonly now?: () => number;
  readonly logger: Logger;
}

export interface LeaderElector extends Runnable {
  /** True while this replica holds a Lease it renewed within the renew deadline. */
  readonly isLeader: boolean;
  /** Whether the last Lease read/write succeeded within the renew deadline (a standby that cannot reach the Lease is not ready). */
  readonly leaseReachable: boolean;
  /** Holder seen in the last read of the Lease. */
  readonly observedHolder: string | undefined;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

/** RFC 3339 with microseconds, as Kubernetes MicroTime expects. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

export function createLeaderElector(options: LeaderElectorOptions): LeaderElector {
  const log = options.logger;
  const name = options.name ?? "gitmesh-agent";
  const leaseMs = options.leaseDurationMs ?? 15_000;
  const renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
  const retryMs = options.retryPeriodMs ?? 2_000;
  const now = options.now ?? Date.now;
  let leader = false;
  let leadership: AbortController | undefined;
  let observed: { record: string; at: number; holder: string | undefined } | undefined;
  let lastRenew = 0;
  let loop: Promise<void> | undefined;
  let stopController: AbortController | undefined;

  const leaseObject = (spec: LeaseSpec, resourceVersion?: string): KubeObject => ({
    apiVersion: LEASE_KIND.apiVersion,
    kind: LEASE_KIND.kind,
    metadata: { name, namespace: options.namespace, ...(resourceVersion === undefined ? {} : { resourceVersion }) },
    spec,
  });

  async function tryAcquireOrRenew(): Promise<boolean> {
    const t = now();
    const lease = await options.reader.get(LEASE_KIND, options.namespace, name);
    const mine = (transitions: number, acquire: string): LeaseSpec => ({
      holderIdentity: options.identity,
      leaseDurationSeconds: Math.ceil(leaseMs / 1000),
      acquireTime: acquire,
      renewTime: microTime(t),
      leaseTransitions: transitions,
    });
    if (lease === undefined) {
      try {
        await options.writer.create(leaseObject(mine(0, microTime(t))));
        observed = { record: "", at: t, holder: options.identity };
        return true;
      } catch (err) {
        if (statusOf(err) === 409) return false;
        throw err;
      }
    }
    const spec = (lease.spec ?? {}) as LeaseSpec;
    const record = JSON.stringify([spec.holderIdentity, spec.renewTime, spec.leaseTransitions]);
    if (observed?.record !== record) observed = { record, at: t, holder: spec.holderIdentity };
    const holder = spec.holderIdentity ?? "";
    const held = holder !== "" && holder !== options.identity;
    if (held && observed.at + leaseMs > t) return false;
    const transitions = (spec.leaseTransitions ?? 0) + (holder === options.identity ? 0 : 1);
    const acquire = holder === options.identity && spec.acquireTime ? spec.acquireTime : microTime(t);
    try {
      await options.writer.replace(leaseObject(mine(transitions, acquire), lease.metadata.resourceVersion));
      if (held) log.info("took over the leader lease from a silent holder", { previous: holder, identity: options.identity });
      return true;
    } catch (err) {
      if (statusOf(err) === 409) return false;
      throw err;
    }
  }

  let lastContact = 0;
  let stopping: Promise<void> = Promise.resolve();
  let watchdog: NodeJS.Timeout | undefined;
  const holding = () => leader && now() - lastRenew <= renewDeadlineMs;

  async function becomeLeader() {
    await stopping; // the previous term's parts have stopped
    if (leader || stopController?.signal.aborted) return;
    leader = true;
    options.onLeadershipChange?.(true);
    const term = new AbortController();
    leadership = term;
    log.info("became leader", { identity: options.identity, lease: `${options.namespace}/${name}` });
    try {
      await options.onStartedLeading(term.signal);
    } catch (err) {
      if (leadership === term) {
        log.error("leader start failed; stepping down", { error: describeError(err) });
        loseLeadership("start failed");
      }
    }
  }

  /** Steps down at once (isLeader false, leadership aborted); the parts stop in the background. */
  function loseLeadership(why: string) {
    if (!leader) return;
    leader = false;
    options.onLeadershipChange?.(false);
    leadership?.abort();
    leadership = undefined;
    log.warn("stopped leading", { identity: options.identity, why });
    const previous = stopping;
    stopping = (async () => {
      await previous;
      try {
        await options.onStoppedLeading();
      } catch (err) {
        log.error("error while stepping down", { error: describeError(err) });
      }
    })();
  }

  /** Rejects after `ms` (the request itself may go on; its result is then ignored). */
  function bounded<T>(p: Promise<T>, ms: number): Promise<T> {
    let t: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      t = setTimeout(() => reject(new Error(`Lease request took longer than ${Math.round(ms)} ms`)), ms);
    });
    return Promise.race([p, timeout]).finally(() => clearTimeout(t));
  }

  async function run(signal: AbortSignal) {
    const stopped = () => signal.aborted;
    while (!stopped()) {
      let ok = false;
      const budget = leader ? Math.max(retryMs, renewDeadlineMs - (now() - lastRenew)) : renewDeadlineMs;
      try {
        ok = await bounded(tryAcquireOrRenew(), budget);
        lastContact = now();
      } catch (err) {
        log.warn("leader lease read/write failed", { error: messageOf(err) });
      }
      if (stopped()) break;
      if (ok) {
        lastRenew = now();
        if (!leader) void becomeLeader();
      } else if (leader && now() - lastRenew > renewDeadlineMs) {
        loseLeadership("could not renew the Lease before the renew deadline");
      }
      await sleep(retryMs, signal);
    }
  }

  async function release() {
    try {
      const lease = await options.reader.get(LEASE_KIND, options.namespace, name);
      const spec = (lease?.spec ?? {}) as LeaseSpec;
      if (lease && spec.holderIdentity === options.identity) {
        await options.writer.replace(leaseObject({ ...spec, holderIdentity: "", renewTime: microTime(now()) }, lease.metadata.resourceVersion));
      }
    } catch (err) {
      log.warn("could not release the leader lease; a standby takes over when it expires", { error: messageOf(err) });
    }
  }

  return {
    name: "leader-election",
    get isLeader() {
      // Whoever looks first after the deadline (a write, /readyz, the watchdog) ends the term.
      if (leader && !holding()) loseLeadership("could not renew the Lease before the renew deadline");
      return holding();
    },
    get leaseReachable() {
      return now() - lastContact <= renewDeadlineMs;
    },
    get observedHolder() {
      return observed?.holder;
    },
    start(signal) {
      stopController = new AbortController();
      const s = AbortSignal.any([signal, stopController.signal]);
      loop = run(s);
      // The deadline holds even while a Lease request hangs.
      watchdog = setInterval(() => {
        if (leader && now() - lastRenew > renewDeadlineMs) loseLeadership("could not renew the Lease before the renew deadline");
      }, Math.max(10, Math.min(retryMs, 250)));
      watchdog.unref();
      return Promise.resolve();
    },
    async stop() {
      stopController?.abort();
      clearInterval(watchdog);
      await loop;
      const wasLeader = holding();
      loseLeadership("stopping");
      await stopping;
      if (wasLeader) await bounded(release(), renewDeadlineMs).catch(() => undefined);
    },
  };
}
