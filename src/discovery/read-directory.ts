/**
 * Discovery from files: one sub-directory per cluster (named after it) holding either a snapshot
 * document (`kind: DiscoverySnapshot`, YAML or JSON) or plain Kubernetes manifests (multi-document
 * YAML, `kind: List`, what `kubectl get -o yaml` prints), which are converted with
 * snapshotFromKubernetesObjects. Snapshot documents may also sit directly in the top directory
 * (`<dir>/<cluster>.yaml`, the layout of the audit branch's `discovery/`), the cluster then comes
 * from the document.
 *
 * `discoveryFromFiles` is the pure core (contents in, snapshots out) so that Git blobs can be fed
 * to it; `readDiscoveryDirectory` reads a directory from disk.
 */
import { readdir, readFile } from "node:fs/promises";
import { posix } from "node:path";
import { Document, isMap, isSeq, LineCounter, parseAllDocuments, parseDocument } from "yaml";
import { scanYamlValues } from "../config/index.js";
import { Severity, sortDiagnostics, type Diagnostic } from "../core/index.js";
import { validateDiscoverySnapshot, type DiscoverySnapshot } from "../model/index.js";
import { DiscoveryCode, snapshotFromKubernetesObjects, type SnapshotOptions, type SourceLocation } from "./convert.js";
import { DISCOVERY_KIND, normalizeSnapshot } from "./snapshot.js";

/** A discovery file: path relative to the discovery directory (POSIX), and its content. */
export interface DiscoveryFile {
  readonly path: string;
  readonly content: string | Uint8Array;
}

export interface DiscoveryReadResult {
  /** Snapshot per cluster name, sorted by cluster. */
  readonly snapshots: Map<string, DiscoverySnapshot>;
  readonly diagnostics: Diagnostic[];
}

/** Conversion options (see SnapshotOptions) plus how file names appear in diagnostics. */
export interface DiscoveryReadOptions extends Omit<SnapshotOptions, "locate"> {
  /** Prefix for file names in diagnostics (e.g. the directory as the user typed it). Default: none. */
  readonly displayRoot?: string;
}

const FILE_PATTERN = /\.(ya?ml|json)$/i;

/**
 * One document of a discovery file. Its value comes from JSON.parse for a `.json` file, else from
 * the YAML parser; the YAML document (node positions, for the line and column of a diagnostic) is
 * made only when a diagnostic needs one — a valid JSON snapshot never goes through the YAML parser.
 */
interface ParsedDoc {
  readonly file: string;
  readonly value: unknown;
  /** The YAML document and its line counter; parsed on first use for JSON files. */
  readonly source: () => { readonly doc: Document; readonly lines: LineCounter };
}

function unescapePointer(s: string): string {
  return s.replace(/~1/g, "/").replace(/~0/g, "~");
}

/** Line/column of the deepest node of `doc` on the JSON pointer `pointer`. */
function locateIn(d: ParsedDoc, pointer: string): SourceLocation {
  const { doc, lines } = d.source();
  const parts = pointer.split("#")[0]!.split("/").slice(1).map(unescapePointer);
  let node: unknown = doc.contents;
  let offset = (doc.contents as { range?: [number, number, number] } | null)?.range?.[0] ?? 0;
  for (const part of parts) {
    let next: unknown;
    const inSeq = isSeq(node);
    if (isMap(node)) {
      const pair = node.items.find((p) => (p.key as { value?: unknown } | null)?.value === part);
      if (pair) {
        const keyRange = (pair.key as { range?: [number, number, number] } | null)?.range;
        if (keyRange) offset = keyRange[0];
        next = pair.value;
      }
    } else if (isSeq(node)) {
      next = node.items[Number(part)];
    }
    if (next === undefined || next === null) break;
    node = next;
    const range = (node as { range?: [number, number, number] }).range;
    // a map value is best pointed at by its key (done above); a list item by its own start
    if (range && (!isMap(node) || inSeq)) offset = range[0];
  }
  const pos = lines.linePos(offset);
  return { file: d.file, line: pos.line, column: pos.col };
}

const JSON_FILE = /\.json$/i;

