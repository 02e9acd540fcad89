/**
 * Completeness per dependency (DESIGN.md "Agent": prune only what the output's inputs prove gone).
 *
 * Every output is published complete, so the agent prunes what is absent from it. Before that, the
 * cluster job compares the freshly assembled resources with the cluster's previous output (and with
 * the gitmesh-managed objects its discovery reports): an object that is no longer rendered is
 * dropped only when the inputs its removal depends on are complete. Otherwise it is HELD — its
 * previous version stays in the output — and the hold is reported (`OutputRecord.held`):
 *
 * - `frozen`: it belongs to a route table whose `failureMode: FREEZE_CONFIG` froze it in this
 *   cluster (the translator reports the table and the labels its objects carry);
 * - `workspace`: its workspace (label `gitmesh.io/workspace`) has no successful translation of its
 *   own (the job failed: its last fragments, if any, stay; what is missing from them is held);
 * - `discovery`: a registered cluster its workspace depends on (the workspace's workload clusters, and
 *   every registered cluster when it imports from other workspaces) had sent no discovery when the
 *   workspace was last translated, or its parent (label `gitmesh.io/parent-cluster`) is in such a cluster.
 *
 * An object whose workspace is no longer in Git is a deliberate removal and is never held. An
 * object the cluster reports (discovery) that must be held but whose last version the server does
 * not know (state lost) cannot be kept in the output: the whole output is then published incomplete
 * (`incompleteReason`), so the agent prunes nothing in that cluster until the input is back.
 */
import { objectsOfKind, workspaceNames, type DesiredState } from "../config/index.js";
import type { DiscoveredIstioObject } from "../discovery/index.js";
import type { HeldObjects, OutputRecord, WorkspaceStatus } from "../store/index.js";
import { labelValue, LABEL_CLUSTER, LABEL_MANAGED, LABEL_PARENT_CLUSTER, LABEL_WORKSPACE, resourceKey, sortResources, type IstioResource } from "../translate/index.js";

export interface HoldInputs {
  readonly cluster: string;
  /** What the current fragments give for the cluster. */
  readonly assembled: readonly IstioResource[];
  readonly previous: OutputRecord | undefined;
  readonly desired: DesiredState;
  readonly statuses: ReadonlyMap<string, WorkspaceStatus>;
  /** Clusters whose discovery the store holds now. */
  readonly discovered: ReadonlySet<string>;
  /** The cluster's own gitmesh-managed Istio objects from its discovery (undefined: no discovery). */
  readonly live: readonly DiscoveredIstioObject[] | undefined;
  readonly nowMs: number;
}

export interface HoldResult {
  /** assembled + held previous versions, sorted. */
  readonly resources: readonly IstioResource[];
  readonly held: readonly HeldObjects[];
  readonly incompleteReason?: string;
}

interface Cause {
  readonly cause: HeldObjects["cause"];
  readonly reason: string;
  readonly table?: string;
}

/** The registered clusters each workspace's output depends on (from Git, never from discovery). */
export function workspaceDependencies(desired: DesiredState): Map<string, readonly string[]> {
  const clusters = objectsOfKind(desired, "KubernetesCluster").map((k) => ({ name: k.metadata.name, labels: k.metadata.labels }));
  const all = clusters.map((c) => c.name).sort();
  const settings = objectsOfKind(desired, "WorkspaceSettings");
  const imports = (s: { spec: unknown }) => {
    const list = (s.spec as { importFrom?: unknown } | null | undefined)?.importFrom;
    return Array.isArray(list) && list.length > 0;
  };
  const globalImports = settings.some((s) => s.metadata.name === "global" && imports(s));
  const out = new Map<string, readonly string[]>();
  for (const w of objectsOfKind(desired, "Workspace")) {
    const name = w.metadata.name;
    // Imports bring other workspaces' services (from any of their clusters): depend on every cluster.
    if (globalImports || settings.some((s) => (s.workspace ?? s.metadata.name) === name && imports(s))) {
      out.set(name, all);
      continue;
    }
    const entries = (w.spec as { workloadClusters?: unknown } | null | undefined)?.workloadClusters;
    const picked = new Set<string>();
    for (const raw of Array.isArray(entries) ? entries : []) {
      const e = (raw ?? {}) as { name?: unknown; selector?: unknown };
      for (const c of clusters) {
        if (typeof e.name === "string" && !glob(e.name, c.name)) continue;
        if (typeof e.selector === "object" && e.selector !== null && !Object.entries(e.selector as Record<string, unknown>).every(([k, v]) => c.labels[k] === v)) continue;
        picked.add(c.name);
      }
    }
    out.set(name, [...picked].sort());
  }
  return out;
}

function glob(pattern: string, value: string): boolean {
  if (pattern === "*" || pattern === "") return true;
  if (!pattern.includes("*")) return pattern === value;
  const re = new RegExp(`^${pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`);
  return re.test(value);
}

const fmt = (list: readonly string[]) => list.map((c) => `"${c}"`).join(", ");

interface DesiredIndex {
  readonly registered: ReadonlySet<string>;
  readonly deps: ReadonlyMap<string, readonly string[]>;
  readonly byLabel: ReadonlyMap<string, string>;
  readonly clusterByLabel: ReadonlyMap<string, string>;
}

/**
 * What computeHolds derives from the desired state alone, once per desired state (every cluster job of a
 * commit gets the same object): workspaceDependencies is O(workspaces × clusters), per cluster job it
 * made a fleet-wide commit O(clusters²). Desired states are immutable (src/store: records are not mutated).
 */
