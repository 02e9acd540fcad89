/**
 * The workspace stage: `translateWorkspace` runs every per-kind translator over one workspace's
 * view of the inputs and merges their contributions into per-cluster fragments.
 *
 * EXTENSION POINT — a per-kind translator is a pure function `(ctx: WorkspaceContext) =>
 * TranslatorOutput` registered in `KIND_TRANSLATORS` below (one line each, in a fixed order).
 * It reads what it needs from `ctx` (own/visible objects, selectors, discovery, import/export),
 * returns `{ resources: [{ cluster, resource }], diagnostics }`, and never throws for user
 * mistakes. Contributions of several translators to the same object (same cluster, kind,
 * namespace, name) are deep-merged (see assemble.ts `mergeResources`), so e.g. route subsets and
 * destination policies can both write one DestinationRule as long as they agree on its name,
 * labels and scalar fields.
 */
import { Severity, sortDiagnostics, type Diagnostic } from "../core/index.js";
import { assembleCluster, compareResources, mergeResources, patchCluster, resourceKey, sameContent, type FragmentChange } from "./assemble.js";
import { canonicalMember, canonicalObject } from "./canonical.js";
import { indexOf, workspaceContext, type WorkspaceContext } from "./context.js";
import { toDesiredInput, type Desired, type DiscoveryMap } from "./input.js";
import { createIstioValidator, specOnly, validateOutputs, type IstioIssue } from "./istio-validate.js";
import { ANNOTATION_SOURCE_FILE } from "./labels.js";
import { DESTINATION_TRANSLATORS } from "./destination-translators.js";
import { translateJwtPolicies } from "./jwt-policy.js";
import { translateRateLimits } from "./rate-limit.js";
import { translateExtAuth } from "./ext-auth.js";
import { translateLifecycle } from "./lifecycle.js";
import { translateRouteTables } from "./route-table.js";
import { translateVirtualGateways } from "./virtual-gateway.js";
import {
  TranslateCode,
  type ClusterOutput,
  type FrozenTable,
  type IstioResource,
  type TranslationResult,
  type TranslatorOutput,
  type WorkspaceFragment,
  type WorkspaceResult,
} from "./types.js";

export interface KindTranslator {
  /** The Gloo kind (or concern) it translates; used in diagnostics and benchmarks. */
  readonly name: string;
  readonly translate: (ctx: WorkspaceContext) => TranslatorOutput;
}

/** Per-kind translators, run in this order. translate-destinations: add yours here. */
export const KIND_TRANSLATORS: readonly KindTranslator[] = [
  { name: "VirtualGateway", translate: translateVirtualGateways },
  { name: "RouteTable", translate: translateRouteTables },
  ...DESTINATION_TRANSLATORS,
  { name: "JWTPolicy", translate: translateJwtPolicies },
  { name: "RateLimitPolicy", translate: translateRateLimits },
  { name: "ExtAuthPolicy", translate: translateExtAuth },
  { name: "Lifecycle", translate: translateLifecycle },
];

export interface TranslateOptions {
  /** Validate every rendered object against Istio's schemas (default true). */
  readonly validate?: boolean;
  /** Translators to run (default `KIND_TRANSLATORS`); for tests and benchmarks. */
  readonly translators?: readonly KindTranslator[];
  /**
   * The workspace's previous result (retranslate passes it): a rendered object equal to the
   * previous one of the same cluster and key is replaced by that previous object, so unchanged
   * output keeps its identity (comparisons and cluster patches are identity checks). Never changes
   * the result's content.
   */
  readonly previous?: WorkspaceResult;
}

const EMPTY: WorkspaceResult = { workspace: "", fragments: new Map(), diagnostics: [] };
const NO_ISSUES: readonly IstioIssue[] = [];

