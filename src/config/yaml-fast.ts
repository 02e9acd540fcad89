/**
 * The fast paths of the YAML reader, tried in turn before the composer (yaml-positions.ts):
 *
 * 1. the scanner (yaml-scan.ts): reads the common document straight from the text;
 * 2. the CST path (below), for what the scanner declines: block mappings and sequences of plain,
 *    quoted and block scalars, single-line flow sequences of scalars and `{}`, comments. It builds
 *    the plain value and the positions straight from the `yaml` package's CST (its lexer and
 *    parser), skipping the composer's node objects and the second walk over them, which were ~25%
 *    of a full load.
 *
 * Both are only optimisations: whatever they do not recognise as certainly valid (anchors, aliases,
 * tags, merge keys, duplicate keys, explicit keys, tabs, empty documents or items, multi-line or
 * nested flow collections, any scalar the yaml package reports a problem for, a root that is not
 * a mapping…) makes them return `undefined`, and the file goes through the composer as before, so
 * results and diagnostics stay those of `parseAllDocuments`. test/config/yaml-fast.test.ts
 * compares each path with the composer over the generated repositories, the corpus and edge cases.
 */
import { CST, LineCounter, Parser } from "yaml";
import type { Position } from "./types.js";
import { escapePointerToken, type ParsedDocument } from "./yaml-positions.js";
import { plainScalarValue } from "./yaml-scalar.js";
import { MAX_DEPTH, scanYaml } from "./yaml-scan.js";

type Token = CST.Token;
type SourceToken = CST.SourceToken;


/** Thrown inside the walk when the document needs the composer (one instance: no stack captured per file). */
class NeedsComposer extends Error {}
const BAIL = new NeedsComposer("the document needs the yaml composer");
const bail = (): never => {
  throw BAIL;
};

const SPACE_OK = new Set(["space", "newline", "comment"]);

/** The documents of `text` by the scanner, else by the CST path; undefined when the file needs the composer. */
export function parseYamlFast(text: string): ParsedDocument[] | undefined {
  return scanYaml(text) ?? parseYamlCst(text);
}

