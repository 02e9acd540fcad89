/**
 * The snapshot store: everything the pipeline and the server need to survive a restart, behind one
 * interface with a Redis and an in-memory implementation. Records are plain JSON data and are
 * treated as immutable by both sides (the memory store keeps references, it does not copy).
 */
import type { Diagnostic } from "../core/index.js";
import type { DesiredState } from "../config/index.js";
import type { DiscoverySnapshot } from "../discovery/index.js";
import type { FrozenTable, IstioResource } from "../translate/index.js";

/** A desired state as accepted from Git. Stored per commit; one commit is "current". */
export interface DesiredRecord {
  readonly commit: string;
  readonly ref: string;
  /** Increases by one with every accepted desired state (orders commits without Git). */
  readonly generation: number;
  readonly state: DesiredState;
  /** Object keys changed against the previous desired state (empty: unknown or first load). */
  readonly changedKeys: readonly string[];
  /**
   * Clusters whose outputs of this commit may delete any number of objects at once (commit trailer
   * `Gitmesh-Allow-Deletion`, or gitmesh.yaml `allowMassDeletion`); `*` = every cluster.
   */
  readonly allowMassDeletion?: readonly string[];
  readonly atMs: number;
}

/** Pointer to the current desired state (cheap to read). */
export interface DesiredPointer {
  readonly commit: string;
  readonly generation: number;
}

/** The last discovery snapshot of a cluster (the translation input). */
export interface DiscoveryRecord {
  readonly cluster: string;
  /** snapshotChecksum of the snapshot. */
  readonly checksum: string;
  readonly snapshot: DiscoverySnapshot;
  readonly atMs: number;
}

/** What one workspace contributes to one cluster. */
export interface FragmentRecord {
  readonly workspace: string;
  readonly cluster: string;
  /** sha256 of the JSON of `resources` (canonical, so equal hash ⇔ equal content). */
  readonly hash: string;
  readonly resources: readonly IstioResource[];
  /** Commit of the desired state it was translated from. */
  readonly commit: string;
}

/** Options the agent receives with an output (the OUTPUT_OPTIONS_KEY entry of src/agent). */
export interface OutputOptions {
  readonly allowMassDeletion?: boolean;
  readonly ignoreDifferences?: readonly IgnoreDifference[];
}

/** Fields of owned objects the agent leaves to other controllers (gitmesh.yaml `ignoreDifferences`). */
export interface IgnoreDifference {
  readonly group?: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly jsonPointers: readonly string[];
}

/**
 * Objects of the previous output kept in this one although the current inputs no longer produce
 * them, because their removal depends on an input that is not complete (or on a frozen table).
 */
export interface HeldObjects {
  /** `frozen` (FREEZE_CONFIG table), `workspace` (its translation failed), `discovery` (a cluster it depends on sent none). */
  readonly cause: "frozen" | "workspace" | "discovery";
  /** What to fix, for people. */
  readonly reason: string;
  /** The frozen route table, `namespace/name` (cause `frozen` only). */
  readonly table?: string;
  /** When this hold began (ms). */
  readonly sinceMs: number;
  /** `kind/namespace/name`, sorted. */
  readonly objects: readonly string[];
}

/** One published output snapshot of a cluster. */
export interface OutputRecord {
  readonly cluster: string;
  /** Increases by one with every publication for the cluster; never goes backwards. */
  readonly version: number;
  readonly sourceCommit: string;
  /** sha256 of the JSON of `resources`. */
  readonly hash: string;
  readonly resources: readonly IstioResource[];
  /** true when every workspace of the source commit has been translated (the agent may prune against it). */
  readonly complete: boolean;
  /** Diagnostics of the cluster stage (output conflicts). */
  readonly diagnostics: readonly Diagnostic[];
  /** Options for the agent (absent: none). */
  readonly options?: OutputOptions;
  /** Deletions held back in this output (absent: none; `resources` then is exactly what the inputs give). */
  readonly held?: readonly HeldObjects[];
  /**
   * Why the output is not complete although every workspace translated (objects in the cluster
   * whose removal depends on a missing input and whose last version the server does not know).
   */
  readonly incompleteReason?: string;
  readonly atMs: number;
}

/** The last run of a workspace job. */
export interface WorkspaceStatus {
  readonly workspace: string;
  /** Commit of the last successful translation ("" = never succeeded). */
  readonly commit: string;
  readonly generation: number;
  readonly diagnostics: readonly Diagnostic[];
  /** Route tables frozen (FREEZE_CONFIG) in the last successful translation. */
  readonly frozen?: readonly FrozenTable[];
  /** Clusters whose discovery the last successful translation had (absent: unknown, treated as none). */
  readonly discovered?: readonly string[];
  /** Set while the workspace's last job failed (its previous fragments stay in force). */
  readonly failure?: UnitFailure;
  readonly atMs: number;
}

/** A job that gave up: why, how, and after how many attempts. */
export interface UnitFailure {
  readonly code: string;
  readonly reaction: string;
  readonly message: string;
  readonly attempts: number;
  readonly commit: string;
  readonly atMs: number;
}

