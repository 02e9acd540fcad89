/**
 * A hand-written YAML emitter for the values `canonicalYaml` serialises (JSON-like data: plain objects,
 * arrays, strings, finite numbers, booleans, null), byte-identical to the `yaml` package's
 * `stringify(value, { lineWidth: 0, aliasDuplicateObjects: false })` (yaml 2.x, core schema, YAML 1.2).
 *
 * Why by hand: the audit writer serialises ~95,000 rendered objects on its first commit at 1,000
 * clusters × 5 services, and the `yaml` package builds a node tree per object (createNode, tag
 * resolution, a context object per pair) — ~160 µs of CPU each, most of that commit's time (#39).
 * This emitter walks the value once and concatenates strings (figures: src/core/README.md).
 *
 * Scope, on purpose narrow: whatever it cannot prove identical it does not guess. `emitYaml` returns
 * `undefined` for the whole document when it meets any of these, and the caller falls back to the
 * `yaml` package (the correct, slower path):
 * - a string with a line break (block scalars `|-`/`|`/`|+`, folded double quotes: many rules);
 * - a string with a document marker (`---`, `...` at its start or after U+2028/U+2029; yaml then forces
 *   a block indent or quotes by depth);
 * - an empty key or a key over 1,024 characters once quoted (explicit `? ` keys);
 * - anything but a plain object/array/string/finite number/boolean/null (Dates, Maps, class
 *   instances, undefined, NaN/Infinity, bigint), or a top level that is not an object or array.
 * The rules kept here follow yaml's stringifyString.js (plainString, quotedString,
 * doubleQuotedString) and stringifyPair.js; test/core/yaml-emit.test.ts compares both byte for byte.
 */

// Characters that make yaml force double quotes (control characters, C1, lone surrogate halves).
// `\n` and `\t` are not among them. Surrogate pairs are tested by hand below (a /u regex would
// accept a well-formed pair; yaml's /u regex matches only unpaired halves).
const FORCE_DOUBLE = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;
// yaml's plainString: indicators, `: `, ` #`, trailing space or colon … (the `\n` parts cannot
// match here: strings with a line break never reach this test).
const NOT_PLAIN = /^[\t ,[\]{}#&*!|>'"%@`]|^[?-]$|^[?-][ \t]|:[ \t]|[\t ]#|[\t :]$/;
// The core schema's default tags other than str (null, bool, int oct/dec/hex, float nan/exp/fixed):
// a plain scalar that one of them would resolve is quoted.
const RESOLVES_NON_STRING = /^(?:~|[Nn]ull|NULL)?$|^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$|^0o[0-7]+$|^[-+]?[0-9]+$|^0x[0-9a-fA-F]+$|^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$|^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$|^[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)$/;
// yaml's containsDocumentMarker: a multi-line regex, so a marker after U+2028/U+2029 counts too.
const DOCUMENT_MARKER = /^(?:%|---|\.\.\.)/m;
// Fast accept: strings made only of these characters, not starting with an indicator, need none of
// the checks above except the tag test.
const SIMPLE = /^[A-Za-z0-9_/.][A-Za-z0-9_/.\-+=~^$()]*$/;

function hasLoneSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        i++;
        continue;
      }
    }
    return true;
  }
  return false;
}

/** yaml's doubleQuotedString for a string without a line break: JSON, with YAML's short escapes. */
function doubleQuoted(s: string): string {
  const json = JSON.stringify(s);
  if (!json.includes("\\u")) return json;
  return json.replace(/\\u([0-9a-f]{4})/g, (m: string, code: string) => {
    switch (code) {
      case "0000": return "\\0";
      case "0007": return "\\a";
      case "000b": return "\\v";
      case "001b": return "\\e";
      case "0085": return "\\N";
      case "00a0": return "\\_";
      case "2028": return "\\L";
      case "2029": return "\\P";
      default: return code.startsWith("00") ? "\\x" + code.slice(2) : m;
    }
  });
}

/** yaml's quotedString (singleQuote option unset) for a string without a line break. */
function quoted(s: string): string {
  const hasDouble = s.includes('"');
  if (hasDouble && !s.includes("'")) return "'" + s + "'";
  return doubleQuoted(s);
}

