/**
 * Seeding: parses multi-document YAML (or takes objects) into the kinds the emulator serves. Bad
 * input is reported as Diagnostics with file and line, never thrown at the caller.
 */
import { LineCounter, parseAllDocuments } from "yaml";
import { Severity, type Diagnostic } from "../core/index.js";
import { isObject, type JsonObject } from "./patch.js";

export const SeedCode = {
  YamlSyntax: "KUBE_SEED_YAML_SYNTAX",
  NotAnObject: "KUBE_SEED_NOT_AN_OBJECT",
  UnknownKind: "KUBE_SEED_UNKNOWN_KIND",
  Rejected: "KUBE_SEED_REJECTED",
} as const;

export interface SeedDocument {
  readonly object: JsonObject;
  readonly line: number;
}

/** Splits YAML text into objects; `List` kinds are flattened into their items. */
export function parseSeedYaml(text: string, file?: string): { documents: SeedDocument[]; diagnostics: Diagnostic[] } {
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter });
  const documents: SeedDocument[] = [];
  const diagnostics: Diagnostic[] = [];
  const where = (offset: number): { file?: string; line: number; column: number } => {
    const pos = lineCounter.linePos(offset);
    return { ...(file === undefined ? {} : { file }), line: pos.line, column: pos.col };
  };
  for (const doc of Array.isArray(docs) ? docs : [docs]) {
    // The first line of the object itself, not of the `---` separator above it.
    const start = doc.contents?.range[0] ?? doc.range[0];
    if (doc.errors.length > 0) {
      for (const e of doc.errors) {
        diagnostics.push({ code: SeedCode.YamlSyntax, severity: Severity.Error, ...where(e.pos[0]), message: `YAML syntax error: ${e.message.split("\n")[0] ?? ""}` });
      }
      continue;
    }
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    if (!isObject(value)) {
      diagnostics.push({ code: SeedCode.NotAnObject, severity: Severity.Error, ...where(start), message: "a seed document must be a Kubernetes object (a YAML mapping)" });
      continue;
    }
    const line = where(start).line;
    if (typeof value.kind === "string" && value.kind.endsWith("List") && Array.isArray(value.items)) {
      for (const item of value.items) if (isObject(item)) documents.push({ object: item, line });
      continue;
    }
    documents.push({ object: value, line });
  }
  return { documents, diagnostics };
}