/** `strings`: the one copy of each long string value read so far (scanYamlValues), shared by the files of one read. */
function parseFile(file: string, content: string | Uint8Array, diagnostics: Diagnostic[], strings: Map<string, string>): ParsedDoc[] {
  const text = typeof content === "string" ? content : new TextDecoder("utf-8").decode(content);
  if (JSON_FILE.test(file)) {
    // JSON is YAML, so the YAML document made on demand has the same value; a file that is not valid
    // JSON goes through the YAML parser below (which reports its errors, or reads it if it is YAML).
    let value: unknown;
    let parsed = false;
    try {
      value = JSON.parse(text);
      parsed = true;
    } catch {
      // not JSON: read as YAML
    }
    if (parsed) {
      if (value === null) return [];
      let source: { doc: Document; lines: LineCounter } | undefined;
      return [{ file, value, source: () => (source ??= yamlDocument(text)) }];
    }
  }
  // The common YAML (what the audit writer writes, and most of what kubectl prints) is read by the config
  // loader's scanner, values only; the composer makes the documents when a diagnostic needs a position
  // (as for JSON above), and reads whatever the scanner declines.
  const values = scanYamlValues(text, strings);
  if (values !== undefined) {
    let all: { docs: Document[]; lines: LineCounter } | undefined;
    const composed = (): { docs: Document[]; lines: LineCounter } => {
      if (all === undefined) {
        const lines = new LineCounter();
        const docs = parseAllDocuments(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: false });
        all = { docs: Array.isArray(docs) ? docs : [], lines };
      }
      return all;
    };
    // The scanner answers only where the composer reads the same documents, so docs[i] is this value's; were
    // it ever missing, a diagnostic would point at the file's start rather than fail.
    return values.map((value, i) => ({
      file,
      value,
      source: () => {
        const { docs, lines } = composed();
        return { doc: docs[i] ?? new Document(), lines };
      },
    }));
  }
  const lines = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: false });
  const list = Array.isArray(docs) ? docs : [];
  const out: ParsedDoc[] = [];
  for (const doc of list) {
    if (doc.errors.length > 0) {
      for (const err of doc.errors) {
        const pos = lines.linePos(err.pos[0]);
        diagnostics.push({
          code: DiscoveryCode.YamlError,
          severity: Severity.Error,
          file,
          line: pos.line,
          column: pos.col,
          message: `${err.message.split("\n")[0] ?? "syntax error"}; this document is skipped — fix the YAML`,
        });
      }
      continue;
    }
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    if (value === null || value === undefined) continue;
    const source = { doc, lines };
    out.push({ file, value, source: () => source });
  }
  return out;
}

/** The YAML document of a JSON text (for positions only). */
function yamlDocument(text: string): { doc: Document; lines: LineCounter } {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: false });
  return { doc, lines };
}

function isSnapshotDoc(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === DISCOVERY_KIND;
}

