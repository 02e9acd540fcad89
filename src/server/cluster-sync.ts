/**
 * One truth of convergence (DESIGN.md): "in sync" means the cluster's agent applied the output of the
 * commit in force — same commit, same version. `clusterSync` decides it from the facts the server
 * holds; /api/status, the commit views, `gitmesh check`, the demo and every UI page read its answer
 * (`sync` in each cluster view) and derive nothing of their own.
 *
 *   cut off (removed from Git, revoked)                          ──▶ cut-off
 *   suspended (API, gitmesh.yaml, or the agent's own chart value) ──▶ suspended (behind or not: says which)
 *   applied the newest output, and that output is the commit's   ──▶ in-sync, or held (deletions held back)
 *   NACK of the commit's output                                  ──▶ refused (needs a person), or
 *                                                                    not-applied · retrying (transient: the
 *                                                                    agent's flag, else its messages)
 *   otherwise                                                    ──▶ not-applied · waiting-for-agent |
 *                                                                    agent-disconnected | translating |
 *                                                                    output-pending | agent-applying
 *
 * Pure: every fact is in the signature.
 */

/** The states, most settled first. */
export const SYNC_STATES = ["in-sync", "not-applied", "refused", "held", "cut-off", "suspended"] as const;
export type SyncState = (typeof SYNC_STATES)[number];

/** Why a cluster has not applied the commit in force yet (each resolves without a person). */
export type NotAppliedWhy = "no-commit" | "waiting-for-agent" | "agent-disconnected" | "translating" | "output-pending" | "agent-applying" | "retrying";

export interface ClusterSync {
  readonly state: SyncState;
  /** Set when `state` is not-applied. */
  readonly why?: NotAppliedWhy;
  /** Set when `state` is suspended: whether the cluster runs an older output than the commit in force's. */
  readonly behind?: boolean;
  /** One line for people: what the cluster runs, and what happens next. */
  readonly summary: string;
  /** The commit the answer is about (the commit in force), or null when there is none. */
  readonly commit: string | null;
}

/** What the server knows of one cluster and the commit in force. */
export interface ClusterSyncFacts {
  /** The commit in force (undefined before the first accepted commit). */
  readonly commit: string | undefined;
  /** Why the relay refuses the cluster's agent (removed from Git, revoked), or null. */
  readonly cutOff: string | null;
  /** Where its agent is: connected to some replica, registered and never connected, or gone. */
  readonly agent: "connected" | "waiting" | "disconnected";
  /** When the agent was last seen (ISO), for the disconnected summary. */
  readonly lastSeen?: string | null;
  /** The newest output computed for the cluster. */
  readonly output: { readonly version: number; readonly sourceCommit: string } | undefined;
  /** The version last handed to the relay (undefined: none yet; smaller than output: held back, e.g. warming). */
  readonly publishedVersion: number | undefined;
  /** The last version the agent ACKed. */
  readonly applied: { readonly version: number; readonly sourceCommit: string } | undefined;
  /** The commit in force at this cluster (convergence tracking): the version that carries it, its ACK or NACK. */
  readonly progress: CommitProgressFacts | undefined;
  /** Deletions held back (the `pruneHeld` view: why, since when, how many objects), or null. */
  readonly held: { readonly reason: string; readonly since: string; readonly objects: number } | null;
  /** What holds the cluster (suspensions.ts `describeSuspension`: since, by, reason), or null. */
  readonly suspended?: string | null;
}

/** One commit's progress at one cluster, as the commit views show it. */
export interface CommitProgressFacts {
  readonly version: number;
  /** When the cluster ran it (its ACK, or it ran the unchanged output). */
  readonly appliedAtMs?: number;
  /** The agent's NACK: every error as `key: message`. */
  readonly nack?: string;
  /**
   * The agent's own word on the NACK (`transient` on every error, relay protocol): true = it passes
   * without a person (the agent retries), false = a person must act. Absent (older agents): the
   * messages are read instead (isTransientNack).
   */
  readonly nackTransient?: boolean;
}

/**
 * Error messages the agent reports that pass without a person: the API server throttling (429) or
 * failing (5xx), a connection or timeout error, and an agent replica that lost its Lease. The agent
 * reports Kubernetes API errors as `HTTP <code>: <message>` (src/agent/kube.ts messageOf).
 */
const TRANSIENT = [/\bHTTP (?:429|500|502|503|504)\b/, /no longer the leader/, /\b(?:ECONNRESET|ECONNREFUSED|ETIMEDOUT|EPIPE|EAI_AGAIN)\b/, /socket hang up/i, /Too Many Requests/i, /\btimed out\b/i];

/**
 * A NACK that a retry resolves (every error transient), as opposed to one that needs a person: 422
 * invalid, an object gitmesh does not own, the mass-deletion guard, RBAC 403.
 */
export function isTransientNack(messages: readonly string[]): boolean {
  return messages.length > 0 && messages.every((m) => TRANSIENT.some((re) => re.test(m)));
}

/**
 * The agent's classification of a NACK from the `transient` flag of its errors: true when every error
 * is transient, false when one is not, undefined when some error carries no flag (an older agent).
 */
export function nackTransient(errors: readonly { readonly transient?: boolean | undefined }[]): boolean | undefined {
  if (errors.length === 0 || errors.some((e) => e.transient === undefined)) return undefined;
  return errors.every((e) => e.transient === true);
}

