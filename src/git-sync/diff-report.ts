/**
 * Pull-request diffs of rendered output: compare what two revisions render (with the same
 * discovery), per cluster and resource, and report it as Markdown comment bodies (each under the
 * forge's limit, never cutting one resource's diff) or JSON. Pure: no I/O.
 */
import { structuredPatch } from "diff";
import { canonicalJson, canonicalYaml, formatDiagnostic, Severity, sortDiagnostics, type Diagnostic } from "../core/index.js";
import type { RenderedResource } from "./audit.js";

export interface RenderSide {
  /** The ref as the user named it, and the commit it resolved to. */
  readonly ref: string;
  readonly commit: string;
  readonly clusters: ReadonlyMap<string, readonly RenderedResource[]>;
  /** Loader and translation diagnostics of this revision. */
  readonly diagnostics: readonly Diagnostic[];
}

export interface ResourceId {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

export interface ResourceChange extends ResourceId {
  /** `added`/`removed`: the whole YAML; `changed`: a unified diff of the YAML. */
  readonly text: string;
}

export interface ClusterDiff {
  readonly cluster: string;
  readonly added: readonly ResourceChange[];
  readonly changed: readonly ResourceChange[];
  readonly removed: readonly ResourceChange[];
}

export interface DiffReport {
  readonly base: { readonly ref: string; readonly commit: string };
  readonly head: { readonly ref: string; readonly commit: string };
  /** Clusters with at least one change, sorted. */
  readonly clusters: readonly ClusterDiff[];
  /** Diagnostics of head that base does not have, and of base that head no longer has. */
  readonly introduced: readonly Diagnostic[];
  readonly fixed: readonly Diagnostic[];
  /** Error diagnostics in head (CI fails on these). */
  readonly headErrors: number;
}

/**
 * Compares two renders by structure: per cluster, objects are matched by their key and compared by
 * identity first (an incremental translation hands back the very objects, and arrays, it kept), then
 * by canonical JSON; only objects that were added, removed or changed are serialised to YAML. A
 * cluster whose object list is the same array on both sides costs nothing.
 */
export function compareRenders(base: RenderSide, head: RenderSide): DiffReport {
  const clusters: ClusterDiff[] = [];
  for (const diff of clusterDiffs(base, head)) clusters.push(diff);
  const baseKeys = new Set(base.diagnostics.map(diagnosticKey));
  const headKeys = new Set(head.diagnostics.map(diagnosticKey));
  return {
    base: { ref: base.ref, commit: base.commit },
    head: { ref: head.ref, commit: head.commit },
    clusters,
    introduced: sortDiagnostics(head.diagnostics.filter((d) => !baseKeys.has(diagnosticKey(d)))),
    fixed: sortDiagnostics(base.diagnostics.filter((d) => !headKeys.has(diagnosticKey(d)))),
    headErrors: head.diagnostics.filter((d) => d.severity === Severity.Error).length,
  };
}

/** The changed clusters, sorted by name, one at a time (YAML is made for one cluster's changes at a time). */
function* clusterDiffs(base: Pick<RenderSide, "clusters">, head: Pick<RenderSide, "clusters">): Generator<ClusterDiff> {
  const names = [...new Set([...base.clusters.keys(), ...head.clusters.keys()])].sort(cmp);
  for (const cluster of names) {
    const diff = compareCluster(cluster, base.clusters.get(cluster) ?? [], head.clusters.get(cluster) ?? []);
    if (diff !== undefined) yield diff;
  }
}

function compareCluster(cluster: string, beforeList: readonly RenderedResource[], afterList: readonly RenderedResource[]): ClusterDiff | undefined {
  if (beforeList === afterList) return undefined;
  const before = index(beforeList);
  const after = index(afterList);
  const added: ResourceChange[] = [];
  const changed: ResourceChange[] = [];
  const removed: ResourceChange[] = [];
  const keys = [...before.keys()];
  for (const k of after.keys()) if (!before.has(k)) keys.push(k);
  for (const key of keys.sort(cmp)) {
    const a = before.get(key);
    const b = after.get(key);
    if (a && b) {
      if (a === b || canonicalJson(a) === canonicalJson(b)) continue;
      const [ya, yb] = [canonicalYaml(a), canonicalYaml(b)];
      if (ya !== yb) changed.push({ ...idOf(b), text: unifiedDiff(ya, yb) });
    } else if (b) added.push({ ...idOf(b), text: canonicalYaml(b) });
    else if (a) removed.push({ ...idOf(a), text: canonicalYaml(a) });
  }
  return added.length + changed.length + removed.length > 0 ? { cluster, added, changed, removed } : undefined;
}

/** Same problem in both revisions, even if its line moved. */
function diagnosticKey(d: Diagnostic): string {
  return [d.code, d.severity, d.file ?? "", d.path ?? "", d.message].join("\u0000");
}

function idOf(r: RenderedResource): ResourceId {
  return { apiVersion: r.apiVersion, kind: r.kind, namespace: r.metadata.namespace ?? "", name: r.metadata.name };
}

/** Objects by key; the last of two with one key wins (as before: a render never has two). */
function index(resources: readonly RenderedResource[]): Map<string, RenderedResource> {
  const out = new Map<string, RenderedResource>();
  for (const r of resources) out.set(`${r.kind}\u0000${r.metadata.namespace ?? ""}\u0000${r.metadata.name}\u0000${r.apiVersion}`, r);
  return out;
}

// ---------------------------------------------------------------------------------------------
// unified diff

/**
 * A unified diff (`@@ -a,b +c,d @@` hunks, 3 lines of context) of two texts, line by line: jsdiff's
 * Myers diff (O((n+m)·d), the algorithm of git and GNU diff), deletions before insertions in a block.
 */
export function unifiedDiff(a: string, b: string, context = 3): string {
  const { hunks } = structuredPatch("a", "b", a, b, undefined, undefined, { context });
  return hunks
    .map((h) => `@@ -${String(h.oldStart)},${String(h.oldLines)} +${String(h.newStart)},${String(h.newLines)} @@\n` + h.lines.filter((l) => !l.startsWith("\\")).map((l) => `${l}\n`).join(""))
    .join("");
}

// ---------------------------------------------------------------------------------------------
// reports

export interface MarkdownOptions {
  /** Maximum characters of one comment body (default 65,000; GitHub rejects more than 65,536). */
  readonly maxChars?: number;
  /**
   * Maximum number of bodies (default 10): a change to every object of a large fleet would otherwise be
   * thousands of comments. The last body allowed says what it leaves out; the JSON report has everything.
   */
  readonly maxBodies?: number;
}

/** Default of `maxBodies` (and of `gitmesh diff --max-comments`). */
export const DEFAULT_MAX_COMMENT_BODIES = 10;
/** Room kept in every body for the omission note when a report is cut (the note is ~330 characters). */
const NOTE_ROOM = 600;

/** Marker at the top of every body, so CI can find and update its own comments. */
export const COMMENT_MARKER = "<!-- gitmesh-diff -->";

/**
 * The report as one or more Markdown comment bodies, each at most `maxChars` long. The first body
 * holds the summary table and the diagnostics; resource sections follow in order and are never
 * split — a cluster's collapsible section is closed at the end of a body and reopened
 * ("continued") in the next. A single resource whose diff alone exceeds the limit is replaced by a
 * note pointing at the JSON report.
 */
export function renderMarkdown(report: DiffReport, options: MarkdownOptions = {}): string[] {
  const max = options.maxChars ?? 65_000;
  const title = `### gitmesh: rendered Istio diff \`${short(report.base.commit)}\` (${report.base.ref}) → \`${short(report.head.commit)}\` (${report.head.ref})`;
  const head: string[] = [];
  if (report.clusters.length === 0) {
    head.push("**No rendered change.** No Istio resource is added, changed or removed in any cluster.\n");
  } else {
    const total = (k: "added" | "changed" | "removed") => report.clusters.reduce((n, c) => n + c[k].length, 0);
    head.push(
      `${report.clusters.length} cluster${report.clusters.length === 1 ? "" : "s"} change: ${total("added")} added, ${total("changed")} changed, ${total("removed")} removed.\n\n` +
        "| cluster | added | changed | removed |\n|---|---:|---:|---:|\n" +
        report.clusters.map((c) => `| ${c.cluster} | ${c.added.length} | ${c.changed.length} | ${c.removed.length} |`).join("\n") +
        "\n",
    );
  }
  const diagBlocks: string[] = [];
  const diagSection = (label: string, list: readonly Diagnostic[]) => {
    if (list.length === 0) return;
    diagBlocks.push(`\n**${label}** (${list.length})\n\n`);
    for (const d of list) diagBlocks.push(`- \`${formatDiagnostic(d).replace(/`/g, "'")}\`\n`);
  };
  diagSection("Diagnostics introduced by head", report.introduced);
  diagSection("Diagnostics fixed by head", report.fixed);
  if (report.headErrors > 0) diagBlocks.push(`\n:x: head has ${report.headErrors} error${report.headErrors === 1 ? "" : "s"}.\n`);

  interface Section {
    readonly cluster: string;
    readonly text: string;
  }
  const sections: Section[] = [];
  for (const c of report.clusters) {
    const add = (sign: string, verb: string, r: ResourceChange, lang: string) => {
      const header = `#### ${sign} ${r.kind} \`${r.namespace === "" ? r.name : `${r.namespace}/${r.name}`}\` ${verb} (${r.apiVersion})\n\n`;
      const fence = "```";
      sections.push({ cluster: c.cluster, text: `${header}${fence}${lang}\n${r.text}${r.text.endsWith("\n") ? "" : "\n"}${fence}\n\n` });
    };
    for (const r of c.added) add("+", "added", r, "yaml");
    for (const r of c.changed) add("~", "changed", r, "diff");
    for (const r of c.removed) add("-", "removed", r, "yaml");
  }
  const summaryOf = new Map(report.clusters.map((c) => [c.cluster, `+${c.added.length} ~${c.changed.length} -${c.removed.length}`]));
  const open = (cluster: string, continued: boolean) => `<details><summary><b>${cluster}</b>: ${summaryOf.get(cluster) ?? ""}${continued ? " (continued)" : ""}</summary>\n\n`;
  const close = "</details>\n\n";
  const partHeader = (i: number, n: number) => `${COMMENT_MARKER}\n${title}${n > 1 ? ` — part ${i}/${n}` : ""}\n\n`;
  const headerReserve = partHeader(999, 999).length;
  const budget = Math.max(200, max - headerReserve);
  const maxBodies = Math.max(1, options.maxBodies ?? DEFAULT_MAX_COMMENT_BODIES);

  /** What the last body allowed says it leaves out. */
  const omissionNote = (left: readonly Section[], diagnostics: number): string => {
    const clusters = new Set(left.map((s) => s.cluster)).size;
    const parts: string[] = [];
    if (left.length > 0) parts.push(`${left.length.toLocaleString("en")} resource change${left.length === 1 ? "" : "s"} in ${clusters} cluster${clusters === 1 ? "" : "s"}`);
    if (diagnostics > 0) parts.push(`${diagnostics.toLocaleString("en")} diagnostic${diagnostics === 1 ? "" : "s"}`);
    if (parts.length === 0) parts.push("the end of the summary"); // only the closing line of the diagnostics did not fit
    return (
      `\n_Not shown: ${parts.join(" and ")}; the report is longer than ${maxBodies} comment${maxBodies === 1 ? "" : "s"} (\`--max-comments\`). ` +
      "The summary in the first comment counts every change, and the JSON report (`--format json`, or report.json with `--out-dir`) holds them all._\n"
    );
  };

  /** The bodies, packed in order; at the `limit`-th body, what does not fit is left out and the omission noted. */
  const pack = (budget: number, limit: number): string[] => {
    const bodies: string[] = [];
    let cur = "";
    let openCluster: string | undefined;
    const seen = new Set<string>();
    const flush = () => {
      if (openCluster !== undefined) cur += close;
      bodies.push(cur);
      cur = "";
      openCluster = undefined;
    };
    // A piece that does not fit starts another body, unless this one is the last allowed.
    const mayFlush = () => bodies.length + 1 < limit;
    const pushPlain = (text: string): boolean => {
      const piece = text.length > budget ? text.slice(0, budget - 40) + "\n_(truncated)_\n" : text;
      if (cur.length + piece.length > budget && cur.length > 0) {
        if (!mayFlush()) return false;
        flush();
      }
      cur += piece;
      return true;
    };
    const plain = [...head, ...diagBlocks, ...(sections.length > 0 ? ["\n"] : [])];
    let stopAt = -1; // the first section left out
    let diagnosticsLeft = 0;
    let p = 0;
    while (p < plain.length && pushPlain(plain[p]!)) p++;
    if (p < plain.length) {
      stopAt = 0;
      diagnosticsLeft = plain.slice(p).filter((text) => text.startsWith("- `")).length;
    } else {
      for (const [i, s] of sections.entries()) {
        let text = s.text;
        const opening = openCluster === s.cluster ? "" : open(s.cluster, seen.has(s.cluster));
        const overhead = opening.length + close.length + (openCluster !== undefined && openCluster !== s.cluster ? close.length : 0);
        if (text.length + overhead > budget) {
          text = `_The diff of this resource has ${text.length.toLocaleString("en")} characters, more than fits in one comment; see the JSON report (\`--format json\`)._\n\n`;
          text = s.text.slice(0, s.text.indexOf("\n") + 2) + text;
        }
        if (cur.length + overhead + text.length > budget && cur.length > 0) {
          if (!mayFlush()) {
            stopAt = i;
            break;
          }
          flush();
        }
        if (openCluster !== s.cluster) {
          if (openCluster !== undefined) cur += close;
          cur += open(s.cluster, seen.has(s.cluster));
          openCluster = s.cluster;
          seen.add(s.cluster);
        }
        cur += text;
      }
    }
    if (stopAt >= 0) {
      if (openCluster !== undefined) cur += close;
      openCluster = undefined;
      cur += omissionNote(sections.slice(stopAt), diagnosticsLeft);
    }
    flush();
    return bodies;
  };

  // Packed as it comes; only a report that needs more than maxBodies bodies is packed again, with room
  // for the note kept in every body, and cut at the last body allowed.
  let bodies = pack(budget, Number.POSITIVE_INFINITY);
  if (bodies.length > maxBodies) bodies = pack(Math.max(200, budget - NOTE_ROOM), maxBodies);
  const n = bodies.length;
  return bodies.map((b, i) => (partHeader(i + 1, n) + b).trimEnd() + "\n");
}

