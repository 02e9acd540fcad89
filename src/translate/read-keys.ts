/**
 * "No silent difference, as a rule" (issue #36 item 3), by construction: a module declares the tree
 * of keys it reads, and every set key outside it is reported at its path. A field a schema gains
 * later is reported until a module reads it, instead of being dropped without a word.
 *
 * A tree node is
 *   - `true`: the key is read, with everything under it (or a dedicated check of the module reports it);
 *   - a string: the key is not translated; the string says why (reported whenever the key is set);
 *   - a function of the value: the reason it is not translated, or undefined when that value is
 *     honoured (`enabled: false` of a component that is not installed anyway);
 *   - an object: the sub-keys read; `"*"` stands for every key of a map.
 * Arrays are transparent: a node applies to each element.
 */
import { isRecord } from "./selectors.js";

export type ReadTree = true | string | ((value: unknown) => string | undefined) | { readonly [key: string]: ReadTree };

/** A set key no module reads: its JSON pointer and why it is not translated (undefined: not read at all). */
export interface UnreadKey {
  readonly path: string;
  readonly reason: string | undefined;
}

/** Every set key of `value` (at JSON pointer `path`) that `tree` does not read, outermost first. */
export function unreadKeys(value: unknown, tree: ReadTree, path: string): UnreadKey[] {
  if (tree === true || value === undefined || value === null) return [];
  if (typeof tree === "string") return [{ path, reason: tree }];
  if (typeof tree === "function") {
    const reason = tree(value);
    return reason === undefined ? [] : [{ path, reason }];
  }
  if (Array.isArray(value)) return value.flatMap((v, i) => unreadKeys(v, tree, `${path}/${String(i)}`));
  if (!isRecord(value)) return [];
  const out: UnreadKey[] = [];
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined || v === null) continue;
    const sub = tree[k] ?? tree["*"];
    const at = `${path}/${k.replace(/~/g, "~0").replace(/\//g, "~1")}`;
    if (sub === undefined) out.push({ path: at, reason: undefined });
    else out.push(...unreadKeys(v, sub, at));
  }
  return out;
}

/** `/spec/a/0/b` → `a.b` (array indices dropped), for messages. */
export function dottedField(pointer: string, from = "/spec"): string {
  return pointer
    .slice(pointer.startsWith(from) ? from.length : 0)
    .split("/")
    .filter((p) => p !== "" && !/^\d+$/.test(p))
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
    .join(".");
}
