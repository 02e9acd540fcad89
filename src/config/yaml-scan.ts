/**
 * The first fast path of the YAML reader: a hand-written single-pass scanner for the common
 * document, building the frozen plain value and the positions straight from the text (no `yaml`
 * lexer, CST or nodes). The `yaml` package's lexer and CST parser were most of a configuration
 * load; the scanner reads the diff bench's 100-cluster fleet (502 files, 1.4 MB) in ~60 ms where
 * the CST path took ~740 ms (medians, same process, alternated), and a 10,000-object load takes
 * ~0.8 s CPU instead of ~2.8 s (`npm run bench -- load`).
 *
 * What it reads: documents (`---`, `...`, comments) whose root is a block mapping at column 0;
 * block mappings and sequences indented with spaces, including `- key: value` items and a list at
 * its parent key's indentation (`key:\n- a`); keys that are plain or quoted one-line scalars;
 * values that are plain or quoted one-line scalars (with their escapes), `{}`, and one-line flow
 * lists of such scalars; comments after a space or on lines of their own. Plain scalars resolve by
 * the core schema with the `yaml` package's own tags (yaml-scalar.ts).
 *
 * Anything else makes it decline the whole file (return undefined), and the file takes the CST
 * fast path (yaml-fast.ts), then the composer (yaml-positions.ts): tabs (except in comments), CR
 * line ends, a BOM, anchors, aliases, tags, directives, explicit keys, block scalars, multi-line
 * plain, quoted or flow scalars, flow mappings that are not empty, nested flow collections, empty
 * list items or items starting on the next line, nested compact lists (`- - a`), duplicate, `<<`
 * and `__proto__` keys, keys longer than 1000 characters, control characters, empty documents, a
 * root that is not a mapping, nesting deeper than MAX_DEPTH, and anything the composer would
 * report as a problem. Declining is always safe; test/config/yaml-fast.test.ts checks that wherever the
 * scanner answers, it answers exactly as the composer does (values, positions, their key order).
 */
import type { Position } from "./types.js";
import { escapePointerToken, type ParsedDocument } from "./yaml-positions.js";
import { plainScalarValue } from "./yaml-scalar.js";

/**
 * Deeper documents take the composer, whose recursion is deeper per level: where it overflows the
 * stack (a YAML_SYNTAX diagnostic, see parse-file.ts) must not depend on which path read the file.
 * Shared by both fast paths: the root mapping is at depth 0, each nested collection one deeper.
 */
export const MAX_DEPTH = 64;

/** Implicit keys are limited to 1024 characters; the composer reports longer ones. */
const MAX_KEY_LENGTH = 1000;

/** Thrown inside the scan when the file needs another path (one instance: no stack captured per file). */
class NeedsAnotherPath extends Error {}
const DECLINE = new NeedsAnotherPath("the document needs the CST fast path or the composer");

const LF = 10;
const SPACE = 32;
const DQUOTE = 34;
const HASH = 35;
const QUOTE = 39;
const COMMA = 44;
const DASH = 45;
const DOT = 46;
const COLON = 58;
const QUESTION = 63;
const LBRACKET = 91;
const BACKSLASH = 92;
const RBRACKET = 93;
const LBRACE = 123;
const RBRACE = 125;

/** Characters that cannot start a plain scalar here (indicators, reserved characters; `-`, `?`, `:` are checked apart). */
const NOT_PLAIN_START = new Uint8Array(128);
for (const ch of ",[]{}#&*!|>'\"%@`") NOT_PLAIN_START[ch.charCodeAt(0)] = 1;

/** Double-quoted escapes with a fixed replacement (those of the yaml package, less `\<TAB>`: tabs decline). */
const ESCAPES: Readonly<Record<string, string>> = {
  "0": "\0",
  a: "\x07",
  b: "\b",
  e: "\x1b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
  N: "\u0085",
  _: "\u00a0",
  L: "\u2028",
  P: "\u2029",
  " ": " ",
  '"': '"',
  "/": "/",
  "\\": "\\",
};

