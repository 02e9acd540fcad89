/**
 * Pull-request diffs of rendered output: compare what two revisions render (with the same
 * discovery), per cluster and resource, and report it as Markdown comment bodies (each under the
 * forge's limit, never cutting one resource's diff) or JSON. Pure: no I/O.
 */
import { structuredPatch } from "diff";
import { canonicalJson, canonicalYaml, formatDiagnostic, massDeletionLimit, Severity, sortDiagnostics, type Diagnostic } from "../core/index.js";
import type { RenderedResource } from "./audit.js";

export interface RenderSide {
  /** The ref as the user named it, and the commit it resolved to. */
  readonly ref: string;
  readonly commit: string;
  readonly clusters: ReadonlyMap<string, readonly RenderedResource[]>;
  /** Loader and translation diagnostics of this revision. */
  readonly diagnostics: readonly Diagnostic[];
  /**
   * The loader's errors of this revision: the server rejects a commit that has any, and the last good
   * commit stays in force everywhere (translation errors do not reject: output is "applied with errors").
   * Absent or empty: the revision would come into force.
   */
  readonly rejection?: readonly Diagnostic[];
  /**
   * Clusters where this revision may delete any number of objects at once (`Gitmesh-Allow-Deletion`
   * trailers of its commit, `allowMassDeletion` of its gitmesh.yaml; `*` = every cluster).
   */
  readonly allowMassDeletion?: readonly string[];
}

/**
 * What a reviewer must look at first: removed security policies, a gateway losing a host or a route,
 * and a removal the agents would refuse (`blocking`: the commit needs consent before it can apply).
 */
export interface Risk {
  readonly kind: "security-policy-removed" | "gateway-host-lost" | "gateway-route-lost" | "mass-deletion";
  readonly cluster: string;
  readonly message: string;
  /** True when the change cannot apply as it is (the status is `failure` until it is consented to). */
  readonly blocking: boolean;
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
  /** The Gloo file the object was rendered from (its `gitmesh.io/source-file` annotation; head's, base's for a removal). */
  readonly source?: string;
}

/** The Istio changes one Gloo file causes, over every cluster. */
export interface SourceChanges {
  readonly file: string;
  readonly clusters: number;
  readonly added: number;
  readonly changed: number;
  readonly removed: number;
}

/** Annotation naming the Gloo file an object was rendered from (src/translate/labels.ts). */
const ANNOTATION_SOURCE_FILE = "gitmesh.io/source-file";

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
  /** Every error of head, introduced by it or already in base, sorted. */
  readonly errors: readonly Diagnostic[];
  /**
   * Present when the server would reject head (its configuration does not load): the clusters keep
   * base, so `clusters` is empty (nothing would change anywhere) and `errors` says why.
   */
  readonly rejected?: { readonly keeps: string; readonly errors: readonly Diagnostic[] };
  /** Risks of the change, blocking ones first (empty for a rejected head). */
  readonly risks: readonly Risk[];
  /** Which Gloo file causes which Istio changes (objects without a source file under ""), by file. */
  readonly bySource: readonly SourceChanges[];
  /** Live traffic of what the change touches (`gitmesh diff --prometheus`; src/traffic's reviewTraffic). */
  readonly traffic?: DiffTraffic;
}

/** Current traffic of one changed object (per cluster): what the hosts it routes, or the workloads it selects, carry. */
export interface ObjectTraffic extends ResourceId {
  readonly cluster: string;
  readonly requestsPerSecond: number;
  /** 5xx responses / requests; null without requests. */
  readonly errorRate: number | null;
}

/** A change that touches requests flowing now: the review reads these first. */
export interface LiveTrafficTouch {
  readonly kind: "route-removed" | "route-repointed" | "security-policy-removed" | "gateway-host-lost";
  readonly cluster: string;
  readonly message: string;
  readonly requestsPerSecond: number;
  readonly errorRate: number | null;
}

export interface DiffTraffic {
  /** Where the figures come from (the Prometheus URL, without credentials) and their window (`1h`). */
  readonly source: string;
  readonly window: string;
  /** Changes that touch live traffic, busiest first. */
  readonly touches: readonly LiveTrafficTouch[];
  /** Traffic of each added, changed or removed route, destination and security policy. */
  readonly objects: readonly ObjectTraffic[];
  /** Why no figures could be read (Prometheus down, refused): the review stands without them. */
  readonly unavailable?: string;
}

