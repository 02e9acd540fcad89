/** The API's answers, as much of them as the UI reads (src/server/server.ts builds them). */

export interface ClusterView {
  readonly name: string;
  readonly registered: boolean;
  readonly connected: boolean;
  readonly replica: string | null;
  readonly stale: boolean;
  readonly waitingForAgent: boolean;
  readonly lastSeen: string | null;
  readonly warmed: boolean;
  readonly discovery: { readonly checksum: string; readonly at: string; readonly services: number; readonly workloads: number } | null;
  readonly output: { readonly version: number; readonly sourceCommit: string; readonly complete: boolean; readonly resources: number; readonly diagnostics: number } | null;
  readonly applied: { readonly version: number; readonly sourceCommit: string; readonly at: string } | null;
  readonly commit: string | null;
  readonly errors: { readonly count: number; readonly first: readonly string[] };
  readonly pruneHeld: { readonly count?: number; readonly reason?: string } | null;
  readonly frozen: readonly string[];
  readonly cutOff: string | null;
  /** What holds it (absent from older servers). */
  readonly suspended?: Suspension | null;
  /** The server's one answer for the commit in force (src/server/cluster-sync.ts); `inSync` is `sync.state === "in-sync"`. */
  readonly sync: ClusterSync;
  readonly inSync: boolean;
  readonly driftRepairs?: readonly { readonly key: string; readonly why: string; readonly at: string; readonly managers: readonly string[] }[];
}

export type SyncState = "in-sync" | "not-applied" | "refused" | "held" | "cut-off" | "suspended";

/** What holds a cluster (suspend): `source` api (resumed through the API) or git (gitmesh.yaml). */
export interface Suspension {
  readonly scope: string;
  readonly since: string;
  readonly by: string;
  readonly reason: string | null;
  readonly source: "api" | "git";
  readonly summary: string;
}

export interface ClusterSync {
  readonly state: SyncState;
  readonly why?: string;
  readonly summary: string;
  readonly commit: string | null;
}

export interface Status {
  readonly replica: string;
  readonly ready: boolean;
  readonly readiness: string;
  readonly pipeline: { readonly mode?: string; readonly [k: string]: unknown };
  readonly store: string;
  readonly warming: { readonly warming: boolean; readonly waitingFor: readonly string[] } | null;
  readonly source: { readonly repository: string; readonly ref: string; readonly path: string; readonly lastError: { readonly message: string } | null };
  readonly commit: { readonly sha: string; readonly committedAt: string; readonly syncedAt: string | null; readonly from: string } | null;
  readonly leader: boolean;
  readonly rejected: { readonly commit: string; readonly rejectedAt: string; readonly errors: number; readonly diagnostics: readonly string[] } | null;
  readonly audit: { readonly branch: string | null; readonly lastCommit: string | null; readonly heldBack?: { readonly reason: string; readonly clusters: readonly string[]; readonly since: string } | null };
  readonly clusters: readonly ClusterView[];
}

export interface CommitProgress {
  readonly appliedAtMs?: number;
  readonly nack?: string | { readonly message?: string; readonly errors?: readonly { key: string; message: string }[] };
  readonly unchanged?: boolean;
  readonly registered: boolean;
  /** The commit in force: the cluster's sync state; an older commit: applied, refused or superseded. */
  readonly state: SyncState | "applied" | "superseded";
  /** The commit in force: the cluster's sync summary. */
  readonly summary?: string;
  readonly [k: string]: unknown;
}

export interface CommitView {
  readonly commit: string;
  /** First line of the message, the message, the author (null when this replica did not read the commit from Git). */
  readonly subject: string | null;
  readonly message: string | null;
  readonly author: string | null;
  readonly committedAt: string | null;
  /** Set for a rejected commit: when, and its first errors (file:line). */
  readonly rejected: { readonly at: string; readonly errorCount: number; readonly errors: readonly string[] } | null;
  readonly acceptedAt: string | null;
  readonly inForce: boolean;
  readonly audit: string | null;
  readonly applied: number;
  readonly nacked: number;
  readonly clusters: Readonly<Record<string, CommitProgress>>;
}

export interface Commits {
  readonly inForce: string | null;
  readonly commits: readonly CommitView[];
}

export interface KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly labels?: Readonly<Record<string, string>>; readonly annotations?: Readonly<Record<string, string>> };
  readonly [k: string]: unknown;
}

export interface ClusterOutput {
  readonly cluster: string;
  readonly version: number;
  readonly sourceCommit: string;
  readonly at: string;
  readonly resources: readonly KubeObject[];
}

export interface ClusterInput {
  readonly cluster: string;
  readonly at: string;
  readonly snapshot: {
    readonly services: readonly { name: string; namespace: string; ports: readonly { port: number; name?: string }[] }[];
    readonly workloads: readonly { kind: string; name: string; namespace: string; localities?: readonly { region?: string; zone?: string }[] }[];
    readonly gateways?: readonly { kind: string; name: string; namespace: string }[];
  };
}

export interface StructuredDiagnostic {
  readonly origin: string;
  readonly severity: string;
  readonly code: string;
  readonly file?: string;
  readonly line?: number;
  readonly column?: number;
  readonly path?: string;
  readonly message: string;
}

export interface Diagnostics {
  readonly commit: string | null;
  readonly rejected: string | null;
  readonly errorCount: number;
  readonly entries: readonly StructuredDiagnostic[];
}