/** Why nextLine() found no more content for the current document. */
const END_OF_TEXT = 0;
const DOC_START = 1; // a `---` line
const DOC_END = 2; // a `...` line

/** The documents of `text`, or undefined when some part of it needs the CST fast path or the composer. */
export function scanYaml(text: string): ParsedDocument[] | undefined {
  return scan(text, undefined);
}

/**
 * The documents' values only (not frozen, no positions), or undefined where scanYaml would decline:
 * for data read in bulk whose positions matter only when it turns out invalid — the audit branch's
 * discovery (57 MB of YAML at 100 clusters), which src/discovery reads this way and sends to the
 * composer for a diagnostic's line. Same values as scanYaml, which the composer's are.
 */
export function scanYamlValues(text: string, strings: Map<string, string> = new Map()): unknown[] | undefined {
  return scan(text, strings)?.map((d) => d.value);
}

/**
 * V8 makes a slice of 13 characters or more a view of the whole text (a "sliced string") rather than a
 * copy: every such value scanned from a file would keep the file's text alive as long as the value —
 * the 57 MB of the audit branch's discovery for the whole of a diff. Values mode copies each distinct
 * one once (`strings`, which the caller may share between files: discovery repeats names across
 * clusters) and gives that copy for every later occurrence. Shorter slices are copies already.
 */
const SLICED_FROM = 13;

function ownString(s: string, strings: Map<string, string>): string {
  let own = strings.get(s);
  if (own === undefined) {
    // A flat copy (JSON keeps any code unit, lone surrogates included); slice, concat and the like give views.
    own = JSON.parse(JSON.stringify(s)) as string;
    strings.set(own, own);
  }
  return own;
}

function scan(text: string, strings: Map<string, string> | undefined): ParsedDocument[] | undefined {
  // CR line ends and a BOM (stripped by the lexer at a stream start) would need their own rules.
  if (text.includes("\r") || text.includes("\uFEFF")) return undefined;
  try {
    return new Scanner(text, strings).documents();
  } catch (err) {
    if (err === DECLINE) return undefined;
    throw err;
  }
}

/** The position of everything when positions are not tracked (a non-null "the key was scanned" mark). */
const UNTRACKED: Position = Object.freeze([0, 0]) as unknown as Position;

/**
 * The scan state: `pos` moves forward through `text` once; `line` and `lineStart` are those of
 * `pos`. Block parsing is by lines: nextLine() skips blank and comment lines and leaves `pos` at
 * the first character of the next content line, `indent` its indentation (-1 at the end of the
 * document); each collection reads its members while `indent` is its own and returns to its
 * parent when it is less.
 */
class Scanner {
  private readonly text: string;
  private readonly len: number;
  private pos = 0;
  private line = 1;
  private lineStart = 0;
  private indent = 0;
  private stop = END_OF_TEXT;
  private positions: Record<string, Position> = {};
  /** The last scalar scanned: its value, and whether a `:` mapping indicator followed it (a key). */
  private scalar: string | number | boolean | null = null;
  private isKey = false;

  /** Positions kept and values frozen (scanYaml), or values only (scanYamlValues). */
  private readonly track: boolean;
  /** Values mode: the one copy of each long string value (see ownString). */
  private readonly strings: Map<string, string> | undefined;

  constructor(text: string, strings: Map<string, string> | undefined) {
    this.text = text;
    this.len = text.length;
    this.track = strings === undefined;
    this.strings = strings;
  }

  private done<T extends object>(value: T): T {
    return this.track ? Object.freeze(value) : value;
  }

  /** A value as it is stored in its collection: in values mode, a long string as its own copy. */
  private own<T>(value: T): T {
    return this.strings !== undefined && typeof value === "string" && value.length >= SLICED_FROM ? (ownString(value, this.strings) as T) : value;
  }