/** How one cluster took one source commit. */
export interface ClusterConvergence {
  readonly cluster: string;
  /** Output version that carried the commit. */
  readonly version: number;
  readonly publishedAtMs?: number;
  readonly appliedAtMs?: number;
  /** `transient`: the agent said the NACK passes without a person (true) or needs one (false); absent: older agent, read the message. */
  readonly nack?: { readonly message: string; readonly atMs: number; readonly transient?: boolean };
  /**
   * The commit translated to exactly the output this cluster already had (`version`, published for
   * this earlier commit): nothing is sent, and the cluster runs this commit once it runs that version.
   */
  readonly unchangedFrom?: string;
}

/** Per source commit: which clusters got it, applied it (ACK) or rejected it (NACK). */
export interface ConvergenceRecord {
  readonly commit: string;
  readonly clusters: Readonly<Record<string, ClusterConvergence>>;
}

/**
 * Tokens that change with every write of the workspace statuses and of the discovery checksums: one
 * small read tells a reader whether what it decoded before is still current (the cluster jobs of one
 * commit decode the statuses once per process, not once per cluster). A token is never reused, even
 * across a restart of Redis (a random one per write); undefined when not known (nothing written yet
 * by this gitmesh, or cleared): read the data.
 */
export interface StoreVersions {
  /** Changes with every `putWorkspaceStatus`. */
  readonly workspaceStatus: string | undefined;
  /** Changes with every `putDiscovery` (so with every change of `discoveryChecksums`). */
  readonly discovery: string | undefined;
}

export interface SnapshotStore {
  /** `redis` or `memory`. */
  readonly kind: "redis" | "memory";

  /** Stores a desired state and makes it current. */
  putDesired(record: DesiredRecord): Promise<void>;
  getDesired(commit: string): Promise<DesiredRecord | undefined>;
  getDesiredPointer(): Promise<DesiredPointer | undefined>;

  putDiscovery(record: DiscoveryRecord): Promise<void>;
  getDiscovery(cluster: string): Promise<DiscoveryRecord | undefined>;
  /** cluster → checksum of every stored discovery snapshot (cheap). */
  discoveryChecksums(): Promise<Map<string, string>>;
  listDiscovery(): Promise<DiscoveryRecord[]>;

  /**
   * Replaces the fragments of one workspace (clusters missing from `fragments` lose theirs) and
   * returns the clusters whose fragment changed (by hash), sorted.
   */
  putFragments(workspace: string, fragments: readonly FragmentRecord[]): Promise<string[]>;
  /** cluster → hash of a workspace's current fragments. */
  fragmentHashes(workspace: string): Promise<Map<string, string>>;
  /** Every workspace's fragment for one cluster, sorted by workspace. */
  fragmentsForCluster(cluster: string): Promise<FragmentRecord[]>;
  /** Every stored fragment (write-back after an outage). */
  listFragments(): Promise<FragmentRecord[]>;

  /**
   * Stores an output if its version is exactly `expectedPrevious + 1` relative to what is stored
   * (compare-and-set; 0 = none stored). Returns false (nothing written) on a conflict.
   */
  putOutput(record: OutputRecord, expectedPrevious: number): Promise<boolean>;
  /** Stores an output only if its version is higher than the stored one (write-back). */
  putOutputIfNewer(record: OutputRecord): Promise<boolean>;
  getOutput(cluster: string): Promise<OutputRecord | undefined>;
  /** cluster → version of every stored output. */
  outputVersions(): Promise<Map<string, number>>;
  listOutputs(): Promise<OutputRecord[]>;

  putWorkspaceStatus(status: WorkspaceStatus): Promise<void>;
  getWorkspaceStatus(workspace: string): Promise<WorkspaceStatus | undefined>;
  listWorkspaceStatus(): Promise<WorkspaceStatus[]>;

  /** The current tokens of the workspace statuses and of the discovery (one small read; cache keys). */
  versions(): Promise<StoreVersions>;

  /** Workspaces still to translate for a commit (the pipeline holds outputs of that commit until empty). */
  addPending(commit: string, workspaces: readonly string[]): Promise<void>;
  removePending(commit: string, workspace: string): Promise<void>;
  pending(commit: string): Promise<string[]>;

  /** Merges one cluster's entry into a commit's convergence record. */
  recordConvergence(commit: string, entry: ClusterConvergence): Promise<void>;
  getConvergence(commit: string): Promise<ConvergenceRecord | undefined>;

  /**
   * A short mutual-exclusion lease on one unit of work (e.g. `workspace:<name>`), so that two jobs
   * for one workspace never interleave their read of the inputs and their write of fragments.
   * Returns a token when taken, undefined when another holder has it.
   */
  tryLock(name: string, ttlMs: number): Promise<string | undefined>;
  unlock(name: string, token: string): Promise<void>;

  /** Deletes everything under the store's prefix (tests, `gitmesh server --reset`). */
  clear(): Promise<void>;
}
