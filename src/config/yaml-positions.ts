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
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
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
    const positions: Record<string, Position> = {};
    const root = doc.contents;
    const rootStart = root ? root.range[0] : doc.range[0];
    positions[""] = at(rootStart);
    if (root) collectPositions(root, "", positions, at);
    let value: unknown;
    if (errors.length === 0 && root !== null) {
      try {
        value = doc.toJS({ maxAliasCount: 100 });
      } catch (err) {
        // Excessive aliasing ("billion laughs") and similar: report as a syntax problem.
        errors.push({ message: err instanceof Error ? err.message : String(err), position: at(rootStart) });
      }
    }
    return { docIndex, position: at(rootStart), value, positions, errors, warnings };
  });
}

function firstLine(message: string): string {
  const nl = message.indexOf("\n");
  const line = nl === -1 ? message : message.slice(0, nl);
  // yaml appends " at line N, column M:" to pretty messages; we carry the position separately.
  return line.replace(/ at line \d+, column \d+:?$/, "");
}

type At = (offset: number) => Position;

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