  documents(): ParsedDocument[] {
    const docs: ParsedDocument[] = [];
    let indent = this.nextLine();
    let ended = false; // a document has just ended: a `...` may follow
    for (;;) {
      if (indent === -1) {
        if (this.stop === END_OF_TEXT) return docs;
        if (this.stop === DOC_END) {
          if (!ended) throw DECLINE; // `...` with no document before it
          ended = false;
          indent = this.markerLine();
          continue;
        }
        indent = this.markerLine(); // `---`
        if (indent === -1) throw DECLINE; // an empty document
      }
      if (indent !== 0) throw DECLINE;
      const position = this.here();
      // Built up from {} as the composer path does (see yaml-fast.ts).
      const positions: Record<string, Position> = {};
      positions[""] = position;
      this.positions = positions;
      const value = this.map(0, "", 0, null);
      docs.push({ docIndex: docs.length, position, value: this.own(value), positions, errors: [], warnings: [] });
      // The root mapping ends only at the end of the text or at a marker line (indent -1).
      indent = this.indent;
      ended = true;
    }
  }

  private here(): Position {
    return this.track ? [this.line, this.pos - this.lineStart + 1] : UNTRACKED;
  }

  /**
   * From the start of a line: skips blank and comment lines, leaves `pos` at the first character of
   * the next content line and returns its indentation, or -1 at the end of the text or at a `---` or
   * `...` line (`stop` says which; `pos` is then at the marker).
   */
  private nextLine(): number {
    const text = this.text;
    let start = this.pos;
    for (;;) {
      let i = start;
      while (text.charCodeAt(i) === SPACE) i++;
      if (i >= this.len) {
        this.pos = this.len;
        this.stop = END_OF_TEXT;
        return (this.indent = -1);
      }
      const c = text.charCodeAt(i);
      if (c === LF || c === HASH) {
        const nl = c === LF ? i : text.indexOf("\n", i);
        if (nl === -1) {
          this.pos = this.len;
          this.stop = END_OF_TEXT;
          return (this.indent = -1);
        }
        start = nl + 1;
        this.line++;
        this.lineStart = start;
        continue;
      }
      this.pos = i;
      if (i === start && (c === DASH || c === DOT) && this.isMarker(i)) {
        this.stop = c === DASH ? DOC_START : DOC_END;
        return (this.indent = -1);
      }
      if (c < SPACE) throw DECLINE; // a tab or a control character
      return (this.indent = i - start);
    }
  }

  /** `---` or `...` at `i` (a line start), followed by a space or the end of the line. */
  private isMarker(i: number): boolean {
    const text = this.text;
    const c = text.charCodeAt(i);
    if (text.charCodeAt(i + 1) !== c || text.charCodeAt(i + 2) !== c) return false;
    const next = text.charCodeAt(i + 3);
    return next === SPACE || next === LF || i + 3 >= this.len;
  }

  /** Past a marker line: `---` or `...`, then only spaces and a comment (`--- a: 1` and `--- |` decline). */
  private markerLine(): number {
    this.pos += 3;
    return this.finishLine();
  }

  /**
   * After a value: spaces, an optional comment (after at least one space), the end of the line; then
   * on to the next content line. Anything else on the line declines.
   */
  private finishLine(): number {
    const text = this.text;
    let i = this.pos;
    while (text.charCodeAt(i) === SPACE) i++;
    let c = text.charCodeAt(i);
    if (c === HASH) {
      if (i === this.pos) throw DECLINE; // `'x'#c`: not a comment
      const nl = text.indexOf("\n", i);
      i = nl === -1 ? this.len : nl;
      c = LF;
    }
    if (i >= this.len) {
      this.pos = this.len;
      return this.nextLine();
    }
    if (c !== LF) throw DECLINE;
    this.line++;
    this.pos = this.lineStart = i + 1;
    return this.nextLine();
  }