/**
 * Compares two renders by structure: per cluster, objects are matched by their key and compared by
 * identity first (an incremental translation hands back the very objects, and arrays, it kept), then
 * by canonical JSON; only objects that were added, removed or changed are serialised to YAML. A
 * cluster whose object list is the same array on both sides costs nothing.
 */
export function compareRenders(base: RenderSide, head: RenderSide): DiffReport {
  const rejection = sortDiagnostics((head.rejection ?? []).filter((d) => d.severity === Severity.Error));
  const clusters: ClusterDiff[] = [];
  // A head the server would reject changes nothing: its render is not shown as if it would apply.
  if (rejection.length === 0) for (const diff of clusterDiffs(base, head)) clusters.push(diff);
  const baseKeys = new Set(base.diagnostics.map(diagnosticKey));
  const headKeys = new Set(head.diagnostics.map(diagnosticKey));
  const errors = sortDiagnostics(head.diagnostics.filter((d) => d.severity === Severity.Error));
  return {
    base: { ref: base.ref, commit: base.commit },
    head: { ref: head.ref, commit: head.commit },
    clusters,
    introduced: sortDiagnostics(head.diagnostics.filter((d) => !baseKeys.has(diagnosticKey(d)))),
    fixed: sortDiagnostics(base.diagnostics.filter((d) => !headKeys.has(diagnosticKey(d)))),
    headErrors: errors.length,
    errors,
    ...(rejection.length > 0 ? { rejected: { keeps: base.commit, errors: rejection } } : {}),
    risks: rejection.length > 0 ? [] : risksOf(base, head, clusters),
    bySource: bySource(clusters),
  };
}

function bySource(clusters: readonly ClusterDiff[]): SourceChanges[] {
  const out = new Map<string, { clusters: Set<string>; added: number; changed: number; removed: number }>();
  for (const c of clusters) {
    for (const k of ["added", "changed", "removed"] as const) {
      for (const r of c[k]) {
        const e = out.get(r.source ?? "") ?? { clusters: new Set<string>(), added: 0, changed: 0, removed: 0 };
        e.clusters.add(c.cluster);
        e[k]++;
        out.set(r.source ?? "", e);
      }
    }
  }
  return [...out].sort(([a], [b]) => cmp(a, b)).map(([file, e]) => ({ file, clusters: e.clusters.size, added: e.added, changed: e.changed, removed: e.removed }));
}

const sourceOf = (r: RenderedResource): { source?: string } => {
  const file = r.metadata.annotations?.[ANNOTATION_SOURCE_FILE];
  return file === undefined ? {} : { source: file };
};

/**
 * Whether the change cannot pass as it is: head would be rejected, has errors, or needs consent (a
 * blocking risk). `gitmesh diff`'s exit code and the commit status it posts both read this one verdict.
 */
export function reportFails(report: DiffReport): boolean {
  return report.rejected !== undefined || report.headErrors > 0 || report.risks.some((r) => r.blocking);
}

const SECURITY_KINDS: ReadonlySet<string> = new Set(["AuthorizationPolicy", "PeerAuthentication", "RequestAuthentication"]);

/* eslint-disable @typescript-eslint/no-explicit-any -- rendered objects are untyped JSON */
/** Hosts a Gateway serves, or a VirtualService bound to a gateway (not only "mesh") routes. */
function gatewayHosts(r: RenderedResource | undefined): Set<string> {
  const spec = (r?.spec ?? {}) as Record<string, any>;
  if (r?.kind === "Gateway") return new Set(((spec.servers ?? []) as { hosts?: string[] }[]).flatMap((srv) => srv.hosts ?? []));
  if (r?.kind === "VirtualService" && ((spec.gateways ?? []) as string[]).some((g) => g !== "mesh")) return new Set((spec.hosts ?? []) as string[]);
  return new Set();
}

/** Routes of a VirtualService bound to a gateway (0 for anything else). */
function gatewayRoutes(r: RenderedResource | undefined): number {
  const spec = (r?.spec ?? {}) as Record<string, any>;
  if (r?.kind !== "VirtualService" || !((spec.gateways ?? []) as string[]).some((g) => g !== "mesh")) return 0;
  return ((spec.http ?? []) as unknown[]).length + ((spec.tls ?? []) as unknown[]).length + ((spec.tcp ?? []) as unknown[]).length;
}
/* eslint-enable @typescript-eslint/no-explicit-any */