/** The documents of `text` read from the `yaml` CST, or undefined when some part of it needs the composer. */
export function parseYamlCst(text: string): ParsedDocument[] | undefined {
  const lineCounter = new LineCounter();
  const parser = new Parser(lineCounter.addNewLine);
  const docs: ParsedDocument[] = [];
  const lineStarts = lineCounter.lineStarts;
  // Lines of the offsets walked, which mostly ascend: a cursor, and a binary search when it moves back.
  // (Same answer as LineCounter.linePos: the parser records line 1 at offset 0.)
  let cursor = 0;
  const lineIndex = (offset: number): number => {
    const n = lineStarts.length;
    if (lineStarts[cursor]! > offset) {
      let lo = 0;
      let hi = cursor;
      while (lo + 1 < hi) {
        const mid = (lo + hi) >> 1;
        if (lineStarts[mid]! <= offset) lo = mid;
        else hi = mid;
      }
      cursor = lo;
    } else {
      while (cursor + 1 < n && lineStarts[cursor + 1]! <= offset) cursor++;
    }
    return cursor;
  };
  const at = (offset: number): Position => {
    const i = lineIndex(offset);
    return [i + 1, offset - lineStarts[i]! + 1];
  };
  const column = (offset: number): number => offset - lineStarts[lineIndex(offset)]!;
  const commentOk = (tok: SourceToken): boolean => {
    if (tok.type !== "comment") return true;
    const prev = tok.offset === 0 ? "\n" : text[tok.offset - 1];
    return prev === " " || prev === "\n";
  };
  const onlySpace = (tokens: readonly SourceToken[] | undefined): boolean => {
    if (!tokens) return true;
    for (const t of tokens) {
      if (!SPACE_OK.has(t.type) || !commentOk(t)) return false;
      if (t.type === "space" && t.source.includes("\t")) return false;
    }
    return true;
  };

  const scalar = (tok: Token): unknown => {
    if (tok.type !== "scalar" && tok.type !== "single-quoted-scalar" && tok.type !== "double-quoted-scalar" && tok.type !== "block-scalar") throw BAIL;
    if (tok.type === "block-scalar") {
      for (const t of tok.props) {
        if (t.type === "block-scalar-header") continue;
        if (!("source" in t) || !SPACE_OK.has(t.type) || !commentOk(t as SourceToken) || t.source.includes("\t")) throw BAIL;
      }
    } else if (!onlySpace(tok.end)) throw BAIL;
    const res = CST.resolveAsScalar(tok, true, bail);
    if (tok.type !== "scalar") return res.value;
    const v = plainScalarValue(res.value);
    if (v === undefined) throw BAIL;
    return v;
  };

  const node = (tok: Token, pointer: string, out: Record<string, Position>, depth: number): unknown => {
    switch (tok.type) {
      case "block-map":
        return blockMap(tok, pointer, out, depth + 1);
      case "block-seq":
        return blockSeq(tok, pointer, out, depth + 1);
      case "flow-collection":
        return flow(tok, pointer, out);
      default:
        return scalar(tok);
    }
  };

  const blockMap = (tok: CST.BlockMap, pointer: string, out: Record<string, Position>, depth: number): unknown => {
    if (depth > MAX_DEPTH) throw BAIL;
    const map: Record<string, unknown> = {};
    let col = -1;
    for (const item of tok.items) {
      if (!onlySpace(item.start)) throw BAIL;
      const key = item.key;
      const sep = item.sep;
      if (!key || !sep || sep.length === 0 || sep[0]!.type !== "map-value-ind") throw BAIL;
      if (key.type !== "scalar" && key.type !== "single-quoted-scalar" && key.type !== "double-quoted-scalar") throw BAIL;
      if (key.source.includes("\n") || (key.end && key.end.length > 0)) throw BAIL;
      const keyCol = column(key.offset);
      if (col === -1) col = keyCol;
      else if (keyCol !== col) throw BAIL;
      const colon = sep[0]!.offset;
      if (colon - key.offset > 1000 || text.slice(key.offset + key.source.length, colon).trim() !== "") throw BAIL;
      for (let i = 1; i < sep.length; i++) {
        const t = sep[i]!;
        if (!SPACE_OK.has(t.type) || !commentOk(t) || (t.type === "space" && t.source.includes("\t"))) throw BAIL;
      }
      const k = scalar(key);
      if (typeof k !== "string" && typeof k !== "number" && typeof k !== "boolean" && k !== null) throw BAIL;
      const keyText = k === null ? "" : String(k);
      if (keyText === "<<" || Object.prototype.hasOwnProperty.call(map, keyText) || keyText === "__proto__") throw BAIL;
      const child = `${pointer}/${escapePointerToken(String(k))}`;
      out[child] = at(key.offset);
      const value = item.value;
      let v: unknown = null;
      if (value) {
        if ((value.type === "block-map" || value.type === "block-seq") && !sep.some((t) => t.type === "newline")) throw BAIL;
        if (value.type === "block-map" && column(value.offset) <= col) throw BAIL;
        if (value.type === "block-seq" && column(value.offset) < col) throw BAIL;
        v = node(value, child, out, depth);
      }
      map[keyText] = v;
    }
    return Object.freeze(map);
  };

  const blockSeq = (tok: CST.BlockSequence, pointer: string, out: Record<string, Position>, depth: number): unknown => {
    if (depth > MAX_DEPTH) throw BAIL;
    const list: unknown[] = [];
    let col = -1;
    tok.items.forEach((item, i) => {
      let ind = -1;
      for (const t of item.start) {
        if (t.type === "seq-item-ind") {
          if (ind !== -1) throw BAIL;
          ind = t.offset;
        } else if (!SPACE_OK.has(t.type) || !commentOk(t) || (t.type === "space" && t.source.includes("\t"))) throw BAIL;
      }
      if (ind === -1 || !item.value) throw BAIL;
      const c = column(ind);
      if (col === -1) col = c;
      else if (c !== col) throw BAIL;
      const value = item.value;
      if (value.type === "block-seq" || (value.type === "block-map" && column(value.offset) <= col)) throw BAIL;
      const child = `${pointer}/${i}`;
      out[child] = at(value.offset);
      list.push(node(value, child, out, depth));
    });
    return Object.freeze(list);
  };

  const flow = (tok: CST.FlowCollection, pointer: string, out: Record<string, Position>): unknown => {
    const end = tok.end;
    const close = end[0];
    if (!close || !onlySpace(end.slice(1))) throw BAIL;
    if (tok.start.type === "flow-map-start") {
      if (tok.items.length > 0 || close.type !== "flow-map-end" || close.offset !== tok.start.offset + 1) throw BAIL;
      return Object.freeze({});
    }
    if (tok.start.type !== "flow-seq-start" || close.type !== "flow-seq-end") throw BAIL;
    // Single line only: multi-line flow collections have indentation rules of their own.
    if (text.slice(tok.start.offset, close.offset).includes("\n")) throw BAIL;
    const list: unknown[] = [];
    tok.items.forEach((item, i) => {
      let commas = 0;
      for (const t of item.start) {
        if (t.type === "comma") commas++;
        else if (t.type !== "space" || t.source.includes("\t")) throw BAIL;
      }
      if (commas !== (i === 0 ? 0 : 1) || item.key !== undefined || item.sep !== undefined || !item.value) throw BAIL;
      const value = item.value;
      if (value.type !== "scalar" && value.type !== "single-quoted-scalar" && value.type !== "double-quoted-scalar") throw BAIL;
      const child = `${pointer}/${i}`;
      out[child] = at(value.offset);
      list.push(scalar(value));
    });
    return Object.freeze(list);
  };

  try {
    for (const tok of parser.parse(text)) {
      switch (tok.type) {
        case "comment":
          if (!commentOk(tok)) return undefined;
          break;
        case "newline":
          break;
        case "space":
          if (tok.source.includes("\t")) return undefined;
          break;
        case "doc-end":
          if (!onlySpace(tok.end)) return undefined;
          break;
        case "document": {
          let marker = false;
          let lineAfterMarker = false;
          for (const t of tok.start) {
            if (t.type === "doc-start") marker = true;
            else if (!SPACE_OK.has(t.type) || !commentOk(t) || (t.type === "space" && t.source.includes("\t"))) return undefined;
            else if (t.type === "newline") lineAfterMarker = true;
          }
          if (marker && !lineAfterMarker) return undefined;
          if (!onlySpace(tok.end)) return undefined;
          const root = tok.value;
          if (!root || root.type !== "block-map" || root.items.length === 0 || root.items[0]!.start.length > 0) return undefined;
          if (column(root.offset) !== 0) return undefined;
          const position = at(root.offset);
          // Built up from {} as the composer path does: a literal with one key gets a map that kept
          // 3.4 MB more of the 10,000-object state alive (heap after GC; V8 lays the two out differently).
          const positions: Record<string, Position> = {};
          positions[""] = position;
          const value = blockMap(root, "", positions, 0);
          docs.push({ docIndex: docs.length, position, value, positions, errors: [], warnings: [] });
          break;
        }
        default:
          return undefined;
      }
    }
  } catch (err) {
    if (err === BAIL) return undefined;
    throw err;
  }
  return docs;
}
