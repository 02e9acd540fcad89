/** What the emulator keeps of a CustomResourceDefinition: enough to serve, discover and validate its kind. */
import type { ResourceKind } from "../kinds.js";
import type { Schema } from "../schema.js";

export interface CrdSummary {
  readonly group: string;
  readonly kind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  readonly namespaced: boolean;
  /** Served versions, the storage version among them. */
  readonly versions: readonly { readonly name: string; readonly storage: boolean; readonly status: boolean; readonly schema: Schema }[];
}

/**
 * One ResourceKind per served version (they share storage, as a CRD's versions do; the storage
 * version first, so discovery prefers it).
 */
export function kindsOfCrd(crd: CrdSummary): ResourceKind[] {
  const versions = [...crd.versions].sort((a, b) => Number(b.storage) - Number(a.storage));
  return versions.map((v) => ({
    group: crd.group,
    version: v.name,
    kind: crd.kind,
    plural: crd.plural,
    singular: crd.singular,
    namespaced: crd.namespaced,
    shortNames: crd.shortNames,
    categories: crd.categories,
    statusSubresource: v.status,
    schema: v.schema,
  }));
}
