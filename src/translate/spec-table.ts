/**
 * One spec object per distinct content, for a translator that renders the same spec into many clusters
 * (the same service's PeerAuthentication in every cluster that runs it, the same WorkloadEntry of a
 * gateway in every client cluster). Sharing the object instead of building an equal one per cluster is
 * what lets the workspace stage bring it to canonical form and validate it once (workspace.ts,
 * createIstioValidator) and what keeps the output small: the large fleet's 218,100 rendered objects
 * hold 14,920 different specs.
 *
 * Rendered objects are never modified after they are made (merges and canonical form copy), so a
 * shared spec is safe; the key must name everything the spec is made from.
 */
export class SpecTable<T = Record<string, unknown>> {
  readonly #specs = new Map<string | object, T>();

  /**
   * The spec stored under `key`, made by `make` the first time the key is seen. A key is a string that
   * names the content, or an object that stands for its content by identity: a list from a
   * {@link ListTable} (equal lists are one object), or an input object such as a gateway endpoint.
   */
  get(key: string | object, make: () => T): T {
    let spec = this.#specs.get(key);
    if (spec === undefined) {
      spec = make();
      this.#specs.set(key, spec);
    }
    return spec;
  }
}

/** A list of strings shared by everything equal to it, and the string that names its content. */
export interface SharedList {
  readonly items: readonly string[];
  /** The content as a string, for keys made of several parts (no two different lists have the same key). */
  readonly key: string;
}

/**
 * Equal lists of strings as one object: clusters with equal exportTo lists share the list, so that a
 * spec made of it can be shared too (a SpecTable keyed by the SharedList, or by its `key` within a
 * longer key).
 */
export class ListTable {
  readonly #lists = new Map<string, SharedList>();

  /** The shared list equal to `items` (the first one seen keeps `items` as its array). */
  intern(items: readonly string[]): SharedList {
    const key = JSON.stringify(items);
    let list = this.#lists.get(key);
    if (list === undefined) {
      list = { items, key };
      this.#lists.set(key, list);
    }
    return list;
  }
}