  private isSeqItem(): boolean {
    const text = this.text;
    if (text.charCodeAt(this.pos) !== DASH) return false;
    const next = text.charCodeAt(this.pos + 1);
    return next === SPACE || next === LF || this.pos + 1 >= this.len;
  }

  /**
   * A block mapping whose keys are at column `col` (0-based); `pos` is at its first key, or, when
   * `scannedKey` is its position, just past the first key's `:` (a `- key:` item scanned it).
   * Returns with `indent` less than `col`.
   */
  private map(col: number, pointer: string, depth: number, scannedKey: Position | null): Readonly<Record<string, unknown>> {
    if (depth > MAX_DEPTH) throw DECLINE;
    const text = this.text;
    const positions = this.positions;
    const map: Record<string, unknown> = {};
    let keyPosition = scannedKey;
    for (;;) {
      if (keyPosition === null) {
        keyPosition = this.here();
        this.scanScalar();
        if (!this.isKey) throw DECLINE;
      }
      const k = this.scalar;
      const keyText = k === null ? "" : String(k);
      if (keyText === "<<" || keyText === "__proto__" || Object.hasOwn(map, keyText)) throw DECLINE;
      const child = this.track ? `${pointer}/${escapePointerToken(k === null ? "null" : keyText)}` : "";
      if (this.track) positions[child] = keyPosition;
      keyPosition = null;
      // Just past the `:`.
      let value: unknown;
      let i = this.pos;
      while (text.charCodeAt(i) === SPACE) i++;
      const c = text.charCodeAt(i);
      if (c === LF || c === HASH || i >= this.len) {
        // The value is on the next lines (a nested collection), or null.
        const indent = this.finishLine();
        if (indent > col) value = this.isSeqItem() ? this.seq(indent, child, depth + 1) : this.map(indent, child, depth + 1, null);
        else if (indent === col && this.isSeqItem()) value = this.seq(col, child, depth + 1);
        else value = null;
      } else {
        this.pos = i;
        value = this.inlineValue(child);
      }
      map[keyText] = this.own(value);
      const indent = this.indent;
      if (indent < col) return this.done(map);
      // More indented after a value: a multi-line plain scalar, or an error.
      if (indent > col) throw DECLINE;
    }
  }

  /**
   * A block sequence whose `-` are at column `col`; `pos` is at its first `-`. Returns with
   * `indent` less than `col`, or equal at a line that is not an item (the parent key's next sibling
   * when the list is at its parent's indentation).
   */
  private seq(col: number, pointer: string, depth: number): readonly unknown[] {
    if (depth > MAX_DEPTH) throw DECLINE;
    const text = this.text;
    const positions = this.positions;
    const list: unknown[] = [];
    for (;;) {
      let i = this.pos + 1;
      if (text.charCodeAt(i) !== SPACE) throw DECLINE; // `-` alone: an empty item, or one on the next lines
      while (text.charCodeAt(i) === SPACE) i++;
      const c = text.charCodeAt(i);
      if (c === LF || c === HASH || i >= this.len) throw DECLINE;
      this.pos = i;
      const child = this.track ? `${pointer}/${list.length}` : "";
      const position = this.here();
      if (this.track) positions[child] = position;
      let value: unknown;
      if (c === LBRACKET || c === LBRACE) value = this.inlineValue(child);
      else {
        this.scanScalar();
        if (this.isKey) value = this.map(i - this.lineStart, child, depth + 1, position);
        else {
          value = this.scalar;
          this.finishLine();
        }
      }
      list.push(this.own(value));
      const indent = this.indent;
      if (indent < col) break;
      // More indented after an item: a multi-line plain scalar, or an error.
      if (indent > col) throw DECLINE;
      if (!this.isSeqItem()) break;
    }
    return this.done(list);
  }