export function translateWorkspace(
  workspace: string,
  desired: Desired,
  discovery: DiscoveryMap,
  options: TranslateOptions = {},
): WorkspaceResult {
  const index = indexOf(toDesiredInput(desired), discovery);
  const ctx = workspaceContext(index, workspace);
  if (ctx === undefined) return { ...EMPTY, workspace };
  const diagnostics: Diagnostic[] = [];
  const frozen: FrozenTable[] = [];
  const perCluster = new Map<string, Map<string, IstioResource>>();
  for (const t of options.translators ?? KIND_TRANSLATORS) {
    const out = t.translate(ctx);
    diagnostics.push(...out.diagnostics);
    frozen.push(...(out.frozen ?? []));
    for (const { cluster, resource } of out.resources) {
      let m = perCluster.get(cluster);
      if (m === undefined) {
        m = new Map();
        perCluster.set(cluster, m);
      }
      const key = resourceKey(resource);
      const prev = m.get(key);
      if (prev === undefined) {
        m.set(key, resource);
        continue;
      }
      const merged = mergeResources(prev, resource);
      if (merged.ok) m.set(key, merged.value as IstioResource);
      else diagnostics.push(conflict(workspace, cluster, prev, resource, merged.path));
    }
  }
  const fragments = new Map<string, readonly IstioResource[]>();
  // A translator may emit one object to several clusters: bring each object to canonical form, and
  // validate it, once. Only the few objects that fail validation are remembered with their issues (a
  // collection keyed by every object hashed each of them: a WeakMap of all 218,000 objects of the large
  // fleet was 0.2 s of CPU per translation and weighed on every GC, #20).
  // A spec object that several objects share (a translator renders one into many clusters) is brought to
  // canonical form once, and validated once per kind (createIstioValidator).
  const validate = options.validate ?? true;
  const validateOne = createIstioValidator();
  const canonical = new Map<IstioResource, IstioResource>();
  const canonicalSpecs = new Map<unknown, Record<string, unknown>>();
  const invalid = new Map<IstioResource, readonly IstioIssue[]>();
  const canon = (r: IstioResource): IstioResource => {
    let c = canonical.get(r);
    if (c === undefined) {
      c = canonicalResource(r, canonicalSpecs);
      canonical.set(r, c);
      if (validate) {
        const issues = validateOne(c);
        if (issues.length > 0) invalid.set(c, issues);
      }
    }
    return c;
  };
  for (const cluster of [...perCluster.keys()].sort()) {
    // Pushed one by one and sorted in place: with sortResources([...values].map(canon)) V8 bailed out of
    // this function's optimised code at that sort in 93 of the large fleet's 100 workspaces (--trace-deopt:
    // "wrong map", the same code each time), and the rest of each workspace ran unoptimised.
    const resources: IstioResource[] = [];
    for (const r of perCluster.get(cluster)!.values()) resources.push(canon(r));
    resources.sort(compareResources);
    // Before keepIdentity, which swaps in the previous run's equal objects (same content, same issues).
    if (invalid.size > 0) diagnostics.push(...validateOutputs(cluster, resources, (r) => invalid.get(r) ?? NO_ISSUES));
    const before = options.previous?.fragments.get(cluster);
    if (before !== undefined) keepIdentity(before, resources);
    fragments.set(cluster, resources);
  }
  const result: WorkspaceResult = { workspace, fragments, diagnostics: sortDiagnostics(diagnostics) };
  return frozen.length === 0 ? result : { ...result, frozen: sortFrozen(frozen) };
}

/**
 * canonicalObject(r), with the canonical form of r.spec taken from (or added to) `specs`, keyed by the
 * spec object: a spec shared by many objects is walked once. Objects with other top-level keys, or
 * these in another order, take canonicalObject.
 */
function canonicalResource(r: IstioResource, specs: Map<unknown, Record<string, unknown>>): IstioResource {
  if (!specOnly(r)) return canonicalObject(r);
  let spec = specs.get(r.spec);
  if (spec === undefined) specs.set(r.spec, (spec = canonicalMember(r.spec)));
  const metadata = canonicalMember(r.metadata);
  return spec === r.spec && metadata === r.metadata ? r : { apiVersion: r.apiVersion, kind: r.kind, metadata, spec };
}

function sortFrozen(list: readonly FrozenTable[]): FrozenTable[] {
  const key = (f: FrozenTable) => `${f.cluster}\n${f.namespace}\n${f.name}\n${f.kind}`;
  const unique = new Map(list.map((f) => [key(f), f]));
  return [...unique.keys()].sort().map((k) => unique.get(k)!);
}

function conflict(workspace: string, cluster: string, a: IstioResource, b: IstioResource, path: string): Diagnostic {
  const pa = `${a.metadata.labels["gitmesh.io/parent-kind"] ?? "?"} ${a.metadata.labels["gitmesh.io/parent-namespace"] ?? "?"}/${a.metadata.labels["gitmesh.io/parent-name"] ?? "?"}`;
  const pb = `${b.metadata.labels["gitmesh.io/parent-kind"] ?? "?"} ${b.metadata.labels["gitmesh.io/parent-namespace"] ?? "?"}/${b.metadata.labels["gitmesh.io/parent-name"] ?? "?"}`;
  const file = b.metadata.annotations?.[ANNOTATION_SOURCE_FILE];
  return {
    code: TranslateCode.OutputConflict,
    severity: Severity.Error,
    ...(file === undefined ? {} : { file }),
    path,
    message:
      `in workspace "${workspace}", ${pa} and ${pb} set ${path} of ${a.kind} ${a.metadata.namespace}/${a.metadata.name} (cluster "${cluster}") ` +
      `to different values; the first is kept. Make the two objects agree or remove one of them.`,
    object: { kind: a.kind, name: a.metadata.name, namespace: a.metadata.namespace, cluster },
  };
}

