/**
 * API suspensions kept where the relay PKI lives, as revocations are (durable-revocations.ts): a cluster
 * suspended during an incident must not be released because Redis restarted empty, was flushed or failed
 * over — the server would hand it every output it held back. With `--pki-dir` the copy is the file
 * `<pki-dir>/suspensions/suspensions.json`; with the PKI in Kubernetes Secrets, the Secret
 * `gitmesh-suspensions`.
 *
 * Both places keep each scope's last change — suspended (the suspension) or resumed (when) — and the later
 * change wins:
 * - suspend and resume write the copy first, then the shared store (a crash between the two leaves the
 *   change in the copy, which the next read carries back to the shared store);
 * - every read merges both: a change found only in the shared store (another replica's) is copied, one
 *   found only in the copy (Redis forgot it) is written back, so every replica and a new Redis follow;
 * - the shared store cannot be read: the copy answers alone (a brake is never dropped because Redis is
 *   away).
 *
 * The suspensions are read once a second per replica; the copy is read again only every
 * COPY_REREAD_MS (and written through on every change this replica makes), so a Secret is not fetched
 * from the API server each second. Another replica's changes arrive through the shared store meanwhile.
 */
import type { ClusterRecordStore } from "../relay/index.js";
import { parseChange, type Suspension, type SuspensionChange, type SuspensionStore } from "./suspensions.js";

/** The copy's one record. */
const KEY = "suspensions";
/** How long the copy read last stands in for the copy (this replica's own writes update it at once). */
const COPY_REREAD_MS = 30_000;

type Changes = ReadonlyMap<string, SuspensionChange>;

function parseCopy(value: string | undefined): Changes {
  const out = new Map<string, SuspensionChange>();
  if (value === undefined) return out;
  let raw: unknown;
  try {
    raw = JSON.parse(value);
  } catch {
    return out;
  }
  for (const [scope, v] of Object.entries(typeof raw === "object" && raw !== null ? raw : {})) {
    const c = parseChange(scope, JSON.stringify(v));
    if (c) out.set(scope, c);
  }
  return out;
}

/** As stored: the suspension itself, or `{scope, resumedAtMs}` (the shared store's format too). */
const stored = (c: SuspensionChange) => (c.suspension ? c.suspension : { scope: c.scope, resumedAtMs: c.atMs });

function serialize(changes: Changes): string {
  return JSON.stringify(Object.fromEntries([...changes.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([scope, c]) => [scope, stored(c)])), null, 2) + "\n";
}

/** The later change wins; at the same time a suspension wins (the brake), else the first given. */
function later(a: SuspensionChange | undefined, b: SuspensionChange | undefined): SuspensionChange | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  return b.atMs > a.atMs || (b.atMs === a.atMs && b.suspension !== undefined && a.suspension === undefined) ? b : a;
}

const same = (a: SuspensionChange | undefined, b: SuspensionChange | undefined) => a !== undefined && b !== undefined && a.atMs === b.atMs && (a.suspension === undefined) === (b.suspension === undefined);

export function withDurableSuspensions(shared: SuspensionStore, beside: ClusterRecordStore, now: () => number = Date.now): SuspensionStore {
  /** The copy as last read or written here, and when (monotonic clock: the injected `now` may be a test's). */
  let known: { value: string | undefined; atMs: number } | undefined;
  const remember = (value: string | undefined) => (known = { value, atMs: performance.now() });
  async function readCopy(): Promise<Changes> {
    if (known === undefined || performance.now() - known.atMs > COPY_REREAD_MS) remember((await beside.get(KEY))?.value);
    return parseCopy(known!.value);
  }

  /** Records `change` in the copy unless it holds a later one for the scope. */
  async function keep(changes: readonly SuspensionChange[]): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const cur = await beside.get(KEY);
      remember(cur?.value);
      const copy = new Map(parseCopy(cur?.value));
      let changed = false;
      for (const c of changes) {
        const had = copy.get(c.scope);
        if (later(had, c) !== had) {
          copy.set(c.scope, c);
          changed = true;
        }
      }
      if (!changed) return;
      const next = serialize(copy);
      if (await beside.swap(KEY, cur?.revision, next)) {
        remember(next);
        return;
      }
    }
    throw new Error(`could not keep the suspensions in ${beside.describe}: it kept changing`);
  }

  async function sharedChanges(): Promise<Changes> {
    const list = shared.history ? await shared.history() : (await shared.list()).map((s) => ({ scope: s.scope, atMs: s.sinceMs, suspension: s }));
    return new Map(list.map((c) => [c.scope, c]));
  }

  return {
    describe: `${shared.describe}, also in ${beside.describe}`,
    async list(): Promise<Suspension[]> {
      const copy = await readCopy();
      let fromShared: Changes;
      try {
        fromShared = await sharedChanges();
      } catch (err) {
        // Redis away: the copy answers (when it knows anything), so no brake is dropped meanwhile.
        if (copy.size === 0) throw err;
        return [...copy.values()].flatMap((c) => (c.suspension ? [c.suspension] : []));
      }
      const merged = new Map<string, SuspensionChange>();
      for (const scope of new Set([...copy.keys(), ...fromShared.keys()])) merged.set(scope, later(copy.get(scope), fromShared.get(scope))!);
      // Another replica's changes into the copy; what Redis forgot back into it.
      const toCopy = [...merged.values()].filter((c) => !same(copy.get(c.scope), c));
      if (toCopy.length > 0) await keep(toCopy);
      for (const c of merged.values()) {
        if (same(fromShared.get(c.scope), c)) continue;
        if (c.suspension) await shared.put(c.suspension);
        else if (fromShared.get(c.scope)?.suspension) await shared.remove(c.scope);
      }
      return [...merged.values()].flatMap((c) => (c.suspension ? [c.suspension] : []));
    },
    async put(s) {
      await keep([{ scope: s.scope, atMs: s.sinceMs, suspension: s }]);
      await shared.put(s);
    },
    async remove(scope) {
      const held = (await readCopy()).get(scope)?.suspension !== undefined;
      await keep([{ scope, atMs: now() }]);
      return (await shared.remove(scope)) || held;
    },
  };
}
