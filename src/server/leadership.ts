/**
 * Which replica does the singleton work (Git polling, audit commits): the holder of a Redis lease
 * (src/queue's createLeaderLock). Every replica tries to take it every `retryMs`; the holder renews it;
 * when the holder dies, its lease expires and another replica takes it within ttl + retry.
 *
 * A Redis outage does not demote the holder: while Redis is unreachable the pipeline runs in-process
 * from memory and Git must still be polled, so the replica that led keeps leading (replicas that did
 * not lead stay followers). When Redis answers again the holder re-acquires; if another replica took
 * the lease meanwhile it steps down. Without Redis (standalone) the only replica always leads.
 */
import { describeError, type Logger } from "../core/index.js";

/** The lock, as src/queue's LeaderLock offers it. */
export interface LeaseLock {
  acquire(): Promise<boolean>;
  release(): Promise<void>;
  isHeld(): boolean;
}

export interface Leadership {
  isLeader(): boolean;
  /** Called on every change (not for the initial state). */
  onChange(listener: (leader: boolean) => void): void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface LeadershipOptions {
  /** The lease; absent: standalone, always the leader. */
  readonly lock?: LeaseLock;
  /** How often a follower (or a holder that lost Redis) tries to take the lease. Default 1000 ms. */
  readonly retryMs?: number;
  readonly logger: Logger;
}

/** Builds the leadership; `lostLease` must be wired to the lock's onLost (see createLeaderLock). */
export function createLeadership(options: LeadershipOptions): Leadership & { lostLease(reason: string): void } {
  const log = options.logger;
  const listeners: ((leader: boolean) => void)[] = [];
  let leader = options.lock === undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const set = (next: boolean, why: string) => {
    if (next === leader) return;
    leader = next;
    log.info(next ? "leading: this replica polls Git and writes audit commits" : "following: another replica polls Git and writes audit commits", { reason: why });
    for (const l of listeners) l(next);
  };
  const attempt = async () => {
    const lock = options.lock;
    if (!lock || stopped) return;
    try {
      const got = await lock.acquire();
      set(got, got ? "lease acquired" : "the lease is held by another replica");
    } catch (err) {
      // Redis unreachable: keep the current role (see the module comment).
      log.debug("leader lease not reachable; keeping the current role", { leader, error: describeError(err) });
    }
  };

  return {
    isLeader: () => leader,
    onChange: (l) => listeners.push(l),
    lostLease(reason) {
      // A renewal that failed because Redis is unreachable keeps the role until Redis answers;
      // the next attempt decides (acquire throws while Redis is down).
      if (reason.startsWith("renewal failed")) {
        log.warn("leader lease could not be renewed (Redis unreachable?); still leading until Redis answers", { reason });
        return;
      }
      set(false, reason);
    },
    async start() {
      if (!options.lock) return;
      await attempt();
      timer = setInterval(() => void attempt(), options.retryMs ?? 1000);
      timer.unref();
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      if (options.lock?.isHeld()) await options.lock.release().catch(() => undefined);
      leader = false;
    },
  };
}
