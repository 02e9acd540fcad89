/**
 * Suspend and resume (issue #38): a suspended cluster keeps what it runs; the server hands it no new
 * output (nothing applied, nothing pruned) while its connection, discovery and status stay live. On
 * resume it is handed the newest output, so its agent is brought to the commit in force.
 *
 * A suspension holds a cluster, or the whole fleet (scope `*`), and comes from one of two places:
 *
 *   admin API (`POST /api/clusters/<name>/suspend`, `POST /api/fleet/suspend`; `gitmesh suspend`)
 *     ──▶ the suspension store (Redis: one hash, shared by every replica, survives restarts; also kept
         beside the relay PKI — --pki-dir or the Secret gitmesh-suspensions — so that a Redis restarted
         empty never releases a held cluster: durable-suspensions.ts; memory standalone without a PKI)
 *   gitmesh.yaml `suspend: {clusters: [...], reason}` of the commit in force (a freeze held in Git)
 *     ──▶ read from the desired state (actor: that commit)
 *
 * Either one suspends (a Git freeze is lifted in Git, an API suspension through the API; resuming one
 * does not lift the other). The cluster's own suspension wins over the fleet's for what is shown; an API
 * suspension wins over a Git one. The agent chart value `suspend: true` is a third, local brake the
 * server does not hold (src/agent/README.md).
 *
 * Every replica reads the store once a second (the follow loop) and at once after an action it served,
 * and keeps the last list it read when the store cannot be reached (a brake is never dropped because
 * Redis is away). After every read the relay tells the agents whose hold changed (`onRead`): a held
 * agent applies, prunes and repairs nothing (a hand edit made during an incident stays), whichever of
 * the two holds it.
 */
import type { OutputHold } from "../relay/index.js";
import type { RedisClient } from "../queue/index.js";

/** The scope that holds the whole fleet. */
export const FLEET_SCOPE = "*";

export interface Suspension {
  /** A cluster name, or `*` (the whole fleet). */
  readonly scope: string;
  readonly sinceMs: number;
  /** Who suspended: the authenticated API identity, or the commit that holds the freeze in Git. */
  readonly by: string;
  readonly reason?: string;
  /** `api` (resumed through the API) or `git` (gitmesh.yaml: lifted by a commit). */
  readonly source: "api" | "git";
}

/** Where API suspensions are kept. */
export interface SuspensionStore {
  readonly describe: string;
  list(): Promise<Suspension[]>;
  put(suspension: Suspension): Promise<void>;
  /** Removes the suspension of a scope; false when there was none. */
  remove(scope: string): Promise<boolean>;
  /**
   * The last change of every scope it knows, resumes included (`suspension` absent), with its time:
   * what a copy kept elsewhere is merged with (durable-suspensions.ts). Optional: the memory store has none.
   */
  history?(): Promise<SuspensionChange[]>;
}

/** A scope's last change: suspended (with the suspension) or resumed, at `atMs`. */
export interface SuspensionChange {
  readonly scope: string;
  readonly atMs: number;
  readonly suspension?: Suspension;
}

/**
 * One Redis hash `<prefix>:suspensions`, field = scope, value = JSON: a suspension, or the time it was
 * resumed (`{"scope", "resumedAtMs"}`, kept so that a copy elsewhere can tell a resume from a loss).
 */
export function createRedisSuspensionStore(redis: RedisClient, prefix: string, now: () => number = Date.now): SuspensionStore {
  const key = `${prefix}:suspensions`;
  const history = async (): Promise<SuspensionChange[]> =>
    Object.entries(await redis.hgetall(key)).flatMap(([scope, raw]) => {
      const c = parseChange(scope, raw);
      return c ? [c] : [];
    });
  return {
    describe: `Redis hash ${key}`,
    history,
    async list() {
      return (await history()).flatMap((c) => (c.suspension ? [c.suspension] : []));
    },
    async put(s) {
      await redis.hset(key, s.scope, JSON.stringify(s));
    },
    async remove(scope) {
      const raw = await redis.hget(key, scope);
      const held = raw !== null && parseSuspension(raw) !== undefined;
      if (held) await redis.hset(key, scope, JSON.stringify({ scope, resumedAtMs: now() }));
      return held;
    },
  };
}

/** A stored value as a change of `scope`: a suspension (at its start) or a resume; undefined when unreadable. */
export function parseChange(scope: string, raw: string): SuspensionChange | undefined {
  const suspension = parseSuspension(raw);
  if (suspension !== undefined) return suspension.scope === scope ? { scope, atMs: suspension.sinceMs, suspension } : undefined;
  try {
    const v = JSON.parse(raw) as { resumedAtMs?: unknown };
    return typeof v.resumedAtMs === "number" ? { scope, atMs: v.resumedAtMs } : undefined;
  } catch {
    return undefined;
  }
}