/** Fragments of a workspace result, in the form the cluster stage takes. */
export function fragmentsFor(results: Iterable<WorkspaceResult>, cluster: string): WorkspaceFragment[] {
  const out: WorkspaceFragment[] = [];
  for (const r of results) {
    const resources = r.fragments.get(cluster);
    if (resources !== undefined && resources.length > 0) out.push({ workspace: r.workspace, resources });
  }
  return out.sort((a, b) => (a.workspace < b.workspace ? -1 : a.workspace > b.workspace ? 1 : 0));
}

/** Both stages over every workspace and every known cluster (clusters with no output get an empty snapshot). */
export function translateAll(desired: Desired, discovery: DiscoveryMap, options: TranslateOptions = {}): TranslationResult {
  const index = indexOf(toDesiredInput(desired), discovery);
  const workspaces = new Map<string, WorkspaceResult>();
  for (const ws of index.workspaceNames) workspaces.set(ws, translateWorkspace(ws, desired, discovery, options));
  return assembleAll(index.clusters, workspaces);
}

/**
 * Incremental translation: re-run only `changed` workspaces (from `affectedWorkspaces`) and
 * re-assemble only the clusters whose fragments changed. Returns the new result and the clusters
 * whose output was re-assembled.
 */
export function retranslate(
  previous: TranslationResult,
  desired: Desired,
  discovery: DiscoveryMap,
  changed: readonly string[],
  options: TranslateOptions = {},
): { result: TranslationResult; reassembled: readonly string[] } {
  const index = indexOf(toDesiredInput(desired), discovery);
  const rerun = new Set(changed);
  const workspaces = new Map<string, WorkspaceResult>();
  const changes = new Map<string, FragmentChange[]>();
  const record = (cluster: string, change: FragmentChange): void => {
    const list = changes.get(cluster);
    if (list === undefined) changes.set(cluster, [change]);
    else list.push(change);
  };
  for (const ws of index.workspaceNames) {
    const prev = previous.workspaces.get(ws);
    if (prev !== undefined && !rerun.has(ws)) {
      workspaces.set(ws, prev);
      continue;
    }
    const next = translateWorkspace(ws, desired, discovery, prev === undefined ? options : { ...options, previous: prev });
    workspaces.set(ws, next);
    for (const c of new Set([...next.fragments.keys(), ...(prev?.fragments.keys() ?? [])])) {
      const before = prev?.fragments.get(c) ?? [];
      const after = next.fragments.get(c) ?? [];
      if (!sameResources(before, after)) record(c, { workspace: ws, before, after });
    }
  }
  for (const [ws, prev] of previous.workspaces) {
    if (!workspaces.has(ws)) for (const [c, before] of prev.fragments) if (before.length > 0) record(c, { workspace: ws, before, after: [] });
  }
  const clusters = new Map<string, ClusterOutput>();
  const reassembled: string[] = [];
  for (const c of index.clusters) {
    const prev = previous.clusters.get(c);
    const cc = changes.get(c);
    if (prev !== undefined && cc === undefined) {
      clusters.set(c, prev);
      continue;
    }
    reassembled.push(c);
    clusters.set(c, (prev !== undefined && cc !== undefined ? patchCluster(prev, cc) : undefined) ?? assembleCluster(c, fragmentsFor(workspaces.values(), c)));
  }
  return { result: finish(clusters, workspaces), reassembled };
}

/** Replaces, in place, each object of `after` that equals the object of `before` with the same key by that object (both sorted by key). */
function keepIdentity(before: readonly IstioResource[], after: IstioResource[]): void {
  let b = 0;
  for (let i = 0; i < after.length; i++) {
    const r = after[i]!;
    while (b < before.length && compareResources(before[b]!, r) < 0) b++;
    const o = before[b];
    if (o !== undefined && o !== r && compareResources(o, r) === 0 && sameContent(o, r)) after[i] = o;
  }
}