const indexes = new WeakMap<DesiredState, DesiredIndex>();
function desiredIndex(desired: DesiredState): DesiredIndex {
  let index = indexes.get(desired);
  if (index === undefined) {
    const registered = new Set(objectsOfKind(desired, "KubernetesCluster").map((k) => k.metadata.name));
    index = {
      registered,
      deps: workspaceDependencies(desired),
      byLabel: new Map(workspaceNames(desired).map((w) => [labelValue(w), w])),
      clusterByLabel: new Map([...registered].map((c) => [labelValue(c), c])),
    };
    indexes.set(desired, index);
  }
  return index;
}

export function computeHolds(input: HoldInputs): HoldResult {
  const { cluster, assembled, previous, desired, statuses, discovered } = input;
  const { registered, deps, byLabel, clusterByLabel } = desiredIndex(desired);
  // A failing workspace keeps its last fragments, so the tables frozen then are still missing from them.
  const frozen = [...statuses.values()].flatMap((s) => s.frozen ?? []).filter((f) => f.cluster === cluster);

  const causeOf = (labels: Readonly<Record<string, string>>): Cause | undefined => {
    const f = frozen.find((t) => Object.entries(t.selector).every(([k, v]) => labels[k] === v));
    if (f !== undefined) return { cause: "frozen", table: `${f.namespace}/${f.name}`, reason: `route table ${f.namespace}/${f.name} (workspace "${f.workspace}") is frozen by failureMode FREEZE_CONFIG: its last published version stays until its errors are fixed` };
    const ws = byLabel.get(labels[LABEL_WORKSPACE] ?? "");
    if (ws === undefined) return undefined; // its workspace left Git: a deliberate removal
    const st = statuses.get(ws);
    if (st === undefined || st.commit === "" || st.failure !== undefined) {
      if (st?.failure === undefined) return { cause: "workspace", reason: `workspace "${ws}" has not been translated; its deletions are held until it translates` };
      return { cause: "workspace", reason: `workspace "${ws}" failed to translate (${st.failure.code}: ${st.failure.message}); its objects stay as last translated${st.commit === "" ? "" : ` (commit ${st.commit.slice(0, 12)})`} and its deletions are held until it translates` };
    }
    const seen = st.discovered === undefined ? discovered : new Set(st.discovered);
    const missing = (deps.get(ws) ?? []).filter((c) => registered.has(c) && !seen.has(c));
    const parent = clusterByLabel.get(labels[LABEL_PARENT_CLUSTER] ?? "");
    if (parent !== undefined && !seen.has(parent) && !missing.includes(parent)) missing.push(parent);
    if (missing.length > 0) return { cause: "discovery", reason: `no discovery from cluster(s) ${fmt(missing.sort())}, which workspace "${ws}" depends on; its deletions are held until they report` };
    return undefined;
  };

  const now = new Set(assembled.map(resourceKey));
  const groups = new Map<string, { cause: Cause; objects: string[] }>();
  const retained: IstioResource[] = [];
  const unknown: string[] = [];
  const hold = (key: string, c: Cause) => {
    const id = `${c.cause}\n${c.reason}`;
    const g = groups.get(id) ?? { cause: c, objects: [] };
    g.objects.push(key);
    groups.set(id, g);
  };
  for (const r of previous?.resources ?? []) {
    const key = resourceKey(r);
    if (now.has(key)) continue;
    const c = causeOf(r.metadata.labels);
    if (c === undefined) continue;
    retained.push(r);
    now.add(key);
    hold(key, c);
  }
  // A failing workspace keeps its last fragments: its objects here stay as last translated (its
  // deletions and changes wait). Reported with the holds, although they are not missing.
  for (const r of assembled) {
    const ws = byLabel.get(r.metadata.labels[LABEL_WORKSPACE] ?? "");
    const st = ws === undefined ? undefined : statuses.get(ws);
    if (st?.failure === undefined) continue;
    hold(resourceKey(r), { cause: "workspace", reason: `workspace "${ws!}" failed to translate (${st.failure.code}: ${st.failure.message}); its objects stay as last translated${st.commit === "" ? "" : ` (commit ${st.commit.slice(0, 12)})`} and its deletions are held until it translates` });
  }
  // Objects in the cluster the server has no previous version of (its state was lost).
  const mine = labelValue(cluster);
  for (const o of input.live ?? []) {
    if (!o.managed || o.labels[LABEL_MANAGED] !== "true" || o.labels[LABEL_CLUSTER] !== mine) continue;
    const key = `${o.kind}/${o.namespace}/${o.name}`;
    if (now.has(key)) continue;
    const c = causeOf(o.labels);
    if (c === undefined) continue;
    now.add(key);
    unknown.push(key);
    hold(key, c);
  }

  const since = new Map((previous?.held ?? []).map((h) => [`${h.cause}\n${h.reason}`, h.sinceMs]));
  const held: HeldObjects[] = [...groups.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([id, g]) => ({ cause: g.cause.cause, reason: g.cause.reason, ...(g.cause.table === undefined ? {} : { table: g.cause.table }), sinceMs: since.get(id) ?? input.nowMs, objects: g.objects.sort() }));
  const resources = retained.length === 0 ? assembled : sortResources([...assembled, ...retained]);
  // Without the cluster's own discovery nothing is known of what it holds, and most of its output
  // (everything that needs its namespaces) is missing: the output is applied, never pruned against.
  if (input.live === undefined) return { resources, held, incompleteReason: `no discovery from cluster "${cluster}" yet: its output is applied without pruning until its agent reports` };
  if (unknown.length === 0) return { resources, held };
  return {
    resources,
    held,
    incompleteReason: `${String(unknown.length)} object(s) in the cluster must be held (${unknown.slice(0, 3).join(", ")}${unknown.length > 3 ? ", …" : ""}) but their last version is not known to the server: nothing is pruned in this cluster until the inputs they depend on are complete`,
  };
}
