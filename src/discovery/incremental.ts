/**
 * Incremental discovery: the snapshot maintained object by object (informer events), giving
 * exactly the entries of `snapshotEntries(snapshotFromKubernetesObjects(cluster, objects))` over the
 * same objects — the pure conversion stays the reference (and what `render --discovery` runs); this
 * builder calls the same per-object functions and only recomputes the entries a change can affect:
 * - a Service → its service entry (and gateway entry);
 * - a Pod → the workloads and gateway Services of its namespace whose selector matches its old or
 *   new labels (and only when what discovery keeps of it changed: labels, node, service account,
 *   active or not);
 * - a Deployment/StatefulSet/DaemonSet → its entry, and the gateways of its namespace when its
 *   item changed;
 * - a Node → the localities, and the workloads/gateways with pods on that node;
 * - Namespaces, istiod Deployments and ConfigMaps → the control planes and the discovered
 *   namespaces (cheap), then everything in a namespace that came into or went out of scope;
 * - an Istio object → its entry.
 * `flush()` applies what changed since the last flush and returns the delta (entry keys as in
 * snapshotEntries). Pure: no I/O, clock or logging.
 */
import type { Diagnostic } from "../core/index.js";
import type { DiscoveredLocality, DiscoveredWorkload, DiscoverySnapshot } from "../model/index.js";
import {
  checkClusterName,
  discoveredNamespaces,
  findMeshes,
  gatewayKind,
  is,
  isIstiodCandidate,
  isIstioObject,
  istioItem,
  isWorkloadKind,
  nodeLocality,
  NO_PODS,
  objectIdentity,
  parseObject,
  PodIndex,
  rawIdentity,
  podInfo,
  readGateway,
  readService,
  readWorkload,
  Reporter,
  uniqueLocalities,
  workloadSelector,
  type KubeObject,
  type LocalityOf,
  type MeshFound,
  type PodInfo,
  type SnapshotOptions,
} from "./convert.js";
import { HEADER_KEY, snapshotFromEntries, type SnapshotDelta, type SnapshotEntry } from "./delta.js";
import { matchesLabels, matchesSelector, type LabelSelector, type Labels } from "../core/index.js";
import { DISCOVERY_API_VERSION, DISCOVERY_KIND, compareStrings, itemKey, normalizeItem, type SectionItem, type SectionName } from "./snapshot.js";

export type IncrementalSnapshotOptions = Pick<SnapshotOptions, "discoverySelectors" | "honorMeshDiscoverySelectors">;

export interface IncrementalSnapshot {
  /** Adds or replaces an object (plain Kubernetes JSON; Lists are not expanded). */
  upsert(obj: unknown): void;
  /** Removes an object (only its apiVersion, kind and metadata name/namespace are read). */
  remove(obj: unknown): void;
  /**
   * Makes the objects of one kind (in one namespace, if given) exactly `objects`: after a relist.
   * Objects already held as the same instance are not looked at again.
   */
  replaceKind(apiVersion: string, kind: string, objects: Iterable<unknown>, namespace?: string): void;
  /** Whether changes are waiting for flush(). */
  readonly pending: boolean;
  /** Recomputes what the changes since the last flush affect; returns the delta (lists sorted by key). */
  flush(): SnapshotDelta;
  /** The current entries (key → canonical item), as of the last flush. */
  entries(): ReadonlyMap<string, unknown>;
  /** The current snapshot (normalised), as of the last flush. */
  snapshot(): DiscoverySnapshot;
  /** Problems found in the objects held (malformed fields...), as of the last flush. */
  diagnostics(): Diagnostic[];
}

interface Held {
  readonly raw: unknown;
  readonly obj: KubeObject;
  readonly diagnostics: readonly Diagnostic[];
}

const nsOf = (key: string): string => key.split("/")[2] ?? "";