/** Validates a snapshot document; returns it normalised, or undefined (with diagnostics) when invalid. */
function readSnapshotDoc(d: ParsedDoc, expectedCluster: string | undefined, diagnostics: Diagnostic[]): DiscoverySnapshot | undefined {
  const issues = validateDiscoverySnapshot(d.value);
  if (issues.length > 0) {
    for (const issue of issues) {
      diagnostics.push({
        code: DiscoveryCode.InvalidSnapshot,
        severity: Severity.Error,
        ...locateIn(d, issue.path),
        path: issue.path === "" ? "/" : issue.path,
        message: `${issue.message}; the snapshot is not used`,
      });
    }
    return undefined;
  }
  const snapshot = d.value as DiscoverySnapshot;
  if (expectedCluster !== undefined && snapshot.cluster !== expectedCluster) {
    diagnostics.push({
      code: DiscoveryCode.ClusterMismatch,
      severity: Severity.Error,
      ...locateIn(d, "/cluster"),
      path: "/cluster",
      message: `snapshot of cluster ${JSON.stringify(snapshot.cluster)} in the directory of cluster ${JSON.stringify(expectedCluster)}; move the file or fix \`cluster\``,
    });
    return undefined;
  }
  // d.value was parsed from this file for this call alone and nobody modifies it: the snapshot may share its canonical parts
  return normalizeSnapshot(snapshot, { owned: true });
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Pure core of readDiscoveryDirectory: files (paths relative to the discovery directory) in,
 * snapshots per cluster out. Files other than .yaml/.yml/.json are ignored.
 */
export function discoveryFromFiles(files: readonly DiscoveryFile[], options: DiscoveryReadOptions = {}): DiscoveryReadResult {
  const diagnostics: Diagnostic[] = [];
  const display = (p: string): string => (options.displayRoot ? posix.join(options.displayRoot, p) : p);
  const byCluster = new Map<string, ParsedDoc[]>();
  const topLevel: ParsedDoc[] = [];
  const clusterDirs = new Set<string>();
  const clustersWithFiles = new Set<string>();
  const strings = new Map<string, string>();
  for (const f of [...files].sort((a, b) => compare(a.path, b.path))) {
    const parts = f.path.split("/").filter((p) => p !== "" && p !== ".");
    if (parts.length > 1) clusterDirs.add(parts[0]!);
    if (!FILE_PATTERN.test(f.path)) continue;
    if (parts.length > 1) clustersWithFiles.add(parts[0]!);
    const docs = parseFile(display(f.path), f.content, diagnostics, strings);
    if (parts.length === 1) topLevel.push(...docs);
    else {
      const list = byCluster.get(parts[0]!) ?? [];
      list.push(...docs);
      byCluster.set(parts[0]!, list);
    }
  }

  const snapshots = new Map<string, DiscoverySnapshot>();
  const { displayRoot: _d, ...snapshotOptions } = options;
  for (const cluster of [...clusterDirs].sort(compare)) {
    const docs = byCluster.get(cluster) ?? [];
    const snapDocs = docs.filter((d) => isSnapshotDoc(d.value));
    const manifests = docs.filter((d) => !isSnapshotDoc(d.value));
    if (snapDocs.length > 0) {
      const first = snapDocs[0]!;
      if (snapDocs.length > 1 || manifests.length > 0) {
        diagnostics.push({
          code: DiscoveryCode.AmbiguousSource,
          severity: Severity.Error,
          ...locateIn(first, ""),
          message: `the directory of cluster ${cluster} holds ${snapDocs.length} snapshot document(s) and ${manifests.length} manifest document(s); only ${first.file} is used — keep either one snapshot or manifests`,
        });
      }
      const s = readSnapshotDoc(first, cluster, diagnostics);
      if (s) snapshots.set(cluster, s);
      continue;
    }
    if (manifests.length === 0) {
      // files whose documents all failed to parse were reported already
      if (clustersWithFiles.has(cluster)) continue;
      diagnostics.push({
        code: DiscoveryCode.NothingDiscovered,
        severity: Severity.Warning,
        file: display(cluster),
        message: `no discovery files for cluster ${cluster} (expected .yaml/.yml/.json snapshot or manifests); the cluster has no discovery`,
      });
      continue;
    }
    const result = snapshotFromKubernetesObjects(
      cluster,
      manifests.map((d) => d.value),
      { ...snapshotOptions, locate: (index, path) => (manifests[index] ? locateIn(manifests[index], path) : undefined) },
    );
    diagnostics.push(...result.diagnostics);
    snapshots.set(cluster, result.snapshot);
  }

  for (const d of topLevel) {
    if (!isSnapshotDoc(d.value)) {
      diagnostics.push({
        code: DiscoveryCode.NothingDiscovered,
        severity: Severity.Warning,
        ...locateIn(d, ""),
        message: "Kubernetes manifests directly in the discovery directory belong to no cluster and are ignored; move them to <dir>/<cluster>/",
      });
      continue;
    }
    const s = readSnapshotDoc(d, undefined, diagnostics);
    if (!s) continue;
    if (snapshots.has(s.cluster)) {
      diagnostics.push({
        code: DiscoveryCode.AmbiguousSource,
        severity: Severity.Error,
        ...locateIn(d, "/cluster"),
        path: "/cluster",
        message: `cluster ${s.cluster} is described twice; this snapshot is ignored — keep one description per cluster`,
      });
      continue;
    }
    snapshots.set(s.cluster, s);
  }
  const sorted = new Map([...snapshots].sort(([a], [b]) => compare(a, b)));
  return { snapshots: sorted, diagnostics: sortDiagnostics(diagnostics) };
}

async function walk(dir: string, rel: string, out: DiscoveryFile[], diagnostics: Diagnostic[], display: string): Promise<void> {
  let entries;
  try {
    entries = await readdir(posix.join(dir, rel), { withFileTypes: true });
  } catch (err) {
    diagnostics.push({
      code: DiscoveryCode.ReadError,
      severity: Severity.Error,
      file: rel === "" ? display : posix.join(display, rel),
      message: `cannot read the discovery directory (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); check the path`,
    });
    return;
  }
  entries.sort((a, b) => compare(a.name, b.name));
  for (const e of entries) {
    if (e.name.startsWith(".")) continue;
    const p = rel === "" ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) await walk(dir, p, out, diagnostics, display);
    else if (e.isFile() && FILE_PATTERN.test(e.name)) {
      try {
        out.push({ path: p, content: await readFile(posix.join(dir, p)) });
      } catch (err) {
        diagnostics.push({
          code: DiscoveryCode.ReadError,
          severity: Severity.Error,
          file: posix.join(display, p),
          message: `cannot read the file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
        });
      }
    }
  }
  // An empty cluster directory still names a cluster (discoveryFromFiles warns about it); a
  // placeholder path that matches no file pattern carries the name.
  if (rel !== "" && !rel.includes("/") && !out.some((f) => f.path.startsWith(`${rel}/`))) out.push({ path: `${rel}/.empty`, content: "" });
}

/**
 * Reads a discovery directory from disk: `<dir>/<cluster>/...` (snapshot or manifests) and
 * `<dir>/<cluster>.yaml` snapshot documents. Never throws for bad input; problems are diagnostics
 * (file names as `dir` was given).
 */
export async function readDiscoveryDirectory(dir: string, options: Omit<DiscoveryReadOptions, "displayRoot"> = {}): Promise<DiscoveryReadResult> {
  const files: DiscoveryFile[] = [];
  const diagnostics: Diagnostic[] = [];
  const posixDir = dir.split("\\").join("/");
  await walk(posixDir, "", files, diagnostics, posixDir);
  const result = discoveryFromFiles(files, { ...options, displayRoot: posixDir });
  return { snapshots: result.snapshots, diagnostics: sortDiagnostics([...diagnostics, ...result.diagnostics]) };
}