function risksOf(base: RenderSide, head: RenderSide, clusters: readonly ClusterDiff[]): Risk[] {
  const risks: Risk[] = [];
  const allowed = new Set(head.allowMassDeletion ?? []);
  for (const c of clusters) {
    const before = index(base.clusters.get(c.cluster) ?? []);
    const after = index(head.clusters.get(c.cluster) ?? []);
    const owned = before.size;
    const limit = massDeletionLimit(owned); // the agents' defaults
    if (c.removed.length > limit && !allowed.has("*") && !allowed.has(c.cluster)) {
      risks.push({
        kind: "mass-deletion",
        cluster: c.cluster,
        blocking: true,
        message:
          `removes ${String(c.removed.length)} of ${String(owned)} objects, above the agents' default limit of ${String(limit)}: the agent will refuse the whole deletion. ` +
          `If it is intended, add the trailer "Gitmesh-Allow-Deletion: ${c.cluster}" to the commit (git commit --trailer "Gitmesh-Allow-Deletion: ${c.cluster}").`,
      });
    }
    for (const r of c.removed) if (SECURITY_KINDS.has(r.kind)) risks.push({ kind: "security-policy-removed", cluster: c.cluster, blocking: false, message: `${r.kind} ${describeId(r)} is removed: the workloads it selected lose that policy` });
    for (const [key, a] of before) {
      const b = after.get(key);
      const kept = gatewayHosts(b);
      const lost = [...gatewayHosts(a)].filter((h) => !kept.has(h));
      if (lost.length > 0) risks.push({ kind: "gateway-host-lost", cluster: c.cluster, blocking: false, message: `${a.kind} ${describeId(idOf(a))} ${b === undefined ? "is removed" : "no longer serves"}: ${lost.sort(cmp).join(", ")} ${b === undefined ? "lose(s) it at the gateway" : "at the gateway"}` });
      else if (b !== undefined && gatewayRoutes(b) < gatewayRoutes(a)) risks.push({ kind: "gateway-route-lost", cluster: c.cluster, blocking: false, message: `${a.kind} ${describeId(idOf(a))} goes from ${String(gatewayRoutes(a))} to ${String(gatewayRoutes(b))} gateway routes` });
    }
  }
  const rank = (r: Risk) => (r.blocking ? 0 : 1);
  return risks.sort((x, y) => rank(x) - rank(y) || cmp(x.cluster, y.cluster) || cmp(x.message, y.message));
}