/** The scalar text of a string (key or value), or undefined when outside this emitter's scope. */
function scalar(s: string): string | undefined {
  if (SIMPLE.test(s)) {
    if (RESOLVES_NON_STRING.test(s)) return quoted(s);
    if (s.startsWith("...")) return undefined;
    return s;
  }
  if (s.includes("\n")) return undefined;
  if (FORCE_DOUBLE.test(s) || hasLoneSurrogate(s)) return doubleQuoted(s);
  if (NOT_PLAIN.test(s)) return quoted(s);
  if (DOCUMENT_MARKER.test(s)) return undefined;
  if (RESOLVES_NON_STRING.test(s)) return quoted(s);
  return s;
}

function isPlainObject(v: object): boolean {
  const p: unknown = Object.getPrototypeOf(v);
  return p === Object.prototype || p === null;
}

function hasOwnKey(v: object): boolean {
  for (const k in v) if (k.length >= 0) return true; // the first key answers (no array allocated)
  return false;
}

const keyCache = new Map<string, string>();

function keyText(k: string): string | undefined {
  let t = keyCache.get(k);
  if (t !== undefined) return t;
  if (k === "") return undefined;
  t = scalar(k);
  if (t === undefined || t.length > 1024) return undefined;
  if (keyCache.size < 10_000) keyCache.set(k, t);
  return t;
}

/**
 * The document built by `+` is a tree of V8 cons-strings (hundreds of nodes per object); reading one
 * character flattens it into one sequential string. The audit writer keeps every document in its
 * cache, and a retained tree costs the GC: on the medium fleet's 17,440 objects, kept, 320 ms of CPU
 * unflattened against 170 ms flattened here (100 ms when the documents are dropped).
 */
function flat(s: string): string {
  s.charCodeAt(s.length >> 1);
  return s;
}

class Bail extends Error {}
const BAIL = new Bail("outside the emitter's scope");

/** A scalar's text, or null when `v` is a collection (written by the caller). */
function leaf(v: unknown): string | null {
  switch (typeof v) {
    case "string": {
      const t = scalar(v);
      if (t === undefined) throw BAIL;
      return t;
    }
    case "number":
      if (!Number.isFinite(v)) throw BAIL;
      return Object.is(v, -0) ? "-0" : JSON.stringify(v);
    case "boolean":
      return v ? "true" : "false";
    case "object":
      if (v === null) return "null";
      if (Array.isArray(v)) return v.length === 0 ? "[]" : null;
      if (!isPlainObject(v)) throw BAIL;
      return hasOwnKey(v) ? null : "{}";
    default:
      throw BAIL;
  }
}

// Each writer returns the collection's lines, the first without indentation (the caller puts it after
// `key:\n<indent>` or `- `), every later line prefixed with `indent`, no trailing newline.
function mapping(obj: Record<string, unknown>, indent: string): string {
  let out = "";
  let first = true;
  const inner = indent + "  ";
  for (const k in obj) {
    const v = obj[k];
    const kt = keyText(k);
    if (kt === undefined) throw BAIL;
    if (!first) out += "\n" + indent;
    first = false;
    const l = leaf(v);
    if (l !== null) out += kt + ": " + l;
    else if (Array.isArray(v)) out += kt + ":\n" + inner + sequence(v, inner);
    else out += kt + ":\n" + inner + mapping(v as Record<string, unknown>, inner);
  }
  return out;
}

function sequence(arr: readonly unknown[], indent: string): string {
  let out = "";
  const inner = indent + "  ";
  for (let i = 0; i < arr.length; i++) {
    if (i > 0) out += "\n" + indent;
    const v = arr[i];
    if (v === undefined && !(i in arr)) throw BAIL; // holes
    const l = leaf(v);
    if (l !== null) out += "- " + l;
    else if (Array.isArray(v)) out += "- " + sequence(v, inner);
    else out += "- " + mapping(v as Record<string, unknown>, inner);
  }
  return out;
}

/**
 * The YAML document of `value` exactly as `stringify(value, { lineWidth: 0, aliasDuplicateObjects: false })`
 * writes it, or `undefined` when the value is outside this emitter's scope (see the module comment).
 * Keys are written in the object's own order (canonicalYaml sorts them first).
 */
export function emitYaml(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  try {
    const l = leaf(value);
    if (l !== null) return l + "\n";
    return flat((Array.isArray(value) ? sequence(value, "") : mapping(value as Record<string, unknown>, "")) + "\n");
  } catch (e) {
    if (e === BAIL) return undefined;
    throw e;
  }
}
