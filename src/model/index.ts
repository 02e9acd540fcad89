/**
 * The configuration model: the Gloo Mesh v2 kinds gitmesh accepts, their generated TypeScript types
 * (from schemas/*.schema.json via `npm run gen`), and the schema validators.
 */
export { SUPPORTED_KINDS, kindInfo, describeSupportedKinds, type KindInfo } from "./kinds.js";
export { validateResource, validateDiscoverySnapshot, precompileValidators, editDistance, type SchemaIssue } from "./validate.js";
export type * from "./generated/common.gen.js";
export type * from "./generated/discovery-snapshot.gen.js";
export type * from "./generated/workspace.gen.js";
export type * from "./generated/workspace-settings.gen.js";
export type * from "./generated/kubernetes-cluster.gen.js";
