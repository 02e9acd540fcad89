/**
 * The loader: YAML configuration (from disk or Git blobs) → an immutable, indexed DesiredState with
 * Diagnostics for every user mistake. See README.md for the data model and the diagnostic codes.
 */
export { loadDesiredState, updateDesiredState, normalizePath } from "./load.js";
export { readConfigDirectory } from "./read-directory.js";
export {
  allObjects,
  diagnosticsOf,
  getObject,
  locate,
  objectsInWorkspace,
  objectsOfKind,
  unsupportedObjects,
  workspaceNames,
  workspaceOf,
} from "./state.js";
export { CONFIG_CODES, ConfigCode, type CodeInfo } from "./codes.js";
export { CLUSTER_ANNOTATION, objectKey } from "./parse-file.js";
export { ADMIN_ONLY_KINDS, createOwnership, GLOBAL_WORKSPACE_SETTINGS } from "./link.js";
export { DEFAULT_ADMIN_NAMESPACE, DEFAULT_AUDIT_BRANCH } from "./settings.js";
export { SETTINGS_FILE, createPathFilter, type PathFilter } from "./ignore.js";
export { scanYamlValues } from "./yaml-scan.js";
export type {
  DesiredState,
  FileRecord,
  LoadedObject,
  LoadOptions,
  LoadResult,
  ObjectLocation,
  ObjectMetadata,
  Position,
  RepoSettings,
  SuspendSetting,
  SourceFile,
  SourceLocation,
  UnsupportedObject,
  UpdateResult,
} from "./types.js";
