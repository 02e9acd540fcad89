/**
 * The desired state: plain, JSON-serialisable, immutable data (it is stored in Redis and passed to
 * queue jobs). Look-ups are module functions (see state.ts), never methods.
 */
import type { Diagnostic } from "../core/index.js";

/** One file of the configuration repository, from disk or from a Git blob. */
export interface SourceFile {
  /** Repository-relative path with POSIX separators, e.g. `workspaces/web/routes.yaml`. */
  readonly path: string;
  readonly content: string | Uint8Array;
}

/** Settings from the optional root `gitmesh.yaml`. */
/** gitmesh.yaml `suspend`. */
export interface SuspendSetting {
  /** Cluster names, or `*` for the whole fleet; sorted, no duplicates. */
  readonly clusters: readonly string[];
  readonly reason?: string;
}

export interface RepoSettings {
  /** Glob patterns of paths to skip (see ignore.ts for the syntax). Default: none besides the built-in ones. */
  readonly ignore: readonly string[];
  /** Namespace of Workspace, KubernetesCluster, RootTrustPolicy and the `global` WorkspaceSettings. Default `gloo-mesh`. */
  readonly adminNamespace: string;
  /** Branch that receives rendered output. Default `gitmesh/rendered`. */
  readonly auditBranch: string;
  /**
   * Gloo kinds the repository knowingly leaves to another tool (`Kind` or `apiVersion/Kind`, e.g.
   * `ClientTLSPolicy`, `security.policy.gloo.solo.io/v2/WAFPolicy`): reported as ignored by configuration
   * instead of rejecting the commit. Default: none.
   */
  readonly ignoreKinds: readonly string[];
  /** Fields of owned objects the agents leave to other controllers (sent with every output). Default none. */
  readonly ignoreDifferences: readonly IgnoreDifferenceRule[];
  /** A change freeze held in Git (`suspend`): the clusters (`*` = the fleet) the server hands nothing new. Absent: none. */
  readonly suspend?: SuspendSetting;
  /**
   * Clusters whose outputs may delete any number of objects at once while this gitmesh.yaml is in
   * force (`*` = all). Default none. Prefer the per-commit trailer `Gitmesh-Allow-Deletion`.
   */
  readonly allowMassDeletion: readonly string[];
}

/** One gitmesh.yaml `ignoreDifferences` entry (Argo CD's model): which objects, which JSON pointers. */
export interface IgnoreDifferenceRule {
  /** API group (`networking.istio.io`); absent: any group. */
  readonly group?: string;
  readonly kind: string;
  /** Absent: any namespace. */
  readonly namespace?: string;
  /** Absent: any name. */
  readonly name?: string;
  /** RFC 6901 pointers into the object, e.g. `/spec/http/0/route/0/weight`. */
  readonly jsonPointers: readonly string[];
}

export interface LoadOptions {
  /** Admin namespace when gitmesh.yaml does not set one. Default `gloo-mesh`. */
  readonly adminNamespace?: string;
  /** Audit branch when gitmesh.yaml does not set one. Default `gitmesh/rendered`. */
  readonly auditBranch?: string;
  /** Validate every object against the JSON Schema of its kind. Default true (turn off only to measure). */
  readonly schemaValidation?: boolean;
}

/** Where a node is: 1-based line and column. */
export type Position = readonly [line: number, column: number];

export interface ObjectMetadata {
  readonly name: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly creationTimestamp?: string;
}

export interface SourceLocation {
  readonly file: string;
  /** 1-based line and column of the document's root node. */
  readonly line: number;
  readonly column: number;
  /** 0-based index of the document in its file (`---` separated). */
  readonly docIndex: number;
}

export interface LoadedObject {
  /** `<kind>/<cluster or ''>/<namespace>/<name>`, unique in a desired state. */
  readonly key: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: ObjectMetadata;
  readonly spec: unknown;
  /** From the annotation `cluster.solo.io/cluster`. */
  readonly cluster?: string;
  /** The owning workspace, resolved by the loader; absent when no workspace (or several) own it. */
  readonly workspace?: string;
  readonly source: SourceLocation;
  /** sha256 of the canonical JSON of apiVersion, kind, metadata and spec: equal digests mean equal content. */
  readonly digest: string;
  /** JSON pointer inside the document (`""`, `/spec/http/0`) → position of that node. Use `locate()`. */
  readonly positions: Readonly<Record<string, Position>>;
}

/** A document whose apiVersion/kind gitmesh does not support: reported, kept, not translated. */
export interface UnsupportedObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name?: string;
  readonly namespace?: string;
  readonly source: SourceLocation;
  /** What the model says about the apiVersion/kind (a near miss), where it points, and its position. */
  readonly hint?: { readonly pointer: string; readonly message: string; readonly position?: Position };
}

/** What the loader remembers about one file, so that an update re-parses only changed files. */
export interface FileRecord {
  readonly path: string;
  /** sha256 of the file's bytes. */
  readonly digest: string;
  /** Well-formed objects of supported kinds, in document order (including duplicates and schema-invalid ones). */
  readonly objects: readonly LoadedObject[];
  /** Indexes into `objects` of those that failed schema validation (never in force). */
  readonly invalid: readonly number[];
  readonly unsupported: readonly UnsupportedObject[];
  /** Diagnostics that depend on this file alone (syntax, schema, metadata, unsupported kinds). */
  readonly diagnostics: readonly Diagnostic[];
}

/** Where the object in force for a key lives: `files[file].objects[index]`. */
export interface ObjectLocation {
  readonly file: string;
  readonly index: number;
}

export interface DesiredState {
  readonly formatVersion: 1;
  /** The options of the load that made this state; updates keep them. */
  readonly loadOptions: Required<LoadOptions>;
  readonly settings: RepoSettings;
  /** Digest of gitmesh.yaml, or "" when there is none. */
  readonly settingsDigest: string;
  /** Diagnostics about gitmesh.yaml itself. */
  readonly settingsDiagnostics: readonly Diagnostic[];
  /** Configuration files by path (gitmesh.yaml and ignored files excluded). */
  readonly files: Readonly<Record<string, FileRecord>>;
  /** Paths that were handed in but ignored (by gitmesh.yaml rules or the built-in ones). */
  readonly ignored: readonly string[];
  /** The objects in force, by key, sorted by key. */
  readonly objects: Readonly<Record<string, ObjectLocation>>;
  /** Diagnostics that need the whole tree (duplicates, references, ownership). */
  readonly linkDiagnostics: readonly Diagnostic[];
}

export interface LoadResult {
  readonly state: DesiredState;
  /** Every diagnostic of the state, sorted (file, line, column). */
  readonly diagnostics: Diagnostic[];
}

export interface UpdateResult extends LoadResult {
  /** Keys whose object was added, removed, or changed in content, owning workspace or source position. */
  readonly changedKeys: ReadonlySet<string>;
}