/** Whether a NACK passes without a person: the agent's flag when it gave one, else its messages. */
function isTransient(p: CommitProgressFacts, messages: readonly string[]): boolean {
  return p.nackTransient ?? isTransientNack(messages);
}

/**
 * The key of the error an agent suspended by its own chart value (`suspend: true`) NACKs every output with
 * (src/agent AGENT_SUSPENDED_KEY; the relay protocol is unchanged: an ApplyError like any other).
 */
export const AGENT_SUSPENDED_KEY = "gitmesh.io/agent-suspended";

/** The agent's own brake, read from its NACK of the newest output (null: not suspended there). */
function agentSuspension(f: ClusterSyncFacts): string | null {
  const nack = f.progress?.appliedAtMs === undefined ? f.progress?.nack : undefined;
  if (nack === undefined || !nack.startsWith(`${AGENT_SUSPENDED_KEY}: `)) return null;
  return nackMessages(nack)[0]!.slice(AGENT_SUSPENDED_KEY.length + 2);
}

/** Each `key: message` of a NACK text (the store keeps a NACK as one `; `-joined text). */
function nackMessages(nack: string): string[] {
  return nack.split(/;\s+(?=\S+: )/).filter((m) => m.trim() !== "");
}

const short = (sha: string) => sha.slice(0, 12);
const clip = (s: string, n = 200) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

export function clusterSync(f: ClusterSyncFacts): ClusterSync {
  const commit = f.commit ?? null;
  const notApplied = (why: NotAppliedWhy, summary: string): ClusterSync => ({ state: "not-applied", why, summary: `not applied yet — ${summary}`, commit });
  if (f.commit === undefined) return notApplied("no-commit", "no commit in force yet");
  const c = short(f.commit);
  if (f.cutOff !== null) return { state: "cut-off", summary: `cut off: ${f.cutOff}`, commit };
  const out = f.output;
  // The newest output carries the commit in force: rendered from it, or the commit left it unchanged.
  const outputOfCommit = out !== undefined && (out.sourceCommit === f.commit || f.progress?.version === out.version);
  // Its agent ACKed that version (here, or — known through the shared store — to another replica).
  const acked = f.progress?.appliedAtMs !== undefined && f.progress.version === out?.version;
  const ran = outputOfCommit && (acked || (f.applied !== undefined && f.applied.version >= out.version && f.applied.sourceCommit === f.commit));
  const suspended = f.suspended ?? agentSuspension(f);
  if (suspended !== null) {
    // Held: it keeps what it runs. Never "in sync" while held, even when it runs the commit in force.
    const runs = f.applied ? `runs v${String(f.applied.version)} of ${short(f.applied.sourceCommit)}` : "runs nothing from gitmesh yet";
    return { state: "suspended", behind: !ran, summary: `${suspended}; ${runs}, ${ran ? `the commit in force ${c}` : `behind the commit in force ${c}: resume to apply it`}`, commit };
  }
  if (ran) {
    if (f.held !== null) return { state: "held", summary: `applied ${c} (v${String(out.version)}); ${String(f.held.objects)} deletion(s) held back since ${f.held.since}: ${clip(f.held.reason, 320)}`, commit };
    return { state: "in-sync", summary: `in sync: applied ${c} (v${String(out.version)})`, commit };
  }
  const nack = f.progress?.appliedAtMs === undefined ? f.progress?.nack : undefined;
  if (nack !== undefined && outputOfCommit && f.progress?.version === out.version) {
    const messages = nackMessages(nack);
    // One line: the first error, and how many more (the commit view and the cluster page list them all).
    const first = `${clip(messages[0] ?? nack, 320)}${messages.length > 1 ? ` (+${String(messages.length - 1)} more)` : ""}`;
    if (isTransient(f.progress, messages)) return notApplied("retrying", `retrying (${first})`);
    return { state: "refused", summary: `refused ${c} (v${String(out.version)}), a person must act: ${first}`, commit };
  }
  if (f.agent === "waiting") return notApplied("waiting-for-agent", "waiting for its agent (it never connected)");
  if (f.agent === "disconnected") return notApplied("agent-disconnected", `agent disconnected${f.lastSeen ? ` (last seen ${f.lastSeen})` : ""}; the cluster keeps its last applied config`);
  if (out === undefined || !outputOfCommit) return notApplied("translating", `translating ${c}`);
  if (f.publishedVersion === undefined || f.publishedVersion < out.version) return notApplied("output-pending", `output v${String(out.version)} of ${c} not sent yet (held back while the server warms)`);
  return notApplied("agent-applying", `agent applying output v${String(out.version)} of ${c} (it runs ${f.applied ? `v${String(f.applied.version)}` : "nothing yet"})`);
}

/** How a cluster fared with a commit that is no longer in force (the commit views' history). */
export type PastCommitState = "applied" | "refused" | "superseded";

/** A commit no longer in force: applied, refused (a NACK that needed a person), or superseded before it ran. */
export function pastCommitState(p: CommitProgressFacts): PastCommitState {
  if (p.appliedAtMs !== undefined) return "applied";
  if (p.nack !== undefined && !p.nack.startsWith(`${AGENT_SUSPENDED_KEY}: `) && !isTransient(p, nackMessages(p.nack))) return "refused";
  return "superseded";
}