/** The whole report as JSON (stable key order, 2-space indent). */
export function renderJson(report: DiffReport): string {
  return [...renderJsonChunks(report)].join("");
}

/**
 * renderJson's text in pieces, one per changed cluster (plus the parts around them), so that a large
 * report is written without building it as one string: the 100-cluster fleet with every workspace removed
 * is a 352 MB report. The pieces joined are exactly `JSON.stringify(report, null, 2) + "\n"`.
 */
export function* renderJsonChunks(report: DiffReport): Generator<string> {
  // A member at depth d is JSON.stringify's text of it with every line after the first indented by 2·d
  // spaces (line breaks inside strings are escaped, so each "\n" in that text is structural).
  const at = (value: unknown, pad: string): string => JSON.stringify(value, null, 2).replace(/\n/g, `\n${pad}`);
  let first = true;
  for (const [key, value] of Object.entries(report)) {
    if (value === undefined) continue;
    const lead = `${first ? "{\n" : ",\n"}  ${JSON.stringify(key)}: `;
    first = false;
    if (key !== "clusters" || !Array.isArray(value) || value.length === 0) {
      yield lead + at(value, "  ");
      continue;
    }
    yield `${lead}[`;
    for (const [i, cluster] of (value as readonly unknown[]).entries()) yield `${i === 0 ? "\n" : ",\n"}    ${at(cluster, "    ")}`;
    yield "\n  ]";
  }
  yield first ? "{}\n" : "\n}\n";
}

function short(sha: string): string {
  return sha.slice(0, 12);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
