/**
 * git-sync: Git is the source of truth, and every rendered change is reviewable.
 *
 * - `createGitSource` reads desired state from a remote (smart HTTP with token/basic auth, or SSH with a
 *   private key and known_hosts: ssh-transport.ts) or a local
 *   repository, straight from the object store; a new commit is tree-diffed against the last good
 *   one and only changed files are re-parsed; bad commits are rejected and the last good state stays.
 * - `createSyncTrigger` drives a source from polling and webhook hints (dedupe, debounce, backstop).
 * - `createWebhookHandlers` verifies GitHub / GitLab / generic HMAC webhooks in constant time.
 * - `createAuditWriter` commits rendered output and discovery to the audit branch, deterministically.
 * - `createTreeWriter` applies path → bytes changes to a tree and writes commits, without a work tree
 *   (the audit writer and `gitmesh cluster` repository edits use it).
 */
export {
  createGitSource,
  defaultInclude,
  readRevisionFiles,
  type RevisionFilesOptions,
  GitSyncCode,
  splitCredentials,
  type DesiredStateLoader,
  type GitCredentials,
  type GitLocation,
  type GitSource,
  type GitSourceFile,
  type GitSourceOptions,
  type GitSourceStatus,
  type Rejection,
  type SyncHint,
  type SyncOutcome,
} from "./source.js";
export { openObjectStore, type CommitSummary, type ObjectStore, type PathFilter } from "./objects.js";
export {
  createTreeWriter,
  EMPTY_TREE,
  type CommitFields,
  type GitPerson,
  type PathChange,
  type TreeChanges,
  type TreeEdit,
  type TreeEditOptions,
  type TreeWriter,
} from "./tree-writer.js";
export { AuditPushConflictError, CommitNotYetVisibleError, GitAuthError, GitHostKeyError, GitRefNotFoundError, GitTransportError } from "./errors.js";
export { PackPushRejectedError } from "./receive-pack.js";
export { DEFAULT_SSH_USER, isSshUrl, parseSshUrl, type SshUrl } from "./ssh-url.js";
export { SSH_CONNECT_TIMEOUT_MS, type SshAuthOptions } from "./ssh-transport.js";
export { keyFingerprint, parseKnownHosts, verifyHostKey, type HostKeyVerdict, type KnownHostKey, type KnownHosts } from "./known-hosts.js";
export type { SshRemoteOptions } from "./remote.js";
export { backoffDelay, withBackoff, type BackoffOptions } from "./retry.js";
export { createConfigLoader } from "./config-loader.js";
export { resolveRevision, type ResolvedRevision } from "./revisions.js";
export { findStoredRender, readStoredRender, discoveryTreeOf, sameDiscovery, type ReadStoredRenderOptions, type StoredRender } from "./stored-render.js";
export { createSyncTrigger, type PushHint, type SyncTrigger, type SyncTriggerOptions } from "./trigger.js";
export {
  constantTimeEqual,
  createWebhookHandlers,
  signBody,
  verifyHmac,
  type HintDisposition,
  type PushEvent,
  type WebhookHandlers,
  type WebhookHeaders,
  type WebhookOptions,
  type WebhookRequest,
  type WebhookResponse,
} from "./webhooks.js";
export {
  CLUSTER_SCOPED_DIR,
  commitMessage,
  createAuditWriter,
  discoveryDigest,
  discoveryPath,
  MANIFEST_PATH,
  RENDER_RECORD_PATH,
  renderRecordBytes,
  renderedPath,
  type AuditIdentity,
  type AuditInput,
  type AuditResult,
  type AuditTarget,
  type AuditWriter,
  type AuditWriterOptions,
  type ClusterChange,
  type RenderedResource,
} from "./audit.js";
export {
  compareRenders,
  COMMENT_MARKER,
  DEFAULT_MAX_COMMENT_BODIES,
  renderJson,
  renderJsonChunks,
  renderMarkdown,
  reportFails,
  trafficFigures,
  unifiedDiff,
  type ClusterDiff,
  type DiffReport,
  type DiffTraffic,
  type LiveTrafficTouch,
  type ObjectTraffic,
  type MarkdownOptions,
  type RenderSide,
  type ResourceChange,
  type ResourceId,
} from "./diff-report.js";
export { ALLOW_DELETION_TRAILER, allowedDeletions, commitTrailers } from "./trailers.js";
export { createCommitVerifier, parseAllowedSigners, splitSignedCommit, verifySshSignature, type CommitVerifier, type CommitVerifierOptions, type Verdict } from "./signatures.js";
export { GIT_HTTP_IDLE_TIMEOUT_MS, GitHttpTimeoutError, withIdleTimeout } from "./http-client.js";
export type { HttpClient } from "isomorphic-git";
