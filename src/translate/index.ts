/**
 * Translation engine: Gloo Mesh v2 configuration + discovery → Istio resources per cluster.
 * Pure functions only (no I/O, clock, randomness or logging); output is byte-stable.
 *
 * Stage 1 `translateWorkspace(workspace, desired, discovery)` → per-cluster fragments + diagnostics.
 * Stage 2 `assembleCluster(cluster, fragments)` → the cluster's sorted output.
 * `translateAll` composes both; `affectedWorkspaces` + `retranslate` do it incrementally.
 * `loadRevisions` + `renderRevisions` render two revisions for a diff: base in full, head incrementally from it.
 */
export type {
  ClusterOutput,
  Emitted,
  FrozenTable,
  IstioMetadata,
  IstioResource,
  TranslationResult,
  TranslatorOutput,
  WorkspaceFragment,
  WorkspaceResult,
} from "./types.js";
export { TranslateCode } from "./types.js";
export type { Desired, DesiredInput, DiscoveryInput, DiscoveryMap, InputObject, SourceRef } from "./input.js";
export { toDesiredInput } from "./input.js";
export { sanitizeName, stableName, subsetName, serviceHost, labelValue } from "./names.js";
export {
  ANNOTATION_SOURCE_FILE,
  LABEL_CLUSTER,
  LABEL_MANAGED,
  LABEL_PARENT_CLUSTER,
  LABEL_PARENT_KIND,
  LABEL_PARENT_NAME,
  LABEL_PARENT_NAMESPACE,
  LABEL_WORKSPACE,
  outputLabels,
  outputMetadata,
  type ParentRef,
} from "./labels.js";
export { indexOf, workspaceContext, type WorkspaceContext, type WorkspaceInfo, type TranslationIndex } from "./context.js";
export { assembleCluster, compareResources, mergeResources, resourceKey } from "./assemble.js";
export {
  KIND_TRANSLATORS,
  fragmentsFor,
  retranslate,
  translateAll,
  translateWorkspace,
  parseRenderRecord,
  renderRecord,
  translatePairFromStored,
  type RenderRecord,
  type KindTranslator,
  type TranslateOptions,
} from "./workspace.js";
export { affectedWorkspaces, type InputChange } from "./incremental.js";
export { fileDelta, loadRevisions, renderedSide, renderRevisions, renderRevisionsFromStored, type LoadedRevisions, type RevisionRender, type RevisionRenders } from "./revisions.js";
export { validateIstioResource, validateOutputs, type IstioIssue } from "./istio-validate.js";
export { DestinationCode } from "./destination-common.js";
export { validateIssuedCertificate } from "./root-trust.js";
export { patchCluster, sameContent, sortResources, type FragmentChange } from "./assemble.js";
export { canonicalObject, contentHash } from "./canonical.js";
export { GATEWAY_SECRETS_CLUSTER_ROLE } from "./lifecycle.js";
export { contributions, refKey, ContributionRole, type Contribution, type GlooRef, type ParentProvenance, type PolicyReach, type Provenance } from "./provenance.js";
// Read by src/insights (fleet analysis) so that its findings use translation's own selection semantics.
export { globMatch, labelsMatch, objectSelectorMatches, type ObjectSelectorSpec, type Selectable } from "./selectors.js";
export { effectiveOptions, objectSelector, selectServices, type ServiceRef } from "./destination-common.js";
export { flattenRoutes, type FlatRoute } from "./delegation.js";
export { winningPolicy } from "./route-policies.js";
export { workspacePeers } from "./context.js";