export function createMemorySuspensionStore(): SuspensionStore {
  const held = new Map<string, Suspension>();
  return {
    describe: "memory (lost on restart; use Redis to keep suspensions)",
    list: () => Promise.resolve([...held.values()]),
    put(s) {
      held.set(s.scope, s);
      return Promise.resolve();
    },
    remove: (scope) => Promise.resolve(held.delete(scope)),
  };
}

function parseSuspension(raw: string): Suspension | undefined {
  try {
    const v = JSON.parse(raw) as Partial<Suspension>;
    if (typeof v.scope !== "string" || typeof v.sinceMs !== "number" || typeof v.by !== "string") return undefined;
    return { scope: v.scope, sinceMs: v.sinceMs, by: v.by, ...(typeof v.reason === "string" ? { reason: v.reason } : {}), source: "api" };
  } catch {
    return undefined;
  }
}

/** The suspension that holds a cluster: its own before the fleet's, the API's before Git's. */
export function suspensionOf(cluster: string, held: readonly Suspension[]): Suspension | undefined {
  const rank = (s: Suspension) => (s.scope === cluster ? 0 : 2) + (s.source === "api" ? 0 : 1);
  return held.filter((s) => s.scope === cluster || s.scope === FLEET_SCOPE).sort((a, b) => rank(a) - rank(b))[0];
}

/** The freeze gitmesh.yaml holds (`suspend` of the commit in force). */
export interface GitFreeze {
  readonly clusters: readonly string[];
  readonly reason?: string;
  readonly commit: string;
  /** When the commit was made (ms). */
  readonly sinceMs: number;
}

export interface Suspensions {
  readonly describe: string;
  /** Reads the store again (every second, and after an action); the last list stays when it fails. */
  refresh(): Promise<void>;
  /** Every suspension in force (API and Git). */
  list(): readonly Suspension[];
  /** What holds a cluster, or undefined. */
  of(cluster: string): Suspension | undefined;
  suspend(scope: string, by: string, reason: string | undefined): Promise<Suspension>;
  /** Lifts the API suspension of a scope; false when there was none. */
  resume(scope: string): Promise<boolean>;
}

export interface SuspensionsOptions {
  readonly store: SuspensionStore;
  /** The freeze in gitmesh.yaml of the commit in force, if any. */
  readonly gitFreeze: () => GitFreeze | undefined;
  /** Clusters no longer held (after a refresh or an action): their newest output is handed to the relay. */
  readonly onResumed: (isHeld: (cluster: string) => boolean) => void;
  /** After every read, before `onResumed`: the holds may have changed (the relay tells the agents what differs). */
  readonly onRead?: () => void;
  readonly onError?: (err: unknown) => void;
  readonly now: () => number;
}

export function createSuspensions(options: SuspensionsOptions): Suspensions {
  const { store, now } = options;
  let fromApi: Suspension[] = [];
  const gitHeld = (): Suspension[] => {
    const f = options.gitFreeze();
    if (!f) return [];
    return f.clusters.map((scope) => ({ scope, sinceMs: f.sinceMs, by: `gitmesh.yaml at commit ${f.commit.slice(0, 12)}`, ...(f.reason === undefined ? {} : { reason: f.reason }), source: "git" as const }));
  };
  const list = () => [...fromApi, ...gitHeld()];
  let lastHeld: readonly Suspension[] = [];
  /** Tells publishing when something was lifted (a scope held before is not now). */
  const settle = () => {
    const nowHeld = list();
    const lifted = lastHeld.some((s) => !nowHeld.some((n) => n.scope === s.scope));
    lastHeld = nowHeld;
    options.onRead?.();
    if (lifted) options.onResumed((c) => suspensionOf(c, nowHeld) !== undefined);
  };
  const refresh = async () => {
    try {
      fromApi = await store.list();
    } catch (err) {
      options.onError?.(err);
    }
    settle();
  };
  return {
    describe: store.describe,
    refresh,
    list,
    of: (cluster) => suspensionOf(cluster, list()),
    async suspend(scope, by, reason) {
      const s: Suspension = { scope, sinceMs: now(), by, ...(reason === undefined ? {} : { reason }), source: "api" };
      await store.put(s);
      await refresh();
      return s;
    },
    async resume(scope) {
      const removed = await store.remove(scope);
      await refresh();
      return removed;
    },
  };
}

/** A suspension as its cluster's agent is told it (the relay's hold). */
export function outputHold(s: Suspension): OutputHold {
  return { sinceMs: s.sinceMs, by: s.by, ...(s.reason === undefined ? {} : { reason: s.reason }), summary: describeSuspension(s) };
}

/** "suspended since <UTC> by <who> (<reason>)": the one line every view prints. */
export function describeSuspension(s: Suspension): string {
  return `suspended since ${new Date(s.sinceMs).toISOString()} by ${s.by}${s.reason ? ` (${s.reason})` : ""}${s.scope === FLEET_SCOPE ? " [whole fleet]" : ""}`;
}