function sameResources(a: readonly IstioResource[] | undefined, b: readonly IstioResource[] | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && !sameContent(a[i], b[i])) return false;
  return true;
}

function assembleAll(clusterNames: readonly string[], workspaces: Map<string, WorkspaceResult>): TranslationResult {
  const clusters = new Map<string, ClusterOutput>();
  const all = new Set(clusterNames);
  for (const r of workspaces.values()) for (const c of r.fragments.keys()) all.add(c);
  for (const c of [...all].sort()) clusters.set(c, assembleCluster(c, fragmentsFor(workspaces.values(), c)));
  return finish(clusters, workspaces);
}

function finish(clusters: Map<string, ClusterOutput>, workspaces: Map<string, WorkspaceResult>): TranslationResult {
  const diagnostics: Diagnostic[] = [];
  for (const w of workspaces.values()) diagnostics.push(...w.diagnostics);
  for (const c of clusters.values()) diagnostics.push(...c.diagnostics);
  // One input object seen by several workspaces (an exported route table) may be reported by each: keep one.
  const seen = new Set<string>();
  const unique = diagnostics.filter((d) => {
    const k = `${d.code}|${d.file ?? ""}|${d.line ?? 0}|${d.path ?? ""}|${d.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  return { clusters, workspaces, diagnostics: sortDiagnostics(unique) };
}

/**
 * What a stored render of the base keeps besides its output (`renderRecord`; the audit branch's
 * `.gitmesh/render.json`): per workspace, the clusters its fragments go to and its diagnostics, and per
 * cluster, the diagnostics of its cluster stage. Enough to translate a diff's two revisions only where
 * they can differ (`translatePairFromStored`).
 */
export interface RenderRecord {
  readonly workspaces: readonly { readonly workspace: string; readonly clusters: readonly string[]; readonly diagnostics: readonly Diagnostic[] }[];
  /** Every cluster translateAll assembled, sorted. */
  readonly clusters: readonly { readonly cluster: string; readonly diagnostics: readonly Diagnostic[] }[];
}

/** The record of a full translation (what the audit writer stores next to the output it commits). */
export function renderRecord(result: TranslationResult): RenderRecord {
  return {
    workspaces: [...result.workspaces.values()].map((w) => ({
      workspace: w.workspace,
      clusters: [...w.fragments].filter(([, r]) => r.length > 0).map(([c]) => c).sort(),
      diagnostics: w.diagnostics,
    })),
    clusters: [...result.clusters.values()].map((c) => ({ cluster: c.cluster, diagnostics: c.diagnostics })),
  };
}

/** An empty output shared by both sides of a pair for every cluster neither side re-assembled: the same list, so a comparison skips it. */
const UNTOUCHED: readonly IstioResource[] = Object.freeze([]);

/**
 * Base and head of a diff without translating the base in full: with the stored record of the base's
 * render (same desired state of base, same discovery), only the workspaces `rerun` names
 * (affectedWorkspaces: the only ones whose inputs differ) are translated on both sides, the other
 * workspaces that render into the clusters those touch are translated once (their fragments are the
 * same on both sides), and only those clusters are assembled, twice. Every other cluster's output is
 * the same on both sides (it gets no fragment that differs): both results hold one shared empty list
 * for it. Diagnostics are complete on both sides: a workspace not translated here has the base's
 * stored diagnostics on both sides (same inputs, same diagnostics: the contract of affectedWorkspaces),
 * and an untouched cluster its stored cluster-stage diagnostics; both go through `finish` as translateAll's
 * do, so the lists equal a full translation's.
 *
 * Undefined when the record does not fit the base (other workspaces or clusters, a fragment of a
 * translated workspace going elsewhere than the record says) or head changes the set of clusters: the
 * caller translates in full.
 */
export function translatePairFromStored(
  base: Desired,
  head: Desired,
  discovery: DiscoveryMap,
  rerun: readonly string[],
  record: RenderRecord,
  options: TranslateOptions = {},
): { base: TranslationResult; head: TranslationResult; translated: readonly string[]; assembled: readonly string[] } | undefined {
  const baseIndex = indexOf(toDesiredInput(base), discovery);
  const headIndex = indexOf(toDesiredInput(head), discovery);
  const stored = new Map(record.workspaces.map((w) => [w.workspace, w]));
  const storedClusters = new Map(record.clusters.map((c) => [c.cluster, c.diagnostics]));
  if (!sameList([...baseIndex.workspaceNames].sort(), [...stored.keys()].sort())) return undefined;
  if (!sameList([...baseIndex.clusters].sort(), [...headIndex.clusters].sort())) return undefined;
  // The clusters translateAll assembles: the index's and any a fragment names.
  const all = new Set(baseIndex.clusters);
  for (const w of record.workspaces) for (const c of w.clusters) all.add(c);
  if (!sameList([...all].sort(), record.clusters.map((c) => c.cluster))) return undefined;
  const again = new Set(rerun);
  for (const ws of headIndex.workspaceNames) if (!again.has(ws) && !stored.has(ws)) return undefined;

  const baseRuns = new Map<string, WorkspaceResult>();
  const headRuns = new Map<string, WorkspaceResult>();
  const touched = new Set<string>();
  for (const ws of again) {
    const before = baseIndex.workspaceNames.includes(ws) ? translateWorkspace(ws, base, discovery, options) : undefined;
    const after = headIndex.workspaceNames.includes(ws) ? translateWorkspace(ws, head, discovery, before === undefined ? options : { ...options, previous: before }) : undefined;
    if (before !== undefined) baseRuns.set(ws, before);
    if (after !== undefined) headRuns.set(ws, after);
    for (const c of new Set([...(before?.fragments.keys() ?? []), ...(after?.fragments.keys() ?? [])])) {
      if (!sameResources(before?.fragments.get(c) ?? [], after?.fragments.get(c) ?? [])) touched.add(c);
    }
    // The record must describe the base as translated here.
    if (before !== undefined && !sameList(nonEmptyClusters(before), stored.get(ws)?.clusters ?? [])) return undefined;
  }
  for (const c of touched) if (!all.has(c)) return undefined;
  // Unchanged workspaces that render into a touched cluster: translated once, their fragments shared.
  const shared = new Map<string, WorkspaceResult>();
  for (const w of record.workspaces) {
    if (again.has(w.workspace) || !w.clusters.some((c) => touched.has(c))) continue;
    const result = translateWorkspace(w.workspace, base, discovery, options);
    if (!sameList(nonEmptyClusters(result), w.clusters)) return undefined;
    shared.set(w.workspace, result);
  }
  const side = (index: typeof baseIndex, runs: ReadonlyMap<string, WorkspaceResult>): TranslationResult => {
    const workspaces = new Map<string, WorkspaceResult>();
    for (const ws of index.workspaceNames) {
      const known = runs.get(ws) ?? shared.get(ws);
      workspaces.set(ws, known ?? { workspace: ws, fragments: new Map(), diagnostics: stored.get(ws)!.diagnostics });
    }
    const present = [...runs.values(), ...shared.values()];
    const clusters = new Map<string, ClusterOutput>();
    for (const c of [...all].sort()) {
      clusters.set(c, touched.has(c) ? assembleCluster(c, fragmentsFor(present, c)) : { cluster: c, resources: UNTOUCHED, diagnostics: storedClusters.get(c) ?? [] });
    }
    return finish(clusters, workspaces);
  };
  return {
    base: side(baseIndex, baseRuns),
    head: side(headIndex, headRuns),
    translated: [...new Set([...again, ...shared.keys()])].sort(),
    assembled: [...touched].sort(),
  };
}

function nonEmptyClusters(result: WorkspaceResult): string[] {
  return [...result.fragments].filter(([, r]) => r.length > 0).map(([c]) => c).sort();
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** A RenderRecord read back from JSON (the audit branch), checked for shape; undefined when it is not one. */
export function parseRenderRecord(json: unknown): RenderRecord | undefined {
  const isDiagnostics = (v: unknown): v is Diagnostic[] => Array.isArray(v) && v.every((d) => typeof d === "object" && d !== null && typeof (d as Diagnostic).code === "string" && typeof (d as Diagnostic).message === "string");
  const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === "string");
  if (typeof json !== "object" || json === null) return undefined;
  const { workspaces, clusters } = json as { workspaces?: unknown; clusters?: unknown };
  if (!Array.isArray(workspaces) || !Array.isArray(clusters)) return undefined;
  for (const w of workspaces as unknown[]) {
    const e = w as { workspace?: unknown; clusters?: unknown; diagnostics?: unknown } | null;
    if (typeof e?.workspace !== "string" || !isStrings(e.clusters) || !isDiagnostics(e.diagnostics)) return undefined;
  }
  for (const c of clusters as unknown[]) {
    const e = c as { cluster?: unknown; diagnostics?: unknown } | null;
    if (typeof e?.cluster !== "string" || !isDiagnostics(e.diagnostics)) return undefined;
  }
  return json as RenderRecord;
}