  /** A value on its key's line: a scalar or a one-line flow collection, then the rest of the line. */
  private inlineValue(pointer: string): unknown {
    const c = this.text.charCodeAt(this.pos);
    let value: unknown;
    if (c === LBRACKET) value = this.flowSeq(pointer);
    else if (c === LBRACE) value = this.emptyFlowMap();
    else {
      this.scanScalar();
      if (this.isKey) throw DECLINE; // `a: b: c`
      value = this.scalar;
    }
    this.finishLine();
    return value;
  }

  /**
   * A plain or quoted scalar in block context at `pos`, into `scalar`; `isKey` when `: ` (or `:` at
   * the end of the line) follows it, `pos` then just past the `:`, otherwise just past the scalar.
   */
  private scanScalar(): void {
    const text = this.text;
    const start = this.pos;
    const c0 = text.charCodeAt(start);
    if (c0 === QUOTE || c0 === DQUOTE) {
      this.scalar = c0 === QUOTE ? this.singleQuoted() : this.doubleQuoted();
      const end = this.pos;
      let i = end;
      while (text.charCodeAt(i) === SPACE) i++;
      this.isKey = this.isMappingIndicator(i);
      if (this.isKey) {
        if (end - start > MAX_KEY_LENGTH) throw DECLINE;
        this.pos = i + 1;
      }
      return;
    }
    this.checkPlainStart(c0, start);
    const len = this.len;
    let i = start + 1;
    let end = i;
    let isKey = false;
    for (; i < len; i++) {
      const c = text.charCodeAt(i);
      if (c === SPACE) {
        if (text.charCodeAt(i + 1) === HASH) break;
        continue;
      }
      if (c === COLON) {
        const next = text.charCodeAt(i + 1);
        if (next === SPACE || next === LF || i + 1 >= len) {
          isKey = true;
          break;
        }
      } else if (c < SPACE) {
        if (c === LF) break;
        throw DECLINE; // a tab or a control character
      }
      end = i + 1;
    }
    const value = plainScalarValue(text.slice(start, end));
    if (value === undefined) throw DECLINE;
    this.scalar = value;
    this.isKey = isKey;
    if (isKey) {
      if (end - start > MAX_KEY_LENGTH) throw DECLINE;
      this.pos = i + 1;
    } else this.pos = end;
  }

  /**
   * A plain scalar may start with `c` at `i`: not an indicator, a reserved or a control character;
   * `-`, `?` and `:` only before a character that is not a space or a flow indicator (`:path`, `-1`).
   */
  private checkPlainStart(c: number, i: number): void {
    if (c < SPACE || (c < 128 && NOT_PLAIN_START[c] === 1)) throw DECLINE;
    if (c === DASH || c === COLON || c === QUESTION) {
      const next = this.text.charCodeAt(i + 1);
      if (next === SPACE || next === LF || next === COMMA || next === LBRACKET || next === RBRACKET || next === LBRACE || next === RBRACE || i + 1 >= this.len) {
        throw DECLINE;
      }
    }
  }

  private isMappingIndicator(i: number): boolean {
    if (this.text.charCodeAt(i) !== COLON) return false;
    const next = this.text.charCodeAt(i + 1);
    return next === SPACE || next === LF || i + 1 >= this.len;
  }

  /** `'…'` on one line, `''` for a quote; `pos` past the closing quote. */
  private singleQuoted(): string {
    const text = this.text;
    let i = this.pos + 1;
    let start = i;
    let out = "";
    for (;;) {
      if (i >= this.len) throw DECLINE;
      const c = text.charCodeAt(i);
      if (c === QUOTE) {
        if (text.charCodeAt(i + 1) !== QUOTE) break;
        out += text.slice(start, i + 1);
        i += 2;
        start = i;
        continue;
      }
      if (c < SPACE) throw DECLINE; // a line break (multi-line), a tab or a control character
      i++;
    }
    this.pos = i + 1;
    return out + text.slice(start, i);
  }

