/**
 * Canonical form of rendered objects, computed once per object at the end of the workspace stage:
 * src/core's structure-sharing `canonicalObject` and the per-object `contentHash` that the cluster stage
 * and `retranslate` compare fragments by (re-exported here so translators import it next to them).
 */
export { canonicalMember, canonicalObject, contentHash, sortedKeys } from "../core/index.js";
