/**
 * YAML documents with positions: parse a multi-document file, and map every JSON pointer inside a
 * document to the line and column of its node, as plain data.
 */
import { isMap, isPair, isScalar, isSeq, LineCounter, parseAllDocuments, type Document, type Node as YamlNode } from "yaml";
import type { Position } from "./types.js";

export interface ParsedDocument {
  readonly docIndex: number;
  /** Position of the document's root node (or of the document start when empty). */
  readonly position: Position;
  /** The document as plain JSON-like data; undefined when it has no content. */
  readonly value: unknown;
  readonly positions: Record<string, Position>;
  readonly errors: readonly YamlProblem[];
  readonly warnings: readonly YamlProblem[];
}

export interface YamlProblem {
  readonly message: string;
  readonly position: Position;
}

/** RFC 6901 escaping of one pointer token. */
export function escapePointerToken(token: string): string {
  // Most keys have neither character: returned as they are, without two regex passes.
  return token.includes("~") || token.includes("/") ? token.replace(/~/g, "~0").replace(/\//g, "~1") : token;
}

export function parseYamlDocuments(text: string): ParsedDocument[] {
  const lineCounter = new LineCounter();
  // logLevel "error": the yaml package would otherwise print process warnings (e.g. for collection keys).
  const docs = parseAllDocuments(text, { lineCounter, prettyErrors: false, uniqueKeys: true, strict: true, logLevel: "error" });
  const at = (offset: number): Position => {
    const p = lineCounter.linePos(offset);
    return [p.line, p.col];
  };
  // An empty stream is returned as a non-array `EmptyStream`.
  const list: readonly Document.Parsed[] = Array.isArray(docs) ? docs : [];
  return list.map((doc, docIndex) => {
    const errors = doc.errors.map((e) => ({ message: firstLine(e.message), position: at(e.pos[0]) }));
    const warnings = doc.warnings.map((e) => ({ message: firstLine(e.message), position: at(e.pos[0]) }));
    let positions: Record<string, Position> = {};
    const root = doc.contents;
    const rootStart = root ? root.range[0] : doc.range[0];
    const rootPosition = at(rootStart);
    positions[""] = rootPosition;
    let value: unknown;
    if (errors.length === 0 && root !== null) {
      // One walk builds the plain value (frozen as it is built) and the positions; documents with
      // aliases, explicit tags or non-scalar keys take the yaml package's own toJS.
      try {
        value = toPlain(root, "", positions, at);
      } catch (err) {
        if (err !== FALLBACK) throw err;
        positions = { "": rootPosition };
        collectPositions(root, "", positions, at);
        try {
          value = doc.toJS({ maxAliasCount: 100 });
        } catch (e) {
          // Excessive aliasing ("billion laughs") and similar: report as a syntax problem.
          errors.push({ message: e instanceof Error ? e.message : String(e), position: rootPosition });
        }
      }
    } else if (root) collectPositions(root, "", positions, at);
    return { docIndex, position: rootPosition, value, positions, errors, warnings };
  });
}

function firstLine(message: string): string {
  const nl = message.indexOf("\n");
  const line = nl === -1 ? message : message.slice(0, nl);
  // yaml appends " at line N, column M:" to pretty messages; we carry the position separately.
  return line.replace(/ at line \d+, column \d+:?$/, "");
}

type At = (offset: number) => Position;

/** Thrown by toPlain when a document needs the yaml package's toJS (aliases, tags, non-scalar keys). */
class NeedsToJs extends Error {}
const FALLBACK = new NeedsToJs("the document needs the yaml package's toJS");

/**
 * The plain value of a node, as `Document.toJS()` makes it for the core schema without aliases
 * (maps → objects, keys as strings, sequences → arrays, scalars → their value), each object and
 * array frozen; records the position of every child node on the way (as collectPositions does).
 */
function toPlain(node: unknown, pointer: string, out: Record<string, Position>, at: At): unknown {
  if (node === null || node === undefined) return null;
  if (isScalar(node)) {
    const v = node.value;
    if (v !== null && (typeof v === "object" || typeof v === "function" || typeof v === "bigint")) throw FALLBACK;
    return v;
  }
  if (isMap(node)) {
    if (node.tag !== undefined) throw FALLBACK;
    const map: Record<string, unknown> = {};
    for (const item of node.items) {
      const key = item.key as YamlNode | null;
      if (!isScalar(key) || key.tag !== undefined) throw FALLBACK;
      const k = key.value;
      if (typeof k !== "string" && typeof k !== "number" && typeof k !== "boolean" && k !== null) throw FALLBACK;
      const keyText = k === null ? "" : String(k);
      if (keyText === "<<") throw FALLBACK;
      const child = `${pointer}/${escapePointerToken(String(k))}`;
      const value = item.value as YamlNode | null;
      const start = key.range?.[0] ?? value?.range?.[0];
      if (start !== undefined) out[child] = at(start);
      const v = toPlain(value, child, out, at);
      if (keyText in map) Object.defineProperty(map, keyText, { value: v, writable: true, enumerable: true, configurable: true });
      else map[keyText] = v;
    }
    return Object.freeze(map);
  }
  if (isSeq(node)) {
    if (node.tag !== undefined) throw FALLBACK;
    const list: unknown[] = [];
    node.items.forEach((item, i) => {
      const child = `${pointer}/${i}`;
      const start = (item as YamlNode | null)?.range?.[0];
      if (start !== undefined) out[child] = at(start);
      list.push(toPlain(item, child, out, at));
    });
    return Object.freeze(list);
  }
  throw FALLBACK; // alias, or anything else
}

function collectPositions(node: unknown, pointer: string, out: Record<string, Position>, at: At): void {
  if (isMap(node)) {
    for (const item of node.items) {
      if (!isPair(item)) continue;
      const key = item.key;
      const keyText = isScalar(key) ? String(key.value) : String(key);
      const child = `${pointer}/${escapePointerToken(keyText)}`;
      const value = item.value as YamlNode | null;
      // The key: the line that names the field is where "unknown field", "wrong type" and
      // "missing property" issues point (the value of a block collection starts a line later).
      const start = (key as YamlNode | null)?.range?.[0] ?? value?.range?.[0];
      if (start !== undefined) out[child] = at(start);
      if (value !== null) collectPositions(value, child, out, at);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => {
      const child = `${pointer}/${i}`;
      const start = (item as YamlNode | null)?.range?.[0];
      if (start !== undefined) out[child] = at(start);
      if (item !== null) collectPositions(item, child, out, at);
    });
  }
}