export function createIncrementalSnapshot(cluster: string, options: IncrementalSnapshotOptions = {}): IncrementalSnapshot {
  const clusterReporter = new Reporter(undefined);
  checkClusterName(clusterReporter, cluster);

  // ---- the objects held, by identity and by what they are ----
  const held = new Map<string, Held>();
  const nodes = new Map<string, DiscoveredLocality | undefined>();
  const explicitNs = new Map<string, Labels>();
  const nsRefs = new Map<string, number>(); // namespaced objects per namespace
  const services = new Map<string, KubeObject>(); // identity → object
  const workloads = new Map<string, KubeObject>();
  const workloadSelectors = new Map<string, LabelSelector | undefined>();
  const istio = new Map<string, KubeObject>();
  const istiods = new Map<string, KubeObject>();
  const configMaps = new Map<string, KubeObject>(); // ns/name → object
  const pods = new Map<string, PodIndex>(); // ns → active pods
  const podsByNode = new Map<string, Set<string>>(); // node → `ns/name` of active pods on it
  const byNs = new Map<string, Set<string>>(); // ns → identities of services, workloads, istio objects

  // ---- derived ----
  let meshes: MeshFound[] = [];
  let discovered = new Set<string>();
  const workloadItems = new Map<string, DiscoveredWorkload>(); // identity → item (in scope only)
  const workloadsInNs = new Map<string, Map<string, DiscoveredWorkload>>();
  const gatewaySelectors = new Map<string, Labels>(); // identity of a gateway Service → its selector
  const entryDiagnostics = new Map<string, readonly Diagnostic[]>();
  const entries = new Map<string, unknown>();
  const json = new Map<string, string>();

  // ---- what the next flush must recompute ----
  let globalsDirty = true;
  let localitiesDirty = true;
  const dirty = new Set<string>(); // identities of services, workloads, istio objects

  const localityOf: LocalityOf = (name) => (name === undefined ? undefined : nodes.get(name));
  const index = (map: Map<string, Set<string>>, key: string, value: string, add: boolean) => {
    let set = map.get(key);
    if (add) {
      if (!set) map.set(key, (set = new Set()));
      set.add(value);
    } else if (set) {
      set.delete(value);
      if (set.size === 0) map.delete(key);
    }
  };
  const podIndex = (ns: string) => {
    let p = pods.get(ns);
    if (!p) pods.set(ns, (p = new PodIndex()));
    return p;
  };

  /** Marks the workloads and gateway Services of `ns` that select a pod with these labels. */
  const touchSelecting = (ns: string, labels: Labels) => {
    for (const id of byNs.get(ns) ?? []) {
      const sel = workloadSelectors.get(id);
      if (sel !== undefined && matchesSelector(sel, labels)) dirty.add(id);
      const gw = gatewaySelectors.get(id);
      if (gw !== undefined && Object.keys(gw).length > 0 && matchesLabels(gw, labels)) dirty.add(id);
    }
  };

  const podChanged = (ns: string, before: PodInfo | undefined, after: PodInfo | undefined) => {
    if (before === after) return;
    if (before && after && before.serviceAccount === after.serviceAccount && before.nodeName === after.nodeName && sameLabels(before.labels, after.labels)) {
      podIndex(ns).add(after);
      return;
    }
    if (before) {
      podIndex(ns).remove(before.name);
      if (before.nodeName !== undefined) index(podsByNode, before.nodeName, `${ns}/${before.name}`, false);
      touchSelecting(ns, before.labels);
    }
    if (after) {
      podIndex(ns).add(after);
      if (after.nodeName !== undefined) index(podsByNode, after.nodeName, `${ns}/${after.name}`, true);
      touchSelecting(ns, after.labels);
    }
  };

  const nodeChanged = (name: string) => {
    localitiesDirty = true;
    for (const p of podsByNode.get(name) ?? []) {
      const slash = p.indexOf("/");
      const ns = p.slice(0, slash);
      const pod = pods.get(ns)?.all.get(p.slice(slash + 1));
      if (pod) touchSelecting(ns, pod.labels);
    }
  };

  /** Adds (`sign` 1) or withdraws (-1) what one held object contributes. */
  function account(id: string, o: KubeObject, sign: 1 | -1) {
    const add = sign === 1;
    if (o.namespace !== "") {
      const n = (nsRefs.get(o.namespace) ?? 0) + sign;
      if (n === 0) nsRefs.delete(o.namespace);
      else nsRefs.set(o.namespace, n);
      if ((n === 0 || n === 1) && !explicitNs.has(o.namespace)) globalsDirty = true; // an implied namespace came or went
    }
    if (is(o, "v1", "Node")) {
      if (add) nodes.set(o.name, nodeLocality(o));
      else nodes.delete(o.name);
      nodeChanged(o.name);
    } else if (is(o, "v1", "Namespace")) {
      if (add) explicitNs.set(o.name, o.labels);
      else explicitNs.delete(o.name);
      globalsDirty = true;
    } else if (is(o, "v1", "Service")) {
      if (add) services.set(id, o);
      else services.delete(id);
      index(byNs, o.namespace, id, add);
      dirty.add(id);
    } else if (is(o, "v1", "ConfigMap")) {
      if (add) configMaps.set(`${o.namespace}/${o.name}`, o);
      else configMaps.delete(`${o.namespace}/${o.name}`);
      globalsDirty = true;
    } else if (isWorkloadKind(o)) {
      if (add) {
        workloads.set(id, o);
        workloadSelectors.set(id, workloadSelector(new Reporter(undefined), o).selector);
      } else {
        workloads.delete(id);
        workloadSelectors.delete(id);
      }
      index(byNs, o.namespace, id, add);
      dirty.add(id);
      if (isIstiodCandidate(o)) {
        if (add) istiods.set(id, o);
        else istiods.delete(id);
        globalsDirty = true;
      }
    } else if (isIstioObject(o)) {
      if (add) istio.set(id, o);
      else istio.delete(id);
      index(byNs, o.namespace, id, add);
      dirty.add(id);
    }
  }

  function upsert(raw: unknown): string | undefined {
    const quick = rawIdentity(raw);
    if (quick !== undefined && held.get(quick)?.raw === raw) return quick;
    const r = new Reporter(undefined);
    const obj = parseObject(r, raw, -1, "");
    if (obj === undefined) return undefined;
    const id = objectIdentity(obj);
    const before = held.get(id);
    held.set(id, { raw, obj, diagnostics: r.diagnostics });
    if (is(obj, "v1", "Pod")) {
      // pods only change the pod index (and, through it, what selects them)
      if (!before) account(id, obj, 1);
      podChanged(obj.namespace, before ? podInfo(before.obj) : undefined, podInfo(obj));
      return id;
    }
    if (before) account(id, before.obj, -1);
    account(id, obj, 1);
    return id;
  }

  function removeId(id: string) {
    const before = held.get(id);
    if (!before) return;
    held.delete(id);
    account(id, before.obj, -1);
    if (is(before.obj, "v1", "Pod")) podChanged(before.obj.namespace, podInfo(before.obj), undefined);
  }

  function remove(raw: unknown) {
    const obj = parseObject(new Reporter(undefined), raw, -1, "");
    if (obj !== undefined) removeId(objectIdentity(obj));
  }

  // ---- flush ----

  let touched = new Map<string, string | undefined>(); // key → JSON before this flush

  const setEntry = (key: string, value: unknown) => {
    const before = json.get(key);
    const after = value === undefined ? undefined : JSON.stringify(value);
    if (before === after) return;
    if (!touched.has(key)) touched.set(key, before);
    if (after === undefined) {
      json.delete(key);
      entries.delete(key);
    } else {
      json.set(key, after);
      entries.set(key, value);
    }
  };
  const setItem = <S extends SectionName>(section: S, item: SectionItem<S>): string => {
    const normal = normalizeItem(section, item);
    const key = itemKey(section, normal);
    setEntry(key, normal);
    return key;
  };

  /** Entry keys of the namespaces, meshes and localities (recomputed as a whole). */
  const sectionKeys = { namespace: new Set<string>(), mesh: new Set<string>(), locality: new Set<string>() };
  const replaceSection = (section: keyof typeof sectionKeys, keep: Set<string>) => {
    for (const key of sectionKeys[section]) if (!keep.has(key)) setEntry(key, undefined);
    sectionKeys[section] = keep;
  };

  function recomputeGlobals() {
    const nsLabels = new Map<string, Labels>(explicitNs);
    for (const ns of nsRefs.keys()) if (!nsLabels.has(ns)) nsLabels.set(ns, {});
    const r = new Reporter(undefined);
    meshes = findMeshes(r, [...istiods.values()], configMaps, nsLabels);
    entryDiagnostics.set("mesh", r.diagnostics);
    const next = discoveredNamespaces(nsLabels, meshes, options);
    for (const ns of new Set([...discovered, ...next])) {
      if (discovered.has(ns) !== next.has(ns)) for (const id of byNs.get(ns) ?? []) dirty.add(id);
    }
    discovered = next;
    const nsKeep = new Set<string>();
    for (const name of discovered) nsKeep.add(setItem("namespaces", { name, labels: { ...nsLabels.get(name) } }));
    const meshKeep = new Set<string>();
    for (const m of meshes) meshKeep.add(setItem("meshes", m.mesh)); // the last of two with one identity wins
    replaceSection("namespace", nsKeep);
    replaceSection("mesh", meshKeep);
  }

  function recomputeWorkload(id: string): void {
    const o = workloads.get(id);
    const old = workloadItems.get(id);
    const ns = o?.namespace ?? nsOf(id);
    let item: DiscoveredWorkload | undefined;
    if (o && discovered.has(o.namespace) && isWorkloadKind(o)) {
      const r = new Reporter(undefined);
      item = readWorkload(r, o, o.kind, pods.get(o.namespace) ?? NO_PODS, localityOf);
      entryDiagnostics.set(id, r.diagnostics);
      workloadItems.set(id, item);
      let inNs = workloadsInNs.get(ns);
      if (!inNs) workloadsInNs.set(ns, (inNs = new Map<string, DiscoveredWorkload>()));
      inNs.set(id, item);
      setItem("workloads", item);
    } else {
      entryDiagnostics.delete(id);
      workloadItems.delete(id);
      workloadsInNs.get(ns)?.delete(id);
      if (old) setEntry(`workload/${old.namespace}/${old.kind}/${old.name}`, undefined);
    }
    if (old === undefined && item === undefined) return;
    if (old && item && JSON.stringify(old) === JSON.stringify(item)) return;
    // gateways take localities and revisions from the workloads they select
    for (const gw of byNs.get(ns) ?? []) if (gatewaySelectors.has(gw)) dirty.add(gw);
  }

  function recomputeService(id: string): void {
    const o = services.get(id);
    if (o && discovered.has(o.namespace)) {
      const r = new Reporter(undefined);
      const svc = readService(r, o);
      setItem("services", svc);
      const gw = readGateway(r, o, svc, pods.get(o.namespace) ?? NO_PODS, workloadsInNs.get(o.namespace)?.values() ?? [], localityOf);
      entryDiagnostics.set(id, r.diagnostics);
      if (gw) {
        gatewaySelectors.set(id, svc.selector);
        setItem("gateways", gw);
      } else {
        gatewaySelectors.delete(id);
        setEntry(`gateway/${o.namespace}/${o.name}`, undefined);
      }
      if (gatewayKind(svc) === undefined) gatewaySelectors.delete(id);
      return;
    }
    entryDiagnostics.delete(id);
    gatewaySelectors.delete(id);
    const [, , ns = "", name = ""] = id.split("/");
    setEntry(`service/${ns}/${name}`, undefined);
    setEntry(`gateway/${ns}/${name}`, undefined);
  }

  function recomputeIstio(id: string): void {
    const o = istio.get(id);
    const item = o ? istioItem(o, discovered.has(o.namespace)) : undefined;
    if (item) setItem("istioObjects", item);
    else setEntry(`istio/${id}`, undefined);
  }

  function flush(): SnapshotDelta {
    touched = new Map();
    if (!json.has(HEADER_KEY)) setEntry(HEADER_KEY, { apiVersion: DISCOVERY_API_VERSION, kind: DISCOVERY_KIND, cluster }); // the order of snapshotEntries
    if (globalsDirty) {
      globalsDirty = false;
      recomputeGlobals();
    }
    // workloads first: gateways read the workload items
    for (const id of dirty) if (workloads.has(id) || workloadItems.has(id)) recomputeWorkload(id);
    for (const id of dirty) {
      if (services.has(id) || id.startsWith("/Service/")) recomputeService(id);
      else if (istio.has(id) || entries.has(`istio/${id}`)) recomputeIstio(id);
    }
    dirty.clear();
    if (localitiesDirty) {
      localitiesDirty = false;
      const keep = new Set<string>();
      for (const l of uniqueLocalities([...nodes.values()].filter((x): x is DiscoveredLocality => x !== undefined))) keep.add(setItem("localities", l));
      replaceSection("locality", keep);
    }
    const added: SnapshotEntry[] = [];
    const changed: SnapshotEntry[] = [];
    const removed: string[] = [];
    for (const key of [...touched.keys()].sort(compareStrings)) {
      const before = touched.get(key);
      const after = json.get(key);
      if (before === after) continue;
      if (after === undefined) removed.push(key);
      else if (before === undefined) added.push({ key, value: entries.get(key) });
      else changed.push({ key, value: entries.get(key) });
    }
    touched = new Map();
    return { added, changed, removed };
  }

  return {
    upsert,
    remove,
    replaceKind(apiVersion, kind, objects, namespace) {
      const keep = new Set<string>();
      for (const raw of objects) {
        const id = upsert(raw);
        if (id !== undefined) keep.add(id);
      }
      for (const [id, h] of [...held]) {
        if (h.obj.apiVersion === apiVersion && h.obj.kind === kind && (namespace === undefined || h.obj.namespace === namespace) && !keep.has(id)) removeId(id);
      }
    },
    get pending() {
      return globalsDirty || localitiesDirty || dirty.size > 0;
    },
    flush,
    entries: () => entries,
    snapshot: () => snapshotFromEntries(entries),
    diagnostics() {
      const out = [...clusterReporter.diagnostics];
      for (const h of held.values()) out.push(...h.diagnostics);
      for (const d of entryDiagnostics.values()) out.push(...d);
      return out;
    },
  };
}

function sameLabels(a: Labels, b: Labels): boolean {
  if (a === b) return true;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) if (a[k] !== b[k]) return false;
  return true;
}