  /** `"…"` on one line with the escapes of resolve-flow-scalar.js; `pos` past the closing quote. */
  private doubleQuoted(): string {
    const text = this.text;
    let i = this.pos + 1;
    let start = i;
    let out = "";
    for (;;) {
      if (i >= this.len) throw DECLINE;
      const c = text.charCodeAt(i);
      if (c === DQUOTE) break;
      if (c === BACKSLASH) {
        out += text.slice(start, i);
        const e = text[i + 1] ?? "";
        const fixed = ESCAPES[e];
        if (fixed !== undefined) {
          out += fixed;
          i += 2;
        } else if (e === "x" || e === "u" || e === "U") {
          const digits = e === "x" ? 2 : e === "u" ? 4 : 8;
          let code = 0;
          for (let d = 0; d < digits; d++) {
            const h = hexValue(text.charCodeAt(i + 2 + d));
            if (h === -1) throw DECLINE;
            code = code * 16 + h;
          }
          if (code > 0x10ffff) throw DECLINE;
          out += String.fromCodePoint(code);
          i += 2 + digits;
        } else throw DECLINE; // an escaped line break (multi-line), or an invalid escape
        start = i;
        continue;
      }
      if (c < SPACE) throw DECLINE; // a line break (multi-line), a tab or a control character
      i++;
    }
    this.pos = i + 1;
    return out + text.slice(start, i);
  }

  /** `[a, 'b', 1]` on one line, of scalars only; each item's position is recorded. */
  private flowSeq(pointer: string): readonly unknown[] {
    const text = this.text;
    const list: unknown[] = [];
    let i = this.pos + 1;
    while (text.charCodeAt(i) === SPACE) i++;
    if (text.charCodeAt(i) === RBRACKET) {
      this.pos = i + 1;
      return this.done(list);
    }
    for (;;) {
      this.pos = i;
      if (this.track) this.positions[`${pointer}/${list.length}`] = this.here();
      const c = text.charCodeAt(i);
      if (c === QUOTE) list.push(this.own(this.singleQuoted()));
      else if (c === DQUOTE) list.push(this.own(this.doubleQuoted()));
      else list.push(this.own(this.flowPlain(c, i)));
      i = this.pos;
      while (text.charCodeAt(i) === SPACE) i++;
      const after = text.charCodeAt(i);
      if (after === RBRACKET) break;
      if (after !== COMMA) throw DECLINE; // a flow pair (`:`), a line break, anything else
      i++;
      while (text.charCodeAt(i) === SPACE) i++;
      if (text.charCodeAt(i) === RBRACKET) throw DECLINE; // a trailing comma
    }
    this.pos = i + 1;
    return this.done(list);
  }

  /** A plain scalar inside `[…]`, ending before `,` or `]`; `pos` past its last character. */
  private flowPlain(c0: number, start: number): string | number | boolean | null {
    const text = this.text;
    this.checkPlainStart(c0, start);
    let i = start + 1;
    let end = i;
    for (;;) {
      if (i >= this.len) throw DECLINE;
      const c = text.charCodeAt(i);
      if (c === COMMA || c === RBRACKET) break;
      if (c === SPACE) {
        if (text.charCodeAt(i + 1) === HASH) throw DECLINE; // a comment: the list goes on on another line
      } else if (c === COLON || c === LBRACKET || c === LBRACE || c === RBRACE || c < SPACE) throw DECLINE;
      else end = i + 1;
      i++;
    }
    const value = plainScalarValue(text.slice(start, end));
    if (value === undefined) throw DECLINE;
    this.pos = end;
    return value;
  }

  /** `{}` or `{ }`. */
  private emptyFlowMap(): Readonly<Record<string, unknown>> {
    let i = this.pos + 1;
    while (this.text.charCodeAt(i) === SPACE) i++;
    if (this.text.charCodeAt(i) !== RBRACE) throw DECLINE;
    this.pos = i + 1;
    return this.done({});
  }
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 65 && c <= 70) return c - 55;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}