const describeId = (r: ResourceId) => `\`${r.namespace === "" ? r.name : `${r.namespace}/${r.name}`}\``;

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
      if (ya !== yb) changed.push({ ...idOf(b), text: unifiedDiff(ya, yb), ...sourceOf(b) });
    } else if (b) added.push({ ...idOf(b), text: canonicalYaml(b), ...sourceOf(b) });
    else if (a) removed.push({ ...idOf(a), text: canonicalYaml(a), ...sourceOf(a) });
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
  const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString("en")} ${n === 1 ? one : many}`;
  if (report.rejected !== undefined) {
    head.push(
      `:no_entry: **This commit would be rejected**: its configuration has ${plural(report.rejected.errors.length, "error")}, so the server keeps \`${short(report.rejected.keeps)}\` (${report.base.ref}) in force on every cluster. Nothing would change; fix the errors below.\n`,
    );
  } else if (report.clusters.length === 0) {
    head.push("**No rendered change.** No Istio resource is added, changed or removed in any cluster.\n");
  } else {
    if (report.traffic !== undefined) head.push(trafficSection(report.traffic));
    if (report.risks.length > 0) {
      head.push(
        `**Risks** (${String(report.risks.length)})\n\n` +
          report.risks.map((r) => `- ${r.blocking ? ":no_entry: **needs consent**" : ":warning:"} ${r.cluster}: ${r.message}`).join("\n") +
          "\n\n",
      );
    }
    const total = (k: "added" | "changed" | "removed") => report.clusters.reduce((n, c) => n + c[k].length, 0);
    const objects = total("added") + total("changed") + total("removed");
    head.push(
      `**Clusters:** ${plural(report.clusters.length, "cluster")} change. **Objects:** ${plural(objects, "object")} — ${total("added").toLocaleString("en")} added, ${total("changed").toLocaleString("en")} changed, ${total("removed").toLocaleString("en")} removed.\n\n` +
        "| cluster | added | changed | removed |\n|---|---:|---:|---:|\n" +
        report.clusters.map((c) => `| ${c.cluster} | ${c.added.length} | ${c.changed.length} | ${c.removed.length} |`).join("\n") +
        "\n",
    );
    if (report.bySource.some((f) => f.file !== "")) {
      head.push(
        "\n**By source** (the Gloo file each change comes from)\n\n| Gloo file | clusters | added | changed | removed |\n|---|---:|---:|---:|---:|\n" +
          report.bySource.map((f) => `| ${f.file === "" ? "_(no source file)_" : `\`${f.file}\``} | ${String(f.clusters)} | ${String(f.added)} | ${String(f.changed)} | ${String(f.removed)} |`).join("\n") +
          "\n",
      );
    }
  }
  const diagBlocks: string[] = [];
  const diagSection = (label: string, list: readonly Diagnostic[]) => {
    if (list.length === 0) return;
    diagBlocks.push(`\n**${label}** (${list.length})\n\n`);
    for (const d of list) diagBlocks.push(`- \`${formatDiagnostic(d).replace(/`/g, "'")}\`\n`);
  };
  if (report.rejected !== undefined) diagSection("Why it would be rejected", report.rejected.errors);
  diagSection("Diagnostics introduced by head", report.introduced);
  diagSection("Diagnostics fixed by head", report.fixed);
  if (report.headErrors > 0) {
    // Every error of head is listed: those it introduces above, those it keeps from base here.
    const listed = new Set([...(report.rejected?.errors ?? []), ...report.introduced].map(diagnosticKey));
    diagSection("Errors head keeps from base", report.errors.filter((d) => !listed.has(diagnosticKey(d))));
    diagBlocks.push(`\n:x: head has ${plural(report.headErrors, "error")}.\n`);
  }

  interface Section {
    readonly cluster: string;
    readonly text: string;
  }
  const sections: Section[] = [];
  const trafficOf = new Map((report.traffic?.objects ?? []).map((o) => [`${o.cluster}\u0000${o.kind}\u0000${o.namespace}\u0000${o.name}`, o]));
  for (const c of report.clusters) {
    const add = (sign: string, verb: string, r: ResourceChange, lang: string) => {
      const live = trafficOf.get(`${c.cluster}\u0000${r.kind}\u0000${r.namespace}\u0000${r.name}`);
      const note = live === undefined || report.traffic === undefined ? "" : ` — ${trafficFigures(live)} (last ${report.traffic.window})`;
      const header = `#### ${sign} ${r.kind} \`${r.namespace === "" ? r.name : `${r.namespace}/${r.name}`}\` ${verb} (${r.apiVersion})${note}\n\n`;
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

/** Requests per second and error rate, as a reviewer reads them ("no traffic" when nothing flows). */
export function trafficFigures(t: { readonly requestsPerSecond: number; readonly errorRate: number | null }): string {
  if (t.requestsPerSecond === 0) return "no traffic";
  const rps = t.requestsPerSecond >= 100 ? t.requestsPerSecond.toFixed(0) : t.requestsPerSecond >= 1 ? t.requestsPerSecond.toFixed(1) : t.requestsPerSecond.toPrecision(2);
  const err = t.errorRate === null ? "" : `, ${(t.errorRate * 100).toFixed(t.errorRate > 0 && t.errorRate < 0.001 ? 3 : 1)}% 5xx`;
  return `${rps} req/s${err}`;
}

/** "Touches live traffic": what a reviewer must read first when the change meets requests flowing now. */
function trafficSection(t: DiffTraffic): string {
  if (t.unavailable !== undefined) return `**Touches live traffic**: unknown — the traffic of the last ${t.window} could not be read from ${t.source}: ${t.unavailable}\n\n`;
  const intro = `**Touches live traffic** (${String(t.touches.length)}; traffic over the last ${t.window} from ${t.source})\n\n`;
  if (t.touches.length === 0) return `${intro}None: no route, destination or security policy that carries traffic now is removed or re-pointed.\n\n`;
  return intro + t.touches.map((x) => `- :rotating_light: ${x.cluster}: ${x.message} — **${trafficFigures(x)}**`).join("\n") + "\n\n";
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
